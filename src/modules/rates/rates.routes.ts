import { Type } from '@sinclair/typebox';
import { ok, responses } from '../../http/envelope.js';
import type { App } from '../../http/types.js';
import { PRICE_CURRENCIES, type PriceCurrency } from './currencies.js';
import { RateSchema, RatesQuery, type RatesQueryInput } from './rates.schemas.js';
import type { RateService } from './rates.service.js';
import { rateView } from './rates.views.js';

export async function rateRoutes(app: App, rates: RateService): Promise<void> {
  app.get(
    '/rates',
    {
      schema: {
        tags: ['rates'],
        summary: 'Exchange rates in force',
        description:
          'What one whole token is worth in each currency of price charges, as a price charge created now would lock it: a manual rate (`rate:set`) first, then the network’s Chainlink feed while its last report is at most RATE_MAX_AGE_S old, then 1 for a stablecoin its preset marks pegged. A token with no fresh rate is not listed.',
        querystring: RatesQuery,
        response: responses(Type.Array(RateSchema)),
      },
    },
    async (req) => {
      const q = req.query as RatesQueryInput;
      const currencies: readonly PriceCurrency[] = q.currency === undefined ? PRICE_CURRENCIES : [q.currency as PriceCurrency];
      const listed = await rates.listOn(q.network_id, currencies);
      return ok(
        listed.map((l) => rateView(l.networkId, l.rate)),
        'Rates retrieved',
      );
    },
  );
}
