/**
 * The seeded workload: every money operation, through the HTTP API only, each POST with an
 * Idempotency-Key (the Api client sends it again with the same key when an answer is cut).
 * Outside accounts fund the wallets with real transfers and pay the charges on chain.
 */
import { formatUnits, parseUnits, type Address } from 'viem';
import type { SimChain } from './chain.js';
import { TOKEN_DECIMALS, TOKEN_SYMBOL } from './chain.js';
import type { Prng } from './prng.js';
import { sleep, type Api } from './service.js';

export interface SimWallet {
  id: number;
  address: Address;
}

export type PayPlan = 'exact' | 'under' | 'over' | 'split' | 'late' | 'never' | 'contract' | 'two' | 'two-under';

export interface SimCharge {
  id: number;
  walletId: number;
  address: Address;
  token: 'ETH' | typeof TOKEN_SYMBOL;
  amount: bigint;
  plan: PayPlan;
  expiresAtMs: number;
  /** A price charge's quotes (docs/prices.md), base units of each token; it is paid part in each (`two`, `two-under`). */
  quotes?: { token: bigint; eth: bigint };
}

/** An accepted create: the request's key and the transaction the service answered with. */
export interface Accepted {
  key: string;
  walletId: number;
  id: number;
  kind: string;
}

/** A create the policy held for approval, and what the workload did with it. */
export interface Held {
  walletId: number;
  id: number;
  /** `approved`: an approve was answered 200 (or its answer was lost and the retry found it decided). */
  decision: 'approved' | 'rejected' | 'left' | 'refused';
}

/** A refund the service answered a refund request with, and what became of its claim. */
export interface SimRefund {
  walletId: number;
  chargeId: number;
  id: number;
  kind: 'partial' | 'whole' | 'overpaid' | 'claim' | 'rest';
  /** A claim: `claimed` once a claim was answered 200 (or "already claimed" after a cut answer). */
  claim?: 'claimed' | 'unclaimed';
}

/** A permanent deposit address the service answered a create with (docs/deposit-addresses.md). */
export interface SimDepositAddress {
  walletId: number;
  id: number;
  address: string;
  reference: string;
}

/** A payout the service answered a create with, and the workload's decision when it was held. */
export interface SimPayout {
  walletId: number;
  id: number;
  token: string;
  decision?: 'approved' | 'rejected' | 'left';
}

/**
 * A request the service answered with a refusal (a final 4xx): whatever it would have sent must
 * never mine. `to`: the request's recipients, each drawn fresh (`recipient()`), so a payment to
 * one on chain can only be that request's; `spender`: a contract call's approved address (in its
 * calldata); `txId`: the transaction a speed-up, cancel or approve was about.
 */
export interface Refusal {
  what: string;
  walletId: number;
  key: string | null;
  status: number;
  message: string;
  to?: string[];
  spender?: string;
  txId?: number;
  replace?: 'speed-up' | 'cancel';
  /** The request was sent more than once (an earlier attempt cut by a kill or a fault): the refusal answered a retry. */
  retried?: boolean;
}

/**
 * A wallet of the simulation that spends under a spending policy (docs/money-out.md), as the run
 * set it: its limits (token symbol → decimal amount), whether it pays only listed addresses, the
 * addresses and contracts it listed, and whether the general lanes leave it alone (its allowlist
 * would refuse their fresh recipients: it spends only through the token-call lane).
 */
export interface PolicedWallet {
  w: SimWallet;
  policy: {
    per_transaction: Record<string, string>;
    daily: Record<string, string>;
    approval_above: Record<string, string>;
    allowlist_only?: boolean;
  };
  allowlist: Address[];
  tokenCallsOnly: boolean;
}

/**
 * A contract call sent to a policed wallet by the token-call lane (`token-call-*` operations),
 * and what it was answered: 200 with the transaction's status (`pending`, `awaiting_approval`),
 * or the 4xx and its message. `amount` is in the token's base units (0 for a call that is not a
 * token call); `to` the recipient or spender in its calldata (a non-token call's argument).
 */
export interface TokenCallRecord {
  walletId: number;
  fn: 'transfer' | 'approve' | 'plain' | 'forwarder' | 'mint';
  intent: 'within' | 'over-per-transaction' | 'unlimited' | 'daily-burst' | 'unlisted' | 'non-token';
  contract: string;
  to: string;
  amount: bigint;
  key?: string;
  answer?: { status: number; message: string; id?: number; txStatus?: string };
}

/** Where a refused create would have sent money, when the workload names it (overrides `refusedTo`). */
type CreateOpts = { refusal?: Pick<Refusal, 'to' | 'spender'>; legit?: RegExp; record?: TokenCallRecord };

const MAX_UINT256 = 2n ** 256n - 1n;
/** Legit refusals of the token-call lane: the policy's, the balance's, the pending cap's. */
const TOKEN_CALL_LEGIT =
  /Insufficient balance|Too many pending|^Policy: over the (per-transaction|daily) limit$|^Policy: address not on the allowlist$/;

export const decimalsOf = (token: string): number => (token === TOKEN_SYMBOL ? TOKEN_DECIMALS : 18);
const fmt = (v: bigint, token: string): string => formatUnits(v, decimalsOf(token));
/** An 18-place amount of the API in the token's base units. */
const units = (v: string, token: string): bigint => {
  const [i, f = ''] = v.split('.');
  return BigInt(i! + f.padEnd(18, '0').slice(0, 18)) / 10n ** BigInt(18 - decimalsOf(token));
};
const ETH = 10n ** 18n;
const UNIT = 10n ** BigInt(TOKEN_DECIMALS);

export class Workload {
  readonly ops: Record<string, number> = {};
  readonly accepted: Accepted[] = [];
  readonly charges: SimCharge[] = [];
  /** Creates answered `awaiting_approval` (the policed wallet's token transfers over its approval_above). */
  readonly held: Held[] = [];
  /** Payouts the service answered a create with (a retried key answers the same one). */
  readonly payouts: SimPayout[] = [];
  /** Permanent deposit addresses the service answered a create with. */
  readonly depositAddresses: SimDepositAddress[] = [];
  /** Refunds the service answered a refund request with (by the request's key: a retry answers the same one). */
  readonly refunds: SimRefund[] = [];
  /** The token-call lane's calls to the policed wallets, with their answers. */
  readonly tokenCalls: TokenCallRecord[] = [];
  /** Keys answered with two different transactions (a double create). */
  readonly keyConflicts: string[] = [];
  /** Speed-ups and cancels answered 200 (the transaction's id and what it was). */
  readonly replacements: Array<{ txId: number; kind: 'speed-up' | 'cancel' }> = [];
  /** Every request answered a final 4xx that could have moved money (checked: nothing of it mined). */
  readonly refusals: Refusal[] = [];
  /** 4xx answers the workload did not expect (its requests are valid), by status and message. */
  readonly unexpected: string[] = [];
  private readonly tasks: Promise<void>[] = [];
  private n = 0;
  /** The wallets the general lanes pick from (all but those that spend only through token calls). */
  private readonly general: SimWallet[];

  constructor(
    private readonly api: Api,
    private readonly chain: SimChain,
    private readonly prng: Prng,
    readonly wallets: SimWallet[],
    private readonly seed: number,
    readonly policed: PolicedWallet[] = [],
  ) {
    this.general = wallets.filter((w) => !policed.some((p) => p.w.id === w.id && p.tokenCallsOnly));
  }

  private count(op: string): void {
    this.ops[op] = (this.ops[op] ?? 0) + 1;
  }

  private key(): string {
    return `sim-${this.seed}-${++this.n}`;
  }

  private outsider() {
    return this.prng.pick(this.chain.outsiders.slice(1));
  }

  private recipient(): Address {
    let hex = '';
    while (hex.length < 40) hex += Math.floor(this.prng.next() * 16).toString(16);
    return `0x${hex}`;
  }

  /** One operation, picked by the seeded stream. */
  async step(): Promise<void> {
    const op = this.prng.weighted({
      native: 4,
      token: 3,
      contract: 1,
      'wallet-to-wallet': 1,
      burst: 1,
      fund: 1,
      charge: 5,
      payout: 1,
      'deposit-address': 2,
      rename: 1,
      'token-call': 4,
    });
    const w = this.prng.pick(this.general);
    switch (op) {
      case 'native':
        return this.transfer(w, 'ETH', this.prng.bigint(ETH / 1000n, ETH / 50n), this.recipient());
      case 'token':
        // The policed wallet's amounts straddle its approval_above (100) and per-transaction (150)
        // limits, so held, refused and plain transfers all come up in a short run.
        return this.transfer(
          w,
          TOKEN_SYMBOL,
          w.id === this.wallets[1]?.id ? this.prng.bigint(50n * UNIT, 170n * UNIT) : this.prng.bigint(UNIT, 500n * UNIT),
          this.recipient(),
        );
      case 'contract':
        return this.contractCall(w);
      case 'wallet-to-wallet': {
        const other = this.general.find((x) => x.id !== w.id) ?? w;
        return this.transfer(
          w,
          this.prng.chance(0.5) ? 'ETH' : TOKEN_SYMBOL,
          this.prng.chance(0.5) ? ETH / 100n : 3n * UNIT,
          other.address,
          'wallet-to-wallet',
        );
      }
      case 'burst':
        return this.burst(w, this.prng.int(3, 6));
      case 'fund':
        return this.fund(w);
      case 'charge':
        return this.charge(w);
      case 'payout':
        return this.payout(w);
      case 'deposit-address':
        return this.depositAddress(w);
      case 'rename':
        return this.rename(w);
      case 'token-call':
        return this.tokenCall();
    }
  }

  /**
   * A contract call to a policed wallet's token or to another contract, through the
   * contract-call route (`function`/`args`, `amount` 0), policed by what it does
   * (docs/money-out.md, "Contract calls: policed by what they do"): `transfer`/`approve` of the
   * token within the limits (some over `approval_above`: held, then decided like a held
   * transfer), over `per_transaction`, an unlimited approve (2^256-1), on a wallet with a daily
   * limit a burst of concurrent calls whose sum passes it, on an allowlist_only wallet a call to
   * an unlisted recipient, a plain transfer of the token between the calls (the daily limit
   * counts both), and calls that are not token calls (the forwarder's `payNative`, the token's
   * `mint`): held for approval unless the contract is allowlisted. Each answer is recorded.
   */
  private async tokenCall(): Promise<void> {
    if (this.policed.length === 0) return;
    const p = this.prng.pick(this.policed);
    const limit = (k: 'per_transaction' | 'daily' | 'approval_above'): bigint | null => {
      const v = p.policy[k][TOKEN_SYMBOL];
      return v === undefined ? null : units(v, TOKEN_SYMBOL);
    };
    const perTx = limit('per_transaction') ?? 200n * UNIT;
    const above = limit('approval_above') ?? perTx;
    const daily = limit('daily');
    const listed = p.policy.allowlist_only === true;
    const listedTo = p.allowlist.filter((a) => a.toLowerCase() !== this.chain.forwarder.toLowerCase());
    // On an allowlist_only wallet the lane pays listed addresses, except when it means not to.
    const to = (): Address => (listed ? this.prng.pick(listedTo) : this.recipient());
    const kind = this.prng.weighted({
      transfer: 3,
      approve: 3,
      over: 2,
      unlimited: 1,
      // Weight 0: never picked (on a wallet without a daily limit, or not allowlist_only).
      'daily-burst': daily !== null ? 2 : 0,
      unlisted: listed ? 1 : 0,
      plain: listed ? 1 : 0,
      'non-token': 2,
    });
    const fn = (): 'transfer' | 'approve' => (this.prng.chance(0.5) ? 'transfer' : 'approve');
    switch (kind) {
      case 'transfer':
      case 'approve':
        // Straddles approval_above and per_transaction: sent, held, and refused all come up.
        return this.sendTokenCall(p, kind, 'within', to(), this.prng.bigint(above / 2n, (perTx * 115n) / 100n));
      case 'over':
        return this.sendTokenCall(p, fn(), 'over-per-transaction', to(), this.prng.bigint(perTx + 1n, 2n * perTx));
      case 'unlimited':
        return this.sendTokenCall(p, 'approve', 'unlimited', to(), MAX_UINT256);
      case 'unlisted':
        return this.sendTokenCall(p, fn(), 'unlisted', this.recipient(), this.prng.bigint(1n, above));
      case 'plain':
        return this.sendTokenCall(p, 'plain', 'within', to(), this.prng.bigint(1n, above));
      case 'daily-burst': {
        // Concurrent creates whose sum passes the daily limit whatever was spent before: each under
        // approval_above (sent at once, not held), as many as the limit over the smallest of them, plus one.
        const lo = (above * 8n) / 10n;
        const n = Number(daily! / lo) + 1;
        const calls = Array.from({ length: Math.min(n, 12) }, () => ({
          fn: this.prng.chance(0.2) ? ('plain' as const) : fn(),
          to: to(),
          amount: this.prng.bigint(lo, above),
        }));
        await Promise.all(calls.map((c) => this.sendTokenCall(p, c.fn, 'daily-burst', c.to, c.amount)));
        return this.count(`token-call daily burst of ${calls.length}`);
      }
      case 'non-token':
        return this.prng.chance(0.7)
          ? this.sendTokenCall(p, 'forwarder', 'non-token', this.recipient(), 0n)
          : this.sendTokenCall(p, 'mint', 'non-token', this.recipient(), this.prng.bigint(1n, UNIT));
    }
  }

  private async sendTokenCall(
    p: PolicedWallet,
    fn: TokenCallRecord['fn'],
    intent: TokenCallRecord['intent'],
    to: Address,
    amount: bigint,
  ): Promise<void> {
    const contract = fn === 'forwarder' ? this.chain.forwarder : this.chain.token;
    const record: TokenCallRecord = { walletId: p.w.id, fn, intent, contract, to, amount };
    this.tokenCalls.push(record);
    // A listed recipient is paid by other requests too: a refusal names it only when it is fresh.
    const fresh = !p.allowlist.some((a) => a.toLowerCase() === to.toLowerCase());
    const kind = `token-call-${fn}-${intent}`;
    if (fn === 'plain') {
      await this.create(p.w, { amount: fmt(amount, TOKEN_SYMBOL), token: TOKEN_SYMBOL, address: to }, kind, {
        refusal: fresh ? { to: [to] } : {},
        legit: TOKEN_CALL_LEGIT,
        record,
      });
      return;
    }
    const body =
      fn === 'forwarder'
        ? { amount: '0', token: 'ETH', address: contract, function: 'payNative(address)', args: [to] }
        : { amount: '0', token: 'ETH', address: contract, function: `${fn}(address,uint256)`, args: [to, amount.toString()] };
    const id = await this.create(p.w, body, kind, { refusal: fresh ? { spender: to } : {}, legit: TOKEN_CALL_LEGIT, record });
    if (id !== null && this.prng.chance(0.2)) await this.replace(p.w, id, 'speed-up');
  }

  /**
   * The wallet renamed (half the time its description too), under an idempotency key: 200 with
   * the new name, and `wallet.updated`, which the checks require delivered and, the newest of
   * the wallet's, naming what the wallet shows at the end.
   */
  private async rename(w: SimWallet): Promise<void> {
    const key = this.key();
    const body = { name: `Sim wallet ${w.id} #${this.n}`, ...(this.prng.chance(0.5) ? { description: `renamed under ${key}` } : {}) };
    const r = await this.api.call<{ id: number; name: string }>('POST', `/api/wallet/${w.id}/update`, body, { key }).catch((e: Error) => {
      this.unexpected.push(`rename of wallet ${w.id}: never answered: ${e.message}`);
      return null;
    });
    if (r === null) return;
    if (r.status !== 200 || r.data.name !== body.name)
      this.unexpected.push(`rename of wallet ${w.id}: ${r.status} ${r.message} ${r.data?.name ?? ''}`);
    else this.count('rename');
  }

  /**
   * A payout of 2 to 6 items to outside addresses, each with a unique reference; one the policy
   * holds (the policed wallet's token payouts over its approval_above) is approved, rejected or
   * left to expire, like a held transfer.
   */
  private async payout(w: SimWallet): Promise<void> {
    const token = this.prng.chance(0.5) ? 'ETH' : TOKEN_SYMBOL;
    const items = Array.from({ length: this.prng.int(2, 6) }, () => ({
      address: this.recipient(),
      amount: fmt(token === 'ETH' ? this.prng.bigint(ETH / 1000n, ETH / 100n) : this.prng.bigint(UNIT, 60n * UNIT), token),
      reference: `${this.key()}-ref`,
    }));
    const payoutKey = this.key();
    const r = await this.api.call<{ id: number; status: string }>(
      'POST',
      `/api/wallet/${w.id}/payout/create`,
      { token, items },
      { key: payoutKey },
    );
    const kind = `payout-${token === 'ETH' ? 'native' : 'token'}`;
    if (r.status !== 200) {
      this.refusals.push({
        what: kind,
        walletId: w.id,
        key: payoutKey,
        status: r.status,
        message: r.message,
        to: items.map((i) => i.address),
        retried: (r.attempts ?? 1) > 1,
      });
      this.count(`${kind} refused (${r.status} ${r.message})`);
      if (r.status !== 400 || !/^(Insufficient balance for payout|Policy: over the (per-transaction|daily) limit)$/.test(r.message))
        this.unexpected.push(`${kind}: ${r.status} ${r.message}`);
      return;
    }
    const payout: SimPayout = { walletId: w.id, id: r.data.id, token };
    this.payouts.push(payout);
    this.count(r.data.status === 'awaiting_approval' ? `${kind} held for approval` : kind);
    if (r.data.status === 'awaiting_approval')
      this.tasks.push(
        this.decidePayout(w, payout, this.prng.fork(`payout-${payout.id}`)).catch(
          (e) => void this.unexpected.push(`decision on payout ${payout.id}: ${(e as Error).message}`),
        ),
      );
  }

  private async decidePayout(w: SimWallet, payout: SimPayout, p: Prng): Promise<void> {
    await sleep(p.int(200, 3000));
    const choice = p.weighted({ approve: 5, reject: 3, leave: 2 });
    if (choice === 'leave') {
      payout.decision = 'left';
      return this.count('payout left to expire');
    }
    const r = await this.api.call('POST', `/api/wallet/${w.id}/payout/${payout.id}/${choice}`, {}, { key: this.key() });
    payout.decision = choice === 'approve' ? 'approved' : 'rejected';
    if (r.status === 200) return this.count(`payout ${choice}`);
    // A retry whose first answer a kill cut finds it decided (by that request, or by the expiry).
    if (r.status === 400 && r.message === 'Payout is not awaiting approval') return this.count(`payout ${choice} (already decided)`);
    this.unexpected.push(`${choice} of payout ${payout.id}: ${r.status} ${r.message}`);
  }

  /**
   * A permanent deposit address (docs/deposit-addresses.md): a wallet gets one for a new customer
   * reference now and then (each answered address kept), else one of its addresses is paid from
   * outside, in the native coin or the token. Every arrival must become one receipt of the wallet
   * and be swept (checks.ts, "deposit addresses").
   */
  private async depositAddress(w: SimWallet): Promise<void> {
    const mine = this.depositAddresses.filter((d) => d.walletId === w.id);
    if (mine.length === 0 || this.prng.chance(0.2)) {
      const reference = `customer-${this.seed}-${++this.n}`;
      const r = await this.api.call<{ id: number; address: string }>(
        'POST',
        `/api/wallet/${w.id}/deposit-address/create`,
        { reference },
        { key: this.key() },
      );
      if (r.status !== 200) return void this.unexpected.push(`deposit address create: ${r.status} ${r.message}`);
      this.depositAddresses.push({ walletId: w.id, id: r.data.id, address: r.data.address.toLowerCase(), reference });
      return this.count('deposit address created');
    }
    const d = this.prng.pick(mine);
    const o = this.outsider();
    if (this.prng.chance(0.5)) await this.chain.payNative(o, d.address as Address, this.prng.bigint(ETH / 1000n, ETH / 50n));
    else await this.chain.payToken(o, d.address as Address, this.prng.bigint(UNIT, 50n * UNIT));
    this.count('deposit address paid');
  }

  /** Sends funds to a wallet from outside (real transfers; never anvil_setBalance). */
  async fund(w: SimWallet, eth = 2n * ETH, tokens = 5_000n * UNIT): Promise<void> {
    const o = this.outsider();
    await this.chain.payNative(o, w.address, eth);
    await this.chain.payToken(o, w.address, tokens);
    this.count('fund');
  }

  private async create(w: SimWallet, body: Record<string, unknown>, kind: string, opts: CreateOpts = {}): Promise<number | null> {
    const key = this.key();
    if (opts.record) opts.record.key = key;
    const r = await this.api
      .call<{ id: number; status: string }>('POST', `/api/wallet/${w.id}/transaction/create`, body, { key })
      .catch((e: Error) => {
        this.keyConflicts.push(`${key}: never answered: ${e.message}`);
        return null;
      });
    if (!r) return null;
    if (opts.record)
      opts.record.answer = {
        status: r.status,
        message: r.message,
        ...(r.status === 200 ? { id: r.data.id, txStatus: r.data.status } : {}),
      };
    if (r.status === 200) {
      // The same key once more: it must answer the same transaction.
      const again = await this.api.call<{ id: number }>('POST', `/api/wallet/${w.id}/transaction/create`, body, { key });
      if (again.status !== 200 || again.data.id !== r.data.id)
        this.keyConflicts.push(`${key}: first ${r.data.id}, again ${again.status} ${again.data?.id ?? again.message}`);
      this.accepted.push({ key, walletId: w.id, id: r.data.id, kind });
      if (r.data.status === 'awaiting_approval') {
        this.count(`${kind} held for approval`);
        this.tasks.push(
          this.decide(w, r.data.id, this.prng.fork(`decide-${r.data.id}`)).catch(
            (e) => void this.unexpected.push(`decision on ${r.data.id}: ${(e as Error).message}`),
          ),
        );
        return null; // nothing on chain to speed up or cancel
      }
      this.count(kind);
      return r.data.id;
    }
    this.count(`${kind} refused (${r.status} ${r.message})`);
    this.refusals.push({
      what: kind,
      walletId: w.id,
      key,
      status: r.status,
      message: r.message,
      ...(opts.refusal ?? refusedTo(body, kind, this.wallets)),
      retried: (r.attempts ?? 1) > 1,
    });
    if (
      r.status !== 400 ||
      !(opts.legit ?? /Insufficient balance|Too many pending|^Policy: over the (per-transaction|daily) limit$/).test(r.message)
    )
      this.unexpected.push(`${kind}: ${r.status} ${r.message}`);
    return null;
  }

  /**
   * A hot wallet: `n` native transfers of one wallet sent at once, so that the service records
   * the ones that wait for each other together (docs/transactions.md, "recorded together"); on
   * the policed wallet they are recorded one at a time. Each is a create as any other (its own
   * key, its replay, its refusals).
   */
  private async burst(w: SimWallet, n: number): Promise<void> {
    const sends = Array.from({ length: n }, () => ({ amount: this.prng.bigint(ETH / 1000n, ETH / 100n), to: this.recipient() }));
    await Promise.all(sends.map((s) => this.create(w, { amount: fmt(s.amount, 'ETH'), token: 'ETH', address: s.to }, 'transfer-burst')));
    this.count(`burst of ${n}`);
  }

  private async transfer(
    w: SimWallet,
    token: string,
    amount: bigint,
    to: Address,
    kind = `transfer-${token === 'ETH' ? 'native' : 'token'}`,
  ): Promise<void> {
    const id = await this.create(w, { amount: fmt(amount, token), token, address: to }, kind);
    if (id === null || !this.prng.chance(0.3)) return;
    const how = this.prng.chance(0.5) ? 'speed-up' : 'cancel';
    // A cancel sped up must stay a cancel: mined, nothing moved (the books are checked against the chain).
    if ((await this.replace(w, id, how)) && how === 'cancel' && this.prng.chance(0.6))
      await this.replace(w, id, 'speed-up', 'speed-up of a cancel');
  }

  private async contractCall(w: SimWallet): Promise<void> {
    const body = {
      amount: '0',
      token: 'ETH',
      address: this.chain.token,
      function: 'approve(address,uint256)',
      args: [this.recipient(), String(this.prng.int(1, 1_000_000))],
    };
    const id = await this.create(w, body, 'contract-call');
    if (id !== null && this.prng.chance(0.2)) await this.replace(w, id, 'speed-up');
  }

  /** True when the replacement was accepted. */
  private async replace(w: SimWallet, id: number, kind: 'speed-up' | 'cancel', label: string = kind): Promise<boolean> {
    const key = this.key();
    const r = await this.api.call('POST', `/api/wallet/${w.id}/transaction/${id}/${kind}`, {}, { key });
    if (r.status !== 200)
      this.refusals.push({
        what: label,
        walletId: w.id,
        key,
        status: r.status,
        message: r.message,
        txId: id,
        replace: kind,
        retried: (r.attempts ?? 1) > 1,
      });
    if (r.status === 200) {
      this.replacements.push({ txId: id, kind });
      this.count(label);
    } else if (r.status === 400 && r.message === 'Transaction cannot be replaced') this.count(`${label} too late`);
    else this.unexpected.push(`${label} of ${id}: ${r.status} ${r.message}`);
    return r.status === 200;
  }

  /**
   * A person's decision on a held transfer, a moment later: approve (half), reject, or leave it
   * to expire. An approve refused for the balance is a legit answer; "not awaiting approval"
   * after a retry means the first approve (its answer cut by a kill) or the expiry decided it.
   */
  private async decide(w: SimWallet, id: number, p: Prng): Promise<void> {
    await sleep(p.int(200, 3000));
    const choice = p.weighted({ approve: 5, reject: 3, leave: 2 });
    if (choice === 'leave') {
      this.held.push({ walletId: w.id, id, decision: 'left' });
      return this.count('held left to expire');
    }
    const r = await this.api.call('POST', `/api/wallet/${w.id}/transaction/${id}/${choice}`, {}, { key: this.key() });
    const decided = (decision: Held['decision'], op: string) => {
      this.held.push({ walletId: w.id, id, decision });
      this.count(op);
    };
    if (r.status === 200) return decided(choice === 'approve' ? 'approved' : 'rejected', choice);
    if (r.status >= 400 && r.status < 500 && choice === 'approve' && r.message !== 'Transaction is not awaiting approval')
      this.refusals.push({
        what: 'approve',
        walletId: w.id,
        key: null,
        status: r.status,
        message: r.message,
        txId: id,
        retried: (r.attempts ?? 1) > 1,
      });
    if (r.status === 400 && r.message === 'Insufficient balance for transaction' && choice === 'approve')
      return decided('refused', 'approve refused (balance)');
    // A retried request whose first answer a kill cut finds it decided: by that first request, or by the expiry.
    if (r.status === 400 && r.message === 'Transaction is not awaiting approval')
      return decided(choice === 'approve' ? 'approved' : 'rejected', `${choice} (already decided)`);
    this.unexpected.push(`${choice} of ${id}: ${r.status} ${r.message}`);
  }

  private async charge(w: SimWallet): Promise<void> {
    if (this.prng.chance(0.25)) return this.priceCharge(w);
    const token = this.prng.chance(0.5) ? 'ETH' : TOKEN_SYMBOL;
    const amount = token === 'ETH' ? this.prng.bigint(ETH / 100n, ETH / 2n) : this.prng.bigint(UNIT, 200n * UNIT);
    const plan = this.prng.weighted<Exclude<PayPlan, 'two' | 'two-under'>>({
      exact: 3,
      under: 2,
      over: 2,
      split: 2,
      late: 1,
      never: 1,
      contract: 2,
    });
    const r = await this.api.call<{ id: number; address: Address; expires_at: string }>(
      'POST',
      `/api/wallet/${w.id}/charge/create`,
      { amount: fmt(amount, token), token, expires: 60 },
      { key: this.key() },
    );
    if (r.status !== 200) {
      this.unexpected.push(`charge create: ${r.status} ${r.message}`);
      return;
    }
    const c: SimCharge = {
      id: r.data.id,
      walletId: w.id,
      address: r.data.address,
      token,
      amount,
      plan,
      expiresAtMs: Date.parse(`${r.data.expires_at.replace(' ', 'T')}Z`),
    };
    this.charges.push(c);
    this.count(`charge-${token === 'ETH' ? 'native' : 'token'}-${plan}`);
    const p = this.prng.fork(`pay-${c.id}`);
    const refund = c.plan !== 'never' && p.chance(0.5);
    this.tasks.push(
      this.pay(c, p)
        .then(() => (refund ? this.refund(w, c, p.fork('refund')) : undefined))
        .catch((e) => void this.unexpected.push(`payment or refund of charge ${c.id}: ${(e as Error).message}`)),
    );
  }

  /**
   * A charge priced in USD (docs/prices.md), quoted in the token and in ETH at the rates the run
   * set (`PRICE_RATES`), paid part in each: `two` pays a share of the price in the token and the
   * rest in ETH (each part rounded up: paid), `two-under` the same less a tenth (failed).
   */
  private async priceCharge(w: SimWallet): Promise<void> {
    const cents = this.prng.int(500, 20_000);
    const plan = this.prng.weighted<'two' | 'two-under'>({ two: 4, 'two-under': 1 });
    const r = await this.api.call<{ id: number; address: Address; expires_at: string; quotes: Array<{ token: string; amount: string }> }>(
      'POST',
      `/api/wallet/${w.id}/charge/create`,
      {
        price: { amount: `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`, currency: 'USD' },
        tokens: [TOKEN_SYMBOL, 'ETH'],
        expires: 60,
      },
      { key: this.key() },
    );
    if (r.status !== 200) {
      this.unexpected.push(`price charge create: ${r.status} ${r.message}`);
      return;
    }
    const quote = (symbol: string, decimals: number) =>
      parseUnits(r.data.quotes.find((q) => q.token === symbol)!.amount, 18) / 10n ** BigInt(18 - decimals);
    const quotes = { token: quote(TOKEN_SYMBOL, TOKEN_DECIMALS), eth: quote('ETH', 18) };
    const c: SimCharge = {
      id: r.data.id,
      walletId: w.id,
      address: r.data.address,
      token: TOKEN_SYMBOL,
      amount: quotes.token,
      plan,
      expiresAtMs: Date.parse(`${r.data.expires_at.replace(' ', 'T')}Z`),
      quotes,
    };
    this.charges.push(c);
    this.count(`charge-price-${plan}`);
    this.tasks.push(
      this.pay(c, this.prng.fork(`pay-${c.id}`)).catch(
        (e) => void this.unexpected.push(`payment of price charge ${c.id}: ${(e as Error).message}`),
      ),
    );
  }

  /**
   * The merchant refunds a paid charge, once its payments are confirmed: the overpaid part of an
   * overpaid charge, else a part or the whole of what it received to an address, or a claim the
   * payer completes (or never does); sometimes then the rest, which may find nothing left. A
   * refund the policy holds is decided like a held transfer.
   */
  private async refund(w: SimWallet, c: SimCharge, p: Prng): Promise<void> {
    const shown = await this.paidCharge(w, c);
    if (!shown) return this.count('refund skipped (no confirmed payment)');
    const received = shown.payments.reduce((a: bigint, x: any) => a + units(x.amount, c.token), 0n);
    const over = units(shown.paid_amount, c.token) - c.amount;
    const kind =
      c.plan === 'over' && shown.status === 'paid' && over > 0n ? 'overpaid' : p.weighted({ partial: 3, whole: 2, claim: 3 } as const);
    const amount = kind === 'overpaid' ? over : kind === 'partial' ? (received * BigInt(p.int(10, 60))) / 100n : undefined;
    await this.requestRefund(
      w,
      c,
      kind,
      {
        ...(amount === undefined ? {} : { amount: fmt(amount, c.token) }),
        ...(kind === 'claim' ? {} : { address: this.recipient() }),
        reason: `sim ${kind}`,
      },
      p,
    );
    if (p.chance(0.3)) await this.requestRefund(w, c, 'rest', { address: this.recipient() }, p);
  }

  private async requestRefund(w: SimWallet, c: SimCharge, kind: SimRefund['kind'], body: Record<string, unknown>, p: Prng): Promise<void> {
    const r = await this.api.call<{ id: number; uuid: string; transaction_id: number | null }>(
      'POST',
      `/api/wallet/${w.id}/charge/${c.id}/refund`,
      body,
      { key: this.key() },
    );
    if (r.status !== 200) {
      if (typeof body.address === 'string')
        this.refusals.push({
          what: `refund-${kind}`,
          walletId: w.id,
          key: null,
          status: r.status,
          message: r.message,
          to: [body.address],
          retried: (r.attempts ?? 1) > 1,
        });
      this.count(`refund-${kind} refused (${r.status} ${r.message})`);
      if (
        r.status !== 400 ||
        !/^(Refund exceeds the amount received|Nothing to refund|Insufficient balance for transaction|Too many pending transactions|Policy: over the (per-transaction|daily) limit)$/.test(
          r.message,
        )
      )
        this.unexpected.push(`refund-${kind} of charge ${c.id}: ${r.status} ${r.message}`);
      return;
    }
    const refund: SimRefund = { walletId: w.id, chargeId: c.id, id: r.data.id, kind };
    this.refunds.push(refund);
    this.count(`refund-${kind}`);
    if (r.data.transaction_id !== null) return this.decideIfHeld(w, r.data.transaction_id, p);
    if (p.chance(0.2)) {
      refund.claim = 'unclaimed';
      return this.count('refund claim left unclaimed');
    }
    await sleep(p.int(200, 2000));
    const claimTo = this.recipient();
    const claim = await this.api.call<{ status: string }>('POST', `/api/refund/${r.data.uuid}`, { address: claimTo }, { auth: false });
    // A claim whose answer a kill cut is asked again: "already claimed" is then its own.
    if (claim.status === 200 || (claim.status === 400 && claim.message === 'Refund already claimed')) {
      refund.claim = 'claimed';
      this.count(claim.status === 200 ? 'refund claimed' : 'refund claimed (answer cut)');
      const shown = await this.api.call<any>('GET', `/api/wallet/${w.id}/charge/show/${c.id}`);
      const txId = shown.data?.refunds?.find((x: any) => x.id === r.data.id)?.transaction_id;
      if (txId) await this.decideIfHeld(w, txId, p);
      return;
    }
    refund.claim = 'unclaimed';
    this.refusals.push({
      what: 'refund claim',
      walletId: w.id,
      key: null,
      status: claim.status,
      message: claim.message,
      to: [claimTo],
      retried: (claim.attempts ?? 1) > 1,
    });
    this.count(`refund claim refused (${claim.status} ${claim.message})`);
    if (
      claim.status !== 400 ||
      !/^(Insufficient balance for transaction|Too many pending transactions|Policy: over the (per-transaction|daily) limit)$/.test(
        claim.message,
      )
    )
      this.unexpected.push(`claim of refund ${r.data.id}: ${claim.status} ${claim.message}`);
  }

  /** A refund's transfer the policy held waits for a person's decision, as a held create does. */
  private async decideIfHeld(w: SimWallet, txId: number, p: Prng): Promise<void> {
    const t = await this.api.call<{ status: string }>('GET', `/api/wallet/${w.id}/transaction/show/${txId}`);
    if (t.data?.status !== 'awaiting_approval') return;
    this.count('refund held for approval');
    await this.decide(w, txId, p.fork(`decide-${txId}`));
  }

  /** The charge once it has a confirmed payment (bounded wait); null if none comes. */
  private async paidCharge(w: SimWallet, c: SimCharge): Promise<any> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const r = await this.api.call<any>('GET', `/api/wallet/${w.id}/charge/show/${c.id}`);
      if (r.status === 200 && r.data.status !== 'pending' && r.data.payments.length > 0) return r.data;
      await sleep(1_000);
    }
    return null;
  }

  /** The payer's side of a charge, as its plan says; late payments wait for the expiry. */
  private async pay(c: SimCharge, p: Prng): Promise<void> {
    const o = p.pick(this.chain.outsiders.slice(1));
    const send = (amount: bigint) =>
      c.token === 'ETH' ? this.chain.payNative(o, c.address, amount) : this.chain.payToken(o, c.address, amount);
    await sleep(p.int(500, 4000));
    switch (c.plan) {
      case 'exact':
        return void (await send(c.amount));
      case 'under':
        return void (await send((c.amount * BigInt(p.int(30, 90))) / 100n));
      case 'over':
        return void (await send((c.amount * BigInt(p.int(101, 150))) / 100n));
      case 'split': {
        const first = (c.amount * 4n) / 10n;
        await send(first);
        await sleep(p.int(1000, 3000));
        return void (await send(c.amount - first));
      }
      case 'late':
        await sleep(Math.max(0, c.expiresAtMs + 8_000 - Date.now()));
        return void (await send(c.amount));
      case 'contract':
        await (c.token === 'ETH'
          ? this.chain.payNativeViaContract(o, c.address, c.amount)
          : this.chain.payTokenViaContract(o, c.address, c.amount));
        return;
      case 'never':
        return;
      case 'two':
      case 'two-under': {
        // A share of the price in the token, the rest (less a tenth for `two-under`) in ETH.
        const share = BigInt(p.int(20, 80));
        const rest = 100n - share - (c.plan === 'two-under' ? 10n : 0n);
        await this.chain.payToken(o, c.address, (c.quotes!.token * share + 99n) / 100n);
        await sleep(p.int(500, 2000));
        return void (await this.chain.payNative(o, c.address, (c.quotes!.eth * rest + 99n) / 100n));
      }
    }
  }

  /** Waits for every scheduled payment (late ones included). */
  async settled(): Promise<void> {
    await Promise.all(this.tasks);
  }
}

/**
 * Where a refused create would have sent money, when that names it alone: a transfer's fresh
 * recipient, a contract call's approved spender. A transfer to the other wallet names no one
 * request (every wallet-to-wallet transfer pays the same address): left out.
 */
function refusedTo(body: Record<string, unknown>, kind: string, wallets: SimWallet[]): Pick<Refusal, 'to' | 'spender'> {
  if (kind === 'contract-call') return { spender: String((body.args as unknown[])[0]) };
  const to = String(body.address);
  return wallets.some((w) => w.address.toLowerCase() === to.toLowerCase()) ? {} : { to: [to] };
}
