/** The Charge as the API and the charge events show it. */
import { Type } from '@sinclair/typebox';
import { formatUnits18 } from '../../lib/money.js';
import { formatDateTime, formatDateTimeOrNull } from '../../lib/time.js';
import type { ChargeRow } from './charges.repository.js';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const JsonObject = Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]);

export const ChargeSchema = Type.Object({
  id: Type.Integer(),
  uuid: Type.String(),
  wallet_id: Type.Integer(),
  sub_wallet_id: Type.Integer(),
  token_id: Type.Integer(),
  token: Type.String(),
  address: Type.String(),
  amount: Type.String(),
  paid_amount: Type.String(),
  status: Type.String(),
  mode: Type.String(),
  expires: Type.Integer(),
  expires_at: Type.String(),
  paid_at: Nullable(Type.String()),
  content: JsonObject,
  info: JsonObject,
  created_at: Type.String(),
  updated_at: Type.String(),
});

function parseObject(text: string | null): Record<string, unknown> | null {
  return text === null ? null : (JSON.parse(text) as Record<string, unknown>);
}

export function chargeView(c: ChargeRow) {
  return {
    id: c.id,
    uuid: c.uuid,
    wallet_id: c.wallet_id,
    sub_wallet_id: c.sub_wallet_id,
    token_id: c.token_id,
    token: c.symbol,
    address: c.address,
    amount: formatUnits18(c.amount, c.decimals),
    paid_amount: formatUnits18(c.paid_amount, c.decimals),
    status: c.status,
    mode: c.mode,
    expires: c.expires,
    expires_at: formatDateTime(c.expires_at),
    paid_at: formatDateTimeOrNull(c.paid_at),
    content: parseObject(c.content),
    info: parseObject(c.info),
    created_at: formatDateTime(c.created_at),
    updated_at: formatDateTime(c.updated_at),
  };
}

/** charge.created: the SPEC's fields. */
export function chargeCreatedPayload(c: ChargeRow) {
  return {
    charge_id: c.id,
    wallet_id: c.wallet_id,
    amount: formatUnits18(c.amount, c.decimals),
    token: c.symbol,
    uuid: c.uuid,
    status: c.status,
    expires: c.expires,
    created_at: formatDateTime(c.created_at),
  };
}

/** charge.paid / charge.expired / charge.failed: charge.created's fields plus the outcome. */
export function chargeFinishedPayload(c: ChargeRow, status: 'paid' | 'expired' | 'failed', atMs: number) {
  return {
    ...chargeCreatedPayload(c),
    status,
    address: c.address,
    paid_amount: formatUnits18(c.paid_amount, c.decimals),
    [`${status}_at`]: formatDateTime(atMs),
  };
}
