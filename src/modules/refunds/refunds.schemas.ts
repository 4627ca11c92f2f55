/** Refund shapes on the wire, and the create and claim bodies parsed into typed input. */
import { Type } from '@sinclair/typebox';
import { component } from '../../http/components.js';
import type { Address } from 'viem';
import { validationError, type FieldErrors } from '../../errors.js';
import { checkDecimalField, orderErrors } from '../tokens/amount-field.js';
import { checkAddressField } from '../transactions/transactions.schemas.js';
import type { RefundInput } from './refunds.service.js';

const Nullable = <T extends ReturnType<typeof Type.String | typeof Type.Integer>>(t: T) => Type.Union([t, Type.Null()]);
const REASON_MAX = 500;

export const RefundSchema = Type.Object({
  id: Type.Integer(),
  uuid: Nullable(
    Type.String({
      description: 'The refund’s public id (its claim link’s); null to an API key without `charges:write` or `transactions:write`',
    }),
  ),
  amount: Type.String({ description: 'In the charge’s token, 18 decimal places' }),
  address: Nullable(Type.String({ description: 'Where it is sent; null while a claim waits for the payer' })),
  status: Type.String({
    enum: ['claimable', 'pending', 'confirmed', 'failed', 'expired'],
    description:
      'Its transfer’s status (`pending` also while awaiting approval); a claim is `claimable`, then `expired` after REFUND_CLAIM_TTL_S unused',
  }),
  transaction_id: Nullable(Type.Integer()),
  tx_hash: Nullable(Type.String()),
  reason: Nullable(Type.String()),
  claim_url: Nullable(
    Type.String({
      description:
        'A claim’s public page (PUBLIC_URL + /refund/{uuid}); null for a refund created with an address, and to an API key without `charges:write` or `transactions:write`',
    }),
  ),
  expires_at: Nullable(Type.String({ description: 'When a claim can no longer be used; null for a refund created with an address' })),
  created_at: Type.String(),
});

export const PublicRefundSchema = Type.Object(
  {
    uuid: Type.String(),
    status: Type.String({ description: '`claimable`, `pending`, `confirmed`, `failed` or `expired`' }),
    amount: Type.String({ description: '18 decimal places' }),
    token: Type.String({ description: 'The token’s symbol' }),
    network: Type.String({ description: 'The name of the network the refund is paid on' }),
    reason: Nullable(Type.String({ description: 'The merchant’s reason, as given when the refund was made' })),
    address: Nullable(Type.String({ description: 'Where the refund goes; null until claimed' })),
    tx_hash: Nullable(Type.String({ description: 'The refund’s transaction; null until sent' })),
    tx_url: Nullable(Type.String({ description: 'The transaction on the network’s block explorer; null without one' })),
    expires_at: Nullable(Type.String()),
  },
  { additionalProperties: false },
);

export const RefundRef = component('Refund', RefundSchema);
export const PublicRefundRef = component('PublicRefund', PublicRefundSchema);

export const RefundParams = Type.Object({ uuid: Type.String({ description: 'The refund’s uuid (from its `claim_url`)' }) });

export const CreateRefundBody = Type.Object({
  amount: Type.Optional(
    Type.Unknown({
      description:
        'Decimal string or number, > 0, at most the token’s decimals; default: all the charge received less its refunds not failed or expired',
    }),
  ),
  address: Type.Optional(Type.Unknown({ description: 'Where to send it; absent: a claim (the payer gives the address on `claim_url`)' })),
  reason: Type.Optional(Type.Unknown({ description: 'Up to 500 characters, kept with the refund' })),
});

export const ClaimBody = Type.Object({ address: Type.Unknown({ description: 'The payer’s EVM address' }) });

const FIELDS = ['amount', 'address', 'reason'];

/** The create body: 422 naming every failing field. */
export function parseRefundInput(body: Record<string, unknown>, decimals: number): RefundInput {
  const errors: FieldErrors = {};
  const input: RefundInput = {};
  const amount = checkDecimalField(body, 'amount', decimals, errors);
  if (amount !== null) input.amount = amount;
  if (body.address !== undefined && body.address !== null) {
    const to = checkAddressField(body, errors);
    if (to) input.address = to;
  }
  const reason = body.reason;
  if (reason !== undefined && reason !== null) {
    if (typeof reason !== 'string') errors.reason = ['The reason field must be a string.'];
    else if (reason.length > REASON_MAX) errors.reason = [`The reason field must not be greater than ${REASON_MAX} characters.`];
    else if (reason.trim() !== '') input.reason = reason;
  }
  if (Object.keys(errors).length > 0) throw validationError(orderErrors(errors, FIELDS));
  return input;
}

/** The claim body: 422 on `address`. */
export function parseClaimAddress(body: Record<string, unknown>): Address {
  const errors: FieldErrors = {};
  const to = checkAddressField(body, errors);
  if (!to) throw validationError(errors);
  return to;
}
