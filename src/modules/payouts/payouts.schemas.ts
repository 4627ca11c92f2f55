/** Payout shapes on the wire, and the create body parsed into typed input (errors named `items.N.<field>`). */
import { Type } from '@sinclair/typebox';
import { component } from '../../http/components.js';
import type { Address } from 'viem';
import type { WalletTokenRow } from '../../db/types.js';
import { validationError, type FieldErrors } from '../../errors.js';
import { checkAmountAndToken, checkDecimalField } from '../tokens/amount-field.js';
import { checkAddressField, HeldBySchema, parseFeeChoice, type FeeChoice } from '../transactions/transactions.schemas.js';

export const MAX_PAYOUT_ITEMS = 500;
const REFERENCE_MAX = 255;
const Nullable = <T extends ReturnType<typeof Type.String | typeof Type.Integer>>(t: T) => Type.Union([t, Type.Null()]);

const ItemSchema = Type.Object({
  id: Type.Integer(),
  address: Type.String(),
  amount: Type.String({ description: '18 decimal places' }),
  reference: Nullable(Type.String()),
  status: Type.String({
    enum: ['awaiting_approval', 'queued', 'pending', 'confirmed', 'failed'],
    description: '`queued` until its turn; then its transaction’s status',
  }),
  transaction_id: Nullable(Type.Integer()),
  tx_hash: Nullable(Type.String()),
  failure_reason: Nullable(
    Type.String({
      description:
        'Its transaction’s failure_reason; `refused` when its create was refused when its turn came (see `error`); `rejected_by_approver` / `approval_expired` for a payout that was not approved',
    }),
  ),
  error: Nullable(Type.String({ description: 'Why a refused item was refused (e.g. `Insufficient balance for transaction`)' })),
});

export const PayoutSchema = Type.Object({
  id: Type.Integer(),
  token: Type.String(),
  status: Type.String({ enum: ['awaiting_approval', 'processing', 'completed', 'partially_failed', 'failed'] }),
  total: Type.String({ description: '18 decimal places' }),
  items: Type.Array(ItemSchema),
  created_at: Type.String(),
  completed_at: Nullable(Type.String()),
  held_by: HeldBySchema,
});

export const PayoutRef = component('Payout', PayoutSchema);

export const PayoutParams = Type.Object({ wallet: Type.String(), payout: Type.String() });

export const CreatePayoutBody = Type.Object({
  token: Type.Optional(Type.Unknown({ description: 'Symbol of an active token of the wallet' })),
  items: Type.Optional(Type.Unknown({ description: '1 to 500 of `{address, amount, reference?}`; a reference is unique per wallet' })),
  fee_level: Type.Optional(Type.Unknown({ description: '`low`, `medium` (default) or `high`, for every item' })),
});

export interface PayoutInput {
  token: WalletTokenRow;
  items: { address: Address; amount: bigint; reference: string | null }[];
  fees?: FeeChoice & { level: 'low' | 'medium' | 'high' };
}

/** Checks the create body; throws 422 naming every failing field (`items.3.amount`). */
export function parsePayoutInput(body: Record<string, unknown>, activeTokens: WalletTokenRow[]): PayoutInput {
  const errors: FieldErrors = {};
  const { token } = checkAmountAndToken({ ...body, amount: '1' }, activeTokens, errors);
  const items = checkItems(body.items, token, errors);
  const fees = parseFeeChoice({ fee_level: body.fee_level }, errors);
  if (Object.keys(errors).length > 0) throw validationError(errors);
  return { token: token!, items, ...(fees && 'level' in fees ? { fees } : {}) };
}

function checkItems(value: unknown, token: WalletTokenRow | undefined, errors: FieldErrors): PayoutInput['items'] {
  if (value === undefined || value === null) errors.items = ['The items field is required.'];
  else if (!Array.isArray(value)) errors.items = ['The items field must be an array.'];
  else if (value.length === 0) errors.items = ['The items field must have at least 1 items.'];
  else if (value.length > MAX_PAYOUT_ITEMS) errors.items = [`The items field must not have more than ${MAX_PAYOUT_ITEMS} items.`];
  if (errors.items) return [];
  const out: PayoutInput['items'] = [];
  const seen = new Set<string>();
  (value as unknown[]).forEach((raw, n) => {
    const f = (field: string) => `items.${n}.${field}`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      errors[`items.${n}`] = [`The items.${n} field must be an object.`];
      return;
    }
    const item = raw as Record<string, unknown>;
    const own: FieldErrors = {};
    const address = checkAddressField(item, own);
    const amount = token ? checkDecimalField(item, 'amount', token.decimals, own, { required: true }) : null;
    const reference = checkReference(item.reference, own, seen);
    for (const [k, m] of Object.entries(own)) errors[f(k)] = m.map((x) => x.replace(`The ${k} field`, `The ${f(k)} field`));
    if (address && amount !== null && reference !== undefined) out.push({ address, amount, reference });
  });
  return out;
}

function checkReference(v: unknown, errors: FieldErrors, seen: Set<string>): string | null | undefined {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.trim() === '') errors.reference = ['The reference field must be a non-empty string.'];
  else if (v.length > REFERENCE_MAX) errors.reference = [`The reference field must not be greater than ${REFERENCE_MAX} characters.`];
  else if (seen.has(v)) errors.reference = ['The reference field has already been taken.'];
  else {
    seen.add(v);
    return v;
  }
  return undefined;
}
