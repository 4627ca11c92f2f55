/**
 * Shared pieces of the transaction tests: a JSON-RPC proxy in front of anvil (to take the node
 * away for real, or to swallow one method), funded wallets made through the API, and readers
 * for the database rows the assertions look at.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicClient, createWalletClient, http, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { startTestApp, type TestApp, type TestUser } from './app.js';
import { startTestChain, type TestChain } from './chain.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { waitFor } from './wait.js';

/** anvil's dev account #1 (a sender outside the service). */
export const OUTSIDER_KEY: Hex = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
export const OUTSIDER = privateKeyToAccount(OUTSIDER_KEY);
/** A recipient outside the service (anvil dev account #9). */
export const RECIPIENT: Address = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720';

export const ETH = 10n ** 18n;

/**
 * What the proxy does with a call to one method, instead of just forwarding it (as another node
 * behind a load balancer, or a flaky one, would answer):
 * - `error`: answers a JSON-RPC error without forwarding (with HTTP `status`, 200 unless told);
 *   `forward-error`: forwards (the node acts on it) then answers the error; `forward-timeout`: forwards, then never answers (the
 *   connection is cut after `ms`);
 * - `null`: answers `result: null` without forwarding (e.g. eth_getTransactionByHash of a node
 *   that never saw the transaction);
 * - `lower`: forwards eth_blockNumber and answers `by` blocks less (a lagging node);
 * - `other-node`: asks the node at `url` instead (a node on another fork behind the same balancer);
 * - `result`: answers `result` without forwarding (e.g. `[]` for eth_getLogs of a node that does
 *   not have the blocks yet).
 * `times` limits the rule to that many calls (then it is removed); `match` to calls whose
 * params it accepts; `delayMs` holds the call that long first (a slow node); `headers` are sent
 * with an error's answer (e.g. `retry-after`). A rule set for the method `*` applies to every
 * method without a rule of its own.
 */
export type RpcRule = {
  times?: number;
  match?: (params: unknown[]) => boolean;
  delayMs?: number;
  /** The answer waits until this settles (the test releases it), after any `delayMs`. */
  until?: Promise<unknown>;
} & (
  | { action: 'error'; message: string; code?: number; status?: number; headers?: Record<string, string> }
  | { action: 'forward-error'; message: string; code?: number; status?: number; headers?: Record<string, string> }
  | { action: 'forward-timeout'; ms: number }
  | { action: 'null' }
  | { action: 'lower'; by: number }
  | { action: 'other-node'; url: string }
  | { action: 'result'; result: unknown }
);

type Answer = { kind: 'json'; status: number; body: unknown; headers?: Record<string, string> } | { kind: 'cut'; afterMs: number };

/** One call as the proxy saw it: when it arrived, and the action of the rule it met (if any). */
export interface SeenCall {
  method: string;
  atMs: number;
  action: RpcRule['action'] | null;
}

interface RpcCall {
  jsonrpc?: string;
  id?: unknown;
  method?: string;
  params?: unknown[];
}

/**
 * A real HTTP proxy for JSON-RPC. `down()` closes the port (connection refused, as a dead
 * node); `drop(method)` cuts the connection of any request calling that method (the caller
 * sees a network error, as if the node vanished mid-request); `rule(method, rule)` answers
 * that method otherwise (RpcRule). The service batches its calls: each call of a batch is
 * answered under its own rule, and the batch as one array.
 */
export class RpcProxy {
  private server: Server | null = null;
  private readonly dropped = new Set<string>();
  private readonly rules = new Map<string, RpcRule>();
  calls: string[] = [];
  /** Every call with its arrival time (Date.now()) and the rule it met: `calls` with times. */
  seen: SeenCall[] = [];
  /** The request paths (with their query) the proxy was called at: it answers at any path, as providers whose key is in the URL do. */
  readonly paths = new Set<string>();

  private constructor(
    readonly target: string,
    public port: number,
  ) {}

  static async start(target: string): Promise<RpcProxy> {
    const p = new RpcProxy(target, 0);
    await p.up();
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  drop(method: string): void {
    this.dropped.add(method);
  }

  allow(method: string): void {
    this.dropped.delete(method);
    this.rules.delete(method);
  }

  rule(method: string, rule: RpcRule): void {
    this.rules.set(method, rule);
  }

  /** The rule for a single call, used up when its `times` run out. */
  private take(call: RpcCall): RpcRule | undefined {
    const key = this.rules.has(String(call.method)) ? String(call.method) : '*';
    const r = this.rules.get(key);
    if (!r || (r.match && !r.match(call.params ?? []))) return undefined;
    if (r.times !== undefined) {
      r.times -= 1;
      if (r.times <= 0) this.rules.delete(key);
    }
    return r;
  }

  private async forward(body: string, url = this.target): Promise<{ status: number; text: string }> {
    const upstream = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return { status: upstream.status, text: await upstream.text() };
  }

  /** The answer to one call (alone, or one element of a batch), under its rule if it has one. */
  private async answer(call: RpcCall): Promise<Answer> {
    const body = JSON.stringify(call);
    const rule = this.take(call);
    this.seen.push({ method: String(call.method), atMs: Date.now(), action: rule?.action ?? null });
    if (rule?.delayMs) await new Promise((r) => setTimeout(r, rule.delayMs));
    if (rule?.until) await rule.until.catch(() => undefined);
    const json = (status: number, payload: object, headers?: Record<string, string>): Answer => ({
      kind: 'json',
      status,
      body: { jsonrpc: '2.0', id: call.id ?? null, ...payload },
      headers,
    });
    const forwarded = async (url?: string): Promise<Answer> => {
      const up = await this.forward(body, url);
      return { kind: 'json', status: up.status, body: JSON.parse(up.text) as unknown };
    };
    switch (rule?.action) {
      case undefined:
        return forwarded();
      case 'error':
        return json(rule.status ?? 200, { error: { code: rule.code ?? -32000, message: rule.message } }, rule.headers);
      case 'forward-error':
        await this.forward(body);
        return json(rule.status ?? 200, { error: { code: rule.code ?? -32603, message: rule.message } }, rule.headers);
      case 'result':
        return json(200, { result: rule.result });
      case 'forward-timeout':
        await this.forward(body);
        return { kind: 'cut', afterMs: rule.ms };
      case 'null':
        return json(200, { result: null });
      case 'other-node':
        return forwarded(rule.url);
      case 'lower': {
        const up = JSON.parse((await this.forward(body)).text) as { result: string };
        return json(200, { result: `0x${Math.max(0, Number(BigInt(up.result)) - rule.by).toString(16)}` });
      }
    }
  }

  async up(): Promise<void> {
    if (this.server) return;
    const server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = null;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    let parsed: RpcCall | RpcCall[] | null = null;
    try {
      parsed = JSON.parse(body) as RpcCall | RpcCall[];
    } catch {
      // forwarded as is
    }
    const calls = parsed === null ? [] : Array.isArray(parsed) ? parsed : [parsed];
    const methods = calls.map((m) => String(m.method));
    this.calls.push(...methods);
    this.paths.add(req.url ?? '');
    if (methods.some((m) => this.dropped.has(m))) {
      req.socket.destroy();
      return;
    }
    try {
      if (parsed === null) {
        const upstream = await this.forward(body);
        res.writeHead(upstream.status, { 'content-type': 'application/json' });
        res.end(upstream.text);
        return;
      }
      // A batch is answered call by call, each under its own rule, as one array.
      const answers = await Promise.all(calls.map((c) => this.answer(c)));
      const cut = answers.filter((a) => a.kind === 'cut');
      if (cut.length > 0) {
        setTimeout(() => req.socket.destroy(), Math.max(...cut.map((a) => a.afterMs)));
        return;
      }
      const json = answers as Array<Extract<Answer, { kind: 'json' }>>;
      res.writeHead(
        Math.max(...json.map((a) => a.status)),
        Object.assign({ 'content-type': 'application/json' }, ...json.map((a) => a.headers ?? {})),
      );
      res.end(JSON.stringify(Array.isArray(parsed) ? json.map((a) => a.body) : json[0]!.body));
    } catch {
      req.socket.destroy();
    }
  }
}

export function publicClient(rpcUrl: string) {
  return createPublicClient({ chain: foundry, transport: http(rpcUrl), cacheTime: 0, pollingInterval: 50 });
}

/** Sends `wei` from the outsider account to `to` (its own block on an automining anvil); returns the hash. */
export async function sendFromOutsider(rpcUrl: string, to: Address, wei: bigint): Promise<Hex> {
  const wallet = createWalletClient({ account: OUTSIDER, chain: foundry, transport: http(rpcUrl) });
  const hash = await wallet.sendTransaction({ to, value: wei });
  await publicClient(rpcUrl).waitForTransactionReceipt({ hash, timeout: 20_000 });
  return hash;
}

/** A signed transfer from the outsider, not sent (for anvil_reorg to include). */
export async function signFromOutsider(rpcUrl: string, to: Address, wei: bigint, nonce: number): Promise<Hex> {
  const client = publicClient(rpcUrl);
  const gasPrice = await client.getGasPrice();
  return OUTSIDER.signTransaction({ chainId: 31337, type: 'legacy', nonce, gas: 21000n, gasPrice: gasPrice * 2n, to, value: wei });
}

export interface FundedWallet {
  id: number;
  address: Address;
}

/** A wallet made through the API on `networkId`, holding `wei` of ETH. */
export async function fundedWallet(t: TestApp, chain: TestChain, user: TestUser, networkId: number, wei: bigint): Promise<FundedWallet> {
  const res = await t.request('POST', '/api/wallet/create', {
    token: user.token,
    body: { name: `w-${Date.now()}`, network_id: networkId },
  });
  if (res.status !== 200) throw new Error(`wallet create failed: ${res.status} ${res.text}`);
  await chain.setBalance(res.body.data.address, wei);
  return { id: res.body.data.id, address: res.body.data.address };
}

export async function waitForCursor(t: TestApp, networkId: number, atLeast = 0): Promise<number> {
  const row = await waitFor(
    async () => {
      const c = await t.store.db.selectFrom('chain_cursors').select('block_number').where('network_id', '=', networkId).executeTakeFirst();
      return c && Number(c.block_number) >= atLeast ? c : null;
    },
    { timeoutMs: 20_000, message: `cursor of network ${networkId} at ${atLeast}` },
  );
  return Number(row.block_number);
}

/** Polls the show route until the transaction has `status`. */
export async function waitForStatus(t: TestApp, user: TestUser, walletId: number, txId: number, status: string, timeoutMs = 20_000) {
  return waitFor(
    async () => {
      const r = await t.request('GET', `/api/wallet/${walletId}/transaction/show/${txId}`, { token: user.token });
      return r.status === 200 && r.body.data.status === status ? r.body.data : null;
    },
    { timeoutMs, message: `transaction ${txId} ${status}` },
  );
}

export async function eventsOf(t: TestApp, walletId: number, name?: string) {
  let q = t.store.db.selectFrom('events').select(['id', 'name', 'payload']).where('wallet_id', '=', walletId).orderBy('id', 'asc');
  if (name) q = q.where('name', '=', name);
  const rows = await q.execute();
  return rows.map((r) => ({ id: r.id, name: r.name, payload: JSON.parse(r.payload) as Record<string, any> }));
}

export async function txRows(t: TestApp, walletId: number) {
  return t.store.db
    .selectFrom('transactions')
    .select([
      'id',
      'type',
      'status',
      'amount',
      'tx_hash',
      'nonce',
      'block_number',
      'block_hash',
      'log_index',
      'seq',
      'gas_used',
      'gas_price',
      'error',
    ])
    .where('wallet_id', '=', walletId)
    .orderBy('id', 'asc')
    .execute();
}

/** Exact 18-place string of a wei amount (the API's decimal shape). */
export function dec18(wei: bigint): string {
  const neg = wei < 0n;
  const m = neg ? -wei : wei;
  return `${neg ? '-' : ''}${m / ETH}.${(m % ETH).toString().padStart(18, '0')}`;
}

/** Wei of an 18-place string of the API ("0.000000001000000000" → 10^9). */
export const wei18 = (s: string): bigint => BigInt(s.replace('.', ''));

/**
 * The fee preview's `high` max fee per gas, in wei, for a small ETH transfer from the wallet (it
 * must hold a little ETH). Explicit fees above 3× it are refused (the fee cap), so tests that
 * name their fees take them from it rather than from a fixed gwei figure the market may be under.
 */
export async function highMaxFeePerGas(t: TestApp, user: TestUser, walletId: number): Promise<bigint> {
  const res = await t.request(
    'GET',
    `/api/wallet/${walletId}/transaction/fees?token=ETH&address=${RECIPIENT}&amount=0.000000000000000001`,
    { token: user.token },
  );
  if (res.status !== 200) throw new Error(`fee preview failed: ${res.status} ${res.text}`);
  return wei18(res.body.data.levels.high.max_fee_per_gas as string);
}

/** Registers a network whose RPC is `proxy` (in front of the test chain) and waits for its first cursor. */
export async function proxiedNetwork(t: TestApp, proxy: RpcProxy): Promise<number> {
  const n = await upsertNetwork(
    t.store.db,
    {
      name: 'Proxied devnet',
      rpc_url: proxy.url,
      chain_id: 31337,
      currency_symbol: 'ETH',
      block_explorer: '',
      is_mainnet: false,
      confirmations: 1,
    },
    Date.now(),
  );
  await waitForCursor(t, n.id);
  return n.id;
}

/**
 * The service with its workers (WATCHER_RECHECK_MS=300 and `env`), a test chain behind an
 * RpcProxy registered as a network, and a user. `close` stops all three.
 */
export async function startProxiedSuite(env: Record<string, string> = {}) {
  const t = await startTestApp({ workers: true, env: { WATCHER_RECHECK_MS: '300', ...env } });
  const chain = await startTestChain();
  const proxy = await RpcProxy.start(chain.rpcUrl);
  const networkId = await proxiedNetwork(t, proxy);
  const user = await t.createUser();
  return {
    t,
    chain,
    proxy,
    networkId,
    user,
    close: async () => {
      await t.close();
      await proxy.down();
      await chain.stop();
    },
  };
}
