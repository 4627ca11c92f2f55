/** Shared steps of the charge tests: paying from outside, moving the chain's clock, reading charges. */
import { createWalletClient, http, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { afterAll, beforeAll } from 'vitest';
import { startTestApp, type ManualClock, type StartOptions, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { proxiedNetwork, RpcProxy, waitForCursor } from '../helpers/transfers.js';
import { waitFor } from '../helpers/wait.js';
import { deployErc20, mintErc20 } from '../helpers/erc20.js';

/** anvil's dev account #2: the payer, outside the service. */
export const PAYER = privateKeyToAccount('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a');

export const DATETIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/;

/** Sends `wei` from the payer; resolves with the hash (mined at once on an automining chain). */
export async function pay(rpcUrl: string, to: string, wei: bigint): Promise<Hex> {
  const client = createWalletClient({ account: PAYER, chain: foundry, transport: http(rpcUrl) });
  return client.sendTransaction({ to: to as Address, value: wei });
}

export async function events(t: TestApp, name: string) {
  const rows = await t.store.db.selectFrom('events').select(['payload']).where('name', '=', name).orderBy('id', 'asc').execute();
  return rows.map((r) => JSON.parse(r.payload));
}

export async function latestTimestampS(chain: TestChain): Promise<number> {
  const b = await chain.rpc<{ timestamp: string }>('eth_getBlockByNumber', ['latest', false]);
  return Number(BigInt(b.timestamp));
}

/** The next block is stamped `s` (seconds); it must be later than the latest block. */
export async function stampNextBlock(chain: TestChain, s: number): Promise<void> {
  await chain.rpc('evm_setNextBlockTimestamp', [s]);
}

/** Mines one block stamped `s` seconds (or the next second when the chain is already past it). */
export async function mineAt(chain: TestChain, s: number): Promise<void> {
  const latest = await latestTimestampS(chain);
  await stampNextBlock(chain, Math.max(latest + 1, s));
  await chain.mine(1);
}

/** Moves the service's clock to just after the chain's latest block, so new charges expire after it. */
export async function clockToChain(clock: ManualClock, chain: TestChain): Promise<void> {
  const chainMs = (await latestTimestampS(chain)) * 1000 + 1000;
  if (clock.nowMs() < chainMs) clock.advance(chainMs - clock.nowMs());
}

export function chargeApi(t: TestApp, walletId: number, token: string) {
  return {
    create: async (body: Record<string, unknown>) => {
      const res = await t.request('POST', `/api/wallet/${walletId}/charge/create`, { token, body });
      if (res.status !== 200) throw new Error(`charge create: ${res.status} ${res.text}`);
      return res.body.data;
    },
    show: async (id: number | string) => (await t.request('GET', `/api/wallet/${walletId}/charge/show/${id}`, { token })).body.data,
    /** Polls until `pred` holds for the charge; returns it. */
    until: (id: number, pred: (c: any) => boolean, message: string, timeoutMs = 15_000) =>
      waitFor(
        async () => {
          const c = (await t.request('GET', `/api/wallet/${walletId}/charge/show/${id}`, { token })).body.data;
          return pred(c) ? c : null;
        },
        { message, timeoutMs },
      ),
  };
}

export async function balanceOf(chain: TestChain, address: string): Promise<bigint> {
  return BigInt(await chain.rpc<string>('eth_getBalance', [address, 'latest']));
}

/**
 * The set-up of the sweep and reconciliation tests: a fresh anvil registered as a network, a test
 * app on `clock` with its workers on (charges and the watcher polled every 50 ms), a user, and the
 * watcher's cursor set. The caller closes `t` and stops `chain` after its tests.
 */
export async function startSweepingService(
  clock: ManualClock,
): Promise<{ chain: TestChain; t: TestApp; alice: TestUser; networkId: number }> {
  const chain = await startTestChain();
  const t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
  const networkId = await chain.register(t);
  const alice = await t.createUser();
  t.startWorkers();
  await waitForCursor(t, networkId);
  return { chain, t, alice, networkId };
}

/**
 * A wallet named `name` holding gas for its deposit's token sweep (`fund` puts it there), a new
 * 6-decimal token TUSD on it, and a charge of 5 TUSD paid in full from outside.
 */
export async function tokenChargePaid(
  t: TestApp,
  chain: TestChain,
  alice: TestUser,
  opts: { networkId: number; clock: ManualClock; name: string; fund: (address: Address) => Promise<unknown> },
) {
  const wallet = (
    await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: opts.name, network_id: opts.networkId } })
  ).body.data as { id: number; address: Address };
  await opts.fund(wallet.address);
  const usd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  const added = await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: alice.token, body: { contract: usd } });
  if (added.status !== 200) throw new Error(`token/add: ${added.status} ${JSON.stringify(added.body)}`);
  const api = chargeApi(t, wallet.id, alice.token);
  await clockToChain(opts.clock, chain);
  const c = await api.create({ amount: '5', token: 'TUSD', expires: 600 });
  await mintErc20(chain.rpcUrl, usd, c.address as Address, 5_000_000n);
  await api.until(c.id, (x) => x.status === 'paid', 'paid');
  return { wallet, usd, api, c };
}

/** What `proxiedChargeSuite` starts, set once the suite's first `beforeAll` has run. */
export interface ProxiedChargeSuite {
  chain: TestChain;
  proxy: RpcProxy;
  t: TestApp;
  user: TestUser;
  networkId: number;
}

/**
 * A charge suite behind a real JSON-RPC proxy, with its own `beforeAll` and `afterAll`: a chain,
 * the proxy in front of it, the app with its workers (the charges and the watcher polled every
 * 50 ms; `app` adds to or overrides that) on a network through the proxy, and a user.
 */
export function proxiedChargeSuite(clock: ManualClock, app: StartOptions = {}): ProxiedChargeSuite {
  const s = {} as ProxiedChargeSuite;
  beforeAll(async () => {
    s.chain = await startTestChain();
    s.proxy = await RpcProxy.start(s.chain.rpcUrl);
    s.t = await startTestApp({ clock, workers: true, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' }, ...app });
    s.networkId = await proxiedNetwork(s.t, s.proxy);
    s.user = await s.t.createUser();
  });
  afterAll(async () => {
    await s.t?.close();
    await s.proxy?.down();
    await s.chain?.stop();
  });
  return s;
}
