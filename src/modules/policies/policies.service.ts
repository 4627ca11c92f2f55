/**
 * Spending policies and the allowlist of a wallet (docs/money-out.md,
 * "The policy"). Reading and changing them; the decision on a transfer is
 * policies.check.ts, called by the transaction create under the wallet's lock.
 */
import type { Address } from 'viem';
import type { AppContext } from '../../context.js';
import type { WalletTokenRow } from '../../db/types.js';
import { fieldError, Errors } from '../../errors.js';
import { listTokens } from '../tokens/tokens.repository.js';
import type { WalletView } from '../wallets/wallets.repository.js';
import * as repo from './policies.repository.js';
import type { PolicyInput } from './policies.schemas.js';

/** A wallet's policy, limits keyed by token, for the view. */
export interface Policy {
  limits: repo.LimitRow[];
  tokens: WalletTokenRow[];
  allowlist_only: boolean;
  updated_at: number | null;
}

export class PolicyService {
  constructor(private readonly ctx: AppContext) {}

  /** The tokens a policy body may name: the wallet's active ones. */
  activeTokens(wallet: WalletView): Promise<WalletTokenRow[]> {
    return listTokens(this.ctx.store.db, wallet.id, { activeOnly: true });
  }

  async get(wallet: WalletView): Promise<Policy> {
    const { db } = this.ctx.store;
    const [limits, head, tokens] = await Promise.all([
      repo.listLimits(db, wallet.id),
      repo.findPolicyHead(db, wallet.id),
      listTokens(db, wallet.id),
    ]);
    return { limits, tokens, allowlist_only: head.allowlist_only, updated_at: head.updated_at };
  }

  /** Applies the change in one transaction (the limits named, `allowlist_only` if given) and moves `updated_at`. */
  async update(wallet: WalletView, input: PolicyInput): Promise<Policy> {
    const now = this.ctx.clock.nowMs();
    await this.ctx.store.db.transaction().execute(async (trx) => {
      await repo.upsertPolicyHead(trx, wallet.id, input.allowlistOnly, now);
      for (const l of input.limits) await repo.setLimit(trx, wallet.id, l.tokenId, l.kind, l.amount);
    });
    this.ctx.log.info(
      { component: 'policies', wallet_id: wallet.id, limits: input.limits.length, allowlist_only: input.allowlistOnly },
      'spending policy changed',
    );
    return this.get(wallet);
  }

  allowlist(wallet: WalletView): Promise<repo.AllowlistEntry[]> {
    return repo.listAllowlist(this.ctx.store.db, wallet.id);
  }

  /** Adds the address; 422 when the wallet already lists it. */
  async add(wallet: WalletView, address: Address, label: string): Promise<repo.AllowlistEntry> {
    const entry = await repo.insertAllowlistEntry(this.ctx.store.db, {
      wallet_id: wallet.id,
      address,
      label,
      nowMs: this.ctx.clock.nowMs(),
    });
    if (!entry) throw fieldError('address', 'The address has already been taken.');
    this.ctx.log.info({ component: 'policies', wallet_id: wallet.id, entry_id: entry.id, address }, 'allowlist entry added');
    return entry;
  }

  /** Removes the wallet's entry; 404 for another wallet's or an unknown one. */
  async remove(wallet: WalletView, id: number | null): Promise<repo.AllowlistEntry> {
    const { db } = this.ctx.store;
    const entry = id === null ? undefined : await repo.findAllowlistEntry(db, wallet.id, id);
    if (!entry || !(await repo.deleteAllowlistEntry(db, wallet.id, entry.id))) throw Errors.allowlistEntryNotFound();
    this.ctx.log.info({ component: 'policies', wallet_id: wallet.id, entry_id: entry.id }, 'allowlist entry removed');
    return entry;
  }
}
