import { Type, type Static } from '@sinclair/typebox';
import { component } from '../../http/components.js';
import { PRICE_CURRENCIES } from './currencies.js';

export const RatesQuery = Type.Object({
  currency: Type.Optional(Type.String({ enum: [...PRICE_CURRENCIES], description: 'One currency (default: all of them)' })),
  network_id: Type.Optional(
    Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'One network (default: every network)' }),
  ),
});
export type RatesQueryInput = Static<typeof RatesQuery>;

export const RateSchema = component(
  'Rate',
  Type.Object({
    network_id: Type.Integer(),
    token: Type.String({ description: 'The token’s symbol', examples: ['ETH'] }),
    currency: Type.String({ enum: [...PRICE_CURRENCIES] }),
    value: Type.String({ description: 'Units of the currency for one whole token, 18 places', examples: ['3012.450000000000000000'] }),
    source: Type.String({
      enum: ['manual', 'chainlink', 'pegged'],
      description: '`manual`: set by `rate:set`; `chainlink`: the network’s price feed; `pegged`: a stablecoin of its preset, 1',
    }),
    at: Type.String({
      description: 'When it was set (manual), last reported by the feed (chainlink) or read (pegged)',
      examples: ['2026-12-07 14:02:11'],
    }),
  }),
);
