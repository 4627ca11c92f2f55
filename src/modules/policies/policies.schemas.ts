/**
 * Policy and allowlist shapes on the wire. The limit maps are checked by `parsePolicyInput`
 * (each amount against its token's decimals, with the transfer amount's wording); the schemas
 * document them and serialise the answers.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { component } from '../../http/components.js';
import { getAddress, zeroAddress, type Address } from 'viem';
import { isValidAddress } from '../../chain/address.js';
import type { WalletTokenRow } from '../../db/types.js';
import { validationError, type FieldErrors } from '../../errors.js';
import { checkDecimalField } from '../tokens/amount-field.js';
import { LIMIT_KINDS, type LimitKind } from './policies.repository.js';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

const LimitMap = (what: string) =>
  Type.Record(Type.String(), Type.String({ description: 'Decimal with 18 places' }), { description: `Token symbol → ${what}` });

export const PolicySchema = Type.Object({
  per_transaction: LimitMap('the most one transfer may send'),
  daily: LimitMap('the most the wallet may send in any 24 hours (pending and confirmed transfers counted)'),
  approval_above: LimitMap('approval threshold: a transfer over it is held awaiting_approval'),
  allowlist_only: Type.Boolean({ description: 'Transfers only to addresses on the allowlist' }),
  updated_at: Nullable(Type.String({ description: 'YYYY-MM-DD HH:MM:SS (UTC); null while the policy was never set' })),
});

const LimitInput = (what: string) =>
  Type.Optional(
    Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), {
      maxProperties: 100,
      description: `Token symbol → ${what} (decimal string or number, > 0, at most the token's decimals), or null to remove it; symbols not named stay as they are`,
    }),
  );

export const PolicyBody = Type.Object({
  per_transaction: LimitInput('the most one transfer may send'),
  daily: LimitInput('the most sent in any 24 hours'),
  approval_above: LimitInput('approval threshold'),
  allowlist_only: Type.Optional(Type.Boolean({ description: 'Transfers only to addresses on the allowlist' })),
});

export const AllowlistEntrySchema = Type.Object({
  id: Type.Integer(),
  address: Type.String(),
  label: Type.String(),
  created_at: Type.String({ description: 'YYYY-MM-DD HH:MM:SS (UTC)' }),
});

export const PolicyRef = component('Policy', PolicySchema);
export const AllowlistEntryRef = component('AllowlistEntry', AllowlistEntrySchema);

export const AllowlistAddBody = Type.Object({
  address: Type.Optional(Type.Unknown({ description: 'EVM address (EIP-55 checksum if mixed case), not the zero address' })),
  label: Type.Optional(Type.String({ maxLength: 255, description: "What the address is (e.g. a supplier's name)" })),
});

export const AllowlistEntryParams = Type.Object({ wallet: Type.String(), entry: Type.String() });

/** A policy change: per kind, token id → amount in base units or null (remove). */
export interface PolicyInput {
  limits: { kind: LimitKind; tokenId: number; amount: bigint | null }[];
  allowlistOnly?: boolean;
}

/** The limit maps against the wallet's active tokens; 422 with `<kind>.<symbol>` fields. */
export function parsePolicyInput(body: Record<string, unknown>, tokens: WalletTokenRow[]): PolicyInput {
  const errors: FieldErrors = {};
  const limits: PolicyInput['limits'] = [];
  for (const kind of LIMIT_KINDS) {
    const map = body[kind];
    if (map === undefined || map === null) continue;
    for (const [symbol, raw] of Object.entries(map as Record<string, unknown>)) {
      const field = `${kind}.${symbol}`;
      const token = tokens.find((t) => t.symbol.toUpperCase() === symbol.trim().toUpperCase());
      if (!token) {
        errors[field] = ['The selected token is invalid.'];
        continue;
      }
      if (raw === null) {
        limits.push({ kind, tokenId: token.id, amount: null });
        continue;
      }
      const amount = checkDecimalField({ [field]: raw }, field, token.decimals, errors, { required: true });
      if (amount !== null) limits.push({ kind, tokenId: token.id, amount });
    }
  }
  if (Object.keys(errors).length > 0) throw validationError(errors);
  const input: PolicyInput = { limits };
  if (typeof body.allowlist_only === 'boolean') input.allowlistOnly = body.allowlist_only;
  return input;
}

/** The allowlist address: required, a valid non-zero address (checksummed on the way in). */
export function parseAllowlistAddress(body: Record<string, unknown>): Address {
  const address = body.address;
  if (address === undefined || address === null || (typeof address === 'string' && address.trim() === '')) {
    throw validationError({ address: ['The address field is required.'] });
  }
  if (typeof address !== 'string' || !isValidAddress(address) || address.toLowerCase() === zeroAddress) {
    throw validationError({ address: ['The address field must be a valid address.'] });
  }
  return getAddress(address);
}
