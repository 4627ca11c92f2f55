/**
 * Charges: a request for payment of `amount` of a token to a deposit address of its own (a
 * sub-wallet derived from the wallet's mnemonic at the next index), before `expires_at`.
 *
 * Settlement (the charge worker, `settle`): the deposit address's balance is read at the
 * network's confirmed height (head − confirmations + 1). Before expiry, a balance reaching the
 * amount makes the charge `paid`; a smaller one is recorded as `paid_amount`. After expiry the
 * balance is read at the last confirmed block stamped at or before `expires_at`: enough →
 * `paid`, nothing → `expired`, some → `failed`. Each final move is one conditional UPDATE
 * (WHERE status = 'pending') with its event in the same transaction, so every event is
 * written exactly once even with several workers. Paid native charges are swept to the
 * wallet's main address (`sweep`).
 */
import { randomUUID } from 'node:crypto';
import { createWalletClient, http, type Address, type Hex, type PublicClient } from 'viem';
import type { AppContext } from '../../context.js';
import type { InTransaction } from '../../http/idempotency.js';
import type { NetworkRow } from '../../db/types.js';
import { validationError, type FieldErrors } from '../../errors.js';
import { chainOf } from '../../chain/clients.js';
import { ERC20_ABI, NATIVE_CONTRACT, readBalance } from '../../chain/erc20.js';
import { isUnreachable } from '../../chain/errors.js';
import { accountFromKey, deriveKey } from '../../chain/keys.js';
import { recordEvent } from '../events/outbox.js';
import { findNetwork } from '../networks/networks.repository.js';
import { listTokens } from '../tokens/tokens.repository.js';
import { checkAmountAndToken, orderErrors } from '../tokens/amount-field.js';
import type { WalletView } from '../wallets/wallets.repository.js';
import { findWalletView } from '../wallets/wallets.repository.js';
import type { WalletService } from '../wallets/wallets.service.js';
import type { TransactionService } from '../transactions/transactions.service.js';
import { formatUnits18 } from '../../lib/money.js';
import * as repo from './charges.repository.js';
import type { ChargeRow } from './charges.repository.js';
import { chargeCreatedPayload, chargeFinishedPayload } from './charges.views.js';

export const CHARGE_EXPIRES_DEFAULT_S = 300;
export const CHARGE_EXPIRES_MIN_S = 60;
export const CHARGE_EXPIRES_MAX_S = 86_400;
export const CHARGE_OBJECT_MAX_BYTES = 16 * 1024;
/** Charges looked at per worker tick, and blocks walked back to find the block at expiry. */
const SETTLE_BATCH = 200;
const MAX_BLOCKS_BACK = 256;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ChargeInput {
  amount?: unknown;
  token?: unknown;
  expires?: number;
  content?: Record<string, unknown> | null;
  info?: Record<string, unknown> | null;
}

function objectText(field: string, v: Record<string, unknown> | null | undefined, errors: FieldErrors): string | null {
  if (v === undefined || v === null) return null;
  const text = JSON.stringify(v);
  if (Buffer.byteLength(text) > CHARGE_OBJECT_MAX_BYTES) errors[field] = [`The ${field} field must not be greater than 16 kilobytes.`];
  return text;
}

export class ChargeService {
  constructor(
    private readonly ctx: AppContext,
    private readonly wallets: WalletService,
    private readonly transactions: TransactionService,
  ) {}

  async create(wallet: WalletView, input: ChargeInput, opts: { inTransaction?: InTransaction<ChargeRow> } = {}) {
    const db = this.ctx.store.db;
    const errors: FieldErrors = {};
    const { amount, token } = checkAmountAndToken(input as Record<string, unknown>, await listTokens(db, wallet.id, { activeOnly: true }), errors);
    const content = objectText('content', input.content, errors);
    const info = objectText('info', input.info, errors);
    if (Object.keys(errors).length > 0) throw validationError(orderErrors(errors, ['amount', 'token', 'expires', 'content', 'info']));
    const expires = input.expires ?? CHARGE_EXPIRES_DEFAULT_S;

    // Decrypt outside the transaction; derivation inside is local CPU work only.
    const mnemonic = await this.wallets.mnemonic(wallet.id);
    const now = this.ctx.clock.nowMs();
    const id = await db.transaction().execute(async (trx) => {
      const index = await repo.takeSubIndex(trx, this.ctx.store.dialect, wallet.id);
      const key = deriveKey(mnemonic, index);
      const subId = await repo.insertSubWallet(
        trx,
        { wallet_id: wallet.id, derivation_index: index, address: key.address, private_key_enc: this.ctx.secrets.encrypt(key.privateKey) },
        now,
      );
      const chargeId = await repo.insertCharge(
        trx,
        {
          uuid: randomUUID(),
          wallet_id: wallet.id,
          sub_wallet_id: subId,
          token_id: token!.id,
          amount,
          mode: wallet.is_mainnet === 1 ? 'live' : 'test',
          expires,
          expires_at: now + expires * 1000,
          content,
          info,
        },
        now,
      );
      const charge = (await repo.findChargeById(trx, chargeId))!;
      await recordEvent(trx, { userId: wallet.user_id, walletId: wallet.id, name: 'charge.created', payload: chargeCreatedPayload(charge), nowMs: now });
      await opts.inTransaction?.(trx, charge);
      return chargeId;
    });
    this.ctx.log.info({ wallet_id: wallet.id, charge_id: id }, 'charge created');
    return (await repo.findChargeById(db, id))!;
  }

  /** `ref` is the integer id or the uuid; undefined when neither matches a charge of this wallet. */
  find(walletId: number, ref: string): Promise<ChargeRow | undefined> {
    if (/^[1-9][0-9]{0,14}$/.test(ref)) return repo.findCharge(this.ctx.store.db, walletId, { id: Number(ref) });
    if (UUID.test(ref)) return repo.findCharge(this.ctx.store.db, walletId, { uuid: ref.toLowerCase() });
    return Promise.resolve(undefined);
  }

  async list(walletId: number, page: number, limit: number) {
    const db = this.ctx.store.db;
    const [items, total] = await Promise.all([
      repo.listCharges(db, walletId, { offset: (page - 1) * limit, limit }),
      repo.countCharges(db, walletId),
    ]);
    return { items, total };
  }

  /** One pass of the charge worker: settle pending charges, then sweep paid ones. */
  async tick(stopping: () => boolean = () => false): Promise<void> {
    await this.settle(stopping);
    if (!stopping()) await this.sweep(stopping);
  }

  async settle(stopping: () => boolean = () => false): Promise<void> {
    const db = this.ctx.store.db;
    const pending = await repo.listPendingCharges(db, SETTLE_BATCH);
    if (pending.length === 0) return;
    const heads = new Map<number, { client: PublicClient; network: NetworkRow; confirmed: bigint } | null>();
    for (const charge of pending) {
      if (stopping()) return;
      const wallet = await findWalletView(db, charge.wallet_id);
      if (!wallet) continue;
      let head = heads.get(wallet.network_id);
      if (head === undefined) {
        head = await this.confirmedHead(wallet.network_id);
        heads.set(wallet.network_id, head);
      }
      if (head === null) continue; // node down: try again next tick, nothing is decided blind
      try {
        await this.settleOne(charge, wallet, head.client, head.confirmed);
      } catch (e) {
        if (!isUnreachable(e)) this.ctx.log.warn({ err: e, charge_id: charge.id }, 'charge settlement failed');
      }
    }
  }

  private async confirmedHead(networkId: number) {
    const network = await findNetwork(this.ctx.store.db, networkId);
    if (!network) return null;
    const client = this.ctx.chains.get(network);
    try {
      const head = await client.getBlockNumber({ cacheTime: 0 });
      const confirmed = head - BigInt(network.confirmations - 1);
      return confirmed < 0n ? null : { client, network, confirmed };
    } catch {
      return null;
    }
  }

  private async settleOne(charge: ChargeRow, wallet: WalletView, client: PublicClient, confirmed: bigint): Promise<void> {
    const now = this.ctx.clock.nowMs();
    const owner = charge.address as Address;
    if (now < charge.expires_at) {
      const balance = await readBalance(client, charge.contract, owner, confirmed);
      if (balance >= charge.amount) await this.finish(charge, wallet, 'paid', balance, now);
      else if (balance !== charge.paid_amount) await repo.setPaidAmount(this.ctx.store.db, charge.id, balance, now);
      return;
    }
    const block = await blockAtOrBefore(client, confirmed, Math.floor(charge.expires_at / 1000));
    const balance = block === null ? charge.paid_amount : await readBalance(client, charge.contract, owner, block.number);
    if (balance >= charge.amount) await this.finish(charge, wallet, 'paid', balance, Math.min(now, Number(block?.timestamp ?? 0n) * 1000 || now));
    else await this.finish(charge, wallet, balance === 0n ? 'expired' : 'failed', balance, now);
  }

  private async finish(charge: ChargeRow, wallet: WalletView, status: 'paid' | 'expired' | 'failed', paid: bigint, atMs: number) {
    const now = this.ctx.clock.nowMs();
    const won = await this.ctx.store.db.transaction().execute(async (trx) => {
      const moved = await repo.finishCharge(trx, charge.id, status, paid, status === 'paid' ? atMs : null, now);
      if (!moved) return false;
      const payload = chargeFinishedPayload({ ...charge, paid_amount: paid }, status, atMs);
      await recordEvent(trx, { userId: wallet.user_id, walletId: wallet.id, name: `charge.${status}`, payload, nowMs: now });
      return true;
    });
    if (won) this.ctx.log.info({ charge_id: charge.id, wallet_id: wallet.id, status }, 'charge settled');
  }

  /**
   * Sweeps paid charges to the wallet's main address. `swept_tx_hash` is set to the sweeping
   * transfer's hash, or to `0x` when there is nothing worth moving. A token charge first needs
   * native currency for gas on the deposit address: the main wallet sends it (an ordinary
   * transfer through the transaction service, so it is reserved, recorded and confirmed like any
   * other) and the token transfer follows on a later tick. Nothing here runs inside a database
   * transaction.
   */
  async sweep(stopping: () => boolean = () => false): Promise<void> {
    const db = this.ctx.store.db;
    for (const charge of await repo.listUnsweptCharges(db, SETTLE_BATCH)) {
      if (stopping()) return;
      const wallet = await findWalletView(db, charge.wallet_id);
      const network = wallet ? await findNetwork(db, wallet.network_id) : undefined;
      if (!wallet || !network) continue;
      try {
        const native = charge.contract.toLowerCase() === NATIVE_CONTRACT;
        const hash = native ? await this.sweepNative(charge, wallet, network) : await this.sweepToken(charge, wallet, network);
        if (hash === null) continue; // waiting for gas on the deposit address
        await repo.setSwept(db, charge.id, hash, this.ctx.clock.nowMs());
        if (hash !== '0x') this.ctx.log.info({ charge_id: charge.id, tx_hash: hash }, 'charge funds swept to the main address');
      } catch (e) {
        if (!isUnreachable(e)) this.ctx.log.warn({ err: e, charge_id: charge.id }, 'charge sweep failed; will retry');
      }
    }
  }

  private async depositSigner(charge: ChargeRow, network: NetworkRow) {
    const account = accountFromKey(this.ctx.secrets.decrypt(await repo.subWalletKey(this.ctx.store.db, charge.sub_wallet_id)) as Hex);
    return createWalletClient({ account, chain: chainOf(network), transport: http(network.rpc_url, { timeout: 10_000 }) });
  }

  /** The token transfer from the deposit address, or null while its gas is still on the way. */
  private async sweepToken(charge: ChargeRow, wallet: WalletView, network: NetworkRow): Promise<string | null> {
    const client = this.ctx.chains.get(network);
    const from = charge.address as Address;
    const token = charge.contract as Address;
    const amount = await readBalance(client, token, from);
    if (amount === 0n) return '0x';
    const to = wallet.address as Address;
    const [gas, gasPrice, gasBalance] = await Promise.all([
      client.estimateContractGas({ address: token, abi: ERC20_ABI, functionName: 'transfer', args: [to, amount], account: from }),
      client.getGasPrice(),
      client.getBalance({ address: from }),
    ]);
    const fee = gas * gasPrice;
    if (gasBalance < fee) {
      await this.topUpGas(charge, wallet, fee * 2n - gasBalance);
      return null;
    }
    const signer = await this.depositSigner(charge, network);
    const nonce = await client.getTransactionCount({ address: from, blockTag: 'pending' });
    return signer.writeContract({ address: token, abi: ERC20_ABI, functionName: 'transfer', args: [to, amount], gas, gasPrice, nonce, type: 'legacy' });
  }

  /** Sends gas money from the main wallet to a deposit address, unless a top-up is already pending. */
  private async topUpGas(charge: ChargeRow, wallet: WalletView, wei: bigint): Promise<void> {
    const db = this.ctx.store.db;
    const pending = await db
      .selectFrom('transactions')
      .select('id')
      .where('wallet_id', '=', wallet.id)
      .where('to_address', '=', charge.address)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    if (pending) return;
    const native = (await listTokens(db, wallet.id, { activeOnly: true })).find((t) => t.is_native === 1);
    if (!native) return;
    const tx = await this.transactions.create(wallet, { amount: formatUnits18(wei, 18), token: native.symbol, address: charge.address });
    this.ctx.log.info({ charge_id: charge.id, transaction_id: tx.id }, 'gas sent to a token charge deposit address for its sweep');
  }

  private async sweepNative(charge: ChargeRow, wallet: WalletView, network: NetworkRow): Promise<string> {
    const client = this.ctx.chains.get(network);
    const from = charge.address as Address;
    const [balance, gasPrice] = await Promise.all([client.getBalance({ address: from }), client.getGasPrice()]);
    const gas = 21_000n;
    const fee = gas * gasPrice;
    if (balance <= fee) return '0x';
    const signer = await this.depositSigner(charge, network);
    const nonce = await client.getTransactionCount({ address: from, blockTag: 'pending' });
    return signer.sendTransaction({ to: wallet.address as Address, value: balance - fee, gas, gasPrice, nonce, type: 'legacy' });
  }
}

/** The latest block ≤ `from` stamped at or before `timestampS`, walking back a bounded number of blocks. */
async function blockAtOrBefore(client: PublicClient, from: bigint, timestampS: number): Promise<{ number: bigint; timestamp: bigint } | null> {
  let n = from;
  for (let i = 0; i < MAX_BLOCKS_BACK && n >= 0n; i++, n--) {
    const b = await client.getBlock({ blockNumber: n });
    if (b.timestamp <= BigInt(timestampS)) return { number: n, timestamp: b.timestamp };
  }
  return null;
}
