/**
 * Permanent deposit addresses (docs/deposit-addresses.md): an address a wallet hands out for
 * good under a reference of the caller's (a customer's account, an invoice series), paid any
 * number of times in the native coin or any active token of the wallet.
 *
 * It reuses the charges' machinery rather than a second follower: its address is a deposit
 * address made as a charge's (`insertDepositSubWallet`: keyless where the network has a
 * Sweeper, else keyed), and a charge row of status `deposit` (never shown as a charge, never
 * settled, watched for good) is what the chain follower watches and the charge worker sweeps.
 * What reaches it is a `receipt` transaction of the wallet carrying `deposit_address_id` and
 * `reference` (deposit-addresses.chain-sync.ts), and the address is due a sweep in the same
 * database transaction.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../context.js';
import type { InTransaction } from '../../db/index.js';
import { AppError, fieldError } from '../../errors.js';
import { findNativeToken } from '../tokens/tokens.repository.js';
import { lockWallet, type WalletView } from '../wallets/wallets.repository.js';
import type { WalletService } from '../wallets/wallets.service.js';
import { insertDepositSubWallet } from '../charges/charges.service.js';
import { listSweeps, type SweepRow } from '../charges/charges.sweeps.repository.js';
import { DEPOSIT_STATUS, insertCharge } from '../charges/charges.repository.js';
import * as repo from './deposit-addresses.repository.js';
import type { DepositAddressRow, ReceivedTotal } from './deposit-addresses.repository.js';
import type { DepositAddressInput } from './deposit-addresses.schemas.js';

/** The last millisecond of year 9999: the watch of a permanent address never ends. */
export const WATCHED_FOREVER_MS = 253_402_300_799_999;

export const depositAddressNotFound = () => new AppError(404, 'DEPOSIT_ADDRESS_NOT_FOUND', 'Deposit address not found');

export class DepositAddressService {
  constructor(
    private readonly ctx: AppContext,
    private readonly wallets: WalletService,
  ) {}

  /**
   * Gives the wallet a new permanent deposit address under `reference` (422 when the wallet has
   * one under it already): under the wallet's lock, its address (next derivation index), the
   * charge row that watches it and its own row, in one transaction.
   */
  async create(wallet: WalletView, input: DepositAddressInput, opts: { inTransaction?: InTransaction<DepositAddressRow> } = {}) {
    const db = this.ctx.store.db;
    // Decrypt outside the transaction; derivation inside is local CPU work only.
    const mnemonic = await this.wallets.mnemonic(wallet.id);
    const now = this.ctx.clock.nowMs();
    const id = await db.transaction().execute(async (trx) => {
      await lockWallet(trx, wallet.id);
      if (await repo.referenceTaken(trx, wallet.id, input.reference))
        throw fieldError('reference', 'The reference has already been taken.');
      const native = await findNativeToken(trx, wallet.id);
      if (!native) throw new Error(`wallet ${wallet.id} has no native token`);
      const subId = await insertDepositSubWallet(this.ctx, trx, wallet, mnemonic, true, now);
      const chargeId = await insertCharge(
        trx,
        {
          uuid: randomUUID(),
          wallet_id: wallet.id,
          sub_wallet_id: subId,
          token_id: native.id,
          amount: 0n,
          mode: wallet.is_mainnet === 1 ? 'live' : 'test',
          expires: 0,
          expires_at: WATCHED_FOREVER_MS,
          watch_until: WATCHED_FOREVER_MS,
          content: null,
          info: null,
          status: DEPOSIT_STATUS,
        },
        now,
      );
      const id = await repo.insertDepositAddress(
        trx,
        { wallet_id: wallet.id, reference: input.reference, label: input.label, sub_wallet_id: subId, charge_id: chargeId },
        now,
      );
      await opts.inTransaction?.(trx, (await repo.findDepositAddress(trx, wallet.id, id))!);
      return id;
    });
    this.ctx.log.info({ wallet_id: wallet.id, deposit_address_id: id }, 'deposit address created');
    return (await repo.findDepositAddress(db, wallet.id, id))!;
  }

  /** `ref` is the integer id; undefined when it is not one of this wallet's. */
  async find(
    walletId: number,
    ref: string,
  ): Promise<{ row: DepositAddressRow; received: ReceivedTotal[]; sweeps: SweepRow[] } | undefined> {
    if (!/^[1-9][0-9]{0,14}$/.test(ref)) return undefined;
    const db = this.ctx.store.db;
    const row = await repo.findDepositAddress(db, walletId, Number(ref));
    if (!row) return undefined;
    // Its sweeps are those of the charge row that watches it (status `deposit`).
    const [received, sweeps] = await Promise.all([repo.receivedTotals(db, row.id), listSweeps(db, [row.charge_id])]);
    return { row, received, sweeps };
  }

  async list(walletId: number, page: number, limit: number) {
    const db = this.ctx.store.db;
    const [items, total] = await Promise.all([
      repo.listDepositAddresses(db, walletId, { offset: (page - 1) * limit, limit }),
      repo.countDepositAddresses(db, walletId),
    ]);
    return { items, total };
  }
}
