/**
 * Transactions: create (validate, quote, reserve, sign, record, broadcast), list and show.
 *
 * The create flow, and why it cannot overspend (docs/transactions.md has the long form):
 *
 * 1. Validate the body (422 with the contract's wording).
 * 2. Outside any database transaction, ask the node: the head block B, the balances and the
 *    address's transaction count at B (native, and the token's for an ERC-20), the address's
 *    pending nonce, the gas price and the gas estimate. No network call ever happens inside a
 *    database transaction.
 * 3. In one database transaction holding the wallet's row lock (PostgreSQL `FOR UPDATE`;
 *    SQLite `BEGIN IMMEDIATE`, the single writer): subtract from the balances at B what the
 *    wallet's own transfers not yet in them still take (`repo.reservations`: those with a
 *    nonce at or above the count at B, each its amount and its maximum fee gas × gas price); refuse
 *    with 400 if the rest does not cover amount + maximum fee; allocate the nonce; sign
 *    locally; insert the row (status pending, the signed raw transaction kept) and the
 *    `transaction.created` event; commit. Two creates for one wallet, in any number of
 *    processes, run this step one after the other, and the second sees the first's row.
 * 4. After the commit, broadcast. The node's definitive rejection makes the row failed (its
 *    reservation released, its nonce given back) and the request answers 400; an unreachable
 *    node leaves it pending and the watcher sends it later. A crash between 3 and 4 loses
 *    nothing: the watcher re-sends recorded transactions the node does not know.
 */
import { getAddress, keccak256, type Address, type Hex, type PublicClient } from 'viem';
import type { AppContext } from '../../context.js';
import { isValidAddress } from '../../chain/address.js';
import type { Executor } from '../../db/index.js';
import type { WalletTokenRow } from '../../db/types.js';
import { AppError, Errors, validationError, type FieldErrors } from '../../errors.js';
import { broadcastRaw, nodeMessage } from '../../chain/broadcast.js';
import { ERC20_ABI, erc20TransferData } from '../../chain/erc20.js';
import { isUnreachable, mapChainError } from '../../chain/errors.js';
import { currentGasPrice, estimateTransferGas, maxFee } from '../../chain/gas.js';
import { allocateNonce, chainPendingNonce } from '../../chain/nonce.js';
import { recordEvent } from '../events/outbox.js';
import { findNetwork } from '../networks/networks.repository.js';
import { findToken, listTokens } from '../tokens/tokens.repository.js';
import { checkAmountAndToken, orderErrors } from '../tokens/amount-field.js';
import type { WalletView } from '../wallets/wallets.repository.js';
import type { WalletService } from '../wallets/wallets.service.js';
import * as repo from './transactions.repository.js';
import type { TxRecord } from './transactions.repository.js';
import { failUnmined } from './transactions.state.js';
import { transactionEventPayload } from './transactions.views.js';

export interface CreateInput {
  amount: bigint;
  token: WalletTokenRow;
  to: Address;
}

export interface CreateOptions {
  /** Runs inside the database transaction that records the new transaction (e.g. to store the idempotent response atomically). */
  inTransaction?: (trx: Executor, rec: TxRecord) => Promise<void>;
  /** Sign only with exactly this nonce; any other allocation rolls back with nothing recorded. */
  requireNonce?: number;
}

/** The smallest amount (1 wei) a gap filler sends to the wallet's own address. */
const GAP_FILLER_WEI = '0.000000000000000001';

export interface ListQuery {
  page: number;
  limit: number;
  token?: string;
}

export interface ListPage {
  items: TxRecord[];
  page: number;
  limit: number;
  total: number;
  pages: number;
}

/** Checks the create body against the wallet's active tokens; throws 422 with every failing field. */
export function validateCreate(body: Record<string, unknown>, activeTokens: WalletTokenRow[]): CreateInput {
  const errors: FieldErrors = {};
  const { amount, token } = checkAmountAndToken(body, activeTokens, errors);

  const address = body.address;
  if (address === undefined || address === null || (typeof address === 'string' && address.trim() === '')) {
    errors.address = ['The address field is required.'];
  } else if (typeof address !== 'string' || !isValidAddress(address)) {
    errors.address = ['The address field must be a valid address.'];
  }

  // Field order of the request (amount, token, address), as the envelope message uses the first.
  if (Object.keys(errors).length > 0) throw validationError(orderErrors(errors, ['amount', 'token', 'address']));
  return { amount, token: token!, to: getAddress(address as string) };
}

/** What the wallet can still spend: balances at block B minus its transfers not yet in them. */
function available(rows: repo.Reservation[], nativeTokenIds: Set<number>, tokenId: number, nativeAtB: bigint, tokenAtB: bigint) {
  let native = nativeAtB;
  let token = tokenAtB;
  for (const r of rows) {
    native -= r.fee_reserved;
    if (nativeTokenIds.has(r.token_id)) native -= r.amount;
    else if (r.token_id === tokenId) token -= r.amount;
  }
  return { native, token };
}

interface Snapshot {
  block: number;
  /** The address's transaction count at `block`: its transfers below it are in the balances. */
  minedNonce: number;
  native: bigint;
  token: bigint;
  pendingNonce: number;
  gasPrice: bigint;
}

export class TransactionService {
  constructor(
    private readonly ctx: AppContext,
    private readonly wallets: WalletService,
  ) {}

  async create(wallet: WalletView, body: Record<string, unknown>, opts: CreateOptions = {}): Promise<TxRecord> {
    const { db, dialect } = this.ctx.store;
    const log = this.ctx.log.child({ component: 'transactions', wallet_id: wallet.id });
    const allTokens = await listTokens(db, wallet.id);
    const input = validateCreate(body, allTokens.filter((t) => t.is_active === 1));
    const token = input.token;
    const isNative = token.is_native === 1;
    const nativeTokenIds = new Set(allTokens.filter((t) => t.is_native === 1).map((t) => t.id));

    const network = await findNetwork(db, wallet.network_id);
    if (!network) throw Errors.internal(new Error(`network ${wallet.network_id} missing`));
    const client = this.ctx.chains.get(network);
    const from = getAddress(wallet.address);
    const call = isNative
      ? { from, to: input.to, value: input.amount, data: undefined }
      : { from, to: getAddress(token.contract), value: 0n, data: erc20TransferData(input.to, input.amount) };

    // 1. The node, before any database transaction.
    const snap = await this.snapshot(client, from, isNative ? null : getAddress(token.contract));
    const enough = (rows: repo.Reservation[], fee: bigint) => {
      const a = available(rows, nativeTokenIds, token.id, snap.native, snap.token);
      return isNative ? a.native >= input.amount + fee : a.token >= input.amount && a.native >= fee;
    };
    // Early answer without the lock (the decisive check is repeated under it).
    if (!enough(await repo.reservations(db, wallet.id, snap.minedNonce), 0n)) throw Errors.insufficientBalance();

    let gas: bigint;
    try {
      gas = await estimateTransferGas(client, call);
    } catch (e) {
      throw await this.estimationFailure(e, client, from, wallet.id, token, nativeTokenIds, input.amount, isNative);
    }
    const fee = maxFee({ gas, gasPrice: snap.gasPrice });
    const signer = await this.wallets.signer(wallet.id);

    // 2. Reserve, sign and record, under the wallet's lock.
    const now = this.ctx.clock.nowMs();
    let raw: Hex | undefined;
    const rec = await db.transaction().execute(async (trx) => {
      const locked = await repo.lockWallet(trx, dialect, wallet.id);
      if (!enough(await repo.reservations(trx, wallet.id, snap.minedNonce), fee)) throw Errors.insufficientBalance();
      const floor = Math.max(locked.next_nonce ?? 0, snap.pendingNonce);
      const nonce = allocateNonce(locked.next_nonce, snap.pendingNonce, await repo.heldNonces(trx, wallet.id, floor));
      if (opts.requireNonce !== undefined && nonce !== opts.requireNonce) {
        throw new AppError(409, 'NONCE_MOVED', `Nonce ${opts.requireNonce} is no longer the next to fill (allocation gave ${nonce})`);
      }
      raw = await signer.signTransaction({
        type: 'legacy',
        chainId: network.chain_id,
        nonce,
        gas,
        gasPrice: snap.gasPrice,
        to: call.to,
        value: call.value,
        data: call.data,
      });
      const id = await repo.insertTransaction(
        trx,
        {
          wallet_id: wallet.id,
          token_id: token.id,
          symbol: token.symbol,
          type: 'transfer',
          status: 'pending',
          amount: input.amount,
          fee_reserved: fee,
          from_address: from,
          to_address: input.to,
          tx_hash: keccak256(raw),
          log_index: -1,
          block_number: null,
          block_hash: null,
          block_timestamp: null,
          nonce,
          gas,
          gas_price: snap.gasPrice,
          gas_used: null,
          cumulative_gas_used: null,
          receipt_status: null,
          raw_tx: raw,
          confirmed_at: null,
        },
        now,
      );
      await repo.setNextNonce(trx, wallet.id, nonce + 1, now);
      const created = (await repo.findRecord(trx, id!))!;
      await recordEvent(trx, {
        userId: wallet.user_id,
        walletId: wallet.id,
        name: 'transaction.created',
        payload: transactionEventPayload(created, 'transaction.created', now),
        nowMs: now,
      });
      await opts.inTransaction?.(trx, created);
      return created;
    });
    log.info({ transaction_id: rec.id, tx_hash: rec.tx_hash, nonce: rec.nonce, token: token.symbol }, 'transaction recorded');

    // 3. Broadcast, after the commit.
    const outcome = await broadcastRaw(client, raw!, rec.tx_hash as Hex);
    const sentAt = this.ctx.clock.nowMs();
    switch (outcome.kind) {
      case 'sent':
      case 'known':
        await repo.markBroadcast(db, rec.id, sentAt);
        break;
      case 'rejected': {
        await db.transaction().execute((trx) => failUnmined(trx, dialect, rec.id, { reason: outcome.reason, nonceUsed: outcome.nonceUsed, nowMs: sentAt }));
        log.warn({ transaction_id: rec.id, tx_hash: rec.tx_hash, reason: outcome.reason }, 'broadcast rejected; transaction failed');
        throw Errors.chainRejected(`The blockchain node rejected the transaction: ${outcome.reason}`);
      }
      default:
        log.warn({ transaction_id: rec.id, tx_hash: rec.tx_hash, outcome: outcome.kind, reason: outcome.reason }, 'broadcast not confirmed; the watcher will send it again');
    }
    return (await repo.findRecord(db, rec.id))!;
  }

  private async snapshot(client: PublicClient, from: Address, contract: Address | null): Promise<Snapshot> {
    try {
      const head = await client.getBlockNumber({ cacheTime: 0 });
      const [minedNonce, native, token, pendingNonce, gasPrice] = await Promise.all([
        client.getTransactionCount({ address: from, blockNumber: head }),
        client.getBalance({ address: from, blockNumber: head }),
        contract === null
          ? Promise.resolve(0n)
          : client.readContract({ address: contract, abi: ERC20_ABI, functionName: 'balanceOf', args: [from], blockNumber: head }),
        chainPendingNonce(client, from),
        currentGasPrice(client),
      ]);
      return { block: Number(head), minedNonce, native, token, pendingNonce, gasPrice };
    } catch (e) {
      throw mapChainError(e);
    }
  }

  /**
   * eth_estimateGas failed. Unreachable: 503. Otherwise the call would fail on chain; when the
   * wallet (now, with its reservations) cannot cover the amount, that is the reason (400
   * Insufficient balance), else the node's reason (400).
   */
  private async estimationFailure(
    err: unknown,
    client: PublicClient,
    from: Address,
    walletId: number,
    token: WalletTokenRow,
    nativeTokenIds: Set<number>,
    amount: bigint,
    isNative: boolean,
  ): Promise<AppError> {
    if (isUnreachable(err)) return Errors.chainUnavailable(err);
    try {
      const snap = await this.snapshot(client, from, isNative ? null : getAddress(token.contract));
      const a = available(await repo.reservations(this.ctx.store.db, walletId, snap.minedNonce), nativeTokenIds, token.id, snap.native, snap.token);
      if ((isNative ? a.native : a.token) < amount) return Errors.insufficientBalance();
    } catch {
      // fall through to the node's reason
    }
    return Errors.chainRejected(`The transaction would fail: ${nodeMessage(err)}`, err);
  }

  /**
   * Unsticks transfers waiting behind a freed nonce. When the node rejected a transfer for good
   * (its nonce given back) while later transfers were already signed, those wait in the node's
   * queue until something uses the freed nonce. If the node's next nonce P is held by no pending
   * transfer of ours while one of ours above P is pending, this sends 1 wei to the wallet's own
   * address with exactly nonce P, through the normal create flow (reserved, recorded, reported
   * as a `transfer`). Returns the filler, or null when there is no gap.
   */
  async fillNonceGap(wallet: WalletView): Promise<TxRecord | null> {
    const { db } = this.ctx.store;
    const held = await repo.heldNonces(db, wallet.id, 0);
    if (held.size === 0) return null;
    const network = await findNetwork(db, wallet.network_id);
    if (!network) return null;
    const next = await chainPendingNonce(this.ctx.chains.get(network), getAddress(wallet.address));
    if (held.has(next) || ![...held].some((n) => n > next)) return null;
    const native = (await listTokens(db, wallet.id)).find((t) => t.is_native === 1 && t.is_active === 1);
    if (!native) return null;
    this.ctx.log.warn({ wallet_id: wallet.id, nonce: next, waiting: [...held].filter((n) => n > next).sort((a, b) => a - b) }, 'nonce gap: sending a 1 wei self-transfer to fill it');
    return this.create(wallet, { amount: GAP_FILLER_WEI, token: native.symbol, address: wallet.address }, { requireNonce: next });
  }

  async list(wallet: WalletView, q: ListQuery): Promise<ListPage> {
    const db = this.ctx.store.db;
    const symbolKey = q.token === undefined || q.token.trim() === '' ? null : q.token.trim().toUpperCase();
    const total = await repo.countForList(db, wallet.id, symbolKey);
    const pages = Math.ceil(total / q.limit);
    // Newest first: page 1 holds sequence numbers (total - limit, total], page N the range below.
    const high = total - (q.page - 1) * q.limit;
    const items = high <= 0 ? [] : await repo.listSeqRange(db, wallet.id, symbolKey, Math.max(0, high - q.limit), high);
    return { items, page: q.page, limit: q.limit, total, pages };
  }

  find(wallet: WalletView, id: number): Promise<TxRecord | undefined> {
    return repo.findRecordForWallet(this.ctx.store.db, wallet.id, id);
  }

  async tokenOf(rec: TxRecord): Promise<WalletTokenRow> {
    return (await findToken(this.ctx.store.db, rec.wallet_id, rec.token_id))!;
  }
}
