/** Shared pieces of the wallet, token and balance tests. */
import { expect } from 'vitest';
import type { TestApp, TestUser } from '../helpers/app.js';

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';
export const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

export const WALLET_KEYS = ['id', 'name', 'address', 'description', 'is_mainnet', 'created_at', 'updated_at'].sort();
export const WALLET_DETAIL_KEYS = [...WALLET_KEYS, 'wallet_tokens', 'network'].sort();
export const NETWORK_KEYS = [
  'id',
  'name',
  'rpc_url',
  'rpc_endpoints',
  'chain_id',
  'currency_symbol',
  'block_explorer',
  'preset',
  'sweeper',
].sort();

/** One endpoint's health as the Network object shows it (its figures move with every head read). */
export function endpointOf(origin: string) {
  return expect.objectContaining({ url: origin, ok: expect.any(Boolean) }) as unknown;
}

/** A wallet object without its network's endpoint health (which changes between two reads). */
export function withoutHealth<T extends object>(w: T): T {
  const network = (w as { network?: Record<string, unknown> }).network;
  return network ? { ...w, network: { ...network, rpc_endpoints: '(health)' } } : w;
}
export const TOKEN_KEYS = [
  'id',
  'name',
  'symbol',
  'decimals',
  'is_native',
  'is_active',
  'is_testnet',
  'contract',
  'created_at',
  'updated_at',
].sort();
export const TOKEN_BALANCE_KEYS = [...TOKEN_KEYS, 'balance'].sort();
/** Fields that must never appear in any wallet or token response. */
export const NEVER_RETURNED = ['private_key', 'mnemonic', 'private_key_enc', 'mnemonic_enc', 'user_id', 'network_id', 'wallet_id'];

export function keysOf(o: object): string[] {
  return Object.keys(o).sort();
}

/** Asserts none of the secret or internal fields appears anywhere in a response text. */
export function expectNoHiddenFields(text: string): void {
  for (const f of NEVER_RETURNED) expect(text).not.toContain(`"${f}"`);
}

export async function createWallet(t: TestApp, user: TestUser, networkId: number, name = 'Main') {
  const res = await t.request('POST', '/api/wallet/create', { token: user.token, body: { name, network_id: networkId } });
  expect(res.status, res.text).toBe(200);
  return res.body.data as {
    id: number;
    address: `0x${string}`;
    created_at: string;
    updated_at: string;
    wallet_tokens: Array<{ id: number }>;
    [k: string]: unknown;
  };
}

export interface EventRow {
  id: number;
  user_id: number;
  wallet_id: number;
  type: string;
  name: string;
  payload: Record<string, unknown>;
  dispatched_at: number | null;
}

/** The outbox rows of a wallet, oldest first, optionally of one event name. */
export async function eventsOf(t: TestApp, walletId: number, name?: string): Promise<EventRow[]> {
  let q = t.store.db
    .selectFrom('events')
    .select(['id', 'user_id', 'wallet_id', 'type', 'name', 'payload', 'dispatched_at'])
    .where('wallet_id', '=', walletId);
  if (name) q = q.where('name', '=', name);
  const rows = await q.orderBy('id', 'asc').execute();
  return rows.map((r) => ({ ...r, payload: JSON.parse(r.payload) as Record<string, unknown> }));
}

export async function countEvents(t: TestApp): Promise<number> {
  const row = await t.store.db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
