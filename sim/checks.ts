/**
 * The invariants, checked after quiescence against the chain itself. Each violation names the
 * check and the object; the runner prints the seed with it.
 */
import { decodeFunctionData, getAddress, parseAbi, type Hex } from 'viem';
import type { RpcReceipt, SimChain } from './chain.js';
import { TOKEN_DECIMALS, TOKEN_SYMBOL } from './chain.js';
import type { Api } from './service.js';
import type { PolicedWallet, SimWallet, Workload } from './workload.js';
import type { Delivery } from './receiver.js';
import { checkNonceGap, checkRefusals } from './refusals.js';
import { sweeperAddress } from '../src/chain/sweeper.js';
import { sweeperAbi } from '../src/chain/sweeper-artifact.js';

/** What the service's nonce-gap filler sends to the wallet's own address (transactions.service.ts, `fillNonceGap`). */
const GAP_FILL_AMOUNT = '0.000000000000000001';

export interface Violation {
  check: string;
  object: string;
  detail: string;
}

/** What the service shows, read once after quiescence. */
export interface Observed {
  wallets: Array<{ w: SimWallet; shown: any; txs: any[]; charges: any[]; payouts: any[]; deposits: any[] }>;
  events: any[];
}

/**
 * The hashes of a wallet's batch sweeps: the transactions its keyless deposit addresses' sweeps
 * name (a Sweeper call of the main address, the service's own movement like a gas top-up). Pass
 * its charges and its permanent deposit addresses.
 */
export function batchSweepHashes(charges: any[]): Set<string> {
  const out = new Set<string>();
  for (const c of charges) if (c.deposit_kind === 'keyless') for (const s of c.sweeps ?? []) if (s.tx_hash) out.add(lc(s.tx_hash));
  return out;
}

/** A transaction of the canonical chain, as the scan read it. */
export interface ChainTx {
  from: string;
  to: string;
  value: bigint;
  block: number;
  input: string;
  nonce: number;
}

/** A chain transfer into an address: a transaction's value, a token log, or an internal value transfer. */
export interface Inflow {
  hash: string;
  from: string;
  to: string;
  token: string;
  amount18: bigint;
  block: number;
}

const lc = (s: string | null | undefined): string => (s ?? '').toLowerCase();
/** An 18-place decimal string as an integer of 10^-18 units. */
export function parse18(s: string): bigint {
  const neg = s.startsWith('-');
  const [i, f = ''] = (neg ? s.slice(1) : s).split('.');
  const v = BigInt(i!) * 10n ** 18n + BigInt((f + '0'.repeat(18)).slice(0, 18));
  return neg ? -v : v;
}
const scale = (token: string): bigint => (token === TOKEN_SYMBOL ? 10n ** BigInt(18 - TOKEN_DECIMALS) : 1n);
const fmt18 = (v: bigint): string => `${v / 10n ** 18n}.${(v % 10n ** 18n).toString().padStart(18, '0')}`;
const dateMs = (s: string): number => Date.parse(`${s.replace(' ', 'T')}Z`);

/** The calls that move or approve a token (docs/money-out.md, "Contract calls: policed by what they do"), read by the oracle itself. */
const TOKEN_CALLS_ABI = parseAbi([
  'function transfer(address to, uint256 amount) returns (bool)',
  'function transferFrom(address from, address to, uint256 amount) returns (bool)',
  'function approve(address spender, uint256 amount) returns (bool)',
  'function increaseAllowance(address spender, uint256 addedValue) returns (bool)',
  'function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)',
]);

/** What a transaction's calldata to the token does: the recipient or spender and the amount; null when it is no such call. */
export function readTokenCall(input: string): { fn: string; to: string; amount: bigint } | null {
  try {
    const d = decodeFunctionData({ abi: TOKEN_CALLS_ABI, data: input as Hex });
    switch (d.functionName) {
      case 'transfer':
      case 'approve':
      case 'increaseAllowance':
        return { fn: d.functionName, to: lc(d.args[0]), amount: d.args[1] };
      case 'transferFrom':
        return { fn: d.functionName, to: lc(d.args[1]), amount: d.args[2] };
      case 'permit':
        return { fn: d.functionName, to: lc(d.args[1]), amount: d.args[2] };
    }
  } catch {
    return null;
  }
  return null;
}
/** The Sweeper's address (the same on every network: deployed through the deterministic-deployment proxy). */
const SWEEPER = lc(sweeperAddress());

/** Calldata of `approve(Sweeper, 2^256 - 1)`: the approval batched payouts need, once per wallet and token. */
function isSweeperApproval(data: string | null): boolean {
  const call = data ? readTokenCall(data) : null;
  return call !== null && call.fn === 'approve' && call.to === SWEEPER && call.amount === 2n ** 256n - 1n;
}

/** A Sweeper `pay` call's items of `token`, each as a transfer to its recipient; null when the input is not a `pay` call. */
export function readPayItems(input: string, token: string): Array<{ fn: string; to: string; amount: bigint }> | null {
  try {
    const d = decodeFunctionData({ abi: sweeperAbi, data: input as Hex });
    if (d.functionName !== 'pay') return null;
    return d.args[0].filter((i) => lc(i.token) === token).map((i) => ({ fn: 'pay item', to: lc(i.to), amount: i.amount }));
  } catch {
    return null;
  }
}
const MAX_UINT256 = 2n ** 256n - 1n;
/** A token amount in base units for a message: whole tokens with their places, or "unlimited". */
const tokenAmount = (v: bigint): string =>
  v === MAX_UINT256
    ? 'unlimited (2^256-1)'
    : `${v / 10n ** BigInt(TOKEN_DECIMALS)}.${(v % 10n ** BigInt(TOKEN_DECIMALS)).toString().padStart(TOKEN_DECIMALS, '0')}`;
/** A policy's decimal amount of the token in its base units. */
const tokenUnits = (v: string | undefined): bigint | null => (v === undefined ? null : units18(v) / 10n ** BigInt(18 - TOKEN_DECIMALS));

export class Checker {
  readonly violations: Violation[] = [];
  readonly notRun: string[] = [];
  readonly notes: string[] = [];
  private blocks = new Map<number, { hash: string; timestamp: number }>();
  private txs = new Map<string, ChainTx>();
  private receipts = new Map<string, RpcReceipt | null>();
  private inflows: Inflow[] = [];
  private head = 0;

  constructor(
    private readonly chain: SimChain,
    private readonly api: Api,
    private readonly work: Workload,
  ) {}

  violate(check: string, object: string, detail: string): void {
    this.violations.push({ check, object, detail });
  }

  /** Reads every block, transaction and token log up to the head. */
  async scan(): Promise<void> {
    this.head = await this.chain.head();
    for (let n = 0; n <= this.head; n++) {
      const b = await this.chain.block(n);
      if (b === null) {
        this.notes.push(
          `anvil answers no block at height ${n} (head ${this.head}): an anvil fault after a reorg; its transactions, if any, are not in the scan`,
        );
        continue;
      }
      this.blocks.set(n, { hash: lc(b.hash), timestamp: Number(BigInt(b.timestamp)) });
      for (const t of b.transactions)
        this.txs.set(lc(t.hash), {
          from: lc(t.from),
          to: lc(t.to),
          value: BigInt(t.value),
          block: n,
          input: lc(t.input),
          nonce: Number(BigInt(t.nonce)),
        });
    }
    for (const [hash, t] of this.txs) {
      if (t.value > 0n && t.to) this.inflows.push({ hash, from: t.from, to: t.to, token: 'ETH', amount18: t.value, block: t.block });
    }
    for (const l of await this.chain.tokenTransfers())
      this.inflows.push({
        hash: l.hash,
        from: l.from,
        to: l.to,
        token: TOKEN_SYMBOL,
        amount18: l.amount * scale(TOKEN_SYMBOL),
        block: l.block,
      });
    for (const [hash, p] of this.chain.internalNative) {
      const t = this.txs.get(hash);
      if (t && (await this.receipt(hash))?.status === '0x1')
        this.inflows.push({ hash, from: t.from, to: p.to, token: 'ETH', amount18: p.amount, block: t.block });
    }
    // What a Sweeper call moved off keyless deposit addresses by SELFDESTRUCT (their native coin).
    for (const [hash, t] of this.txs)
      if (t.to === SWEEPER && (await this.receipt(hash))?.status === '0x1')
        for (const m of await this.chain.selfDestructs(hash))
          this.inflows.push({ hash, from: m.from, to: m.to, token: 'ETH', amount18: m.value, block: t.block });
    this.inflows = await this.onlySucceeded(this.inflows);
  }

  private async onlySucceeded(list: Inflow[]): Promise<Inflow[]> {
    const out: Inflow[] = [];
    for (const f of list) if ((await this.receipt(f.hash))?.status === '0x1') out.push(f);
    return out;
  }

  async receipt(hash: string): Promise<RpcReceipt | null> {
    const h = lc(hash);
    if (!this.receipts.has(h)) this.receipts.set(h, await this.chain.receipt(h));
    return this.receipts.get(h)!;
  }

  /** Mined on the canonical chain (its block's hash is the chain's at that height). */
  private canonical(r: RpcReceipt | null): boolean {
    return r !== null && this.blocks.get(Number(BigInt(r.blockNumber)))?.hash === lc(r.blockHash);
  }

  /** Every check, in the order of the brief. */
  async run(o: Observed): Promise<void> {
    const service = this.serviceAddresses(o);
    this.checkIdempotency(o);
    await this.checkOutflows(o, service);
    this.checkKeyless(o, service);
    this.checkDepositAddresses(o, service);
    for (const { w, txs } of o.wallets) await this.checkStates(w, txs);
    for (const { w, txs } of o.wallets) await this.checkListed(w, txs);
    for (const { w, txs } of o.wallets) this.checkReceipts(w, txs);
    for (const { w, charges } of o.wallets) for (const c of charges) await this.checkCharge(w, c);
    for (const { w, txs, charges } of o.wallets) for (const c of charges) await this.checkRefunds(w, c, txs);
    this.checkRefundRequests(o);
    for (const { w, txs, payouts } of o.wallets) for (const p of payouts) await this.checkPayout(w, p, txs);
    this.checkPayoutRequests(o);
    this.checkEvents(o);
    const chainView = { txs: this.txs, tokenMoves: this.inflows.filter((f) => f.token !== 'ETH'), receipt: (h: string) => this.receipt(h) };
    for (const v of await checkRefusals(o, this.work, chainView)) this.violate(v.check, v.object, v.detail);
    for (const { w, txs } of o.wallets)
      for (const v of checkNonceGap(w, txs, await this.chain.nonce(w.address))) this.violate(v.check, v.object, v.detail);
  }

  /**
   * The policed wallet's accepted spending stayed within its policy: no accepted transfer of the
   * token over the per-transaction limit, and its ETH sent by transfers and contract calls that
   * did not fail at most the daily limit (the run is shorter than a day).
   */
  checkPolicy(o: Observed, walletId: number, policy: { per_transaction: Record<string, string>; daily: Record<string, string> }): void {
    const entry = o.wallets.find((x) => x.w.id === walletId);
    if (!entry) return;
    // Gas top-ups to the wallet's deposit addresses and batch sweeps of its keyless ones are the service's own movements (never refused).
    const deposits = new Set(entry.charges.map((c: any) => lc(c.address)));
    const batches = batchSweepHashes([...entry.charges, ...entry.deposits]);
    const topUp = (t: any) => t.tx_hash !== null && (deposits.has(this.txs.get(lc(t.tx_hash))?.to ?? '') || batches.has(lc(t.tx_hash)));
    const outgoing = entry.txs.filter((t: any) => (t.type === 'transfer' || t.type === 'contract') && !topUp(t));
    for (const [token, limit] of Object.entries(policy.per_transaction)) {
      for (const t of outgoing) {
        if (t.symbol === token && units18(t.amount) > units18(limit))
          this.violate('spending policy', `transaction ${t.id}`, `${t.amount} ${token} accepted over the per-transaction limit ${limit}`);
      }
    }
    for (const [token, limit] of Object.entries(policy.daily)) {
      const live = outgoing.filter((t: any) => t.symbol === token && t.status !== 'failed');
      const sum = live.reduce((a: bigint, t: any) => a + units18(t.amount), 0n);
      if (sum > units18(limit))
        this.violate(
          'spending policy',
          `wallet ${walletId}`,
          `${live.length} transfers not failed send ${sum} (10^-18 units) of ${token}, over the daily limit ${limit}`,
        );
    }
  }

  /**
   * Nothing over `approval_above` left the policed wallet without a person's approval: every such
   * transfer that was signed (has a hash) is one the workload approved; one rejected or expired
   * was never signed. (An approve whose answer a kill cut counts as approved: the service may have
   * signed it before dying.)
   */
  checkApprovals(o: Observed, walletId: number, approvalAbove: Record<string, string>): void {
    const entry = o.wallets.find((x) => x.w.id === walletId);
    if (!entry) return;
    const decisions = new Map(this.work.held.map((h) => [h.id, h.decision]));
    for (const [token, limit] of Object.entries(approvalAbove)) {
      // A payout over it as a whole: nothing of it sent unless the workload approved it.
      for (const p of entry.payouts.filter((x: any) => x.token === token && units18(x.total) > units18(limit))) {
        const decision = this.work.payouts.find((x) => x.id === p.id)?.decision;
        if (p.items.some((i: any) => i.transaction_id !== null) && decision !== 'approved')
          this.violate(
            'approvals',
            `payout ${p.id} (${p.total} ${token})`,
            `items sent over approval_above ${limit} though the workload ${decision ?? 'never saw it held'}`,
          );
      }
      for (const t of entry.txs) {
        // A payout's items are decided with the payout (its total): checked in checkPayouts.
        if (
          (t.type !== 'transfer' && t.type !== 'contract') ||
          t.symbol !== token ||
          units18(t.amount) <= units18(limit) ||
          t.payout_id !== null
        )
          continue;
        const obj = `transaction ${t.id} (${t.amount} ${token}, ${t.status}${t.failure_reason ? ` ${t.failure_reason}` : ''})`;
        const decision = decisions.get(t.id);
        if (t.tx_hash !== null && decision !== 'approved')
          this.violate(
            'approvals',
            obj,
            `signed (${t.tx_hash}) over approval_above ${limit} though the workload ${decision ?? 'never saw it held'}`,
          );
        if (
          t.status === 'failed' &&
          (t.failure_reason === 'rejected_by_approver' || t.failure_reason === 'approval_expired') &&
          (t.tx_hash !== null || t.nonce !== null)
        )
          this.violate('approvals', obj, 'failed unsigned, but it has a hash or a nonce');
        if (decision === 'rejected' && t.status !== 'failed') this.violate('approvals', obj, 'rejected by the workload, but not failed');
      }
    }
  }

  /**
   * No token leaves a policed wallet past its policy, read from the chain (every transaction its
   * main address sent that succeeded, its calldata decoded here) and named by the service's row
   * that holds its hash (tx_hash or a replaced version):
   * - a call to the token that moves or approves it (`transfer`, `transferFrom`, `approve`,
   *   `increaseAllowance`, `permit`: the token-call lane's calls, and the plain transfers, refunds
   *   and payout items, which are `transfer` calls too) is at most `per_transaction`; over
   *   `approval_above` (payout items left out: a payout is decided by its total, "payouts") it is
   *   one the workload approved; on an allowlist_only wallet its recipient or spender is listed;
   * - the wallet's transfers and approvals of the token sum to at most `daily` (the run is shorter
   *   than a day; the message names the transaction that passes it);
   * - any other contract call (another contract, the token's `mint`, calldata that does not
   *   decode) was signed only when its contract is allowlisted, or, on a wallet that is not
   *   allowlist_only, when the workload approved it.
   */
  async checkTokenPolicy(o: Observed, policed: PolicedWallet[]): Promise<void> {
    const decisions = new Map(this.work.held.map((h) => [h.id, h.decision]));
    const token = lc(this.chain.token);
    for (const pw of policed) {
      const entry = o.wallets.find((x) => x.w.id === pw.w.id);
      if (!entry) continue;
      const main = lc(pw.w.address);
      const rowOf = new Map<string, any>();
      for (const t of entry.txs)
        if (t.type !== 'receipt') for (const h of [t.tx_hash, ...(t.replaced_hashes ?? [])]) if (h) rowOf.set(lc(h), t);
      const allow = new Set(pw.allowlist.map(lc));
      const batches = batchSweepHashes([...entry.charges, ...entry.deposits]);
      const perTx = tokenUnits(pw.policy.per_transaction[TOKEN_SYMBOL]);
      const above = tokenUnits(pw.policy.approval_above[TOKEN_SYMBOL]);
      const daily = tokenUnits(pw.policy.daily[TOKEN_SYMBOL]);
      const sent = [...this.txs].filter(([, t]) => t.from === main).sort((a, b) => a[1].block - b[1].block || a[1].nonce - b[1].nonce);
      let total = 0n;
      const counted: string[] = [];
      let over = false;
      for (const [hash, t] of sent) {
        if ((await this.receipt(hash))?.status !== '0x1') continue; // reverted: it moved and approved nothing
        const row = rowOf.get(hash);
        const what = row
          ? `transaction ${row.id} (${row.type}${row.refund_id !== null ? ` refund ${row.refund_id}` : ''}${row.payout_id !== null ? ` payout ${row.payout_id}` : ''}, ${row.status}${row.failure_reason ? ` ${row.failure_reason}` : ''}, ${hash}, block ${t.block})`
          : `transaction ${hash} (block ${t.block}, no row lists it)`;
        const decision = row ? decisions.get(row.id) : undefined;
        const single = t.to === token ? readTokenCall(t.input) : null;
        // The wallet's one approval of the Sweeper: the service's own, exempt like a top-up (the
        // Sweeper takes from a wallet only in that wallet's own `pay` call, so it grants no one).
        if (single && single.fn === 'approve' && single.to === SWEEPER) continue;
        // A batched payout: each item of the token a transfer of its own to the policy.
        const calls = single ? [single] : t.to === SWEEPER ? readPayItems(t.input, token) : null;
        for (const call of calls ?? []) {
          const obj = `wallet ${pw.w.id} ${TOKEN_SYMBOL} ${what}`;
          const moved = `${call.fn} of ${tokenAmount(call.amount)} ${TOKEN_SYMBOL} to ${call.to}`;
          if (perTx !== null && call.amount > perTx)
            this.violate('token policy', obj, `${moved} mined, over per_transaction ${tokenAmount(perTx)}`);
          if (above !== null && call.amount > above && row?.payout_id == null && decision !== 'approved')
            this.violate(
              'token policy',
              obj,
              `${moved} signed over approval_above ${tokenAmount(above)} though the workload ${decision ?? 'never saw it held'}`,
            );
          if (pw.policy.allowlist_only && !allow.has(call.to))
            this.violate('token policy', obj, `${moved} mined from an allowlist_only wallet: ${call.to} is not on its allowlist`);
          total += call.amount;
          counted.push(`${row ? row.id : hash.slice(0, 10)}:${call.fn} ${tokenAmount(call.amount)}`);
          if (daily !== null && total > daily && !over) {
            over = true;
            this.violate(
              'token policy',
              obj,
              `${moved} brings the wallet's ${TOKEN_SYMBOL} transfers and approvals on chain to ${tokenAmount(total)}, over daily ${tokenAmount(daily)} (the run is shorter than a day): ${counted.join(', ')}`,
            );
          }
        }
        if (calls) continue;
        if (t.input === '0x' || t.input === '') continue; // a native transfer, a cancel, a gas top-up
        if (allow.has(t.to)) continue;
        if (batches.has(hash)) continue; // a batch sweep of its keyless deposit addresses: the service's own, exempt like a top-up
        const obj = `wallet ${pw.w.id} contract call to ${t.to}${t.to === token ? ` (the ${TOKEN_SYMBOL} token, not a token call: ${t.input.slice(0, 10)})` : ''} ${what}`;
        if (pw.policy.allowlist_only)
          this.violate('token policy', obj, 'signed from an allowlist_only wallet, but the contract is not on its allowlist');
        else if (decision !== 'approved')
          this.violate(
            'token policy',
            obj,
            `signed without approval (not a token call, contract not allowlisted) though the workload ${decision ?? 'never saw it held'}`,
          );
      }
    }
  }

  /**
   * The token-call lane's answers follow the policy: a call over `per_transaction` (an unlimited
   * approve included) is never accepted, not even held; one over `approval_above` is held; on an
   * allowlist_only wallet one to an unlisted recipient, spender or contract is refused; a call
   * that is not a token call, to a contract not allowlisted, is held. (A daily refusal depends on
   * what the service counted, which the workload cannot know: its proof is on chain.)
   */
  checkTokenCallAnswers(policed: PolicedWallet[]): void {
    for (const r of this.work.tokenCalls) {
      const pw = policed.find((p) => p.w.id === r.walletId);
      if (!pw || r.answer?.status !== 200) continue;
      const allow = new Set(pw.allowlist.map(lc));
      const perTx = tokenUnits(pw.policy.per_transaction[TOKEN_SYMBOL]);
      const above = tokenUnits(pw.policy.approval_above[TOKEN_SYMBOL]);
      const obj = `wallet ${r.walletId} ${TOKEN_SYMBOL} transaction ${r.answer.id} (key ${r.key}, ${r.fn} ${r.intent})`;
      const said = `answered 200 ${r.answer.txStatus}`;
      if (r.intent === 'non-token') {
        if (allow.has(lc(r.contract))) continue;
        if (pw.policy.allowlist_only)
          this.violate('token policy', obj, `${said}: a call to ${r.contract}, not on the allowlist of an allowlist_only wallet`);
        else if (r.answer.txStatus !== 'awaiting_approval')
          this.violate('token policy', obj, `${said}: a call to ${r.contract} that is not a token call, not held for approval`);
        continue;
      }
      const moved = `${r.fn} of ${tokenAmount(r.amount)} ${TOKEN_SYMBOL} to ${r.to}`;
      if (perTx !== null && r.amount > perTx)
        this.violate('token policy', obj, `${said}: ${moved}, over per_transaction ${tokenAmount(perTx)}`);
      else if (above !== null && r.amount > above && r.answer.txStatus !== 'awaiting_approval')
        this.violate('token policy', obj, `${said}: ${moved}, over approval_above ${tokenAmount(above)}, not held`);
      if (pw.policy.allowlist_only && !allow.has(lc(r.to)))
        this.violate('token policy', obj, `${said}: ${moved}, not on the allowlist of an allowlist_only wallet`);
    }
  }

  /** Main address → wallet; deposit address → charge. */
  private serviceAddresses(o: Observed): Map<string, { walletId: number; charge: any }> {
    const m = new Map<string, { walletId: number; charge: any }>();
    for (const { w, charges } of o.wallets) {
      m.set(lc(w.address), { walletId: w.id, charge: null });
      for (const c of charges) m.set(lc(c.address), { walletId: w.id, charge: c });
    }
    return m;
  }

  /** Each accepted create is one transaction; every outgoing transaction answers a request or is a top-up. */
  private checkIdempotency(o: Observed): void {
    for (const k of this.work.keyConflicts) this.violate('idempotency', `key ${k.split(':')[0]}`, k);
    const ids = new Map<number, string>();
    for (const a of this.work.accepted) {
      if (ids.has(a.id)) this.violate('idempotency', `transaction ${a.id}`, `answered to two keys: ${ids.get(a.id)} and ${a.key}`);
      ids.set(a.id, a.key);
    }
    const chargeIds = new Set(this.work.charges.map((c) => c.id));
    for (const { w, txs, charges, deposits: permanent } of o.wallets) {
      for (const c of charges)
        if (!chargeIds.has(c.id))
          this.violate(
            'chain exactly once',
            `wallet ${w.id} charge ${c.id}`,
            'a charge that no accepted create was answered with (a create done twice?)',
          );
      const deposits = new Set(charges.map((c) => lc(c.address)));
      const batches = batchSweepHashes([...charges, ...permanent]);
      const refunds = new Set(this.work.refunds.map((r) => r.id));
      const payouts = new Set(this.work.payouts.map((p) => p.id));
      for (const t of txs) {
        if (t.type === 'receipt' || ids.has(t.id)) continue;
        if (t.refund_id !== null && refunds.has(t.refund_id)) continue; // answers a refund request (or its claim)
        if (t.payout_id !== null && payouts.has(t.payout_id)) continue; // an item (or a batch) of a payout the workload created
        const to = this.txs.get(lc(t.tx_hash))?.to ?? '';
        // The wallet's one approval of the Sweeper for the token, sent before its first batched payout.
        if (t.type === 'contract' && lc(to) === lc(this.chain.token) && isSweeperApproval(t.data)) continue;
        // The gap filler's 1 wei to the wallet itself (a freed nonce below a waiting transfer): no request asks for it.
        if (t.type === 'transfer' && lc(to) === lc(w.address) && t.amount === GAP_FILL_AMOUNT) continue;
        const topUp =
          deposits.has(to) ||
          [t.tx_hash, ...(t.replaced_hashes ?? [])].some((h: string) => deposits.has(this.txs.get(lc(h))?.to ?? '') || batches.has(lc(h)));
        if (!topUp && t.status !== 'failed')
          this.violate(
            'chain exactly once',
            `wallet ${w.id} transaction ${t.id}`,
            `an outgoing ${t.type} of ${t.amount} ${t.symbol} (${t.status}) that no accepted request was answered with and that is not a top-up`,
          );
      }
    }
  }

  /**
   * Keyless deposit addresses: nothing is ever sent to one from a service address (no gas, no
   * top-up: they are emptied by the main address's Sweeper calls), and once none of its sweeps is
   * pending, what its confirmed sweeps say left it of the token is what the chain moved off it.
   */
  private checkKeyless(o: Observed, service: Map<string, { walletId: number; charge: any }>): void {
    for (const { charges } of o.wallets)
      for (const c of charges) {
        if (c.deposit_kind !== 'keyless') continue;
        const address = lc(c.address);
        for (const [hash, t] of this.txs)
          if (t.to === address && service.has(t.from))
            this.violate(
              'keyless untouched',
              `charge ${c.id} deposit ${address}`,
              `transaction ${hash} sent to it from service address ${t.from}`,
            );
        const sweeps = (c.sweeps ?? []) as Array<{ token: string; amount: string; status: string }>;
        if (sweeps.some((x) => x.status === 'pending')) continue;
        const swept = sweeps
          .filter((x) => x.status === 'confirmed' && x.token === TOKEN_SYMBOL)
          .reduce((a, x) => a + units18(x.amount), 0n);
        const moved = this.inflows.filter((f) => f.from === address && f.token === TOKEN_SYMBOL).reduce((a, f) => a + f.amount18, 0n);
        if (swept !== moved)
          this.violate(
            'keyless swept as the chain moved',
            `charge ${c.id} deposit ${address}`,
            `its confirmed sweeps say ${fmt18(swept)} ${TOKEN_SYMBOL} left it; the chain moved ${fmt18(moved)} off it`,
          );
      }
  }

  /**
   * Permanent deposit addresses: every address the workload was answered with is listed, and no
   * other; for each, of each token, what the chain brought it equals its confirmed receipts (one
   * a transfer, each carrying its id and reference, none left pending) and the `received` its
   * show answers; the chain moved off it all it brought (swept: nothing left after quiescence);
   * nothing was ever sent to it from a service address (keyless: no gas, no top-up).
   */
  private checkDepositAddresses(o: Observed, service: Map<string, { walletId: number; charge: any }>): void {
    const answered = new Map(this.work.depositAddresses.map((d) => [d.id, d]));
    for (const { w, txs, deposits } of o.wallets)
      for (const d of deposits) {
        const obj = `wallet ${w.id} deposit address ${d.id} (${d.reference}, ${d.address})`;
        const work = answered.get(d.id);
        answered.delete(d.id);
        if (!work || work.walletId !== w.id || work.address !== lc(d.address) || work.reference !== d.reference)
          this.violate('deposit addresses', obj, 'listed, but no create was answered with it');
        const address = lc(d.address);
        const receipts = txs.filter((t) => t.deposit_address_id === d.id);
        for (const t of receipts) {
          if (t.type !== 'receipt' || t.reference !== d.reference)
            this.violate('deposit addresses', obj, `transaction ${t.id} (${t.type}, ${t.reference}) carries its id`);
          if (t.status !== 'confirmed') this.violate('states are the chain', `${obj} receipt ${t.id}`, `${t.status} after quiescence`);
        }
        for (const token of ['ETH', TOKEN_SYMBOL]) {
          const brought = this.inflows.filter((f) => f.to === address && f.token === token);
          const inChain = brought.reduce((a, f) => a + f.amount18, 0n);
          const mine = receipts.filter((t) => t.symbol === token && t.status === 'confirmed');
          const recorded = mine.reduce((a, t) => a + units18(t.amount), 0n);
          const shown = units18((d.received ?? []).find((r: any) => r.token === token)?.amount ?? '0');
          if (recorded !== inChain || shown !== inChain || mine.length !== brought.length)
            this.violate(
              'deposit addresses',
              obj,
              `${token}: the chain brought ${fmt18(inChain)} in ${brought.length} transfers; ${mine.length} confirmed receipts say ${fmt18(recorded)}, received ${fmt18(shown)}`,
            );
          const left = this.inflows.filter((f) => f.from === address && f.token === token).reduce((a, f) => a + f.amount18, 0n);
          if (token === TOKEN_SYMBOL && left !== inChain)
            this.violate('deposit addresses', obj, `${token}: ${fmt18(inChain)} came in, ${fmt18(left)} was swept off it`);
          const swept = (d.sweeps ?? [])
            .filter((x: any) => x.status === 'confirmed' && x.token === token)
            .reduce((a: bigint, x: any) => a + units18(x.amount), 0n);
          if (token === TOKEN_SYMBOL && swept !== left)
            this.violate(
              'keyless swept as the chain moved',
              obj,
              `its confirmed sweeps say ${fmt18(swept)} ${token} left it; the chain moved ${fmt18(left)}`,
            );
        }
        for (const [hash, t] of this.txs)
          if (t.to === address && service.has(t.from))
            this.violate('keyless untouched', obj, `transaction ${hash} sent to it from service address ${t.from}`);
      }
    for (const d of answered.values())
      this.violate('deposit addresses', `wallet ${d.walletId} deposit address ${d.id}`, 'answered to a create, but not listed');
  }

  /** Every transaction from a service address is one the service reports (transfer, top-up, sweep). */
  private async checkOutflows(o: Observed, service: Map<string, { walletId: number; charge: any }>): Promise<void> {
    const reported = new Map<string, string>();
    for (const { w, txs, charges } of o.wallets) {
      for (const t of txs) if (t.type !== 'receipt' && t.tx_hash) reported.set(lc(t.tx_hash), `wallet ${w.id} transaction ${t.id}`);
      for (const c of charges) for (const s of c.sweeps ?? []) if (s.tx_hash) reported.set(lc(s.tx_hash), `charge ${c.id} sweep`);
    }
    for (const [hash, t] of this.txs) {
      const owner = service.get(t.from);
      if (!owner) continue;
      const what = reported.get(hash);
      const where = owner.charge ? `charge ${owner.charge.id} deposit ${t.from}` : `wallet ${owner.walletId} main ${t.from}`;
      if (!what) {
        this.violate(
          'nothing unrequested leaves',
          where,
          `transaction ${hash} (block ${t.block}, ${fmt18(t.value)} ETH to ${t.to}) matches no transaction, sweep or top-up the service reports`,
        );
        continue;
      }
      if (owner.charge && !what.startsWith(`charge ${owner.charge.id} `))
        this.violate('nothing unrequested leaves', where, `transaction ${hash} is reported as ${what}`);
      if (owner.charge) await this.checkSweepTarget(where, hash, t, lc(o.wallets.find((x) => x.w.id === owner.walletId)!.w.address));
    }
  }

  /** A sweep pays the main address: its value, or its token Transfer log. */
  private async checkSweepTarget(where: string, hash: string, t: { to: string; value: bigint }, main: string): Promise<void> {
    if (t.to === main) return;
    const token = this.inflows.filter((f) => f.hash === hash && f.token === TOKEN_SYMBOL);
    if (t.to === lc(this.chain.token) && token.length > 0 && token.every((f) => f.to === main)) return;
    if (t.to === lc(this.chain.token) && (await this.receipt(hash))?.status === '0x0') return;
    this.violate(
      'nothing unrequested leaves',
      where,
      `sweep ${hash} pays ${token.length > 0 ? token.map((f) => f.to).join(', ') : t.to}, not the main address ${main}`,
    );
  }

  /** Every state the API shows is the chain's. */
  private async checkStates(w: SimWallet, txs: any[]): Promise<void> {
    const chainNonce = await this.chain.nonce(w.address);
    for (const t of txs) {
      const obj = `wallet ${w.id} transaction ${t.id} (${t.type} ${t.amount} ${t.symbol})`;
      const r = t.tx_hash ? await this.receipt(t.tx_hash) : null;
      if (t.status === 'pending') this.violate('states are the chain', obj, `still pending after quiescence (tx ${t.tx_hash})`);
      else if (t.status === 'awaiting_approval')
        this.violate('states are the chain', obj, 'still awaiting approval after quiescence (APPROVAL_TTL_S passed)');
      else if (t.status === 'confirmed') {
        if (!r || r.status !== '0x1' || !this.canonical(r))
          this.violate(
            'states are the chain',
            obj,
            `confirmed, but ${t.tx_hash} is ${r ? `status ${r.status} in block ${Number(BigInt(r.blockNumber))}${this.canonical(r) ? '' : ' (not canonical)'}` : 'not mined'}`,
          );
        else if (Number(BigInt(r.blockNumber)) !== t.block_number)
          this.violate('states are the chain', obj, `block_number ${t.block_number}, chain ${Number(BigInt(r.blockNumber))}`);
      } else if (t.status === 'failed' && t.type !== 'receipt') await this.checkFailed(obj, t, r, chainNonce);
      else if (t.status === 'failed' && r?.status === '0x1' && this.canonical(r))
        this.violate('states are the chain', obj, `a receipt marked failed whose ${t.tx_hash} is mined with status 1`);
    }
  }

  /**
   * Each item of the list (read in pages of 1,000: the items the database writes, stored on
   * SQLite) says what the transaction's own route says, field for field.
   */
  private async checkListed(w: SimWallet, txs: any[]): Promise<void> {
    for (const t of txs) {
      const r = await this.api.call<Record<string, unknown>>('GET', `/api/wallet/${w.id}/transaction/show/${t.id}`);
      const obj = `wallet ${w.id} transaction ${t.id}`;
      if (r.status !== 200) {
        this.violate('the list is each transaction', obj, `listed, but its route answers ${r.status} ${r.message}`);
        continue;
      }
      const differ = Object.keys(t).filter((k) => canonical(t[k]) !== canonical(r.data[k]));
      if (differ.length > 0)
        this.violate(
          'the list is each transaction',
          obj,
          differ.map((k) => `${k}: listed ${canonical(t[k])}, shown ${canonical(r.data[k])}`).join('; '),
        );
    }
  }

  private async checkFailed(obj: string, t: any, r: RpcReceipt | null, chainNonce: number): Promise<void> {
    const hashes: string[] = [t.tx_hash, ...(t.replaced_hashes ?? [])].filter(Boolean);
    const mined = [];
    for (const h of hashes) {
      const rr = await this.receipt(h);
      if (rr && this.canonical(rr)) mined.push({ h, rr });
    }
    switch (t.failure_reason) {
      case 'reverted':
        if (!r || r.status !== '0x0')
          this.violate('states are the chain', obj, `failed (reverted), but ${t.tx_hash} is ${r ? `status ${r.status}` : 'not mined'}`);
        return;
      case 'cancelled':
        if (!r || r.status !== '0x1' || lc(r.to) !== lc(r.from))
          this.violate('states are the chain', obj, `failed (cancelled), but ${t.tx_hash} is not a mined self-transfer`);
        return;
      case 'rejected_by_approver':
      case 'approval_expired':
        if (hashes.length > 0 || t.nonce !== null)
          this.violate(
            'states are the chain',
            obj,
            `failed (${t.failure_reason}) unsigned, but it has hash ${hashes[0]} / nonce ${t.nonce}`,
          );
        return;
      case 'refused':
        // A batched payout item its token refused: the batch mined and succeeded (the item moved
        // nothing: checked with its payout).
        if (t.batch_index === null || !r || r.status !== '0x1')
          this.violate(
            'states are the chain',
            obj,
            `failed (refused), but it is ${t.batch_index === null ? 'no batch item' : `in ${t.tx_hash}, ${r ? `status ${r.status}` : 'not mined'}`}`,
          );
        return;
      case 'dropped':
      case 'rejected':
        if (mined.length > 0)
          this.violate(
            'states are the chain',
            obj,
            `failed (${t.failure_reason}), but ${mined[0]!.h} is mined with status ${mined[0]!.rr.status}`,
          );
        if (t.failure_reason === 'dropped' && t.nonce !== null && chainNonce <= t.nonce)
          this.violate('states are the chain', obj, `failed (dropped), but nonce ${t.nonce} is not taken (chain nonce ${chainNonce})`);
        return;
      default:
        this.violate('states are the chain', obj, `failed with failure_reason ${t.failure_reason}`);
    }
  }

  /** Every transfer into the main address is one confirmed receipt, and every receipt is one transfer. */
  private checkReceipts(w: SimWallet, txs: any[]): void {
    const chain = this.inflows.filter((f) => f.to === lc(w.address));
    // (A receipt to a permanent deposit address is checked with its address: "deposit addresses".)
    const receipts = txs.filter((t) => t.type === 'receipt' && t.status === 'confirmed' && t.deposit_address_id == null);
    const key = (hash: string, token: string, amount18: bigint) => `${lc(hash)}|${token}|${amount18}`;
    const left = new Map<string, number>();
    for (const f of chain) left.set(key(f.hash, f.token, f.amount18), (left.get(key(f.hash, f.token, f.amount18)) ?? 0) + 1);
    for (const t of receipts) {
      const k = key(t.tx_hash, t.symbol, parse18(t.amount));
      const n = left.get(k) ?? 0;
      if (n === 0)
        this.violate(
          'one receipt per transfer',
          `wallet ${w.id} transaction ${t.id}`,
          `receipt of ${t.amount} ${t.symbol} in ${t.tx_hash} matches no transfer on chain (or is recorded twice)`,
        );
      else left.set(k, n - 1);
    }
    for (const [k, n] of left)
      if (n > 0)
        this.violate('one receipt per transfer', `wallet ${w.id} main ${w.address}`, `chain transfer ${k} has no confirmed receipt`);
  }

  /** Payments are the transfers into the address; the status follows the contract. */
  private async checkCharge(w: SimWallet, c: any): Promise<void> {
    const obj = `wallet ${w.id} charge ${c.id} (${c.token} ${c.amount}, plan ${this.work.charges.find((x) => x.id === c.id)?.plan ?? '?'})`;
    const mainAddr = lc(w.address);
    // Each token that pays the charge and the amount of it that pays it whole: its one token, or a price charge's quotes.
    const quotes = new Map<string, bigint>(
      c.price ? c.quotes.map((q: any) => [q.token, parse18(q.amount)] as const) : [[c.token, parse18(c.amount)]],
    );
    const chainIn = this.inflows.filter((f) => f.to === lc(c.address) && quotes.has(f.token) && f.from !== mainAddr);
    const listed = (c.payments ?? []).map((p: any) => `${lc(p.tx_hash)}|${p.token}|${parse18(p.amount)}`).sort();
    const expected = chainIn.map((f) => `${f.hash}|${f.token}|${f.amount18}`).sort();
    if (JSON.stringify(listed) !== JSON.stringify(expected)) {
      // Say which are missing and how they came: an internal payment is seen only through call traces.
      const missing = chainIn
        .filter((f) => !listed.includes(`${f.hash}|${f.amount18}`))
        .map((f) => `${f.hash}${this.chain.internalNative.has(f.hash) ? ' (internal, through a contract: read from call traces)' : ''}`);
      this.violate(
        'charge payments',
        obj,
        `payments ${JSON.stringify(listed)} but the chain has ${JSON.stringify(expected)}${missing.length > 0 ? `; missing ${missing.join(', ')}` : ''}`,
      );
    }
    const expiresS = dateMs(c.expires_at) / 1000;
    // The fraction paid by expiry, exactly: `onTime / whole`, each payment over its token's quote.
    const whole = [...quotes.values()].reduce((a, q) => a * q, 1n);
    const onTime = chainIn
      .filter((f) => (this.blocks.get(f.block)?.timestamp ?? Infinity) <= expiresS)
      .reduce((s, f) => s + f.amount18 * (whole / quotes.get(f.token)!), 0n);
    const fraction = (onTime * 10n ** 18n) / whole;
    const want = onTime >= whole ? 'paid' : onTime > 0n ? 'failed' : 'expired';
    if (c.status !== want)
      this.violate(
        'charge status',
        obj,
        `status ${c.status}, but payments by expires_at (${c.expires_at}) on chain come to ${fmt18(fraction)} of it: ${want}`,
      );
    // Not paid: every payment by expiry counted; `paid_amount` that fraction of `amount`, in the token's places.
    const unit = scale(c.token);
    const paidAmount = ((onTime * (parse18(c.amount) / unit)) / whole) * unit;
    if (c.status !== 'paid' && parse18(c.paid_amount) !== paidAmount)
      this.violate('charge status', obj, `paid_amount ${c.paid_amount}, payments by expiry come to ${fmt18(paidAmount)}`);
    if (c.status !== 'paid' && parse18(c.paid_fraction) !== fraction)
      this.violate('charge status', obj, `paid_fraction ${c.paid_fraction}, payments by expiry come to ${fmt18(fraction)}`);
    if (c.status === 'paid' && (parse18(c.paid_fraction) < 10n ** 18n || parse18(c.paid_fraction) > fraction))
      this.violate('charge status', obj, `paid with paid_fraction ${c.paid_fraction}, payments by expiry come to ${fmt18(fraction)}`);
    for (const s of c.sweeps ?? [])
      if (s.status === 'pending') this.violate('states are the chain', `${obj} sweep ${s.tx_hash}`, 'still pending after quiescence');
    for (const s of c.sweeps ?? []) {
      const r = s.tx_hash ? await this.receipt(s.tx_hash) : null;
      const minedOk = r !== null && r.status === '0x1' && this.canonical(r);
      if (s.status === 'confirmed' && !minedOk)
        this.violate(
          'states are the chain',
          `${obj} sweep ${s.tx_hash}`,
          `confirmed, but the chain has ${r ? `status ${r.status}` : 'no receipt'}`,
        );
      if (s.status === 'failed' && minedOk)
        this.violate(
          'states are the chain',
          `${obj} sweep ${s.tx_hash}`,
          `failed, but it is mined with status 1 in block ${Number(BigInt(r.blockNumber))}`,
        );
    }
  }

  /**
   * A charge's refunds: those not failed or expired never pass what its payments brought; each
   * one's state is its transfer's and the chain's (confirmed: the exact amount reached its
   * address from the main address, in a canonical block with status 1); nothing is still
   * pending; a claim the payer completed has its transfer.
   */
  private async checkRefunds(w: SimWallet, c: any, txs: any[]): Promise<void> {
    const obj = (r: any) => `wallet ${w.id} charge ${c.id} refund ${r.id} (${r.amount} ${c.token}, ${r.status})`;
    const received = (c.payments ?? []).reduce((a: bigint, p: any) => a + parse18(p.amount), 0n);
    const live = (c.refunds ?? []).filter((r: any) => r.status !== 'failed' && r.status !== 'expired');
    const committed = live.reduce((a: bigint, r: any) => a + parse18(r.amount), 0n);
    if (committed > received)
      this.violate(
        'refunds',
        `wallet ${w.id} charge ${c.id}`,
        `refunds not failed or expired sum to ${fmt18(committed)}, more than its payments brought (${fmt18(received)})`,
      );
    for (const r of c.refunds ?? []) {
      const work = this.work.refunds.find((x) => x.id === r.id);
      if (r.status === 'pending') this.violate('states are the chain', obj(r), 'still pending after quiescence');
      if (work?.claim === 'claimed' && r.transaction_id === null)
        this.violate('refunds', obj(r), 'claimed by the payer, but it has no transfer');
      if (r.transaction_id === null) continue;
      const t = txs.find((x) => x.id === r.transaction_id);
      const want = t?.status === 'confirmed' ? 'confirmed' : t?.status === 'failed' ? 'failed' : 'pending';
      if (!t || t.refund_id !== r.id || t.amount !== r.amount || want !== r.status) {
        this.violate(
          'refunds',
          obj(r),
          `its transaction ${r.transaction_id} is ${t ? `${t.status}, ${t.amount}, refund_id ${t.refund_id}` : 'not in the wallet'}`,
        );
        continue;
      }
      if (r.status === 'confirmed') await this.checkPaidOnChain(obj(r), r, c.token, lc(w.address));
    }
  }

  /** A confirmed refund or payout item: mined with status 1 in a canonical block, exactly its amount of the token from the main address to its address. */
  private async checkPaidOnChain(
    obj: string,
    r: { tx_hash: string | null; address: string; amount: string },
    token: string,
    main: string,
  ): Promise<void> {
    const rc = r.tx_hash ? await this.receipt(r.tx_hash) : null;
    if (!rc || rc.status !== '0x1' || !this.canonical(rc))
      return this.violate(
        'refunds',
        obj,
        `confirmed, but ${r.tx_hash} is ${rc ? `status ${rc.status}${this.canonical(rc) ? '' : ' (not canonical)'}` : 'not mined'}`,
      );
    const paid = this.inflows.filter((f) => f.hash === lc(r.tx_hash) && f.token === token && f.from === main && f.to === lc(r.address));
    if (paid.length !== 1 || paid[0]!.amount18 !== parse18(r.amount))
      this.violate(
        'refunds',
        obj,
        `${r.tx_hash} pays ${JSON.stringify(paid.map((f) => `${fmt18(f.amount18)} to ${f.to}`))}, not ${r.amount} to ${r.address} from the main address`,
      );
  }

  /**
   * A payout is final after quiescence; each item's state is its transaction's (which carries the
   * payout's id, the item's reference and amount) and the chain's (confirmed: the exact amount
   * reached the item's address from the main address); items were sent in item order (nonces
   * rising); a payout the workload rejected or left, or one over approval_above it never
   * approved, sent nothing; every payout answered to the workload is listed, and no other.
   */
  private async checkPayout(w: SimWallet, p: any, txs: any[]): Promise<void> {
    const obj = `wallet ${w.id} payout ${p.id} (${p.total} ${p.token}, ${p.status})`;
    const work = this.work.payouts.find((x) => x.id === p.id);
    if (!work) this.violate('payouts', obj, 'listed, but no payout create was answered with it (a payout made twice?)');
    if (p.status === 'processing' || p.status === 'awaiting_approval')
      this.violate('states are the chain', obj, 'not final after quiescence');
    const sent = p.items.filter((i: any) => i.transaction_id !== null);
    if (sent.length > 0 && work?.decision !== undefined && work.decision !== 'approved')
      this.violate('payouts', obj, `${sent.length} items sent, but the workload ${work.decision} it`);
    let lastNonce = -1;
    for (const i of p.items) {
      const io = `${obj} item ${i.id} (${i.reference}, ${i.amount}, ${i.status})`;
      if (i.transaction_id === null) {
        if (i.status !== 'failed') this.violate('payouts', io, 'no transaction, but not failed');
        continue;
      }
      const t = txs.find((x) => x.id === i.transaction_id);
      const want = t?.status === 'confirmed' ? 'confirmed' : t?.status === 'failed' ? 'failed' : 'pending';
      if (!t || t.payout_id !== p.id || t.reference !== i.reference || t.amount !== i.amount || want !== i.status) {
        this.violate(
          'payouts',
          io,
          `its transaction ${i.transaction_id} is ${t ? `${t.status}, ${t.amount}, payout ${t.payout_id}, reference ${t.reference}` : 'not in the wallet'}`,
        );
        continue;
      }
      if (t.nonce !== null && t.nonce < lastNonce)
        this.violate('payouts', io, `nonce ${t.nonce} after an earlier item's ${lastNonce}: not in item order`);
      lastNonce = Math.max(lastNonce, t.nonce ?? -1);
      if (i.status === 'confirmed')
        await this.checkPaidOnChain(io, { tx_hash: i.tx_hash, address: i.address, amount: i.amount }, p.token, lc(w.address));
      // A batched item its token refused fails alone: its batch mined, nothing of it moved.
      if (t.batch_index !== null && i.status === 'failed' && t.failure_reason === 'refused') {
        const rc = i.tx_hash ? await this.receipt(i.tx_hash) : null;
        const moved = this.inflows.filter((f) => f.hash === lc(i.tx_hash) && f.to === lc(i.address) && f.from === lc(w.address));
        if (!rc || rc.status !== '0x1' || moved.length > 0)
          this.violate(
            'payouts',
            io,
            `refused in batch ${i.tx_hash}, but the batch is ${rc ? `status ${rc.status}` : 'not mined'} and moved ${moved.length} transfers to it`,
          );
      }
    }
    this.checkBatches(obj, p.items, txs);
  }

  /**
   * A payout's batches: the items sharing a transaction are in item order at places 0, 1, … of
   * it, and that transaction is one of the wallet's own (its batch row, type `contract`).
   */
  private checkBatches(obj: string, items: any[], txs: any[]): void {
    const byHash = new Map<string, any[]>();
    for (const i of items) {
      const t = txs.find((x) => x.id === i.transaction_id);
      if (!t || t.batch_index === null || !t.tx_hash) continue;
      byHash.set(t.tx_hash, [...(byHash.get(t.tx_hash) ?? []), t]);
    }
    for (const [hash, rows] of byHash) {
      const places = rows.map((r) => r.batch_index);
      if (places.some((k, n) => k !== n))
        this.violate(
          'payouts',
          `${obj} batch ${hash}`,
          `items at places ${JSON.stringify(places)}, not 0 to ${rows.length - 1} in item order`,
        );
      if (!txs.some((x) => x.type === 'contract' && x.tx_hash === hash && x.batch_index === null))
        this.violate('payouts', `${obj} batch ${hash}`, 'no transaction of the wallet is the batch itself');
    }
  }

  /** Every payout answered to the workload is listed. */
  private checkPayoutRequests(o: Observed): void {
    const shown = new Set(o.wallets.flatMap(({ payouts }) => payouts.map((p: any) => p.id)));
    for (const p of this.work.payouts)
      if (!shown.has(p.id)) this.violate('payouts', `wallet ${p.walletId} payout ${p.id}`, 'answered to a payout create, but not listed');
  }

  /** Every refund the workload was answered with is on its charge, and no other refund is. */
  private checkRefundRequests(o: Observed): void {
    const shown = new Map<number, any>();
    for (const { charges } of o.wallets) for (const c of charges) for (const r of c.refunds ?? []) shown.set(r.id, r);
    const answered = new Set(this.work.refunds.map((r) => r.id));
    for (const r of this.work.refunds)
      if (!shown.has(r.id))
        this.violate('refunds', `charge ${r.chargeId} refund ${r.id}`, 'answered to a refund request, but not on the charge');
    // A refund the node refused is recorded failed and answered 400 (docs/transactions.md, "Several providers: the finality rule"):
    // listed though no request was answered with it; that it paid nothing is "no refusal for what mined".
    for (const [id, r] of shown)
      if (!answered.has(id) && r.status !== 'failed')
        this.violate(
          'refunds',
          `refund ${id} (${r.status})`,
          'on a charge, but no refund request was answered with it (a refund made twice?)',
        );
  }

  /** Its address is empty, or reconciliation lists it as unswept. */
  async checkDepositEmpty(w: SimWallet, c: any, unswept: Array<{ address: string; token: string }> | null): Promise<void> {
    const obj = `wallet ${w.id} charge ${c.id} (${c.token} ${c.amount}, ${c.status}) deposit ${c.address}`;
    const held = { ETH: await this.chain.nativeBalance(c.address), [TOKEN_SYMBOL]: await this.chain.tokenBalance(c.address) } as Record<
      string,
      bigint
    >;
    for (const [token, v] of Object.entries(held)) {
      if (v === 0n) continue;
      const amount = fmt18(v * scale(token));
      if (unswept?.some((u) => lc(u.address) === lc(c.address) && u.token === token)) continue;
      // A sweep under way of that token is the other answer the contract allows (its fate is checked with the states).
      if ((c.sweeps ?? []).some((s: any) => s.status === 'pending' && s.token === token)) continue;
      if (unswept === null && token === 'ETH' && v < 10n ** 15n && c.token !== 'ETH') {
        this.notes.push(
          `${obj} keeps ${amount} ETH (gas left from a token sweep?); reconciliation did not run, so whether it is listed unswept is NOT CHECKED`,
        );
        continue;
      }
      this.violate(
        'deposit addresses emptied',
        obj,
        `holds ${amount} ${token} with no sweep under way and ${unswept === null ? 'no reconciliation to list it (NOT RUN)' : "no unswept entry in the wallet's reconciliation (stranded, unlisted)"}; sweeps ${JSON.stringify((c.sweeps ?? []).map((s: any) => `${s.token} ${s.amount} ${s.status}${s.tx_hash ? ` ${s.tx_hash}` : ''}`))}`,
      );
    }
  }

  /** Every event delivered at least once; each object's events end in its final state. */
  private checkEvents(o: Observed): void {
    const finalTx = new Map<number, any>();
    const finalCharge = new Map<number, any>();
    for (const { txs, charges } of o.wallets) {
      for (const t of txs) finalTx.set(t.id, t);
      for (const c of charges) finalCharge.set(c.id, c);
    }
    const byTx = new Map<number, string[]>();
    const byCharge = new Map<number, string[]>();
    const refunded = new Set<number>();
    for (const e of o.events) {
      if (e.event === 'charge.refunded') refunded.add(e.data.refund?.id);
      if (e.event.startsWith('transaction.')) push(byTx, e.data.transaction_id, e.event);
      if (e.event.startsWith('charge.')) push(byCharge, e.data.charge_id, e.event);
    }
    for (const [id, t] of finalTx) {
      const evs = (byTx.get(id) ?? []).filter((e) => e !== 'transaction.created' && e !== 'transaction.approval_required');
      const want = t.status === 'confirmed' ? 'transaction.confirmed' : t.status === 'failed' ? 'transaction.failed' : null;
      if (want && evs[evs.length - 1] !== want)
        this.violate('event story', `transaction ${id} (${t.type}, ${t.status})`, `its events are ${JSON.stringify(byTx.get(id) ?? [])}`);
      const all = byTx.get(id) ?? [];
      // A held transfer starts with approval_required; approved (signed), transaction.created follows.
      const start = all[0] === 'transaction.approval_required' && t.tx_hash !== null ? all.slice(0, 2).join() : all[0];
      const wantStart =
        all[0] === 'transaction.approval_required'
          ? t.tx_hash !== null
            ? 'transaction.approval_required,transaction.created'
            : 'transaction.approval_required'
          : 'transaction.created';
      if (t.type !== 'receipt' && start !== wantStart)
        this.violate('event story', `transaction ${id} (${t.type})`, `does not start with ${wantStart}: ${JSON.stringify(all)}`);
    }
    // Events are numbered in commit order: a wallet's newest wallet.updated names it as it is.
    for (const { w, shown } of o.wallets) {
      const updates = o.events.filter((e) => e.event === 'wallet.updated' && e.data.wallet_id === w.id);
      const newest = updates[updates.length - 1];
      if (newest && (newest.data.name !== shown.name || newest.data.description !== shown.description)) {
        this.violate(
          'event story',
          `wallet ${w.id} (${JSON.stringify(shown.name)})`,
          `its newest wallet.updated (event ${newest.id}) says ${JSON.stringify({ name: newest.data.name, description: newest.data.description })}`,
        );
      }
    }
    for (const [id, c] of finalCharge) {
      const evs = byCharge.get(id) ?? [];
      const outcomes = evs.filter((e) => ['charge.paid', 'charge.expired', 'charge.failed', 'charge.reopened'].includes(e));
      if (evs[0] !== 'charge.created' || outcomes[outcomes.length - 1] !== `charge.${c.status}`)
        this.violate('event story', `charge ${id} (${c.status})`, `its events are ${JSON.stringify(evs)}`);
      // Each confirmed refund was told by charge.refunded (with that refund).
      for (const r of (c.refunds ?? []).filter((x: any) => x.status === 'confirmed')) {
        if (!refunded.has(r.id)) this.violate('event story', `charge ${id} refund ${r.id} (confirmed)`, 'no charge.refunded event with it');
      }
    }
    this.checkBalanceOrder(o.events);
  }

  /** balance.updated moves forward in chain order (contract: `block_number`). */
  private checkBalanceOrder(events: any[]): void {
    const bal = events.filter((e) => e.event === 'balance.updated');
    if (bal.length > 0 && bal.every((e) => e.data.block_number === undefined)) {
      this.notRun.push('balance.updated in chain order: the events carry no block_number yet');
      return;
    }
    const last = new Map<string, number>();
    for (const e of bal) {
      const k = `${e.wallet_id}|${e.data.token}`;
      if (typeof e.data.block_number !== 'number') continue;
      if ((last.get(k) ?? -1) > e.data.block_number)
        this.violate(
          'event story',
          `wallet ${e.wallet_id} ${e.data.token} balance.updated event ${e.id}`,
          `block_number ${e.data.block_number} after ${last.get(k)}`,
        );
      last.set(k, Math.max(last.get(k) ?? -1, e.data.block_number));
    }
  }

  /**
   * Each event of a wallet with webhooks (`hooked`) arrived at the receiver at least once; no
   * event of a wallet without any did (it is listed by the events API, and sent nowhere).
   */
  checkDelivered(events: any[], deliveries: Delivery[], hooked: Set<number>): void {
    const got = new Set(deliveries.map((d) => canonical({ event: d.event, data: d.data })));
    for (const e of events) {
      const delivered = got.has(canonical({ event: e.event, data: e.data }));
      if (hooked.has(e.wallet_id) && !delivered)
        this.violate(
          'events delivered',
          `event ${e.id} ${e.event}`,
          `never delivered to the receiver: ${JSON.stringify(e.data).slice(0, 200)}`,
        );
      if (!hooked.has(e.wallet_id) && delivered)
        this.violate('events delivered', `event ${e.id} ${e.event} of wallet ${e.wallet_id}`, 'delivered, but that wallet has no webhook');
    }
    const quiet = events.filter((e) => !hooked.has(e.wallet_id));
    if (quiet.length === 0)
      this.notRun.push('events of a wallet without webhooks: none was listed, so their being sent nowhere is NOT CHECKED');
  }

  /** The main address's balances, as the API shows them, equal the chain's. */
  async balancesMatch(w: SimWallet, balance: any): Promise<string[]> {
    const problems: string[] = [];
    const native = await this.chain.nativeBalance(w.address);
    if (parse18(balance.balance) !== native) problems.push(`ETH: API ${balance.balance}, chain ${fmt18(native)}`);
    const tok = (balance.tokens ?? []).find((t: any) => t.symbol === TOKEN_SYMBOL);
    const chainTok = (await this.chain.tokenBalance(w.address)) * scale(TOKEN_SYMBOL);
    if (!tok || parse18(tok.balance) !== chainTok) problems.push(`${TOKEN_SYMBOL}: API ${tok?.balance}, chain ${fmt18(chainTok)}`);
    return problems;
  }
}

function push<K>(m: Map<K, string[]>, k: K, v: string): void {
  const l = m.get(k) ?? [];
  l.push(v);
  m.set(k, l);
}

/** JSON with sorted keys, to compare bodies whatever their key order. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

export { getAddress };

/** An 18-place decimal string (or a plain decimal) as an integer of 10^-18 units. */
function units18(v: string): bigint {
  const [whole = '0', frac = ''] = v.split('.');
  return BigInt(whole) * 10n ** 18n + BigInt((frac + '0'.repeat(18)).slice(0, 18));
}
