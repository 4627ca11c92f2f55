/**
 * Charges: a request for payment of `amount` of a token to a deposit address of its own (a
 * sub-wallet derived from the wallet's mnemonic at the next index), before `expires_at`.
 *
 * The charge worker's tick (`tick`) runs settlement (charges.settlement.ts: from the payments the
 * chain follower recorded, charges.chain-sync.ts) and then sweeping (charges.sweeps.ts). Reads
 * attach the charge's confirmed payments, its sweeps and its refunds (`withActivity`). docs/charges.md has
 * the rules and the reasons.
 */
import { isUuid } from '../../lib/uuid.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { getAddress, toHex } from 'viem';
import { depositAddress } from '../../chain/sweeper.js';
import { findNetwork } from '../networks/networks.repository.js';
import type { AppContext } from '../../context.js';
import type { Executor, InTransaction } from '../../db/index.js';
import type { WalletTokenRow } from '../../db/types.js';
import { deriveKey } from '../../chain/keys.js';
import { isUnreachable, mapChainError } from '../../chain/errors.js';
import { Errors } from '../../errors.js';
import { ReconciliationService } from '../reconciliation/reconciliation.service.js';
import { recordEvent } from '../events/outbox.js';
import { listTokens } from '../tokens/tokens.repository.js';
import { lockWallet, type WalletView } from '../wallets/wallets.repository.js';
import type { WalletService } from '../wallets/wallets.service.js';
import type { TransactionService } from '../transactions/transactions.service.js';
import * as repo from './charges.repository.js';
import type { ChargeRow } from './charges.repository.js';
import { listPayments } from './charges.payments.repository.js';
import { listSweeps, setDue } from './charges.sweeps.repository.js';
import { listRefunds } from '../refunds/refunds.repository.js';
import type { ChargeInput, PriceInput } from './charges.schemas.js';
import { quotePrice, quoteTokensText, type Quote } from './charges.quotes.js';
import { RateService } from '../rates/rates.service.js';
import { RATE_DECIMALS } from '../rates/currencies.js';
import { formatUnits18 } from '../../lib/money.js';
import { ChargeSettlement, type ConfirmedHeights } from './charges.settlement.js';
import { ChargeSweeper } from './charges.sweeps.js';
import { chargeCreatedPayload } from './charges.views.js';

/**
 * A new deposit address of the wallet (caller holds the wallet's lock, `lockWallet`): keyless (an
 * address of the network's Sweeper, by a random salt, bound to the wallet's main address) where
 * `keyless` is allowed and the network has a Sweeper, else keyed, the key at the wallet's next
 * derivation index. Either takes the next index, so the indexes stay one per row. Returns the
 * `sub_wallets` id. Also the address of a permanent deposit address (src/modules/deposit-addresses).
 */
export async function insertDepositSubWallet(
  ctx: AppContext,
  trx: Executor,
  wallet: WalletView,
  mnemonic: string,
  keyless: boolean,
  nowMs: number,
): Promise<number> {
  const index = await repo.takeSubIndex(trx, wallet.id);
  const sweeper = keyless ? ((await findNetwork(trx, wallet.network_id))?.sweeper ?? null) : null;
  if (sweeper !== null) {
    const salt = toHex(randomBytes(32));
    const address = depositAddress(getAddress(sweeper), getAddress(wallet.address), salt);
    return repo.insertSubWallet(
      trx,
      { wallet_id: wallet.id, derivation_index: index, address, kind: 'keyless', salt, sweeper },
      (id) => ctx.secrets.encrypt('', repo.subWalletPlace(id)),
      nowMs,
    );
  }
  const key = deriveKey(mnemonic, index);
  return repo.insertSubWallet(
    trx,
    { wallet_id: wallet.id, derivation_index: index, address: key.address },
    (id) => ctx.secrets.encrypt(key.privateKey, repo.subWalletPlace(id)),
    nowMs,
  );
}

/** A charge about to be inserted: its terms in one token (a price charge's first quote) and, priced, the price and every quote. */
type NewCharge = Omit<ChargeInput, 'price'> & {
  amount: bigint;
  token: WalletTokenRow;
  priced: { amount: string; currency: string; quotes: Quote[] } | null;
};

export class ChargeService {
  private readonly settlement: ChargeSettlement;
  private readonly rates: RateService;
  private readonly sweeper: ChargeSweeper;

  constructor(
    private readonly ctx: AppContext,
    private readonly wallets: WalletService,
    transactions: TransactionService,
  ) {
    this.settlement = new ChargeSettlement(ctx);
    this.rates = new RateService(ctx);
    this.sweeper = new ChargeSweeper(ctx, transactions);
  }

  /** The tokens a create body may name: the wallet's active ones. */
  activeTokens(wallet: WalletView): Promise<WalletTokenRow[]> {
    return listTokens(this.ctx.store.db, wallet.id, { activeOnly: true });
  }

  async create(wallet: WalletView, input: ChargeInput, opts: { inTransaction?: InTransaction<ChargeRow> } = {}): Promise<ChargeRow> {
    const db = this.ctx.store.db;
    // The rates are read (node calls) and the mnemonic decrypted outside the transaction; derivation inside is local CPU work only.
    const terms = 'price' in input ? await this.quoted(wallet, input.price) : { amount: input.amount, token: input.token, priced: null };
    const mnemonic = await this.wallets.mnemonic(wallet.id);
    const now = this.ctx.clock.nowMs();
    const id = await db.transaction().execute(async (trx) => {
      const charge = await this.insertWithDepositAddress(trx, wallet, { ...input, ...terms }, mnemonic, now);
      await recordEvent(trx, {
        userId: wallet.user_id,
        walletId: wallet.id,
        name: 'charge.created',
        payload: chargeCreatedPayload(charge),
        nowMs: now,
      });
      await opts.inTransaction?.(trx, charge);
      return charge.id;
    });
    this.ctx.log.info({ wallet_id: wallet.id, charge_id: id }, 'charge created');
    const quotes = 'price' in input ? await repo.listQuotes(db, [id]) : [];
    return { ...(await repo.findChargeById(db, id))!, payments: [], sweeps: [], quotes };
  }

  /**
   * Gives the charge a deposit address of its own (under the wallet's lock) and inserts the charge
   * paying to it: keyless (an address of the network's Sweeper, by a random salt, bound to the
   * wallet's main address) where the network has a Sweeper and the charge is paid in an ERC-20
   * token; else keyed, the key at the wallet's next derivation index (a native-only charge's own
   * coin pays its sweep for less gas than a place in a batch). Either takes the next index, so
   * the indexes stay one per row.
   */
  private async insertWithDepositAddress(
    trx: Executor,
    wallet: WalletView,
    input: NewCharge,
    mnemonic: string,
    nowMs: number,
  ): Promise<ChargeRow> {
    await lockWallet(trx, wallet.id);
    const tokens = input.priced ? input.priced.quotes.map((q) => q.token) : [input.token];
    const keyless = tokens.some((t) => t.is_native !== 1);
    const subId = await insertDepositSubWallet(this.ctx, trx, wallet, mnemonic, keyless, nowMs);
    const chargeId = await repo.insertCharge(
      trx,
      {
        uuid: randomUUID(),
        wallet_id: wallet.id,
        sub_wallet_id: subId,
        token_id: input.token.id,
        amount: input.amount,
        mode: wallet.is_mainnet === 1 ? 'live' : 'test',
        expires: input.expires,
        expires_at: nowMs + input.expires * 1000,
        watch_until: nowMs + input.expires * 1000 + this.ctx.config.chargeWatchAfterS * 1000,
        content: input.content,
        info: input.info,
        ...(input.priced
          ? {
              price_amount: input.priced.amount,
              price_currency: input.priced.currency,
              quote_tokens: quoteTokensText(input.priced.quotes),
            }
          : {}),
      },
      nowMs,
    );
    if (input.priced) {
      await repo.insertQuotes(
        trx,
        chargeId,
        input.priced.quotes.map((q) => ({
          token_id: q.token.id,
          amount: q.amount,
          rate: formatUnits18(q.rate.value, RATE_DECIMALS),
          rate_source: q.rate.source,
          rate_at: q.rate.atMs,
        })),
      );
    }
    return (await repo.findChargeById(trx, chargeId))!;
  }

  /** A price charge's quotes, read now (503 when a rate is missing), and the terms they give the charge row. */
  private async quoted(wallet: WalletView, price: PriceInput): Promise<Pick<NewCharge, 'amount' | 'token' | 'priced'>> {
    const network = await findNetwork(this.ctx.store.db, wallet.network_id);
    if (!network) throw Errors.badRequest('The wallet’s network is not configured');
    const quotes = await quotePrice(this.rates, network, price, await this.activeTokens(wallet));
    return { amount: quotes[0]!.amount, token: quotes[0]!.token, priced: { amount: price.amount, currency: price.currency, quotes } };
  }

  /** `ref` is the integer id or the uuid; undefined when neither matches a charge of this wallet. */
  async find(walletId: number, ref: string): Promise<ChargeRow | undefined> {
    let row: ChargeRow | undefined;
    if (/^[1-9][0-9]{0,14}$/.test(ref)) row = await repo.findCharge(this.ctx.store.db, walletId, { id: Number(ref) });
    else if (isUuid(ref)) row = await repo.findCharge(this.ctx.store.db, walletId, { uuid: ref.toLowerCase() });
    return row ? (await this.withActivity([row]))[0] : undefined;
  }

  async list(walletId: number, page: number, limit: number) {
    const db = this.ctx.store.db;
    const [items, total] = await Promise.all([
      repo.listCharges(db, walletId, { offset: (page - 1) * limit, limit }),
      repo.countCharges(db, walletId),
    ]);
    return { items: await this.withActivity(items), total };
  }

  /** One pass of the charge worker: settles, then sweeps; a sweep is confirmed at no more than the height the settlement used. */
  async tick(stopping: () => boolean = () => false): Promise<void> {
    const heights = await this.settle(stopping);
    if (!stopping()) await this.sweep(stopping, heights);
  }

  settle(stopping: () => boolean = () => false): Promise<ConfirmedHeights> {
    return this.settlement.tick(stopping);
  }

  /** `settled`: the heights this tick's settlement used (without them, the follower's cursor now). */
  sweep(stopping: () => boolean = () => false, settled?: ConfirmedHeights): Promise<void> {
    return this.sweeper.tick(stopping, settled);
  }

  /**
   * Sweeps a settled charge's address now (the sweep route): money sent there after its watch
   * ended is first recorded as a late payment (the reconciliation's `after_watch`), then the
   * address is looked at as its due sweep would be. A node fault leaves it due: the charge worker
   * tries again. Returns the charge with its payments and sweeps.
   */
  async sweepNow(wallet: WalletView, charge: ChargeRow): Promise<ChargeRow> {
    if (charge.status === 'pending') throw Errors.badRequest('Only a settled charge’s address is swept: this charge is pending');
    await new ReconciliationService(this.ctx).recordLateMoney(wallet, charge.id);
    const due = this.ctx.clock.nowMs();
    await setDue(this.ctx.store.db, charge.id, due);
    try {
      await this.sweeper.sweepNow(charge.id, due);
    } catch (e) {
      if (isUnreachable(e)) throw mapChainError(e);
      this.ctx.log.warn({ err: e, charge_id: charge.id }, 'charge sweep failed; will retry');
    }
    return (await this.find(wallet.id, String(charge.id)))!;
  }

  /** The charges with their confirmed payments and their sweeps attached. */
  private async withActivity(rows: ChargeRow[]): Promise<ChargeRow[]> {
    const db = this.ctx.store.db;
    const ids = rows.map((c) => c.id);
    const priced = rows.filter((c) => c.price_currency !== null).map((c) => c.id);
    const [payments, sweeps, refunds, quotes] = await Promise.all([
      listPayments(db, ids, { confirmedOnly: true }),
      listSweeps(db, ids),
      listRefunds(db, ids),
      repo.listQuotes(db, priced),
    ]);
    const viewedAt = this.ctx.clock.nowMs();
    return rows.map((c) => ({
      ...c,
      payments: payments.filter((p) => p.charge_id === c.id),
      sweeps: sweeps.filter((w) => w.charge_id === c.id),
      refunds: refunds.filter((r) => r.charge_id === c.id),
      quotes: quotes.filter((q) => q.charge_id === c.id),
      viewed_at: viewedAt,
    }));
  }
}
