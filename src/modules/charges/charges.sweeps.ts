/**
 * Sweeping: every settled charge's deposit address is emptied to the wallet's main address, in
 * every token of the wallet it holds (the charge's, a wrong token, late payments), each sweep
 * recorded and followed to confirmation.
 *
 * - When: a charge is due (`sweep_due_at`) on settlement, on each late payment, when one of its
 *   sweeps or gas top-ups is final, and after a failure (SWEEP_RETRY_MS later).
 * - One transaction in flight per charge and kind (`live_key`, unique): the row is committed
 *   BEFORE the network send, so two processes never send two sweeps of one address or two
 *   top-ups; the second finds the row and does nothing.
 * - ERC-20 first: the deposit address needs native currency for gas. The main wallet sends
 *   twice the maximum fee (less what is there) through the transaction service (reserved,
 *   nonce-ordered, recorded, confirmed like any transfer); the claim of the top-up's row is
 *   made inside that service's recording transaction, under the wallet's lock, so a second
 *   process's top-up rolls back before it is signed or sent.
 * - Native last: the gas is estimated, the fee is the real fee model's maximum (EIP-1559
 *   `maxFeePerGas` where blocks carry a base fee, else the gas price), the amount is
 *   balance − gas × max fee, and the tip is the max fee too, so the fee paid is exactly that and
 *   the address ends at 0. A balance that does not cover the fee is dust: logged, not sent.
 * - Tracking: a sweep is `confirmed` when its receipt's block has the network's confirmations
 *   (the follower's cursor), `failed` when it reverted, when the node refused its first send, or
 *   when its nonce is used at confirmed depth without it (it is then sent again as a new sweep;
 *   one signed to a failed row's very bytes puts that row back in flight, `claimLive`);
 *   a sweep the node forgot is sent again as signed, and a refusal of that re-send is not final.
 *   Each final step and the charge's next look are one transaction (`finish`).
 * - Reorgs: the rollback puts the sweeps and top-ups mined above the common ancestor back in
 *   flight (charges.sweeps.repository.ts `reopenMinedAbove`); they are followed as above. A sweep
 *   keeps its signed bytes once final, so one the new chain and the node no longer have is sent
 *   again as signed, in nonce order (`sendAgain`); a receipt is taken only if its block is the
 *   one the follower holds at that height when the row is finished (`stillMined`).
 * - Only an "execution reverted" of a token's gas estimate leaves the token there; any other
 *   error of the estimate (a rate limit, a lagging node) is tried again SWEEP_RETRY_MS later.
 * - OP-stack networks: the L1 data fee (src/chain/fees.ts `l1Fee`, with its headroom) is part of
 *   a sweep's maximum fee: the native amount leaves room for it, a token's gas top-up covers it.
 */
import { BaseError, ExecutionRevertedError, getAddress, keccak256, type Address, type Hex, type PublicClient } from 'viem';
import type { Logger } from 'pino';
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import type { NetworkRow, WalletTokenRow } from '../../db/types.js';
import { confirmedHeight, receiptOrNull } from '../../chain/blocks.js';
import { broadcastRaw, nodeKnows } from '../../chain/broadcast.js';
import { ERC20_ABI, erc20TransferData, readBalance } from '../../chain/erc20.js';
import { receiptFee } from '../../chain/receipt-fee.js';
import { isUnreachable } from '../../chain/errors.js';
import { l1Fee, type Fees } from '../../chain/fees.js';
import { accountFromKey } from '../../chain/keys.js';
import { findBlockHash, findCursor, findNetwork } from '../networks/networks.repository.js';
import { findToken, listTokens } from '../tokens/tokens.repository.js';
import { findWalletView, type WalletView } from '../wallets/wallets.repository.js';
import type { TransactionService } from '../transactions/transactions.service.js';
import * as repo from './charges.repository.js';
import type { ChargeRow } from './charges.repository.js';
import * as pay from './charges.payments.repository.js';
import * as sw from './charges.sweeps.repository.js';
import type { SweepRow } from './charges.sweeps.repository.js';
import type { ConfirmedHeights } from './charges.settlement.js';

/** Charges looked at, and rows in flight followed, per tick; the delay before a failed step is tried again. */
const SWEEP_BATCH = 100;
const TRACK_BATCH = 200;
export const SWEEP_RETRY_MS = 5_000;

/** What a transaction from a deposit address may pay per unit of gas. */
type FeeModel = { type: 'eip1559'; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { type: 'legacy'; gasPrice: bigint };
const perGas = (f: FeeModel) => (f.type === 'eip1559' ? f.maxFeePerGas : f.gasPrice);

/** The network's fee model: EIP-1559 where the latest block carries a base fee, else legacy. */
async function feeModel(client: PublicClient): Promise<FeeModel> {
  const block = await client.getBlock({ blockTag: 'latest' });
  if (block.baseFeePerGas === null || block.baseFeePerGas === undefined) return { type: 'legacy', gasPrice: await client.getGasPrice() };
  const f = await client.estimateFeesPerGas({ type: 'eip1559', chain: undefined });
  return { type: 'eip1559', maxFeePerGas: f.maxFeePerGas, maxPriorityFeePerGas: f.maxPriorityFeePerGas };
}

/** The signing fees as src/chain/fees.ts names them (for the L1 data fee quote). */
const asFees = (f: FeeModel): Fees =>
  f.type === 'eip1559' ? { kind: 'eip1559', maxFeePerGas: f.maxFeePerGas, maxPriorityFeePerGas: f.maxPriorityFeePerGas } : { kind: 'legacy', maxFeePerGas: f.gasPrice, maxPriorityFeePerGas: f.gasPrice };

/**
 * Only a node's "execution reverted" means a transfer cannot be made: a rate limit, a lagging
 * node's "header not found", a 5xx or anything else unclear is a fault to try again later.
 */
const reverts = (e: unknown) => e instanceof BaseError && e.walk((x) => x instanceof ExecutionRevertedError) !== null;

class TopUpTaken extends Error {
  constructor() {
    super('a gas top-up of this deposit address is already in flight');
  }
}

/** Where a sweep's receipt was read: its block, to check against the follower's. */
interface Mined {
  network: NetworkRow;
  block: number;
  hash: string;
}

interface Target {
  charge: ChargeRow;
  wallet: WalletView;
  network: NetworkRow;
  client: PublicClient;
  log: Logger;
}

export class ChargeSweeper {
  private readonly log: Logger;

  constructor(
    private readonly ctx: AppContext,
    private readonly transactions: TransactionService,
  ) {
    this.log = ctx.log.child({ component: 'charges' });
  }

  async tick(stopping: () => boolean = () => false, settled?: ConfirmedHeights): Promise<void> {
    await this.track(stopping, settled);
    const db = this.ctx.store.db;
    for (const due of await sw.listDue(db, this.ctx.clock.nowMs(), SWEEP_BATCH)) {
      if (stopping()) return;
      try {
        await this.sweepOne(due.id, due.sweep_due_at);
      } catch (e) {
        await sw.setDue(db, due.id, this.ctx.clock.nowMs() + SWEEP_RETRY_MS);
        if (!isUnreachable(e)) this.log.warn({ err: e, charge_id: due.id }, 'charge sweep failed; will retry');
      }
    }
  }

  /** One charge's address looked at now (the sweep route), as its due look would be: the caller made it due at `dueMs`. */
  sweepNow(chargeId: number, dueMs: number): Promise<void> {
    return this.sweepOne(chargeId, dueMs);
  }

  /** Looks at one settled charge's address and sends what it holds, one transaction at a time. */
  private async sweepOne(chargeId: number, seenDue: number): Promise<void> {
    const db = this.ctx.store.db;
    if (await sw.hasLive(db, chargeId)) return sw.clearDueWhileLive(db, chargeId, seenDue); // made due again when it is final
    const t = await this.target(chargeId);
    if (!t) return sw.clearDue(db, chargeId, seenDue);
    const owner = t.charge.address as Address;
    const tokens = await this.tokensToSweep(t);
    for (const token of tokens.filter((x) => x.is_native !== 1)) {
      const balance = await readBalance(t.client, token.contract, owner);
      if (balance > 0n && (await this.sweepToken(t, token, balance, tokens))) return;
    }
    const native = tokens.find((x) => x.is_native === 1);
    if (native && (await this.sweepNative(t, native))) return;
    await sw.clearDue(db, chargeId, seenDue);
  }

  /** The wallet's active tokens, and the charge's own even if it was deactivated since. */
  private async tokensToSweep(t: Target): Promise<WalletTokenRow[]> {
    const db = this.ctx.store.db;
    const tokens = await listTokens(db, t.wallet.id, { activeOnly: true });
    const own = tokens.some((x) => x.id === t.charge.token_id) ? undefined : await findToken(db, t.wallet.id, t.charge.token_id);
    return own ? [...tokens, own] : tokens;
  }

  private async target(chargeId: number): Promise<Target | undefined> {
    const db = this.ctx.store.db;
    const charge = await repo.findChargeById(db, chargeId);
    const wallet = charge ? await findWalletView(db, charge.wallet_id) : undefined;
    const network = wallet ? await findNetwork(db, wallet.network_id) : undefined;
    if (!charge || !wallet || !network) return undefined;
    return { charge, wallet, network, client: this.ctx.chains.get(network), log: this.log.child({ charge_id: chargeId }) };
  }

  /** Sends the whole native balance less the maximum fee; false when it is dust (logged). */
  private async sweepNative(t: Target, native: WalletTokenRow): Promise<boolean> {
    const from = t.charge.address as Address;
    const to = getAddress(t.wallet.address);
    const [balance, fees] = await Promise.all([t.client.getBalance({ address: from }), feeModel(t.client)]);
    if (balance === 0n) return false;
    const gas = await t.client.estimateGas({ account: from, to, value: 1n });
    // The whole max fee as the tip too: the fee paid is then exactly gas × max fee, and a plain
    // transfer (gas used = the estimate) leaves the address at 0 instead of a remainder of dust
    // (on an OP-stack chain: the L1 data fee's headroom, which that chain may not charge).
    const exact: FeeModel = fees.type === 'eip1559' ? { ...fees, maxPriorityFeePerGas: fees.maxFeePerGas } : fees;
    const l1 = await l1Fee(t.client, { chainId: t.network.chain_id, nonce: 0, gas, to, value: balance }, asFees(exact));
    const maxFee = gas * perGas(fees) + l1;
    if (balance <= maxFee) {
      t.log.info({ address: from, balance: balance.toString(), max_fee: maxFee.toString(), symbol: native.symbol }, 'dust left on a charge deposit address: the balance does not cover the fee of sweeping it');
      return false;
    }
    await this.send(t, native, balance - maxFee, { to, value: balance - maxFee, gas, fees: exact });
    return true;
  }

  /**
   * Sends the token balance, or first the gas for it (once). False when the token cannot be
   * moved (its transfer would revert, e.g. a paused or blocklisting token): logged, and the
   * other tokens and the native balance are swept all the same.
   */
  private async sweepToken(t: Target, token: WalletTokenRow, amount: bigint, tokens: WalletTokenRow[]): Promise<boolean> {
    const from = t.charge.address as Address;
    const to = getAddress(t.wallet.address);
    const contract = getAddress(token.contract);
    let gas: bigint;
    try {
      gas = await t.client.estimateContractGas({ address: contract, abi: ERC20_ABI, functionName: 'transfer', args: [to, amount], account: from });
    } catch (e) {
      if (!reverts(e)) throw e; // tried again SWEEP_RETRY_MS later (tick)
      t.log.warn({ err: e, symbol: token.symbol, amount: amount.toString() }, 'a token on a charge deposit address cannot be moved (its transfer would revert); left there');
      return false;
    }
    const data = erc20TransferData(to, amount);
    const [fees, gasBalance] = await Promise.all([feeModel(t.client), t.client.getBalance({ address: from })]);
    // The nonce only changes the quote's size by a byte at most; the L1 fee has 25% headroom.
    const l1 = await l1Fee(t.client, { chainId: t.network.chain_id, nonce: 0, gas, to: contract, value: 0n, data }, asFees(fees));
    const maxFee = gas * perGas(fees) + l1;
    if (gasBalance < maxFee) await this.topUp(t, tokens, maxFee * 2n - gasBalance);
    else await this.send(t, token, amount, { to: contract, value: 0n, data, gas, fees });
    return true;
  }

  /** Signs with the deposit key, records the sweep (committed), then sends it. */
  private async send(t: Target, token: WalletTokenRow, amount: bigint, call: { to: Address; value: bigint; data?: Hex; gas: bigint; fees: FeeModel }): Promise<void> {
    const db = this.ctx.store.db;
    const account = accountFromKey(this.ctx.secrets.decrypt(await repo.subWalletKey(db, t.charge.sub_wallet_id), repo.subWalletPlace(t.charge.sub_wallet_id)) as Hex);
    const nonce = await t.client.getTransactionCount({ address: account.address, blockTag: 'pending' });
    const base = { chainId: t.network.chain_id, nonce, gas: call.gas, to: call.to, value: call.value, data: call.data };
    const raw = await account.signTransaction(call.fees.type === 'eip1559' ? { ...base, ...call.fees } : { ...base, type: 'legacy', gasPrice: call.fees.gasPrice });
    const hash = keccak256(raw);
    const row = { charge_id: t.charge.id, kind: 'sweep' as const, token_id: token.id, amount, tx_hash: hash, raw_tx: raw, nonce, transaction_id: null };
    const id = await sw.claimLive(db, row, this.ctx.clock.nowMs());
    if (id === null) return; // another process is sweeping this address
    t.log.info({ tx_hash: hash, symbol: token.symbol, amount: amount.toString() }, 'charge deposit address swept to the main address');
    await this.broadcast(t, { id, charge_id: t.charge.id, raw_tx: raw, tx_hash: hash, nonce }, 'first');
  }

  /**
   * Sends a recorded sweep. A definitive refusal of its FIRST send (nothing was ever sent
   * anywhere) fails it, and a new one follows. A refused re-send is not final (the rule of
   * docs/transactions.md, "When a transfer is final"): a lagging node answers "nonce too low"
   * to a sweep another node has mined; it stays in flight until its nonce is used at confirmed
   * depth, and then its receipt decides (`trackSweep`). One exception, so that a sweep the node
   * will never take again (its funds or fees no longer suffice, e.g. a risen L1 data fee) does
   * not hold the address forever: a re-send refused for another reason than its nonce, while the
   * node's pending nonce shows that nonce still free, fails it too; the next sweep is then
   * signed at that same nonce, so at most one of the two can ever mine.
   */
  private async broadcast(t: Target, s: Pick<SweepRow, 'id' | 'charge_id' | 'raw_tx' | 'tx_hash' | 'nonce'>, send: 'first' | 'again'): Promise<void> {
    const outcome = await broadcastRaw(t.client, s.raw_tx as Hex, s.tx_hash as Hex);
    if (outcome.kind !== 'rejected') return; // sent, known, or ambiguous: tracking asks the node again
    if (send === 'again' && (outcome.nonceUsed || !(await this.nonceFree(t, s.nonce)))) {
      t.log.warn({ tx_hash: s.tx_hash, reason: outcome.reason }, 'charge sweep re-send refused by the node; it stays in flight until its nonce is used');
      return;
    }
    const log = t.log;
    // Failed and the next sweep scheduled in one transaction: a crash between the two would
    // leave the address's money with nothing due to sweep it.
    const now = this.ctx.clock.nowMs();
    const failed = await this.ctx.store.db.transaction().execute(async (trx) => {
      const done = await sw.finishLive(trx, s.id, { status: 'failed', error: outcome.reason }, now);
      if (done) await sw.setDue(trx, s.charge_id, now + SWEEP_RETRY_MS);
      return done;
    });
    if (failed) log.warn({ tx_hash: s.tx_hash, reason: outcome.reason }, 'charge sweep refused by the node; failed, will sweep again');
  }

  /** The main wallet sends gas to the deposit address, at most one top-up in flight per charge, across processes. */
  private async topUp(t: Target, tokens: WalletTokenRow[], wei: bigint): Promise<void> {
    const native = tokens.find((x) => x.is_native === 1);
    if (!native) {
      t.log.warn('the wallet has no active native token to pay a token sweep’s gas; trying again in a minute');
      return sw.setDue(this.ctx.store.db, t.charge.id, this.ctx.clock.nowMs() + 12 * SWEEP_RETRY_MS);
    }
    const claim = { charge_id: t.charge.id, kind: 'gas' as const, token_id: native.id, amount: wei, raw_tx: null, nonce: null };
    try {
      const tx = await this.transactions.create(t.wallet, { amount: wei, token: native, to: getAddress(t.charge.address) }, {
        exemptFromPolicy: true,
        inTransaction: async (trx, rec) => {
          if ((await sw.claimLive(trx, { ...claim, tx_hash: rec.tx_hash ?? '', transaction_id: rec.id }, this.ctx.clock.nowMs())) === null) throw new TopUpTaken();
        },
      });
      t.log.info({ transaction_id: tx.id, amount: wei.toString() }, 'gas sent to a charge deposit address for its token sweep');
    } catch (e) {
      if (e instanceof TopUpTaken) return;
      throw e;
    }
  }

  /** Follows the rows in flight to a final status. */
  private async track(stopping: () => boolean, settled?: ConfirmedHeights): Promise<void> {
    const db = this.ctx.store.db;
    for (const row of await sw.listLive(db, TRACK_BATCH)) {
      if (stopping()) return;
      try {
        if (row.kind === 'gas') await this.trackTopUp(row);
        else await this.trackSweep(row, settled);
      } catch (e) {
        if (!isUnreachable(e)) this.log.warn({ err: e, charge_id: row.charge_id, tx_hash: row.tx_hash }, 'could not follow a charge sweep; trying again');
      }
    }
  }

  private async trackTopUp(row: SweepRow): Promise<void> {
    const state = await sw.topUpState(this.ctx.store.db, row.transaction_id!);
    if (!state || state.status === 'pending') return;
    const status = state.status === 'confirmed' ? 'confirmed' : 'failed';
    await this.finish(row, { status, tx_hash: state.tx_hash }, status === 'confirmed' ? 0 : SWEEP_RETRY_MS);
  }

  /**
   * A sweep with a receipt is final once its block is at or below the confirmed height: the one
   * this tick's settlement used when given (so the payments it swept, in earlier blocks, were
   * confirmed first), else the follower's cursor now. Without one, it is final (`failed`,
   * `dropped`) only once its nonce is used at that height and the receipt is still missing when
   * asked again after that (a sweep mined at or below it then has one); a sweep the node forgot
   * is sent again as signed.
   */
  private async trackSweep(row: SweepRow, settled?: ConfirmedHeights): Promise<void> {
    const t = await this.target(row.charge_id);
    if (!t) return;
    const final = await this.finalHeight(t.network, settled);
    let receipt = await receiptOrNull(t.client, row.tx_hash as Hex);
    if (!receipt && (await this.nonceUsed(t, row, final))) {
      receipt = await receiptOrNull(t.client, row.tx_hash as Hex);
      if (!receipt) return this.finish(row, { status: 'failed', error: 'dropped' }, SWEEP_RETRY_MS);
    }
    if (receipt) {
      const block = Number(receipt.blockNumber);
      if (block > final) return; // not deep enough yet
      const ok = receipt.status === 'success';
      const mined = { network: t.network, block, hash: receipt.blockHash };
      await this.finish(row, { status: ok ? 'confirmed' : 'failed', block_number: block, error: ok ? null : 'reverted', fee_paid: receiptFee(receipt) }, ok ? 0 : SWEEP_RETRY_MS, mined);
      return;
    }
    if ((await nodeKnows(t.client, row.tx_hash as Hex)) === false) await this.sendAgain(t, row);
  }

  /**
   * A sweep in flight that neither the chain nor the node has (the node dropped it, or a reorg
   * removed its block and it came back in flight: `reopenMinedAbove`), sent again as signed, in
   * nonce order: never into a nonce gap, where the node would hold it behind a nonce that may
   * never be used and the charge would wait for it forever.
   * - Its nonce above the node's next one: the sweep in flight with a nonce in between goes
   *   first; with none (it failed: e.g. its re-send refused for the funds a removed gas top-up
   *   was to bring), this one fails too (`dropped`), unsent, and the sweeper signs anew from the
   *   free nonce up, so at most one transaction per nonce can mine.
   * - Without its signed bytes (confirmed before they were kept): it cannot be sent again, and
   *   fails once the node's next nonce is its own; the next sweep is signed at that nonce.
   */
  private async sendAgain(t: Target, row: SweepRow): Promise<void> {
    const next = await t.client.getTransactionCount({ address: t.charge.address as Address, blockTag: 'pending' });
    const nonce = row.nonce ?? next;
    if (nonce > next) {
      if (await sw.hasLiveNonceIn(this.ctx.store.db, row.charge_id, next, nonce)) return;
      return this.finish(row, { status: 'failed', error: 'dropped: its nonce follows one no sweep in flight will use' }, SWEEP_RETRY_MS);
    }
    if (row.raw_tx !== null) return this.broadcast(t, row, 'again');
    if (nonce === next) await this.finish(row, { status: 'failed', error: 'dropped: removed by a reorg; its signed transaction was not kept' }, SWEEP_RETRY_MS);
  }

  /** The node's pending nonce of the deposit address has not passed `nonce` (nothing it holds uses it). */
  private async nonceFree(t: Target, nonce: number | null): Promise<boolean> {
    if (nonce === null) return false;
    return (await t.client.getTransactionCount({ address: t.charge.address as Address, blockTag: 'pending' })) <= nonce;
  }

  /** Whether the deposit address's nonce the sweep was signed with is used at the confirmed height. */
  private async nonceUsed(t: Target, row: SweepRow, final: number): Promise<boolean> {
    if (row.nonce === null || final < 0) return false;
    return (await t.client.getTransactionCount({ address: t.charge.address as Address, blockNumber: BigInt(final) })) > row.nonce;
  }

  private async finalHeight(network: NetworkRow, settled?: ConfirmedHeights): Promise<number> {
    if (settled) return settled.get(network.id) ?? -1;
    const cursor = await findCursor(this.ctx.store.db, network.id);
    return cursor ? confirmedHeight(cursor.block_number, network.confirmations) : -1;
  }

  /**
   * A row in flight becomes final and the charge's next look is scheduled in ONE transaction:
   * apart, a crash or a lost connection between the two left the address's money (the tokens a
   * confirmed top-up was for, the balance a reverted sweep left) with nothing due to move it.
   * `mined`: the outcome was read from a receipt, which must still be in the chain as the
   * follower knows it when this commits (`stillMined`).
   */
  private async finish(row: SweepRow, f: Parameters<typeof sw.finishLive>[2], retryMs: number, mined?: Mined): Promise<void> {
    const now = this.ctx.clock.nowMs();
    const done = await this.ctx.store.db.transaction().execute(async (trx) => {
      if (mined && !(await this.stillMined(trx, row, mined))) return false;
      if (!(await sw.finishLive(trx, row.id, f, now))) return false;
      await sw.setDue(trx, row.charge_id, now + retryMs);
      return true;
    });
    if (!done) return;
    const level = f.status === 'confirmed' ? 'info' : 'warn';
    this.log[level]({ charge_id: row.charge_id, kind: row.kind, tx_hash: f.tx_hash ?? row.tx_hash, status: f.status, error: f.error ?? undefined }, `charge ${row.kind === 'gas' ? 'gas top-up' : 'sweep'} ${f.status}`);
  }

  /**
   * The receipt's block is at or below the confirmed height and is the block the follower
   * recorded at that height, read under the cursor's lock (the follower moves the cursor first in
   * each of its transactions, a reorg's rollback included). Without it, a rollback committing
   * between the receipt's read and this write (it puts mined sweeps back in flight, and this row
   * was still in flight, so it was not among them) would leave the sweep `confirmed` on a block
   * the chain no longer has. A block older than the hashes the follower keeps is taken as is.
   */
  private async stillMined(trx: Executor, row: SweepRow, m: Mined): Promise<boolean> {
    const cursor = await pay.lockedCursorHeight(trx, m.network.id);
    const stored = cursor === undefined || m.block > confirmedHeight(cursor, m.network.confirmations) ? null : await findBlockHash(trx, m.network.id, m.block);
    if (stored === undefined || stored?.toLowerCase() === m.hash.toLowerCase()) return true;
    this.log.info({ charge_id: row.charge_id, tx_hash: row.tx_hash, block: m.block }, 'a reorg moved the chain while a charge sweep was being finished: looked at again');
    return false;
  }
}
