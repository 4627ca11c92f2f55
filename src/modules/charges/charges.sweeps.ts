/**
 * Sweeping: every settled charge's deposit address is emptied to the wallet's main address, in
 * every token of the wallet it holds (the charge's, a wrong token, late payments), each sweep
 * recorded and followed to confirmation.
 *
 * - When: a charge is due (`sweep_due_at`) on settlement, on each late payment, when one of its
 *   sweeps or gas top-ups is final, after a failure (SWEEP_RETRY_MS later), and while a token's
 *   transfer would revert (`revertWaitMs`: 30 s doubling to an hour, for as long as it lasts).
 * - What a look reads decides money, so it names its block: the deposit address's balances at
 *   the head, never below the charge's settlement and payments (`readHeight`), which only an
 *   endpoint at that height answers. A lagging endpoint's 0, revert or failed estimate is "not
 *   known yet", never a reason to stop looking.
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
 *   (the follower's cursor), `failed` when it reverted, when every endpoint refused its first
 *   send, or (`dropped`) when the block that used its nonce at confirmed depth, read by number,
 *   holds another transaction of the address at that nonce (it is then sent again as a new sweep; one signed to a failed
 *   row's very bytes puts that row back in flight, `claimLive`; a failed row the chain shows
 *   mined is put back in flight too, `dropped`). A missing receipt alone decides nothing, nor does
 *   a used nonce whose block holds no transaction using it (the reads disagreed). A sweep
 *   the node forgot is sent again as signed, and a refusal of that re-send is never final: only
 *   the chain ends it (refused for a reason other than its nonce, a replacement is signed at its
 *   nonce with higher fees, `replace`). Each final step and the charge's next look are one
 *   transaction (`finish`).
 * - Reorgs: the rollback puts the sweeps and top-ups mined above the common ancestor back in
 *   flight (charges.sweeps.repository.ts `reopenMinedAbove`); they are followed as above. A sweep
 *   keeps its signed bytes once final, so one the new chain and the node no longer have is sent
 *   again as signed, in nonce order (`sendAgain`); a receipt is taken only if its block is the
 *   one the follower holds at that height when the row is finished (`stillMined`).
 * - A token whose transfer would revert (its gas estimate's "execution reverted": paused, the
 *   address blocklisted, a stale view) is waited for, the other tokens swept meanwhile; any
 *   other error of the estimate (a rate limit, a lagging node) is tried again SWEEP_RETRY_MS later.
 * - OP-stack networks: the L1 data fee (src/chain/fees.ts `l1Fee`, with its headroom) is part of
 *   a sweep's maximum fee: the native amount leaves room for it, a token's gas top-up covers it.
 */
import {
  BaseError,
  ExecutionRevertedError,
  getAddress,
  keccak256,
  parseTransaction,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import type { Logger } from 'pino';
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import type { NetworkRow, WalletTokenRow } from '../../db/types.js';
import { confirmedHeight, headNumber, receiptOrNull } from '../../chain/blocks.js';
import { nonceUse } from '../../chain/nonce.js';
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
import { BatchSweeper } from './charges.batch-sweeps.js';

/** Charges looked at, and rows in flight followed, per tick; the delay before a failed step is tried again. */
const SWEEP_BATCH = 100;
const TRACK_BATCH = 200;
export const SWEEP_RETRY_MS = 5_000;
/** The wait before a token whose transfer would revert is tried again: doubling from the first to the last. */
export const REVERT_WAIT_FIRST_MS = 30_000;
export const REVERT_WAIT_MAX_MS = 3_600_000;

/**
 * How long a charge whose token cannot be moved now waits before its next look: as long as it
 * has waited since its last change (settled, a late payment), between REVERT_WAIT_FIRST_MS and
 * REVERT_WAIT_MAX_MS. The looks come at 30 s, 1, 2, 4 … minutes after the change, then hourly,
 * for as long as the money is there: never given up.
 */
export function revertWaitMs(charge: Pick<ChargeRow, 'updated_at'>, nowMs: number): number {
  return Math.min(REVERT_WAIT_MAX_MS, Math.max(REVERT_WAIT_FIRST_MS, nowMs - Number(charge.updated_at)));
}

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
  f.type === 'eip1559'
    ? { kind: 'eip1559', maxFeePerGas: f.maxFeePerGas, maxPriorityFeePerGas: f.maxPriorityFeePerGas }
    : { kind: 'legacy', maxFeePerGas: f.gasPrice, maxPriorityFeePerGas: f.gasPrice };

/** The fees a signed sweep carries. */
function signedFees(raw: Hex): FeeModel {
  const tx = parseTransaction(raw);
  if (tx.type === 'eip1559')
    return { type: 'eip1559', maxFeePerGas: tx.maxFeePerGas ?? 0n, maxPriorityFeePerGas: tx.maxPriorityFeePerGas ?? 0n };
  return { type: 'legacy', gasPrice: tx.gasPrice ?? 0n };
}

/** `now`, raised to at least 1/8 above `old` in each part (a replacement's fees). */
function above(now: FeeModel, old: FeeModel): FeeModel {
  const bump = (x: bigint) => x + x / 8n + 1n;
  if (now.type === 'legacy') return { type: 'legacy', gasPrice: maxOf(now.gasPrice, bump(perGas(old))) };
  const tip = maxOf(now.maxPriorityFeePerGas, bump(old.type === 'eip1559' ? old.maxPriorityFeePerGas : old.gasPrice));
  return { type: 'eip1559', maxFeePerGas: maxOf(now.maxFeePerGas, bump(perGas(old)), tip), maxPriorityFeePerGas: tip };
}

const maxOf = (...xs: bigint[]) => xs.reduce((a, b) => (b > a ? b : a));

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
  /** A look's: the block its balances are read at (`readHeight`), and the replaced sweep whose nonce the next one takes. */
  at?: bigint;
  replacing?: { nonce: number; fees: FeeModel[] };
}

export class ChargeSweeper {
  private readonly log: Logger;
  /** Keyless addresses: swept in batches by the main address (charges.batch-sweeps.ts). */
  private readonly batches: BatchSweeper;

  constructor(
    private readonly ctx: AppContext,
    private readonly transactions: TransactionService,
  ) {
    this.log = ctx.log.child({ component: 'charges' });
    this.batches = new BatchSweeper(ctx, transactions, {
      finish: (row, f, retryMs, mined) => this.finish(row, f, retryMs, mined),
      finalHeight: (network, settled) => this.finalHeight(network, settled),
      retryMs: SWEEP_RETRY_MS,
      revertWaitMs: (charge) => revertWaitMs(charge, this.ctx.clock.nowMs()),
    });
  }

  async tick(stopping: () => boolean = () => false, settled?: ConfirmedHeights): Promise<void> {
    await this.track(stopping, settled);
    const db = this.ctx.store.db;
    const listed = await sw.listDue(db, this.ctx.clock.nowMs(), SWEEP_BATCH);
    await this.batches.sweepDue(
      listed.filter((d) => d.deposit_kind === 'keyless'),
      stopping,
    );
    for (const due of listed.filter((d) => d.deposit_kind === 'keyed')) {
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
  async sweepNow(chargeId: number, dueMs: number): Promise<void> {
    const charge = await repo.findChargeById(this.ctx.store.db, chargeId);
    if (charge?.deposit_kind === 'keyless')
      return this.batches.sendNow({ id: chargeId, sweep_due_at: dueMs, wallet_id: charge.wallet_id, deposit_kind: 'keyless' });
    return this.sweepOne(chargeId, dueMs);
  }

  /**
   * Looks at one settled charge's address and sends what it holds, one transaction at a time.
   * Its balances are read at a named block at or above the charge's money (`readHeight`), so
   * only from an endpoint that has that block: a lagging one's 0 is never the answer. A token whose
   * transfer would revert now (paused, the address blocklisted, a node's stale view) is waited
   * for: the charge stays due (`revertWaitMs`), the other tokens are swept meanwhile.
   */
  private async sweepOne(chargeId: number, seenDue: number): Promise<void> {
    const db = this.ctx.store.db;
    if (await sw.hasLive(db, chargeId)) return sw.clearDueWhileLive(db, chargeId, seenDue); // made due again when it is final
    const found = await this.target(chargeId);
    if (!found) return sw.clearDue(db, chargeId, seenDue);
    const at = await this.readHeight(found);
    const replaced = await sw.lowestReplaced(db, chargeId);
    const t: Target = {
      ...found,
      at,
      replacing: replaced && { nonce: replaced.nonce, fees: replaced.raw.map((r) => signedFees(r as Hex)) },
    };
    const owner = t.charge.address as Address;
    const tokens = await this.tokensToSweep(t);
    let waiting = false;
    for (const token of tokens.filter((x) => x.is_native !== 1)) {
      const balance = await readBalance(t.client, token.contract, owner, at);
      if (balance === 0n) continue;
      const done = await this.sweepToken(t, token, balance, tokens);
      if (done === 'sent') return;
      waiting = true;
    }
    const native = tokens.find((x) => x.is_native === 1);
    if (native && (await this.sweepNative(t, native, at))) return;
    if (!waiting) return sw.clearDue(db, chargeId, seenDue);
    const waitMs = revertWaitMs(t.charge, this.ctx.clock.nowMs());
    await sw.postponeDue(db, chargeId, seenDue, this.ctx.clock.nowMs() + waitMs);
    t.log.info({ retry_in_s: waitMs / 1000 }, 'a token on a charge deposit address cannot be moved now; looked at again later');
  }

  /**
   * The block a look reads the deposit address's balances at: the node's head, but never below
   * the charge's money (its settlement's and payments' blocks; a head read from a lagging
   * endpoint can be lower). The read names that block, so only an endpoint that has it answers
   * (src/chain/endpoints.ts routes a read by its block): a lagging one's 0 for money that
   * arrived is never the answer. None there yet is a fault tried again (a NotYetAtHeightError).
   */
  private async readHeight(t: Target): Promise<bigint> {
    const [money, head] = await Promise.all([sw.moneyBlock(this.ctx.store.db, t.charge.id), headNumber(t.client)]);
    return BigInt(Math.max(money ?? 0, head));
  }

  /** The wallet's active tokens, and the charge's own (a price charge's: each it quoted) even if deactivated since. */
  private async tokensToSweep(t: Target): Promise<WalletTokenRow[]> {
    const db = this.ctx.store.db;
    const tokens = await listTokens(db, t.wallet.id, { activeOnly: true });
    const owed = t.charge.price_currency === null ? [t.charge.token_id] : (await repo.listQuotes(db, [t.charge.id])).map((q) => q.token_id);
    for (const id of owed.filter((o) => !tokens.some((x) => x.id === o))) {
      const own = await findToken(db, t.wallet.id, id);
      if (own) tokens.push(own);
    }
    return tokens;
  }

  private async target(chargeId: number): Promise<Target | undefined> {
    const db = this.ctx.store.db;
    const charge = await repo.findChargeById(db, chargeId);
    const wallet = charge ? await findWalletView(db, charge.wallet_id) : undefined;
    const network = wallet ? await findNetwork(db, wallet.network_id) : undefined;
    if (!charge || !wallet || !network) return undefined;
    return { charge, wallet, network, client: this.ctx.chains.get(network), log: this.log.child({ charge_id: chargeId }) };
  }

  /**
   * The fees a sweep is signed with: the network's now, and when it replaces sweeps at that
   * nonce, at least an eighth above each one's (a node holding one takes a replacement only for
   * 10% more), so it is a different transaction from every one of them.
   */
  private async fees(t: Target): Promise<FeeModel> {
    const now = await feeModel(t.client);
    return (t.replacing?.fees ?? []).reduce(above, now);
  }

  /** Sends the whole native balance less the maximum fee; false when it is dust (logged). */
  private async sweepNative(t: Target, native: WalletTokenRow, at: bigint): Promise<boolean> {
    const from = t.charge.address as Address;
    const to = getAddress(t.wallet.address);
    const [balance, fees] = await Promise.all([t.client.getBalance({ address: from, blockNumber: at }), this.fees(t)]);
    if (balance === 0n) return false;
    const gas = await t.client.estimateGas({ account: from, to, value: 1n });
    // The whole max fee as the tip too: the fee paid is then exactly gas × max fee, and a plain
    // transfer (gas used = the estimate) leaves the address at 0 instead of a remainder of dust
    // (on an OP-stack chain: the L1 data fee's headroom, which that chain may not charge).
    const exact: FeeModel = fees.type === 'eip1559' ? { ...fees, maxPriorityFeePerGas: fees.maxFeePerGas } : fees;
    const l1 = await l1Fee(t.client, { chainId: t.network.chain_id, nonce: 0, gas, to, value: balance }, asFees(exact));
    const maxFee = gas * perGas(fees) + l1;
    if (balance <= maxFee) {
      t.log.info(
        { address: from, balance: balance.toString(), max_fee: maxFee.toString(), symbol: native.symbol },
        'dust left on a charge deposit address: the balance does not cover the fee of sweeping it',
      );
      return false;
    }
    await this.send(t, native, balance - maxFee, { to, value: balance - maxFee, gas, fees: exact });
    return true;
  }

  /**
   * Sends the token balance, or first the gas for it (once): 'sent'. 'wait' when its transfer
   * would revert now: a paused token, a blocklisted address, or a node whose view is behind the
   * payment. None of these is final (a token is unpaused, an address cleared, a node catches
   * up): the charge is looked at again later, and the other tokens and the native balance are
   * swept meanwhile.
   */
  private async sweepToken(t: Target, token: WalletTokenRow, amount: bigint, tokens: WalletTokenRow[]): Promise<'sent' | 'wait'> {
    const from = t.charge.address as Address;
    const to = getAddress(t.wallet.address);
    const contract = getAddress(token.contract);
    let gas: bigint;
    try {
      gas = await t.client.estimateContractGas({
        address: contract,
        abi: ERC20_ABI,
        functionName: 'transfer',
        args: [to, amount],
        account: from,
      });
    } catch (e) {
      if (!reverts(e)) throw e; // tried again SWEEP_RETRY_MS later (tick)
      t.log.warn(
        { err: e, symbol: token.symbol, amount: amount.toString() },
        'a token on a charge deposit address cannot be moved now (its transfer would revert); tried again later',
      );
      return 'wait';
    }
    const data = erc20TransferData(to, amount);
    const [fees, gasBalance] = await Promise.all([this.fees(t), t.client.getBalance({ address: from, blockNumber: t.at })]);
    // The nonce only changes the quote's size by a byte at most; the L1 fee has 25% headroom.
    const l1 = await l1Fee(t.client, { chainId: t.network.chain_id, nonce: 0, gas, to: contract, value: 0n, data }, asFees(fees));
    const maxFee = gas * perGas(fees) + l1;
    if (gasBalance < maxFee) await this.topUp(t, tokens, maxFee * 2n - gasBalance);
    else await this.send(t, token, amount, { to: contract, value: 0n, data, gas, fees });
    return 'sent';
  }

  /** Signs with the deposit key, records the sweep (committed), then sends it. */
  private async send(
    t: Target,
    token: WalletTokenRow,
    amount: bigint,
    call: { to: Address; value: bigint; data?: Hex; gas: bigint; fees: FeeModel },
  ): Promise<void> {
    const db = this.ctx.store.db;
    const account = accountFromKey(
      this.ctx.secrets.decrypt(await repo.subWalletKey(db, t.charge.sub_wallet_id), repo.subWalletPlace(t.charge.sub_wallet_id)) as Hex,
    );
    let nonce = t.replacing?.nonce;
    if (nonce === undefined) {
      const next = await this.nextNonces(t, t.at ?? -1);
      // The address sent a transaction after the block its balances were read at (a sweep mined
      // since, the head read from an endpoint behind): those balances still hold what it moved,
      // and a sweep of them at the next nonce could never mine. Looked at again once the read
      // block is past it.
      if (t.at !== undefined && next.pending > next.mined) {
        t.log.info(
          { address: t.charge.address, block: t.at.toString(), mined_nonce: next.mined, pending_nonce: next.pending },
          'the deposit address sent a transaction after the block its balances were read at; looked at again',
        );
        return;
      }
      nonce = Math.max(next.pending, next.mined);
    }
    const base = { chainId: t.network.chain_id, nonce, gas: call.gas, to: call.to, value: call.value, data: call.data };
    const raw = await account.signTransaction(
      call.fees.type === 'eip1559' ? { ...base, ...call.fees } : { ...base, type: 'legacy', gasPrice: call.fees.gasPrice },
    );
    const hash = keccak256(raw);
    const row = {
      charge_id: t.charge.id,
      kind: 'sweep' as const,
      token_id: token.id,
      amount,
      tx_hash: hash,
      raw_tx: raw,
      nonce,
      transaction_id: null,
    };
    const id = await sw.claimLive(db, row, this.ctx.clock.nowMs());
    if (id === null) return; // another process is sweeping this address
    t.log.info({ tx_hash: hash, symbol: token.symbol, amount: amount.toString() }, 'charge deposit address swept to the main address');
    await this.broadcast(t, { id, charge_id: t.charge.id, raw_tx: raw, tx_hash: hash, nonce }, 'first');
  }

  /**
   * Sends a recorded sweep. A definitive refusal of its FIRST send (no endpoint took it: the
   * broadcast's `rejected`) fails it, and a new one follows. A refused re-send is never final
   * (docs/transactions.md, "When a transfer is final"): the first send may be in a pool the
   * refusing node does not see, or mined where it has not looked yet; only the chain ends it
   * (`trackSweep`: its nonce used at confirmed depth, read at that height). Refused for its
   * nonce, it waits for that. Refused for another reason (its funds or fees no longer suffice,
   * e.g. a risen L1 data fee), it lets go of the charge (`replace`) while still followed: the
   * next sweep is signed at its nonce with higher fees, so at most one of the two can mine and
   * the chain says which.
   */
  private async broadcast(
    t: Target,
    s: Pick<SweepRow, 'id' | 'charge_id' | 'raw_tx' | 'tx_hash' | 'nonce'>,
    send: 'first' | 'again',
  ): Promise<void> {
    const outcome = await broadcastRaw(t.client, s.raw_tx as Hex, s.tx_hash as Hex);
    if (outcome.kind !== 'rejected') return; // sent, known, or ambiguous: tracking asks the node again
    const db = this.ctx.store.db;
    const now = this.ctx.clock.nowMs();
    if (send === 'again') {
      if (!outcome.nonceUsed && s.nonce !== null && (await sw.replace(db, s, now))) {
        await sw.setDue(db, s.charge_id, now);
        t.log.warn(
          { tx_hash: s.tx_hash, reason: outcome.reason },
          'charge sweep re-send refused by the node; followed until its nonce is used, a replacement sent at its nonce',
        );
      } else if (outcome.nonceUsed)
        t.log.warn(
          { tx_hash: s.tx_hash, reason: outcome.reason },
          'charge sweep re-send refused by the node; it stays in flight until its nonce is used',
        );
      return;
    }
    // Failed and the next sweep scheduled in one transaction: a crash between the two would
    // leave the address's money with nothing due to sweep it.
    const failed = await db.transaction().execute(async (trx) => {
      const done = await sw.finishLive(trx, s.id, { status: 'failed', error: outcome.reason }, now);
      if (done) await sw.setDue(trx, s.charge_id, now + SWEEP_RETRY_MS);
      return done;
    });
    if (failed) t.log.warn({ tx_hash: s.tx_hash, reason: outcome.reason }, 'charge sweep refused by the node; failed, will sweep again');
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
      const tx = await this.transactions.create(
        t.wallet,
        { amount: wei, token: native, to: getAddress(t.charge.address) },
        {
          exemptFromPolicy: true,
          inTransaction: async (trx, rec) => {
            if (
              (await sw.claimLive(trx, { ...claim, tx_hash: rec.tx_hash ?? '', transaction_id: rec.id }, this.ctx.clock.nowMs())) === null
            )
              throw new TopUpTaken();
          },
        },
      );
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
        else if (row.kind === 'batch') await this.batches.track(row, settled);
        else await this.trackSweep(row, settled);
      } catch (e) {
        if (!isUnreachable(e))
          this.log.warn({ err: e, charge_id: row.charge_id, tx_hash: row.tx_hash }, 'could not follow a charge sweep; trying again');
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
   * confirmed first), else the follower's cursor now. A missing receipt decides nothing by
   * itself (a node a block behind, or a balancer's lagging backend, has none for a sweep that
   * mined): only the chain at that height does. Once the sweep's nonce is used at the confirmed
   * height, the block that used it is read by number (so from an endpoint that has it) and its
   * transaction from the deposit address at that nonce decides: another one, and this sweep is
   * `failed` (`dropped`); this one, and it waits for its receipt; none (`unproven`: the reads
   * disagreed), and nothing is decided this round. A sweep the node forgot is sent again as signed.
   */
  private async trackSweep(row: SweepRow, settled?: ConfirmedHeights): Promise<void> {
    const t = await this.target(row.charge_id);
    if (!t) return;
    const final = await this.finalHeight(t.network, settled);
    const receipt = await receiptOrNull(t.client, row.tx_hash as Hex);
    if (receipt) {
      const block = Number(receipt.blockNumber);
      if (block > final) return; // not deep enough yet
      const ok = receipt.status === 'success';
      const mined = { network: t.network, block, hash: receipt.blockHash };
      await this.finish(
        row,
        { status: ok ? 'confirmed' : 'failed', block_number: block, error: ok ? null : 'reverted', fee_paid: receiptFee(receipt) },
        ok ? 0 : SWEEP_RETRY_MS,
        mined,
      );
      return;
    }
    const use = row.nonce === null || final < 0 ? 'unused' : await nonceUse(t.client, t.charge.address as Address, row.nonce, final);
    if (use === 'unproven') {
      this.log.warn(
        { charge_id: row.charge_id, tx_hash: row.tx_hash, nonce: row.nonce, block: final },
        'charge sweep: the chain says its nonce is used but shows no transaction using it; deciding nothing this round',
      );
      return;
    }
    if (use !== 'unused') {
      if (use.hash.toLowerCase() === row.tx_hash?.toLowerCase()) return; // mined: its receipt is asked again next round
      return this.dropped(row, use.hash);
    }
    if (sw.isReplaced(row)) return; // its re-send was refused; a replacement at its nonce is sent instead
    if ((await nodeKnows(t.client, row.tx_hash as Hex)) === false) await this.sendAgain(t, row, final);
  }

  /**
   * The chain used the sweep's nonce for another transaction: it is `failed` (`dropped`), and the
   * charge is looked at again. When that transaction is another sweep of the charge marked
   * failed (a refused send that went out all the same), that row is put back in flight in the
   * same transaction and confirmed by its receipt: the chain's answer, not the refusal, stands.
   */
  private async dropped(row: SweepRow, usedBy: string): Promise<void> {
    const now = this.ctx.clock.nowMs();
    const revived = await this.ctx.store.db.transaction().execute(async (trx) => {
      if (!(await sw.finishLive(trx, row.id, { status: 'failed', error: 'dropped' }, now))) return null;
      await sw.setDue(trx, row.charge_id, now + SWEEP_RETRY_MS);
      return sw.reviveMined(trx, row.charge_id, usedBy, now);
    });
    if (revived === null) return;
    this.log.warn(
      { charge_id: row.charge_id, tx_hash: row.tx_hash, used_by: usedBy },
      'charge sweep failed: its nonce was used by another transaction (dropped)',
    );
    if (revived)
      this.log.warn(
        { charge_id: row.charge_id, tx_hash: usedBy },
        'a charge sweep marked failed was mined: back in flight, to be confirmed',
      );
  }

  /**
   * A sweep in flight that neither the chain nor the node has (the node dropped it, or a reorg
   * removed its block and it came back in flight: `reopenMinedAbove`), sent again as signed, in
   * nonce order: never into a nonce gap, where the node would hold it behind a nonce that may
   * never be used and the charge would wait for it forever.
   * - Its nonce above the node's next one: the sweep in flight with a nonce in between goes
   *   first; with none that will be sent (it failed, or its re-send was refused for the funds a
   *   removed gas top-up was to bring and a replacement takes its nonce: `replace`), this one
   *   fails too (`dropped`), unsent, and the sweeper signs anew from the free nonce up, so at
   *   most one transaction per nonce can mine (one of these that mines after all is put back in
   *   flight by the row its nonce dropped: `dropped`).
   * - Without its signed bytes (confirmed before they were kept): it cannot be sent again, and
   *   fails once the node's next nonce is its own; the next sweep is signed at that nonce.
   */
  private async sendAgain(t: Target, row: SweepRow, final: number): Promise<void> {
    const next = await this.nextNonce(t, final);
    const nonce = row.nonce ?? next;
    if (nonce > next) {
      if (await sw.hasLiveNonceIn(this.ctx.store.db, row.charge_id, next, nonce)) return;
      return this.finish(row, { status: 'failed', error: 'dropped: its nonce follows one no sweep in flight will use' }, SWEEP_RETRY_MS);
    }
    if (row.raw_tx !== null) return this.broadcast(t, row, 'again');
    if (nonce === next)
      await this.finish(
        row,
        { status: 'failed', error: 'dropped: removed by a reorg; its signed transaction was not kept' },
        SWEEP_RETRY_MS,
      );
  }

  /**
   * The deposit address's next nonce: the node's pending count, but never below the count at
   * `height` read at that height (a lagging endpoint's pending count can be lower than a nonce
   * the chain already used there).
   */
  private async nextNonce(t: Target, height: number | bigint): Promise<number> {
    const { pending, mined } = await this.nextNonces(t, height);
    return Math.max(pending, mined);
  }

  /** The node's pending count of the deposit address, and its count at `height` (0 below block 0). */
  private async nextNonces(t: Target, height: number | bigint): Promise<{ pending: number; mined: number }> {
    const address = t.charge.address as Address;
    const [pending, mined] = await Promise.all([
      t.client.getTransactionCount({ address, blockTag: 'pending' }),
      Number(height) < 0 ? 0 : t.client.getTransactionCount({ address, blockNumber: BigInt(height) }),
    ]);
    return { pending, mined };
  }

  private async finalHeight(network: NetworkRow, settled?: ReadonlyMap<number, number>): Promise<number> {
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
    this.log[level](
      { charge_id: row.charge_id, kind: row.kind, tx_hash: f.tx_hash ?? row.tx_hash, status: f.status, error: f.error ?? undefined },
      `charge ${row.kind === 'gas' ? 'gas top-up' : 'sweep'} ${f.status}`,
    );
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
    const stored =
      cursor === undefined || m.block > confirmedHeight(cursor, m.network.confirmations)
        ? null
        : await findBlockHash(trx, m.network.id, m.block);
    if (stored === undefined || stored?.toLowerCase() === m.hash.toLowerCase()) return true;
    this.log.info(
      { charge_id: row.charge_id, tx_hash: row.tx_hash, block: m.block },
      'a reorg moved the chain while a charge sweep was being finished: looked at again',
    );
    return false;
  }
}
