/**
 * Batched sweeps of keyless deposit addresses (docs/charges.md, "Keyless deposit addresses"):
 * no key, no gas sent there; the wallet's main address calls the Sweeper, which empties up to
 * SWEEP_BATCH_MAX of the wallet's due addresses in one transaction.
 *
 * - When: a wallet's due keyless charges are sent together once SWEEP_BATCH_MAX are due or the
 *   oldest has waited SWEEP_MAX_WAIT_S.
 * - What a batch names: each due address whose balances, read at a block at or above all its
 *   charges' money (`readHeight`, so only from an endpoint that has that block), hold anything;
 *   the tokens any of them holds. An address with nothing is not due any more.
 * - The call is a `contract` transaction of the wallet, made by the transaction service (nonce,
 *   reservation of its fee, record, broadcast, re-send, replacement, reorgs: as any transfer),
 *   exempt from the wallet's policy as a gas top-up is (its money goes only to the main address).
 *   Its rows here (kind `batch`, one per charge and token it moves, `claimBatch`) are claimed in
 *   the transaction that records it: a charge with a row in flight rolls the whole batch back
 *   before anything is signed, so no address is in two batches at once, across processes.
 * - Outcome: once the wallet's transaction is confirmed, each row takes its outcome from the
 *   receipt's logs (`sweepOutcomes`): `Swept` is `confirmed` with the amount that left;
 *   `SweepFailed` (the token refused: paused, blacklisted) is `failed`, reason `refused`, the
 *   address looked at again after `revertWaitMs` while the others are done; no outcome (nothing
 *   there when it mined) is `failed`, reason `nothing moved`. A failed transaction (reverted,
 *   dropped) fails its rows and the addresses are due again: a new batch is sent. The fee is the
 *   main address's, on its transaction (reconciliation counts it there, once); a row's is 0.
 * - Reorgs: the follower's rollback makes the wallet's transaction pending again and puts these
 *   rows back in flight (`reopenMinedAbove`); the outcome is read again from the receipt of the
 *   block it is mined in next (`stillMined`: only from the block the follower holds).
 */
import { getAddress, type Address, type Hex, type PublicClient } from 'viem';
import type { Logger } from 'pino';
import type { AppContext } from '../../context.js';
import type { NetworkRow, WalletTokenRow } from '../../db/types.js';
import { receiptOrNull } from '../../chain/blocks.js';
import { NATIVE_CONTRACT, readBalance } from '../../chain/erc20.js';
import { isAppError } from '../../errors.js';
import { outcomeKey, sweepData, sweepOutcomes } from '../../chain/sweeper.js';
import { findBlockHash, findCursor, findNetwork } from '../networks/networks.repository.js';
import { lockedCursorHeight } from './charges.payments.repository.js';
import type { Executor } from '../../db/index.js';
import { listTokens } from '../tokens/tokens.repository.js';
import { findWalletView, type WalletView } from '../wallets/wallets.repository.js';
import type { TransactionService } from '../transactions/transactions.service.js';
import * as repo from './charges.repository.js';
import type { ChargeRow } from './charges.repository.js';
import * as sw from './charges.sweeps.repository.js';
import type { DueCharge, NewSweep, SweepRow } from './charges.sweeps.repository.js';

/** What the batches need of the charge sweeper: its final step, its confirmed height and its retry rules. */
export interface SweepSteps {
  finish(
    row: SweepRow,
    f: Parameters<typeof sw.finishLive>[2],
    retryMs: number,
    mined?: { network: NetworkRow; block: number; hash: string },
  ): Promise<void>;
  finalHeight(network: NetworkRow, settled?: ReadonlyMap<number, number>): Promise<number>;
  retryMs: number;
  revertWaitMs(charge: ChargeRow): number;
}

class NoSweeperCode extends Error {
  constructor(sweeper: Address, block: bigint) {
    super(`the Sweeper ${sweeper} has no code at block ${block}: no batch is sent to it (deploy it again: network:deploy-sweeper)`);
  }
}

/** The chain moved under a batch's reads: nothing is sent this round. */
class ChainMoved extends Error {}

/** Whether the follower still holds `view.hash` at `view.at`, read under the cursor's lock (the one its rollback takes first). */
async function followerHolds(trx: Executor, network: NetworkRow, view: { at: bigint; hash: string }): Promise<boolean> {
  const height = await lockedCursorHeight(trx, network.id);
  if (height === undefined || BigInt(height) < view.at) return false;
  const stored =
    BigInt(height) === view.at ? (await findCursor(trx, network.id))?.block_hash : await findBlockHash(trx, network.id, Number(view.at));
  return stored?.toLowerCase() === view.hash;
}

class BatchTaken extends Error {
  constructor() {
    super('an address of this batch already has a sweep in flight');
  }
}

/** One address of a batch: its charge and what it holds, by token. */
interface Part {
  charge: ChargeRow;
  held: Array<{ token: WalletTokenRow; amount: bigint }>;
}

export class BatchSweeper {
  private readonly log: Logger;

  constructor(
    private readonly ctx: AppContext,
    private readonly transactions: TransactionService,
    private readonly steps: SweepSteps,
  ) {
    this.log = ctx.log.child({ component: 'charges' });
  }

  /** The due keyless charges, by wallet: each wallet's batch sent when full or when its oldest has waited long enough. */
  async sweepDue(due: DueCharge[], stopping: () => boolean): Promise<void> {
    const now = this.ctx.clock.nowMs();
    const { sweepBatchMax, sweepMaxWaitS } = this.ctx.config;
    const byWallet = new Map<number, DueCharge[]>();
    for (const d of due) byWallet.set(d.wallet_id, [...(byWallet.get(d.wallet_id) ?? []), d]);
    for (const [walletId, list] of byWallet) {
      const oldest = Math.min(...list.map((d) => d.sweep_due_at));
      if (list.length < sweepBatchMax && now - oldest < sweepMaxWaitS * 1000) continue;
      for (let i = 0; i < list.length; i += sweepBatchMax) {
        if (stopping()) return;
        const chunk = list.slice(i, i + sweepBatchMax);
        try {
          await this.sendBatch(walletId, chunk);
        } catch (e) {
          if (e instanceof ChainMoved) continue; // still due: looked at again next round, on the chain the follower holds then
          for (const d of chunk) await sw.setDue(this.ctx.store.db, d.id, this.ctx.clock.nowMs() + this.steps.retryMs);
          this.log.warn({ err: e, wallet_id: walletId, charges: chunk.length }, 'keyless sweep batch failed; will retry');
        }
      }
    }
  }

  /** One keyless address swept now, in a batch of its own (the sweep route), whatever else is due. */
  sendNow(due: DueCharge): Promise<void> {
    return this.sendBatch(due.wallet_id, [due]);
  }

  /** Reads the due addresses' balances and sends one Sweeper call for those that hold anything. */
  private async sendBatch(walletId: number, due: DueCharge[]): Promise<void> {
    const db = this.ctx.store.db;
    const wallet = await findWalletView(db, walletId);
    const network = wallet ? await findNetwork(db, wallet.network_id) : undefined;
    if (!wallet || !network) return;
    const client = this.ctx.chains.get(network);
    const charges: ChargeRow[] = [];
    for (const d of due) {
      if (await sw.hasLive(db, d.id)) await sw.clearDueWhileLive(db, d.id, d.sweep_due_at);
      else {
        const c = await repo.findChargeById(db, d.id);
        if (c?.deposit_kind === 'keyless' && c.sweeper !== null && c.salt !== null) charges.push(c);
      }
    }
    if (charges.length === 0) return;
    const tokens = await listTokens(db, wallet.id, { activeOnly: true });
    const native = tokens.find((t) => t.is_native === 1);
    if (!native) {
      this.log.warn({ wallet_id: walletId }, 'the wallet has no active native token to pay a batch sweep’s gas; trying again later');
      for (const d of due) await sw.setDue(db, d.id, this.ctx.clock.nowMs() + 12 * this.steps.retryMs);
      return;
    }
    const { parts, view } = await this.holdings(client, network, charges, tokens);
    for (const p of parts.filter((x) => x.held.length === 0)) {
      const d = due.find((x) => x.id === p.charge.id)!;
      await sw.clearDue(db, d.id, d.sweep_due_at);
    }
    // One Sweeper per call: a charge keeps the one its address was derived from.
    const full = parts.filter((x) => x.held.length > 0);
    for (const sweeper of new Set(full.map((p) => p.charge.sweeper!)))
      await this.send(
        { wallet, network, native, view },
        getAddress(sweeper),
        full.filter((p) => p.charge.sweeper === sweeper),
      );
  }

  /**
   * Each address's balances of the wallet's tokens (and its charge's own), read at the block the
   * chain follower is at (`view`: its number and hash), which is at or above all their money (the
   * follower recorded it). The node must show that very block there before and after the reads:
   * a chain that moved (a reorg the follower has not rolled back yet) could show an address's
   * money back whose batch it removed, while that batch's rows are still final here, and a second
   * batch would be sent beside the first (`ChainMoved`: tried again next round; the claim checks
   * the follower's hash again, `claim`). None when a Sweeper of theirs has no code at that block
   * (a devnet whose state was reset): a call to it would succeed and move nothing, so none is sent.
   */
  private async holdings(client: PublicClient, network: NetworkRow, charges: ChargeRow[], tokens: WalletTokenRow[]) {
    const db = this.ctx.store.db;
    const cursor = await findCursor(db, network.id);
    if (!cursor) throw new ChainMoved('the chain follower has not read this network yet');
    const view = { at: BigInt(cursor.block_number), hash: cursor.block_hash.toLowerCase() };
    const sameBlock = async () => {
      const b = await client.getBlock({ blockNumber: view.at });
      if (b.hash?.toLowerCase() !== view.hash) throw new ChainMoved(`block ${view.at} is not the one the chain follower holds`);
    };
    await sameBlock();
    for (const sweeper of new Set(charges.map((c) => getAddress(c.sweeper!)))) {
      const code = await client.getCode({ address: sweeper, blockNumber: view.at });
      if (code === undefined || code === '0x') throw new NoSweeperCode(sweeper, view.at);
    }
    const parts: Part[] = await Promise.all(
      charges.map(async (charge) => {
        const own = tokens.some((t) => t.id === charge.token_id) ? [] : await listTokens(db, charge.wallet_id);
        const all = [...tokens, ...own.filter((t) => t.id === charge.token_id)];
        const amounts = await Promise.all(all.map((t) => readBalance(client, t.contract, charge.address as Address, view.at)));
        return { charge, held: all.map((token, i) => ({ token, amount: amounts[i]! })).filter((h) => h.amount > 0n) };
      }),
    );
    await sameBlock();
    return { parts, view };
  }

  /**
   * The Sweeper call, recorded with its rows (`claimBatch`) in one transaction, then sent (the
   * transaction service). The claim holds only while the follower still holds the block the
   * balances were read at (under the cursor's lock, which its rollback takes first): a rollback
   * committed since may have put a removed batch of these addresses back in flight.
   */
  private async send(
    b: { wallet: WalletView; network: NetworkRow; native: WalletTokenRow; view: { at: bigint; hash: string } },
    sweeper: Address,
    parts: Part[],
  ): Promise<void> {
    const { wallet, native } = b;
    const salts = parts.map((p) => p.charge.salt as Hex);
    const erc20 = [
      ...new Set(parts.flatMap((p) => p.held.filter((h) => h.token.is_native !== 1).map((h) => getAddress(h.token.contract)))),
    ];
    const rows = (hash: string, transactionId: number): NewSweep[] =>
      parts.flatMap((p) =>
        p.held.map((h) => ({
          charge_id: p.charge.id,
          kind: 'batch' as const,
          token_id: h.token.id,
          amount: h.amount,
          tx_hash: hash,
          raw_tx: null,
          nonce: null,
          transaction_id: transactionId,
        })),
      );
    try {
      const tx = await this.transactions.create(
        wallet,
        { amount: 0n, token: native, to: sweeper, data: sweepData(salts, erc20) },
        {
          exemptFromPolicy: true,
          inTransaction: async (trx, rec) => {
            if (!(await followerHolds(trx, b.network, b.view))) throw new BatchTaken();
            if (!(await sw.claimBatch(trx, rows(rec.tx_hash ?? '', rec.id), this.ctx.clock.nowMs()))) throw new BatchTaken();
          },
        },
      );
      this.log.info(
        { wallet_id: wallet.id, transaction_id: tx.id, tx_hash: tx.tx_hash, addresses: parts.length, tokens: erc20.length },
        'keyless deposit addresses swept to the main address in one batch',
      );
    } catch (e) {
      if (e instanceof BatchTaken) return;
      if (isAppError(e) && e.code === 'WOULD_REVERT') {
        this.log.warn({ err: e, wallet_id: wallet.id, addresses: parts.length }, 'a keyless sweep batch would revert; tried again later');
      }
      throw e;
    }
  }

  /**
   * A batch row in flight: nothing while its wallet transaction is pending; once that is
   * confirmed, its outcome from the receipt's logs (read from the block the follower holds at
   * that height, and no higher than the confirmed height this tick used); once it failed, failed.
   */
  async track(row: SweepRow, settled?: ReadonlyMap<number, number>): Promise<void> {
    const db = this.ctx.store.db;
    const state = await sw.topUpState(db, row.transaction_id!);
    if (!state || state.status === 'pending' || state.status === 'awaiting_approval') return;
    if (state.status !== 'confirmed')
      return this.steps.finish(
        row,
        { status: 'failed', tx_hash: state.tx_hash, error: state.failure_reason ?? 'failed' },
        this.steps.retryMs,
      );
    const charge = await repo.findChargeById(db, row.charge_id);
    const wallet = charge ? await findWalletView(db, charge.wallet_id) : undefined;
    const network = wallet ? await findNetwork(db, wallet.network_id) : undefined;
    if (!charge || !wallet || !network || state.tx_hash === null) return;
    const receipt = await receiptOrNull(this.ctx.chains.get(network), state.tx_hash as Hex);
    if (!receipt) return;
    const block = Number(receipt.blockNumber);
    if (block > (await this.steps.finalHeight(network, settled))) return;
    const token = (await listTokens(db, wallet.id)).find((t) => t.id === row.token_id);
    const contract = token?.is_native === 1 ? NATIVE_CONTRACT : (token?.contract ?? '');
    const outcome = sweepOutcomes(receipt.logs, getAddress(charge.sweeper!), getAddress(wallet.address)).get(
      outcomeKey(charge.address, contract),
    );
    const mined = { network, block, hash: receipt.blockHash };
    const base = { tx_hash: state.tx_hash, block_number: block, fee_paid: 0n };
    if (outcome?.moved) return this.steps.finish(row, { ...base, status: 'confirmed', amount: outcome.amount }, 0, mined);
    if (outcome)
      return this.steps.finish(
        row,
        { ...base, status: 'failed', error: 'refused', amount: outcome.amount },
        this.steps.revertWaitMs(charge),
        mined,
      );
    return this.steps.finish(row, { ...base, status: 'failed', error: 'nothing moved', amount: 0n }, this.steps.retryMs, mined);
  }
}
