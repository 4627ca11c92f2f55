/**
 * Two invariants of several providers (docs/transactions.md, "Several providers: the
 * finality rule"), checked after quiescence against the chain itself:
 * - no refused answer for a transfer that mined: a create, payout, refund, claim, approve,
 *   speed-up or cancel answered a final 4xx must have sent nothing the chain mined; a payout item
 *   or refund shown failed paid nothing; and each transaction mined from a main address is the
 *   final state of the row that names it (confirmed, reverted or cancelled, by its `tx_hash`);
 * - no nonce gap: at quiescence no transfer waits behind a nonce that nothing the service holds
 *   will fill (a nonce taken as used on one endpoint's word while the chain never used it).
 */
import type { ChainTx, Inflow, Violation } from './checks.js';
import type { RpcReceipt } from './chain.js';
import type { Observed } from './checks.js';
import type { SimWallet, Workload } from './workload.js';

const lc = (s: string | null | undefined): string => (s ?? '').toLowerCase();

export interface ChainView {
  txs: Map<string, ChainTx>;
  /** Token Transfer logs of transactions that succeeded. */
  tokenMoves: Inflow[];
  receipt: (hash: string) => Promise<RpcReceipt | null>;
}

/** Where each main address sent money on chain: `from|to` → the transactions (value, or a token log). */
function payments(view: ChainView): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const add = (from: string, to: string, hash: string) => out.set(`${from}|${to}`, [...(out.get(`${from}|${to}`) ?? []), hash]);
  for (const [hash, t] of view.txs) if (t.to) add(t.from, t.to, hash);
  for (const f of view.tokenMoves) add(f.from, f.to, f.hash);
  return out;
}

const hashesOf = (t: any): string[] => [t.tx_hash, ...(t.replaced_hashes ?? [])].filter(Boolean).map(lc);

export async function checkRefusals(o: Observed, work: Workload, view: ChainView): Promise<Violation[]> {
  const out: Violation[] = [];
  const violate = (object: string, detail: string) => out.push({ check: 'no refusal for what mined', object, detail });
  const paid = payments(view);
  const mains = new Map(o.wallets.map((x) => [x.w.id, lc(x.w.address)]));
  const rows = new Map(o.wallets.flatMap((x) => x.txs.map((t: any) => [t.id as number, t] as const)));
  const atNonce = new Map<string, string>();
  for (const [hash, t] of view.txs) atNonce.set(`${t.from}|${t.nonce}`, hash);
  const describe = (hash: string) => `${hash} (block ${view.txs.get(hash)?.block})`;
  for (const r of work.refusals) {
    const main = mains.get(r.walletId)!;
    const obj = `wallet ${r.walletId} ${r.what}${r.key ? ` (key ${r.key})` : ''}${r.txId !== undefined ? ` of transaction ${r.txId}` : ''}`;
    const answered = `answered ${r.status} ${JSON.stringify(r.message)}${r.retried ? ' (to a retry with the same key: an earlier attempt was cut by a kill or a fault)' : ''}`;
    for (const to of r.to ?? []) {
      const hashes = paid.get(`${main}|${lc(to)}`) ?? [];
      if (hashes.length > 0) violate(obj, `${answered}, but the chain has the wallet paying ${to}: ${hashes.map(describe).join(', ')}`);
    }
    if (r.spender) {
      const needle = lc(r.spender).slice(2);
      for (const [hash, t] of view.txs)
        if (t.from === main && t.input.includes(needle))
          violate(obj, `${answered}, but the chain mined its call (approving ${r.spender}): ${describe(hash)}`);
    }
    if (r.txId === undefined) continue;
    const row = rows.get(r.txId);
    if (!row) continue;
    if (r.what === 'approve') {
      for (const h of hashesOf(row))
        if (view.txs.has(h))
          violate(
            obj,
            `${answered}, but ${describe(h)} of it mined (transaction ${row.status}${row.failure_reason ? ` ${row.failure_reason}` : ''})`,
          );
      continue;
    }
    if (r.replace === undefined || row.nonce === null) continue;
    const mined = atNonce.get(`${main}|${row.nonce}`);
    if (!mined) continue;
    const t = view.txs.get(mined)!;
    if (!hashesOf(row).includes(mined)) {
      const rowOf = [...rows.values()].find((x) => hashesOf(x).includes(mined));
      if (!rowOf)
        violate(
          obj,
          `${answered}, but the chain mined ${describe(mined)} at its nonce ${row.nonce}, a version the transaction does not list (its hashes ${JSON.stringify(hashesOf(row))}): the refused ${r.replace}, forgotten while it could mine?`,
        );
    } else if (
      r.replace === 'cancel' &&
      t.to === main &&
      t.value === 0n &&
      !work.replacements.some((x) => x.txId === r.txId && x.kind === 'cancel')
    ) {
      violate(
        obj,
        `${answered} and no cancel of it was accepted, but the chain mined a cancel (a 0 self-transfer) at its nonce ${row.nonce}: ${describe(mined)}`,
      );
    }
  }
  checkFailedPaidNothing(o, paid, violate);
  await checkMinedRows(o, view, rows, (object, detail) => out.push({ check: 'mined is confirmed', object, detail }));
  return out;
}

/** A payout item or refund shown failed paid nothing (its address is fresh: a payment to it is that item's). */
function checkFailedPaidNothing(o: Observed, paid: Map<string, string[]>, violate: (object: string, detail: string) => void): void {
  for (const { w, charges, payouts } of o.wallets) {
    const main = lc(w.address);
    for (const p of payouts) {
      for (const i of p.items.filter((x: any) => x.status === 'failed')) {
        const hashes = paid.get(`${main}|${lc(i.address)}`) ?? [];
        if (hashes.length > 0)
          violate(
            `wallet ${w.id} payout ${p.id} item ${i.id} (${i.reference}, failed${i.failure_reason ? ` ${i.failure_reason}` : ''})`,
            `failed, but the chain has the wallet paying its address ${i.address}: ${hashes.join(', ')}`,
          );
      }
    }
    for (const c of charges) {
      for (const r of (c.refunds ?? []).filter((x: any) => x.status === 'failed' && x.address)) {
        const hashes = paid.get(`${main}|${lc(r.address)}`) ?? [];
        if (hashes.length > 0)
          violate(
            `wallet ${w.id} charge ${c.id} refund ${r.id} (${r.amount}, failed)`,
            `failed, but the chain has the wallet paying its address ${r.address}: ${hashes.join(', ')}`,
          );
      }
    }
  }
}

/**
 * Each transaction mined from a main address is its row's final state: the row that names it as
 * `tx_hash` is confirmed (status 1), or failed reverted (status 0) or cancelled; a mined hash
 * that a row lists only among its replaced versions is a row whose state is not the chain's.
 * (A hash no row or sweep names at all is `nothing unrequested leaves`.)
 */
async function checkMinedRows(
  o: Observed,
  view: ChainView,
  rows: Map<number, any>,
  violate: (object: string, detail: string) => void,
): Promise<void> {
  const owner = new Map(o.wallets.map((x) => [lc(x.w.address), x.w.id]));
  const sweeps = new Set(o.wallets.flatMap((x) => x.charges.flatMap((c: any) => (c.sweeps ?? []).map((s: any) => lc(s.tx_hash)))));
  for (const [hash, t] of view.txs) {
    const walletId = owner.get(t.from);
    if (walletId === undefined || sweeps.has(hash)) continue;
    const row =
      [...rows.values()].find((x) => x.type !== 'receipt' && x.wallet_id === walletId && lc(x.tx_hash) === hash) ??
      [...rows.values()].find((x) => x.type !== 'receipt' && lc(x.tx_hash) === hash);
    if (row) {
      const status = (await view.receipt(hash))?.status;
      const ok =
        (row.status === 'confirmed' && status === '0x1') ||
        (row.status === 'failed' && ((row.failure_reason === 'reverted' && status === '0x0') || row.failure_reason === 'cancelled'));
      if (!ok)
        violate(
          `wallet ${walletId} transaction ${row.id} (${row.type} ${row.amount} ${row.symbol})`,
          `${hash} mined (status ${status}, block ${t.block}), but the transaction is ${row.status}${row.failure_reason ? ` ${row.failure_reason}` : ''}`,
        );
      continue;
    }
    const older = [...rows.values()].find((x) => hashesOf(x).includes(hash));
    if (older)
      violate(
        `wallet ${walletId} transaction ${older.id} (${older.type} ${older.amount} ${older.symbol}, ${older.status})`,
        `${hash} mined (block ${t.block}) is one of its replaced versions, but it shows tx_hash ${older.tx_hash}`,
      );
  }
}

/**
 * No nonce gap: at quiescence, transfers still pending above the chain's next nonce wait for a
 * nonce that nothing the service holds will fill (no pending transaction has it). One violation
 * per wallet, naming the nonce, what the service did with it, and who waits behind it.
 */
export function checkNonceGap(w: SimWallet, txs: any[], chainNonce: number): Violation[] {
  const pending = txs.filter((t) => t.type !== 'receipt' && t.status === 'pending' && t.nonce !== null && t.nonce >= chainNonce);
  if (pending.length === 0) return [];
  if (pending.some((t) => t.nonce === chainNonce)) return [];
  const at = txs.filter((t) => t.type !== 'receipt' && t.nonce === chainNonce);
  const held =
    at.length > 0
      ? at
          .map((t) => `transaction ${t.id} ${t.status}${t.failure_reason ? ` ${t.failure_reason}` : ''}${t.tx_hash ? ` ${t.tx_hash}` : ''}`)
          .join(', ')
      : 'no transaction';
  const waiting = pending.sort((a, b) => a.nonce - b.nonce);
  return [
    {
      check: 'no nonce gap',
      object: `wallet ${w.id} main ${w.address}`,
      detail: `the chain's next nonce is ${chainNonce}, held by ${held}; ${waiting.length} pending transfer(s) wait behind it, never to be mined: ${waiting
        .slice(0, 8)
        .map((t) => `${t.id}@${t.nonce}`)
        .join(', ')}${waiting.length > 8 ? ', …' : ''}`,
    },
  ];
}
