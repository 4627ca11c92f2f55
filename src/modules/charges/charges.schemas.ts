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
import { isPriceCurrency, PRICE_CURRENCIES, type PriceCurrency } from '../rates/currencies.js';

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
  token: Type.String({ description: 'The token paid in: the charge’s `token`, or for a price charge any quoted token' }),
  amount: Type.String({ description: 'In `token`' }),
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

const QuoteSchema = Type.Object({
  token: Type.String(),
  token_id: Type.Integer(),
  amount: Type.String({
    description: 'The amount of `token` that pays the price: the price over the rate, rounded up to the token’s decimals',
  }),
  rate: Type.String({
    description: 'The currency’s units for one whole token, as read at creation',
    examples: ['3012.550000000000000000'],
  }),
  rate_source: Type.String({ enum: ['manual', 'chainlink', 'pegged'] }),
  rate_at: Type.String({ description: 'When the rate was set (manual), reported (the feed’s last answer) or read (pegged)' }),
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
  amount: Type.String({ description: 'What pays the charge, in `token` (a price charge: its first quote’s amount)' }),
  paid_amount: Type.String({
    description:
      'The counted payments, in `token`: their sum; for a price charge paid in several tokens, `paid_fraction` of `amount` (each payment counted at its quote), rounded down',
  }),
  paid_fraction: Type.String({
    description:
      'The counted payments, each divided by its token’s quote amount, summed (18 places, rounded down): `1.000000000000000000` or more is paid in full',
    examples: ['0.500000000000000000'],
  }),
  price: Type.Union(
    [
      Type.Object({
        amount: Type.String({ examples: ['25.00'] }),
        currency: Type.String({ enum: ['USD', 'EUR', 'GBP'] }),
      }),
      Type.Null(),
    ],
    { description: 'The price a price charge was created with; null for a charge of an `amount` of a `token`' },
  ),
  quotes: Type.Array(QuoteSchema, {
    description: 'A price charge’s quotes, locked at creation (the first is `token` and `amount`); empty for a charge of one token',
  }),
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
  amount: Type.Optional(
    Type.Unknown({ description: 'Decimal string or number, > 0, at most the token’s decimals; required unless `price` is given' }),
  ),
  token: Type.Optional(Type.Unknown({ description: 'Symbol of an active token of the wallet; required unless `price` is given' })),
  price: Type.Optional(
    Type.Object(
      {
        amount: Type.Unknown({ description: 'Decimal string (or number), > 0, at most 2 decimal places', examples: ['25.00'] }),
        currency: Type.Unknown({ description: '`USD`, `EUR` or `GBP`', examples: ['USD'] }),
      },
      {
        description:
          'Instead of `amount` and `token` (both given: 422 on `price`): the price in a currency. Each token’s rate is read and locked at creation into `quotes`; a payment in any quoted token counts at its quote. No fresh rate for a requested token: 503 `No fresh rate for {token}/{currency}` with Retry-After.',
      },
    ),
  ),
  tokens: Type.Optional(
    Type.Array(Type.Unknown(), {
      description:
        'With `price`: the symbols of the active tokens the payer may pay in, in the order quoted (the first is the charge’s `token`). Default: every active token of the wallet that has a rate, the native coin first.',
    }),
  ),
  expires: Type.Optional(
    Type.Integer({ minimum: CHARGE_EXPIRES_MIN_S, maximum: CHARGE_EXPIRES_MAX_S, description: 'Seconds, default 300' }),
  ),
  content: Type.Optional(Type.Union([JsonObject, Type.Null()], { description: 'What the payer sees; a JSON object up to 16 KiB' })),
  info: Type.Optional(Type.Union([JsonObject, Type.Null()], { description: 'Merchant metadata; a JSON object up to 16 KiB' })),
});

/** A price charge's price, as asked: `amount` the decimal text normalised to 2 places. */
export interface PriceInput {
  amount: string;
  currency: PriceCurrency;
  /** The tokens asked for, in order; null: every active token with a rate. */
  tokens: WalletTokenRow[] | null;
}

/** A charge to create: `amount` of `token`, or (price charge) `price`, its quotes read at creation. */
export type ChargeInput = ChargeTerms | (Omit<ChargeTerms, 'amount' | 'token'> & { price: PriceInput });

interface ChargeTerms {
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
  const priced = body.price !== undefined;
  let terms: { amount: bigint; token: WalletTokenRow | undefined } | { price: PriceInput | null };
  if (!priced) terms = checkAmountAndToken(body as Record<string, unknown>, activeTokens, errors);
  else if (body.amount !== undefined || body.token !== undefined) {
    errors.price = ['The price field cannot be given with amount or token.'];
    terms = { price: null };
  } else terms = { price: parsePrice(body.price!, body.tokens, activeTokens, errors) };
  if (!priced && body.tokens !== undefined) errors.tokens = ['The tokens field is only allowed with price.'];
  const content = objectText('content', body.content, errors);
  const info = objectText('info', body.info, errors);
  if (Object.keys(errors).length > 0)
    throw validationError(
      orderErrors(errors, ['amount', 'token', 'price', 'price.amount', 'price.currency', 'tokens', 'expires', 'content', 'info']),
    );
  const common = { expires: body.expires ?? CHARGE_EXPIRES_DEFAULT_S, content, info };
  return 'price' in terms ? { ...common, price: terms.price! } : { ...common, amount: terms.amount, token: terms.token! };
}

const PRICE_AMOUNT = /^\d{1,15}(?:\.\d{1,2})?$/;

/** `price` and `tokens` (errors added to `errors`; null when invalid). */
function parsePrice(
  price: { amount: unknown; currency: unknown },
  tokens: unknown[] | undefined,
  activeTokens: WalletTokenRow[],
  errors: FieldErrors,
): PriceInput | null {
  const text = typeof price.amount === 'number' && Number.isFinite(price.amount) ? String(price.amount) : price.amount;
  if (typeof text !== 'string' || text.trim() === '') errors['price.amount'] = ['The price.amount field must be a number.'];
  else if (!PRICE_AMOUNT.test(text.trim()))
    errors['price.amount'] = [
      /^\d+\.\d{3,}$/.test(text.trim())
        ? 'The price.amount field must not have more than 2 decimal places.'
        : 'The price.amount field must be a number.',
    ];
  else if (!/[1-9]/.test(text)) errors['price.amount'] = ['The price.amount field must be greater than 0.'];
  if (!isPriceCurrency(price.currency))
    errors['price.currency'] = [`The selected price.currency is invalid (one of ${PRICE_CURRENCIES.join(', ')}).`];
  let chosen: WalletTokenRow[] | null = null;
  if (tokens !== undefined) {
    chosen = [];
    if (tokens.length === 0) errors.tokens = ['The tokens field must have at least 1 item.'];
    tokens.forEach((symbol, i) => {
      const wanted = typeof symbol === 'string' ? symbol.trim().toUpperCase() : null;
      const token = activeTokens.find((t) => t.symbol.toUpperCase() === wanted);
      if (!token) errors[`tokens.${i}`] = [`The selected tokens.${i} is invalid.`];
      else if (!chosen!.includes(token)) chosen!.push(token);
    });
  }
  if (errors['price.amount'] || errors['price.currency'] || errors.tokens || Object.keys(errors).some((k) => k.startsWith('tokens.')))
    return null;
  const [units, cents = ''] = (price.amount as number | string).toString().trim().split('.');
  return { amount: `${BigInt(units!)}.${cents.padEnd(2, '0')}`, currency: price.currency as PriceCurrency, tokens: chosen };
}
