/**
 * Speed-up and cancel: a pending outgoing transaction replaced at its own nonce.
 *
 * 1. Only a `pending` outgoing transaction not yet mined (in the database, and at the node's
 *    head: its nonce above the address's count) can be replaced; else 400.
 * 2. Outside any database transaction: the current signed version is decoded, the new fees are
 *    chosen (both fields at least 10% above the current version's, rounded up, or the level's
 *    fresh quote where that is higher; explicit fees below that minimum are 422), and the new
 *    version is signed: the same call (speed-up) or a zero-value transfer to the wallet's own
 *    address (cancel), same nonce, same gas limit (cancel: 21000). A speed-up of a cancel is a
 *    cancel again (its call and its kind), so it still fails the transaction as `cancelled`.
 * 3. Under the wallet lock: the row must still be the one read (same current hash, still
 *    pending and unmined). The reservation becomes the highest maximum fee of all its versions
 *    (any of them may be the one that mines); the increase must fit in what the wallet can still
 *    spend, else 400 Insufficient balance. The new version is recorded and becomes `tx_hash`;
 *    the earlier ones are `replaced_hashes`.
 * 4. After the commit, broadcast. A definitive refusal (e.g. the node holds a version it prefers,
 *    or the nonce was just mined) undoes the replacement and answers 400 (the nonce used:
 *    `Transaction cannot be replaced`, the race with the block that mined the original); a
 *    time-out leaves it, and the watcher sends the latest version again.
 *
 * A transient node fault before the commit (steps 1-2) answers 503 with Retry-After (mapChainError).
 *
 * Whichever version mines wins (transactions.chain-sync.ts): the transaction takes its hash; a
 * mined cancel settles it as failed with `failure_reason: 'cancelled'`.
 */
import { getAddress, keccak256, parseTransaction, type Address, type Hex, type PublicClient } from 'viem';
import type { AppContext } from '../../context.js';
import type { InTransaction } from '../../db/index.js';
import { Errors, fieldError } from '../../errors.js';
import { broadcastRaw } from '../../chain/broadcast.js';
import { mapChainError } from '../../chain/errors.js';
import { atHead } from '../../chain/blocks.js';
import { bumpFees, explicitFees, feeFields, l1Fee, maxFee, quoteFees, recentFeeMarket, type Fees } from '../../chain/fees.js';
import { requireWithinCap } from './transactions.fees.js';
import { formatUnits18 } from '../../lib/money.js';
import { findNetwork } from '../networks/networks.repository.js';
import { listTokens } from '../tokens/tokens.repository.js';
import { lockWallet, type WalletView } from '../wallets/wallets.repository.js';
import type { WalletService } from '../wallets/wallets.service.js';
import * as repo from './transactions.repository.js';
import type { BroadcastKind, TxRecord } from './transactions.repository.js';
import * as createRepo from './transactions.create.repository.js';
import * as versionsRepo from './transactions.versions.repository.js';
import * as watchRepo from './transactions.watch.repository.js';
import { type SignedVersion } from './transactions.versions.repository.js';
import type { FeeChoice } from './transactions.schemas.js';

/** What to do at the transaction's nonce: the same call with higher fees, or a zero-value self-transfer. */
export interface Replacement {
  kind: Extract<BroadcastKind, 'speed-up' | 'cancel'>;
  fees?: FeeChoice;
}

/** Gas of a zero-value transfer to an externally owned address (the wallet's own). */
const CANCEL_GAS = 21_000n;

const replaceable = (r: TxRecord | undefined): r is TxRecord =>
  r !== undefined &&
  repo.OUTGOING_TYPES.includes(r.type) &&
  r.status === 'pending' &&
  r.block_number === null &&
  r.nonce !== null &&
  r.tx_hash !== null;

/** The fees a signed transaction carries. */
function feesOf(raw: Hex): Fees {
  const t = parseTransaction(raw);
  if (t.type === 'eip1559') return { kind: 'eip1559', maxFeePerGas: t.maxFeePerGas!, maxPriorityFeePerGas: t.maxPriorityFeePerGas! };
  return { kind: 'legacy', maxFeePerGas: t.gasPrice!, maxPriorityFeePerGas: t.gasPrice! };
}

/** The new fees: at least the minimum bump over `current`; explicit fees below it are 422. */
async function chooseFees(client: PublicClient, current: Fees, choice: FeeChoice | undefined): Promise<Fees> {
  const least = bumpFees(current);
  if (choice !== undefined && 'maxFeePerGas' in choice) {
    const asked = explicitFees(current.kind, choice.maxFeePerGas, choice.maxPriorityFeePerGas);
    try {
      requireWithinCap(asked.maxFeePerGas, await recentFeeMarket(client));
    } catch (e) {
      throw mapChainError(e);
    }
    if (asked.maxFeePerGas < least.maxFeePerGas) {
      throw fieldError('max_fee_per_gas', `The max_fee_per_gas field must be at least ${formatUnits18(least.maxFeePerGas, 18)}.`);
    }
    if (current.kind === 'eip1559' && asked.maxPriorityFeePerGas < least.maxPriorityFeePerGas) {
      throw fieldError(
        'max_priority_fee_per_gas',
        `The max_priority_fee_per_gas field must be at least ${formatUnits18(least.maxPriorityFeePerGas, 18)}.`,
      );
    }
    return asked;
  }
  try {
    return bumpFees(current, await quoteFees(client, choice?.level));
  } catch (e) {
    throw mapChainError(e);
  }
}

/** A signed replacement ready to record, and what it needs checked under the lock. */
interface Signed {
  version: SignedVersion;
  /** The most the new version can cost in fees. */
  fee: bigint;
  minedNonce: number;
  native: bigint;
}

export class ReplaceService {
  constructor(
    private readonly ctx: AppContext,
    private readonly wallets: WalletService,
  ) {}

  /**
   * Speeds up or cancels `rec` (a transaction of `wallet`); returns it as it stands after the
   * broadcast. `inTransaction` runs in the transaction that records the new version (the
   * request's Idempotency-Key response, stored with it: a retry after a crash or a cut answer
   * replays this replacement instead of signing another, or refusing one the chain may mine).
   */
  async replace(wallet: WalletView, rec: TxRecord, r: Replacement, inTransaction?: InTransaction<TxRecord>): Promise<TxRecord> {
    const { db } = this.ctx.store;
    if (!replaceable(rec)) throw Errors.cannotReplace();
    const network = await findNetwork(db, wallet.network_id);
    if (!network) throw Errors.internal(new Error(`network ${wallet.network_id} missing`));
    const client = this.ctx.chains.get(network);
    const signed = await this.sign(client, network.chain_id, wallet, rec, r);
    const previous = await this.record(wallet, rec, signed, inTransaction);
    await this.broadcast(client, rec, signed.version, previous);
    return (await repo.findRecord(db, rec.id))!;
  }

  /** Step 2: decode the current version, choose the fees, sign the new one (node calls only). */
  private async sign(client: PublicClient, chainId: number, wallet: WalletView, rec: TxRecord, r: Replacement): Promise<Signed> {
    const current = (await versionsRepo.listVersions(this.ctx.store.db, rec.id)).find((v) => v.tx_hash === rec.tx_hash);
    if (!current) throw Errors.cannotReplace();
    const from = getAddress(wallet.address);
    let minedNonce: number;
    let native: bigint;
    try {
      [minedNonce, native] = await atHead(client, (head) =>
        Promise.all([
          client.getTransactionCount({ address: from, blockNumber: head }),
          client.getBalance({ address: from, blockNumber: head }),
        ]),
      );
    } catch (e) {
      throw mapChainError(e);
    }
    if (minedNonce > rec.nonce!) throw Errors.cannotReplace(); // mined already, the watcher has not seen it yet
    const was = parseTransaction(current.raw_tx as Hex);
    const fees = await chooseFees(client, feesOf(current.raw_tx as Hex), r.fees);
    // A speed-up of a cancel is the cancel at higher fees, and stays a cancel: mined, nothing moved
    // (recorded as a speed-up, the mined version would be taken as the transfer itself).
    const kind = current.kind === 'cancel' ? 'cancel' : r.kind;
    const call =
      kind === 'cancel'
        ? { to: from as Address, value: 0n, data: undefined, gas: CANCEL_GAS }
        : { to: was.to as Address, value: was.value ?? 0n, data: was.data, gas: was.gas! };
    let l1: bigint;
    try {
      l1 = await l1Fee(client, { chainId, nonce: rec.nonce!, ...call }, fees);
    } catch (e) {
      throw mapChainError(e);
    }
    const signer = await this.wallets.signer(wallet.id);
    const raw = await signer.signTransaction({
      chainId,
      nonce: rec.nonce!,
      gas: call.gas,
      ...feeFields(fees),
      to: call.to,
      value: call.value,
      data: call.data,
    });
    const version: SignedVersion = {
      tx_hash: keccak256(raw),
      raw_tx: raw,
      kind,
      gas: call.gas,
      gas_price: fees.maxFeePerGas,
      tx_kind: fees.kind,
      max_priority_fee_per_gas: fees.kind === 'eip1559' ? fees.maxPriorityFeePerGas : null,
    };
    return { version, fee: maxFee(call.gas, fees, l1), minedNonce, native };
  }

  /** Step 3, under the wallet lock: still replaceable, the larger reservation fits; recorded. Returns the row before. */
  private async record(wallet: WalletView, rec: TxRecord, s: Signed, inTransaction?: InTransaction<TxRecord>): Promise<TxRecord> {
    const nativeIds = new Set((await listTokens(this.ctx.store.db, wallet.id)).filter((t) => t.is_native === 1).map((t) => t.id));
    return this.ctx.store.db.transaction().execute(async (trx) => {
      await lockWallet(trx, wallet.id);
      const now = await repo.findRecord(trx, rec.id);
      if (!replaceable(now) || now.tx_hash !== rec.tx_hash) throw Errors.cannotReplace();
      const reserve = s.fee > now.fee_reserved ? s.fee : now.fee_reserved;
      let available = s.native;
      for (const r of await createRepo.reservations(trx, wallet.id, s.minedNonce)) {
        available -= r.fee_reserved + (nativeIds.has(r.token_id) ? r.amount : 0n);
      }
      if (available < reserve - now.fee_reserved) throw Errors.insufficientBalance();
      await versionsRepo.recordReplacement(trx, rec.id, s.version, reserve, this.ctx.clock.nowMs());
      if (inTransaction) await inTransaction(trx, (await repo.findRecord(trx, rec.id))!);
      return now;
    });
  }

  /** Step 4: a definitive refusal undoes the replacement (400); anything unclear leaves it to the watcher. */
  private async broadcast(client: PublicClient, rec: TxRecord, v: SignedVersion, before: TxRecord): Promise<void> {
    const { db } = this.ctx.store;
    const log = this.ctx.log.child({ component: 'transactions', transaction_id: rec.id });
    const outcome = await broadcastRaw(client, v.raw_tx as Hex, v.tx_hash as Hex);
    const now = this.ctx.clock.nowMs();
    if (outcome.kind === 'sent' || outcome.kind === 'known') {
      await watchRepo.markBroadcast(db, rec.id, now);
      log.info(
        { tx_hash: v.tx_hash, replaced: before.tx_hash, kind: v.kind, nonce: rec.nonce },
        `transaction ${v.kind === 'cancel' ? 'cancel' : 'speed-up'} broadcast`,
      );
      return;
    }
    if (outcome.kind === 'rejected') {
      await db.transaction().execute(async (trx) => {
        await lockWallet(trx, rec.wallet_id);
        await versionsRepo.undoReplacement(
          trx,
          rec.id,
          { restore: before.tx_hash!, forget: v.tx_hash, feeReserved: before.fee_reserved },
          now,
        );
      });
      log.warn({ tx_hash: v.tx_hash, reason: outcome.reason }, 'replacement refused by the node; the previous version stays');
      // "nonce too low": a version (the original, as a rule) mined after the check in step 2.
      if (outcome.nonceUsed && /nonce/i.test(outcome.reason)) throw Errors.cannotReplace();
      throw Errors.chainRejected(`The blockchain node rejected the transaction: ${outcome.reason}`);
    }
    log.warn(
      { tx_hash: v.tx_hash, outcome: outcome.kind, reason: outcome.reason },
      'replacement broadcast not confirmed; the watcher will send it again',
    );
  }
}
