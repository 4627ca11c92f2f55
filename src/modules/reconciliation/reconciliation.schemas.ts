/** Reconciliation on the wire (docs/reconciliation.md). */
import { Type, type Static } from '@sinclair/typebox';

const Amount = (description: string) =>
  Type.String({ description: `${description}, 18 places, signed`, examples: ['0.000000000000000000'] });

const TokenLineSchema = Type.Object({
  token: Type.String({ description: 'The token symbol' }),
  checkpoint_block: Type.Integer({ description: 'The block of the last accepted checkpoint (0: since the address was created)' }),
  checkpoint_balance: Amount('The chain balance at checkpoint_block'),
  recorded_change: Amount(
    'What the service’s records say moved since: receipts, payments and top-ups in; amounts sent, sweeps and every fee paid out',
  ),
  chain_balance: Amount('The chain balance at block_number'),
  difference: Amount('chain_balance − checkpoint_balance − recorded_change'),
});

const AddressSchema = Type.Object({
  address: Type.String(),
  kind: Type.Union([Type.Literal('main'), Type.Literal('deposit')]),
  charge_id: Type.Union([Type.Integer(), Type.Null()]),
  tokens: Type.Array(TokenLineSchema),
});

const UnsweptSchema = Type.Object({
  address: Type.String(),
  charge_id: Type.Integer(),
  token: Type.String(),
  amount: Type.String(),
  reason: Type.String({ description: 'Why it is left there, e.g. dust below the fee of sweeping it' }),
});

const AdjustmentSchema = Type.Object({
  address: Type.String(),
  token: Type.String(),
  amount: Amount('The difference accepted'),
  block_number: Type.Integer(),
  note: Type.String(),
  created_at: Type.String(),
});

export const ReconciliationSchema = Type.Object({
  block_number: Type.Integer({ description: 'The confirmed head the balances were read at' }),
  ok: Type.Boolean({ description: 'Every difference is zero and nothing is left unswept' }),
  addresses: Type.Array(AddressSchema),
  unswept: Type.Array(UnsweptSchema, { description: 'Settled charges’ addresses holding funds with no sweep under way' }),
  adjustments: Type.Array(AdjustmentSchema, { description: 'Accepted differences, newest first (at most 100)' }),
});

export const AcceptBody = Type.Object({
  note: Type.String({ minLength: 1, maxLength: 500, description: 'Why the differences are accepted' }),
});
export type AcceptInput = Static<typeof AcceptBody>;
