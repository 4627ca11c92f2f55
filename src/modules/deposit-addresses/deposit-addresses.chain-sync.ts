/**
 * What a block brings to the wallets' permanent deposit addresses (docs/deposit-addresses.md).
 * The charge step of the chain follower (src/modules/charges/charges.chain-sync.ts) matches a
 * block against every watched deposit address, a permanent one among them (its charge row,
 * status `deposit`, is only its watch); a transfer to a permanent one is a hit, turned here into
 * a `receipt` row of the wallet:
 *
 * - Read (node calls only, before the follower's transaction): the receipts of the transactions
 *   that carried the hits, and the wallets' active tokens; a hit of a token the wallet does not
 *   have active is no receipt (its money is still swept with the address's other balances).
 * - Recorded (inside the follower's block transaction, the wallets locked with the batch's):
 *   each as the follower records a receipt to the main address (`recordReceipt`: one row per
 *   wallet, transaction and log, so a block read twice records it once; a receipt a reorg took
 *   out comes back under its id), pending with its block, carrying `deposit_address_id` and the
 *   address's `reference`; the follower's settling confirms it with `transaction.confirmed`, and
 *   its rollback un-mines it (`transaction.reorged`) like any receipt. In the same transaction
 *   the address is due a sweep (its charge row's `sweep_due_at`): the charge worker sweeps it,
 *   in a batch where it is keyless, by its own transactions where keyed.
 */
import type { Hex, Transaction, TransactionReceipt } from 'viem';
import type { Executor } from '../../db/index.js';
import type { WalletTokenRow } from '../../db/types.js';
import { blockReceipts, ChainMoved, type FullBlock } from '../../chain/blocks.js';
import { NATIVE_CONTRACT } from '../../chain/erc20.js';
import { listTokens } from '../tokens/tokens.repository.js';
import type { SyncScope } from '../transactions/transactions.chain-sync.js';
import type { NewTx } from '../transactions/transactions.repository.js';
import { lockWallets, recordReceipt } from '../transactions/transactions.state.js';
import type { WatchedDeposit } from '../charges/charges.payments.repository.js';
import { markReceipt, makeDue } from './deposit-addresses.repository.js';

/** A transfer to a permanent deposit address seen in a block. */
export interface DepositHit {
  deposit: WatchedDeposit;
  /** The token's contract, lowercase (`NATIVE_CONTRACT` for the native coin). */
  contract: string;
  txHash: Hex;
  logIndex: number;
  /** The token transfer's sender; null: the carrying transaction's sender (a native transfer, direct or internal). */
  from: string | null;
  amount: bigint;
}

/** A block's receipts to permanent deposit addresses, read, and the step that records them. */
export interface DepositReceipts {
  /** The wallets (and their users) the recording writes: the follower locks them with its batch's. */
  owners: Array<[wallet: number, user: number]>;
  count: number;
  /** Inside the follower's block transaction. */
  record: (trx: Executor, nowMs: number) => Promise<void>;
}

const NONE: DepositReceipts = { owners: [], count: 0, record: async () => {} };

/** Reads what the hits need from the node and the database (no transaction open). */
export async function readDepositReceipts(s: SyncScope, block: FullBlock, hits: readonly DepositHit[]): Promise<DepositReceipts> {
  if (hits.length === 0) return NONE;
  const db = s.ctx.store.db;
  const walletIds = [...new Set(hits.map((h) => h.deposit.wallet_id))];
  const tokens = new Map<string, WalletTokenRow>();
  for (const id of walletIds) {
    for (const t of await listTokens(db, id, { activeOnly: true }))
      tokens.set(`${id}:${t.is_native === 1 ? NATIVE_CONTRACT : t.contract.toLowerCase()}`, t);
  }
  const known = hits.filter((h) => tokens.has(`${h.deposit.wallet_id}:${h.contract}`));
  if (known.length === 0) return NONE;
  const receipts = await s.net(blockReceipts(s.client, block.hash, [...new Set(known.map((h) => h.txHash))]));
  const txByHash = new Map((block.transactions as Transaction[]).map((t) => [t.hash, t]));
  const rows: Array<{ row: NewTx; hit: DepositHit }> = [];
  for (const h of known) {
    const tx = txByHash.get(h.txHash);
    const r = receipts.get(h.txHash);
    if (!tx || !r) throw new ChainMoved();
    if (r.status !== 'success') continue;
    const token = tokens.get(`${h.deposit.wallet_id}:${h.contract}`)!;
    rows.push({ row: receiptRow(block, tx, r, h, token), hit: h });
  }
  s.log.info({ block: Number(block.number), receipts: rows.length }, 'deposit address receipts seen');
  return {
    owners: [...new Map(rows.map(({ hit }) => [hit.deposit.wallet_id, hit.deposit.user_id])).entries()],
    count: rows.length,
    record: async (trx, nowMs) => {
      await lockWallets(
        trx,
        rows.map(({ row }) => row.wallet_id),
      );
      for (const { row, hit } of rows) {
        const rec = await recordReceipt(trx, row, nowMs);
        if (rec) await markReceipt(trx, rec.id, hit.deposit.deposit_address_id!, hit.deposit.reference!);
      }
      await makeDue(trx, [...new Set(rows.map(({ hit }) => hit.deposit.charge_id))], nowMs);
    },
  };
}

/** The receipt row, as the follower writes a receipt to the main address: pending with its block, settled later. */
function receiptRow(block: FullBlock, tx: Transaction, r: TransactionReceipt, h: DepositHit, token: WalletTokenRow): NewTx {
  return {
    wallet_id: h.deposit.wallet_id,
    token_id: token.id,
    symbol: token.symbol,
    type: 'receipt',
    status: 'pending',
    amount: h.amount,
    fee_reserved: 0n,
    // A native transfer's (and an internal one's) sender is the carrying transaction's: a reorg's
    // recheck (`recheckReorgedReceipts`) asks whether that sender's nonce was used.
    from_address: h.from ?? tx.from,
    to_address: h.deposit.address,
    tx_hash: tx.hash,
    log_index: h.logIndex,
    block_number: Number(block.number),
    block_hash: block.hash,
    block_timestamp: Number(block.timestamp) * 1000,
    nonce: tx.nonce,
    gas: tx.gas,
    gas_price: r.effectiveGasPrice ?? tx.gasPrice ?? null,
    gas_used: r.gasUsed,
    cumulative_gas_used: r.cumulativeGasUsed,
    receipt_status: 1,
    raw_tx: null,
    confirmed_at: null,
  };
}
