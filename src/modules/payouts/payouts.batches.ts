/**
 * Batched payouts (docs/money-out.md, "Batched payouts"): on a network with a Sweeper, a payout's
 * ERC-20 items go out up to PAYOUT_BATCH_MAX at a time in one `pay` call of the Sweeper, which
 * takes each item from the main address with `transferFrom`.
 *
 * - The batch is an ordinary contract transaction of the wallet (the transaction service: its
 *   nonce, fees, signed versions, re-sends, speed-ups, the follower's confirmations and reorgs),
 *   carrying the payout's id. It reserves the items' sum of the token (`TransferInput.spend`) and
 *   takes over the items' own reservations (`spends`), so nothing else takes what they need.
 * - In the transaction recording it, each item gets its own `transfer` row (`batch_tx_id`, its
 *   place `batch_index`, the batch's `tx_hash`, no nonce, nothing signed, no fee: the batch's row
 *   has the fee) with its `transaction.created` event, and the payout item is claimed; an item
 *   already sent rolls the whole batch back before anything is signed.
 * - The item rows follow their batch (`track`): while it is pending they are pending under its
 *   current hash (a speed-up changes it); once it is confirmed, each item is confirmed or, if the
 *   receipt's `PayoutFailed` names it, failed `refused` (the token refused it: paused,
 *   blacklisted), from the receipt of the block the batch was confirmed in; once it failed, they
 *   fail with its reason. A reorg un-settles the items with their batch (the follower's rollback
 *   takes every row above the common block), and they follow it again; so do items failed
 *   unmined with a batch the chain then shows mined (a refused first send another node had).
 * - The Sweeper needs the wallet's allowance: once per wallet and token, an
 *   `approve(Sweeper, 2^256 - 1)` contract transaction is sent, and the payout waits for it.
 */
import { getAddress, type Address, type Hex } from 'viem';
import type { AppContext } from '../../context.js';
import type { WalletTokenRow } from '../../db/types.js';
import { receiptOrNull } from '../../chain/blocks.js';
import { approveAllData, payData, payOutcomes, readAllowance } from '../../chain/sweeper.js';
import { findNetwork } from '../networks/networks.repository.js';
import { findWalletView, lockWallet, type WalletView } from '../wallets/wallets.repository.js';
import type { TransactionService } from '../transactions/transactions.service.js';
import { findRecord, type FailureReason, type TxRecord } from '../transactions/transactions.repository.js';
import { announce } from '../transactions/transactions.state.js';
import * as repo from './payouts.repository.js';
import * as batchRepo from './payouts.batches.repository.js';
import type { PayoutRow } from './payouts.repository.js';

/** An item of the batch was sent meanwhile (by another pass or process): nothing is recorded. */
export class BatchTaken extends Error {
  constructor() {
    super('an item of this payout batch was sent by another pass');
  }
}

export class PayoutBatches {
  constructor(
    private readonly ctx: AppContext,
    private readonly transactions: TransactionService,
  ) {}

  /** The Sweeper that pays this payout's items in batches, or null (no Sweeper on the network, or a native payout). */
  async sweeperFor(wallet: WalletView, token: WalletTokenRow): Promise<Address | null> {
    if (token.is_native === 1) return null;
    const network = await findNetwork(this.ctx.store.db, wallet.network_id);
    return network?.sweeper ? getAddress(network.sweeper) : null;
  }

  /**
   * Sends the payout's next unsent items (up to PAYOUT_BATCH_MAX) as one batch. False when it
   * must wait: for the wallet's approval of the Sweeper, sent now or still pending.
   */
  async sendNext(payout: PayoutRow, wallet: WalletView, token: WalletTokenRow, sweeper: Address): Promise<boolean> {
    const db = this.ctx.store.db;
    const items = await repo.nextUnsentMany(db, payout.id, this.ctx.config.payoutBatchMax);
    if (items.length === 0) return false;
    const sum = items.reduce((s, i) => s + i.amount, 0n);
    const contract = getAddress(token.contract);
    if (!(await this.approved(wallet, token, contract, sweeper, sum))) return false;
    const native = await batchRepo.nativeToken(db, wallet.id);
    const main = getAddress(wallet.address);
    const fees = payout.fee_level === null ? {} : { fees: { level: payout.fee_level as 'low' | 'medium' | 'high' } };
    const data = payData(items.map((i) => ({ token: contract, to: getAddress(i.address), amount: i.amount })));
    const rec = await this.transactions.create(
      wallet,
      { amount: 0n, token: native, to: sweeper, data, spend: { token, amount: sum, policed: 0n }, ...fees },
      {
        approvalDecided: true,
        exemptFromPolicy: true, // each item was policed with the payout (enforceBatchPolicy)
        spends: items.map((i) => repo.itemReservationId(i.id)),
        link: async (trx) => {
          for (const i of items) if (!(await repo.isUnsent(trx, i.id))) throw new BatchTaken();
          return { payout_id: payout.id, reference: null };
        },
        inTransaction: async (trx, batch) => {
          const now = this.ctx.clock.nowMs();
          for (const [k, i] of items.entries()) {
            const id = await batchRepo.insertItemRow(
              trx,
              { wallet, token, from: main, batch, index: k, payoutId: payout.id, item: i },
              now,
            );
            if (!(await repo.setItemTransaction(trx, i.id, id))) throw new BatchTaken();
          }
          for (const row of await batchRepo.listItems(trx, batch.id, 'pending')) await announce(trx, row, 'transaction.created', now);
        },
      },
    );
    this.ctx.log.info(
      {
        component: 'payouts',
        wallet_id: wallet.id,
        payout_id: payout.id,
        transaction_id: rec.id,
        tx_hash: rec.tx_hash,
        items: items.length,
      },
      'payout items sent in one batch',
    );
    return true;
  }

  /**
   * Whether the Sweeper may take `sum` of the token from the main address: an approval of it
   * confirmed (for the whole range, never used up), or the node's allowance. Else an approval
   * is sent, unless one is pending, and the payout waits.
   */
  private async approved(wallet: WalletView, token: WalletTokenRow, contract: Address, sweeper: Address, sum: bigint): Promise<boolean> {
    const db = this.ctx.store.db;
    const data = approveAllData(sweeper);
    const approval = await batchRepo.approvalState(db, wallet.id, contract, data);
    if (approval === 'confirmed') return true;
    if (approval === 'pending') return false;
    const network = (await findNetwork(db, wallet.network_id))!;
    const allowance = await readAllowance(this.ctx.chains.get(network), contract, getAddress(wallet.address), sweeper);
    if (allowance >= sum) return true;
    const native = await batchRepo.nativeToken(db, wallet.id);
    // Told, not read from the calldata: an unlimited approval would otherwise count as an
    // unlimited spend toward the daily limit. It lets only the wallet's own batches take.
    const rec = await this.transactions.create(
      wallet,
      { amount: 0n, token: native, to: contract, data, spend: { token, amount: 0n, policed: 0n } },
      { exemptFromPolicy: true },
    );
    this.ctx.log.info(
      { component: 'payouts', wallet_id: wallet.id, symbol: token.symbol, transaction_id: rec.id, tx_hash: rec.tx_hash },
      'the Sweeper approved for batched payouts of this token; the payout waits for it to confirm',
    );
    return false;
  }

  /** One pass: item rows whose batch moved on (confirmed, failed, or a new hash) follow it. */
  async track(): Promise<number> {
    const db = this.ctx.store.db;
    let moved = 0;
    for (const batchId of await batchRepo.listBatchesToFollow(db, 50)) {
      try {
        moved += await this.follow(batchId);
      } catch (e) {
        this.ctx.log.warn({ component: 'payouts', transaction_id: batchId, err: e }, 'payout batch items not followed now; tried again');
      }
    }
    return moved;
  }

  /** The items of one batch brought to its state; how many changed. */
  private async follow(batchId: number): Promise<number> {
    const db = this.ctx.store.db;
    const batch = await findRecord(db, batchId);
    if (!batch) return 0;
    let outcomes: Map<number, boolean> | null = null;
    if (batch.status === 'confirmed') {
      // The receipt of the very block the batch was confirmed in (a node that has not seen it,
      // or shows it in another block, is asked again later).
      const wallet = await findWalletView(db, batch.wallet_id);
      const network = wallet ? await findNetwork(db, wallet.network_id) : undefined;
      const receipt = network ? await receiptOrNull(this.ctx.chains.get(network), batch.tx_hash as Hex) : null;
      if (!network?.sweeper || !receipt || receipt.blockHash !== batch.block_hash) return 0;
      outcomes = payOutcomes(receipt.logs, getAddress(network.sweeper), getAddress(batch.from_address));
    }
    return db.transaction().execute(async (trx) => {
      await lockWallet(trx, batch.wallet_id);
      const now = this.ctx.clock.nowMs();
      const current = (await findRecord(trx, batchId))!;
      // The batch moved while its receipt was read: the next pass reads it again.
      if (current.status !== batch.status || current.tx_hash !== batch.tx_hash || current.block_hash !== batch.block_hash) return 0;
      // Failed unmined with it, and it is not failed any more: back with it.
      const revived = current.status === 'failed' ? 0 : await batchRepo.reviveItems(trx, batchId, now);
      // Pending with it: under its current hash (a speed-up changes it).
      if (current.status === 'pending') return revived + (await batchRepo.setItemsHash(trx, batchId, current.tx_hash!, now));
      const pending = await batchRepo.listItems(trx, batchId, 'pending');
      // Settled with it: each confirmed, or failed with the batch's reason, or `refused`.
      const outcome = (item: TxRecord): { reason: string; failure: FailureReason } | null => {
        if (current.status === 'failed')
          return { reason: current.error ?? 'the batch failed', failure: current.failure_reason ?? 'reverted' };
        const paid = outcomes!.get(item.batch_index!);
        if (paid === true) return null;
        // An index the receipt does not name: the call did not pay it (nothing was taken).
        return { reason: paid === false ? 'the token refused the transfer' : 'not paid by the batch', failure: 'refused' };
      };
      const groups = new Map<string, { failure: { reason: string; failure: FailureReason } | null; ids: number[] }>();
      for (const item of pending) {
        const f = outcome(item);
        const key = f ? `${f.failure}:${f.reason}` : 'confirmed';
        groups.set(key, { failure: f, ids: [...(groups.get(key)?.ids ?? []), item.id] });
      }
      for (const g of groups.values()) await batchRepo.settleItems(trx, g.ids, current, g.failure, now);
      const settled = await batchRepo.listItemsById(
        trx,
        pending.map((i) => i.id),
      );
      for (const row of settled)
        if (row.status !== 'pending')
          await announce(trx, row, row.status === 'confirmed' ? 'transaction.confirmed' : 'transaction.failed', now);
      return revived + settled.length;
    });
  }
}
