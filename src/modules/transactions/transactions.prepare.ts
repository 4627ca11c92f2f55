/**
 * Step 2 of the create flow (transactions.service.ts): the quote, read from the node before any
 * database transaction. The wallet's chain state at the head (shared by the creates that arrive
 * while a read of it is under way), the gas estimate, the fees, the L1 data fee, and an early
 * balance check against the wallet's reservations; what a failed estimate means for the caller.
 */
import {
  BaseError,
  decodeErrorResult,
  ExecutionRevertedError,
  getAddress,
  RpcRequestError,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import type { AppContext } from '../../context.js';
import { AppError, Errors, fieldError } from '../../errors.js';
import { nodeMessage } from '../../chain/broadcast.js';
import { ERC20_ABI, erc20TransferData } from '../../chain/erc20.js';
import { isTransient, mapChainError } from '../../chain/errors.js';
import { atHead } from '../../chain/blocks.js';
import { estimateGas, explicitFees, l1Fee, maxFee, recentFeeMarket, recentQuote, type Fees } from '../../chain/fees.js';
import { requireWithinCap } from './transactions.fees.js';
import { chainPendingNonce } from '../../chain/nonce.js';
import type { TransactionSigner } from '../../chain/keys.js';
import { findNetwork } from '../networks/networks.repository.js';
import { decodeTokenCall, type TokenCall } from '../policies/token-calls.js';
import { refuseBlocked } from '../screening/screening.js';
import { listTokens } from '../tokens/tokens.repository.js';
import type { WalletView } from '../wallets/wallets.repository.js';
import type { WalletService } from '../wallets/wallets.service.js';
import * as createRepo from './transactions.create.repository.js';
import type { FeeChoice, TransferInput } from './transactions.schemas.js';

/** Snapshot reads under way, by node client, then address and token contract (`Quoter.snapshot`). */
const SNAPSHOTS_IN_FLIGHT = new WeakMap<PublicClient, Map<string, Promise<Snapshot>>>();

/** The node's view at the head block B, read before any database transaction. */
export interface Snapshot {
  /** The address's transaction count at B: its transfers below it are in the balances. */
  minedNonce: number;
  native: bigint;
  token: bigint;
  pendingNonce: number;
}

/** What the wallet can still spend: balances at the snapshot's block minus its transfers not yet in them. */
export function available(rows: createRepo.Reservation[], nativeTokenIds: Set<number>, tokenId: number, snap: Snapshot) {
  let native = snap.native;
  let token = snap.token;
  for (const r of rows) {
    native -= r.fee_reserved;
    if (nativeTokenIds.has(r.token_id)) native -= r.amount;
    else if (r.token_id === tokenId) token -= r.amount;
  }
  return { native, token };
}

/** A transfer ready to record: the node's view, the call, its gas and fee, and the signer. */
export interface Prepared {
  input: TransferInput;
  chainId: number;
  client: PublicClient;
  from: Address;
  call: { to: Address; value: bigint; data: Hex | undefined };
  /** A contract call to one of the wallet's token contracts: what it does with that token (policed and reserved as it). */
  tokenCall: TokenCall | null;
  snap: Snapshot;
  gas: bigint;
  fees: Fees;
  /** The OP-stack L1 data fee reserved (0 elsewhere). */
  l1Fee: bigint;
  /** The most it can cost in fees: gas × max fee per gas + the L1 fee. */
  fee: bigint;
  /** Can the wallet pay the amount and `fee` with these reservations held against the snapshot? */
  enough: (rows: createRepo.Reservation[], fee: bigint) => boolean;
  signer: TransactionSigner;
}

/** The call a transaction makes: a contract call, a value transfer, or the token contract's `transfer`. */
export function transferCall(input: TransferInput): Prepared['call'] {
  if (input.data !== undefined) return { to: input.to, value: input.amount, data: input.data };
  return input.token.is_native === 1
    ? { to: input.to, value: input.amount, data: undefined }
    : { to: getAddress(input.token.contract), value: 0n, data: erc20TransferData(input.to, input.amount) };
}

/**
 * What a contract call does with one of the wallet's tokens: the service's own call tells it
 * (`TransferInput.spend`, a token call of it by the called contract), else its calldata.
 */
async function tokenCallOf(
  input: TransferInput,
  tokens: Promise<Parameters<typeof decodeTokenCall>[0]>,
  from: Address,
): Promise<TokenCall | null> {
  const spend = input.spend;
  if (spend === undefined) return decodeTokenCall(await tokens, from, input.to, input.data!);
  const contract = getAddress(spend.token.contract);
  return { kind: 'transferFrom', tokenId: spend.token.id, contract, to: input.to, amount: spend.policed, spend: spend.amount };
}

/** Quotes transfers of the service's wallets: `prepare` for a create, `estimationFailure` for a failed estimate. */
export class Quoter {
  constructor(
    private readonly ctx: AppContext,
    private readonly wallets: WalletService,
  ) {}

  /**
   * Step 2: the node, before any database transaction (with an early balance check, without the
   * lock). Every read that does not need another's answer runs at once: the snapshot (and the
   * early reservations read after it), the gas estimate, the fees (shared for a second,
   * `recentFeeMarket`), the wallet's tokens and its key. Errors are reported in the order the
   * reads used to run one after the other: contract check, node, balance, estimate, fees.
   */
  async prepare(wallet: WalletView, input: TransferInput, approving?: createRepo.Excluded): Promise<Prepared> {
    const { db } = this.ctx.store;
    const { token, amount } = input;
    const isNative = token.is_native === 1;
    // The wallet's tokens and key do not need the network: read them meanwhile.
    const ownReads = [listTokens(db, wallet.id), this.wallets.signer(wallet.id)] as const;
    for (const r of ownReads) r.catch(() => undefined); // reported below, or moot if the network is missing
    const network = await findNetwork(db, wallet.network_id);
    if (!network) throw Errors.internal(new Error(`network ${wallet.network_id} missing`));
    const client = this.ctx.chains.get(network);
    const from = getAddress(wallet.address);
    const call = transferCall(input);
    // A contract call to a token contract of the wallet: its token's balance is read and checked too.
    const tokenCall = input.data === undefined ? null : await tokenCallOf(input, ownReads[0], from);
    // A token call pays its recipient or spender: screened as a transfer's address is (the route screens the contract).
    if (tokenCall !== null) refuseBlocked(this.ctx.screening, [tokenCall.to]);
    const snapRead = this.snapshot(client, from, isNative ? (tokenCall?.contract ?? null) : getAddress(token.contract));
    const [code, snapshot, early, estimate, quote, tokens, key] = await Promise.allSettled([
      input.data !== undefined ? requireContract(client, input.to) : Promise.resolve(),
      snapRead,
      snapRead.then((s) => createRepo.reservations(db, wallet.id, s.minedNonce, approving)),
      estimateGas(client, { from, ...call }),
      quoteFor(client, input.fees),
      ...ownReads,
    ]);
    const nativeTokenIds = new Set(
      valueOf(tokens)
        .filter((t) => t.is_native === 1)
        .map((t) => t.id),
    );
    valueOf(code);
    const snap = valueOf(snapshot);
    const enough = (rows: createRepo.Reservation[], fee: bigint) => {
      const a = available(rows, nativeTokenIds, tokenCall?.tokenId ?? token.id, snap);
      return isNative ? a.native >= amount + fee && a.token >= (tokenCall?.spend ?? 0n) : a.token >= amount && a.native >= fee;
    };
    // Early answer without the lock (the decisive check is repeated under it).
    if (!enough(valueOf(early), 0n)) throw Errors.insufficientBalance();
    if (estimate.status === 'rejected')
      throw await this.estimationFailure(estimate.reason, client, from, wallet.id, input, nativeTokenIds, approving);
    const gas = estimate.value;
    const fees = valueOf(quote);
    const l1 = await l1FeeFor(client, { chainId: network.chain_id, nonce: snap.pendingNonce, gas, ...call }, fees);
    const fee = maxFee(gas, fees, l1);
    return {
      input,
      chainId: network.chain_id,
      client,
      from,
      call,
      tokenCall,
      snap,
      gas,
      fees,
      l1Fee: l1,
      fee,
      enough,
      signer: valueOf(key),
    };
  }

  /**
   * The wallet's chain state at the node's head. Creates of one wallet that arrive while a read of
   * it is under way share that read instead of making their own: it began less than one read's
   * time before they arrived, and it is as good for them as a read of their own: the
   * reservations are read against its mined nonce (any transfer of ours it does not show mined is
   * reserved), and the balance check is repeated under the wallet's lock against them. A hot
   * wallet so makes fewer node calls a create (four or five each before).
   */
  private snapshot(client: PublicClient, from: Address, contract: Address | null): Promise<Snapshot> {
    let reads = SNAPSHOTS_IN_FLIGHT.get(client);
    if (!reads) SNAPSHOTS_IN_FLIGHT.set(client, (reads = new Map<string, Promise<Snapshot>>()));
    const key = `${from}:${contract ?? ''}`;
    let read = reads.get(key);
    if (!read) {
      read = this.readSnapshot(client, from, contract).finally(() => reads.delete(key));
      reads.set(key, read);
    }
    return read;
  }

  /** The snapshot at one head (read again at a new one when no endpoint has it any longer: `atHead`). */
  private async readSnapshot(client: PublicClient, from: Address, contract: Address | null): Promise<Snapshot> {
    try {
      return await atHead(client, (head) => this.readAt(client, from, contract, head));
    } catch (e) {
      throw mapChainError(e);
    }
  }

  private async readAt(client: PublicClient, from: Address, contract: Address | null, head: bigint): Promise<Snapshot> {
    const [minedNonce, native, token, pendingNonce] = await Promise.all([
      client.getTransactionCount({ address: from, blockNumber: head }),
      client.getBalance({ address: from, blockNumber: head }),
      contract === null
        ? Promise.resolve(0n)
        : client.readContract({ address: contract, abi: ERC20_ABI, functionName: 'balanceOf', args: [from], blockNumber: head }),
      chainPendingNonce(client, from),
    ]);
    return { minedNonce, native, token, pendingNonce };
  }

  /**
   * eth_estimateGas failed. A transient fault (unreachable, rate-limited: `isTransient`): 503. Otherwise the call would fail on chain; when the
   * wallet (now, with its reservations but the one this transfer takes over: `excludeId`)
   * cannot cover the amount, that is the reason (400 Insufficient balance), else the node's
   * reason (400).
   */
  async estimationFailure(
    err: unknown,
    client: PublicClient,
    from: Address,
    walletId: number,
    input: TransferInput,
    nativeTokenIds: Set<number>,
    excludeId?: createRepo.Excluded,
  ): Promise<AppError> {
    if (isTransient(err)) return Errors.chainUnavailable(err);
    if (input.data !== undefined && err instanceof BaseError && err.walk((e) => e instanceof ExecutionRevertedError)) {
      return Errors.wouldRevert(revertReason(err), err);
    }
    const isNative = input.token.is_native === 1;
    try {
      const snap = await this.snapshot(client, from, isNative ? null : getAddress(input.token.contract));
      const a = available(
        await createRepo.reservations(this.ctx.store.db, walletId, snap.minedNonce, excludeId),
        nativeTokenIds,
        input.token.id,
        snap,
      );
      if ((isNative ? a.native : a.token) < input.amount) return Errors.insufficientBalance();
    } catch {
      // fall through to the node's reason
    }
    return Errors.chainRejected(`The transaction would fail: ${nodeMessage(err)}`, err);
  }
}

/** The value of a settled read, or its error thrown. */
function valueOf<T>(r: PromiseSettledResult<T>): T {
  if (r.status === 'rejected') throw r.reason;
  return r.value;
}

/** 422 on `address` when it holds no code (a contract call needs a contract). */
async function requireContract(client: PublicClient, address: Address): Promise<void> {
  let code: Hex | undefined;
  try {
    code = await client.getCode({ address });
  } catch (e) {
    throw mapChainError(e);
  }
  if (code === undefined || code === '0x') throw fieldError('address', 'The address field must be a contract.');
}

/** The fees to sign with: the level's, or the caller's (on the network's kind, within the cap), from the recent fee market. */
async function quoteFor(client: PublicClient, choice: FeeChoice | undefined): Promise<Fees> {
  if (choice === undefined || !('maxFeePerGas' in choice)) {
    try {
      return await recentQuote(client, choice?.level);
    } catch (e) {
      throw mapChainError(e);
    }
  }
  let market;
  try {
    market = await recentFeeMarket(client);
  } catch (e) {
    throw mapChainError(e);
  }
  requireWithinCap(choice.maxFeePerGas, market);
  return explicitFees(market.kind, choice.maxFeePerGas, choice.maxPriorityFeePerGas);
}

/** The L1 data fee to reserve with these fees (0 without a GasPriceOracle, known after the first call). */
async function l1FeeFor(client: PublicClient, call: Parameters<typeof l1Fee>[1], fees: Fees): Promise<bigint> {
  try {
    return await l1Fee(client, call, fees);
  } catch (e) {
    throw mapChainError(e);
  }
}

/** The revert reason the node gave (its message, else the decoded `Error(string)` / `Panic`), or null. */
function revertReason(err: BaseError): string | null {
  const reverted = err.walk((e) => e instanceof ExecutionRevertedError) as ExecutionRevertedError | null;
  const said = reverted?.shortMessage.match(/with reason: (.*)\.$/)?.[1]?.trim();
  if (said) return said;
  const rpc = err.walk((e) => e instanceof RpcRequestError) as RpcRequestError | null;
  const data = (rpc as { data?: unknown } | null)?.data;
  if (typeof data !== 'string' || !data.startsWith('0x') || data.length < 10) return null;
  try {
    const decoded = decodeErrorResult({ abi: [], data: data as Hex });
    return decoded.args?.length ? String(decoded.args[0]) : decoded.errorName;
  } catch {
    return null;
  }
}
