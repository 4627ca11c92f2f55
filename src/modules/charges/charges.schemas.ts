/**
 * Charge shapes on the wire, and the create body parsed once into a typed `ChargeInput`
 * (amount in the token's base units, the active token, the objects as JSON text).
 */
import { Type, type Static } from '@sinclair/typebox';
import { component } from '../../http/components.js';
import type { WalletTokenRow } from '../../db/types.js';
import { validationError, type FieldErrors } from '../../errors.js';
import { checkAmountAndToken, orderErrors } from '../tokens/amount-field.js';
import { RefundRef } from '../refunds/refunds.schemas.js';

const CHARGE_EXPIRES_DEFAULT_S = 300;
const CHARGE_EXPIRES_MIN_S = 60;
const CHARGE_EXPIRES_MAX_S = 86_400;
const CHARGE_OBJECT_MAX_BYTES = 16 * 1024;

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const NullableObject = Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]);
const JsonObject = Type.Object({}, { additionalProperties: true });

const PaymentSchema = Type.Object({
  tx_hash: Nullable(
    Type.String({
      description:
        'null: money found on the deposit address by its balance after its watch ended (the reconciliation’s `after_watch`); the transaction that brought it is not known',
    }),
  ),
  from: Nullable(Type.String({ description: 'null when `tx_hash` is' })),
  amount: Type.String(),
  block_number: Type.Integer(),
  block_timestamp: Type.String(),
  late: Type.Boolean(),
  internal: Type.Boolean({
    description:
      'true: the money reached the deposit address through a contract (an internal call; `tx_hash` is the transaction that carried it), false: a transfer to the address',
  }),
  screened: Type.Boolean({
    description:
      'true: the sender was on the SCREENING_FILE list when the payment was recorded: kept and listed, never counted toward `paid_amount` (so it never pays the charge), told once by `charge.screened`, and swept to the main address with the rest for the operator to handle',
  }),
});

export const SweepSchema = Type.Object({
  tx_hash: Nullable(Type.String()),
  token: Type.String(),
  amount: Type.String(),
  status: Type.String({
    description:
      '`pending`, `confirmed` or `failed` (a failed sweep is sent again as a new one; a confirmed one whose block a reorg removed goes back to `pending`)',
  }),
  reason: Nullable(
    Type.String({
      description:
        "Why a failed sweep failed: `refused` (the token refused to move the address's balance: paused, blacklisted; it is tried again later, the other addresses of its batch were swept), `reverted`, `dropped`, or the node's words; null unless failed",
    }),
  ),
  created_at: Type.String(),
});

export const ChargeSchema = Type.Object({
  id: Type.Integer(),
  uuid: Type.String(),
  wallet_id: Type.Integer(),
  sub_wallet_id: Type.Integer(),
  token_id: Type.Integer(),
  token: Type.String(),
  address: Type.String(),
  deposit_kind: Type.String({
    enum: ['keyless', 'keyed'],
    description:
      "`keyless`: an address of the network's Sweeper contract, bound to the wallet's main address, with no key; swept in batches from the main address, no gas ever sent to it. `keyed`: an address with a key of its own (a network without a Sweeper, a native-only charge, or a charge made before), swept by transactions it signs.",
  }),
  amount: Type.String(),
  paid_amount: Type.String(),
  status: Type.String(),
  mode: Type.String(),
  expires: Type.Integer(),
  expires_at: Type.String(),
  paid_at: Nullable(Type.String()),
  content: NullableObject,
  info: NullableObject,
  created_at: Type.String(),
  updated_at: Type.String(),
  payments: Type.Array(PaymentSchema, {
    description:
      'Confirmed transfers to the deposit address; `late` for those after settlement and `screened` for those from a blocked sender (neither counted)',
  }),
  sweeps: Type.Array(SweepSchema, {
    description:
      'Transfers of what the deposit address received to the wallet’s main address, one entry per token moved; the entries of a keyless address name the batch transaction that swept it (`tx_hash`, shared with the other addresses of the batch)',
  }),
  refunds: Type.Array(RefundRef, { description: 'Refunds of the charge, oldest first (POST .../charge/{charge}/refund)' }),
  hosted_url: Type.String({
    description: 'The public checkout page: PUBLIC_URL + /pay/{uuid}',
    examples: ['https://pay.example.com/pay/6f1c2c1e-0f5e-4c43-9d38-2f5e3c1b9a10'],
  }),
  payment_uri: Type.String({
    description:
      'EIP-681 payment request: ethereum:{address}@{chain_id}?value={wei}, or ethereum:{contract}@{chain_id}/transfer?address={address}&uint256={units} for an ERC-20',
  }),
});

export const ChargeRef = component('Charge', ChargeSchema);

export const ChargeParams = Type.Object({ wallet: Type.String(), charge: Type.String() });

export const CreateChargeBody = Type.Object({
  amount: Type.Unknown({ description: 'Decimal string or number, > 0, at most the token’s decimals' }),
  token: Type.Unknown({ description: 'Symbol of an active token of the wallet' }),
  expires: Type.Optional(
    Type.Integer({ minimum: CHARGE_EXPIRES_MIN_S, maximum: CHARGE_EXPIRES_MAX_S, description: 'Seconds, default 300' }),
  ),
  content: Type.Optional(Type.Union([JsonObject, Type.Null()], { description: 'What the payer sees; a JSON object up to 16 KiB' })),
  info: Type.Optional(Type.Union([JsonObject, Type.Null()], { description: 'Merchant metadata; a JSON object up to 16 KiB' })),
});

/** A charge to create. */
export interface ChargeInput {
  amount: bigint;
  token: WalletTokenRow;
  expires: number;
  /** The objects as JSON text (null when absent). */
  content: string | null;
  info: string | null;
}

function objectText(field: string, v: Record<string, unknown> | null | undefined, errors: FieldErrors): string | null {
  if (v === undefined || v === null) return null;
  const text = JSON.stringify(v);
  if (Buffer.byteLength(text) > CHARGE_OBJECT_MAX_BYTES) errors[field] = [`The ${field} field must not be greater than 16 kilobytes.`];
  return text;
}

/** Checks the create body against the wallet's active tokens; throws 422 with every failing field. */
export function parseChargeInput(body: Static<typeof CreateChargeBody>, activeTokens: WalletTokenRow[]): ChargeInput {
  const errors: FieldErrors = {};
  const { amount, token } = checkAmountAndToken(body as Record<string, unknown>, activeTokens, errors);
  const content = objectText('content', body.content, errors);
  const info = objectText('info', body.info, errors);
  if (Object.keys(errors).length > 0) throw validationError(orderErrors(errors, ['amount', 'token', 'expires', 'content', 'info']));
  return { amount, token: token!, expires: body.expires ?? CHARGE_EXPIRES_DEFAULT_S, content, info };
}
