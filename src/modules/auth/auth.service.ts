/**
 * Users, login and opaque bearer tokens. A token is 32 random bytes (base64url) shown once;
 * only its SHA-256 is stored. Passwords are scrypt hashes; an unknown email still runs one
 * scrypt verification against a dummy hash, so both paths take the same time.
 */
import type { SqlWindow } from '../../lib/rate-limit.js';
import { Errors } from '../../errors.js';
import { dummyPasswordHash, hashPassword, needsRehash, randomTokenString, sha256Hex, verifyPassword } from '../../lib/crypto.js';
import { retryAfterS, type WindowCounters, type WindowState } from '../../lib/rate-limit.js';
import type { AppContext } from '../../context.js';
import { Batcher } from '../../lib/batcher.js';
import * as repo from './auth.repository.js';

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

const TOKEN_PATTERN = /^(?:ds\.)?[A-Za-z0-9_-]{20,200}$/;
/** What begins a dashboard session's token; never a login token's (base64url has no dot). */
export const DASHBOARD_TOKEN_PREFIX = 'ds.';

/** A dashboard session's token (login with `session: "dashboard"`): counted in its own budget. */
export function isDashboardToken(token: string): boolean {
  return token.startsWith(DASHBOARD_TOKEN_PREFIX);
}
/** PostgreSQL token lookups out at once (each holds a pool connection), and the most in one. */
export const LOOKUPS_IN_FLIGHT = 2;
export const LOOKUPS_MAX_BATCH = 200;

export class AuthService {
  /**
   * `failures` counts failed logins (per email and per IP); the app passes the shared counters.
   * Without them (the CLI and start-up, which never log anyone in) login is refused.
   */
  constructor(
    private readonly ctx: AppContext,
    private readonly failures: WindowCounters | null = null,
  ) {}

  /** PostgreSQL token lookups (the counters elsewhere), batched as the counting ones. */
  readonly lookups = new Batcher<repo.TokenLookup, repo.TokenUser | undefined>(
    (lookups) => repo.findUsersByTokenHashes(this.ctx.store.db, lookups),
    LOOKUPS_IN_FLIGHT,
    LOOKUPS_MAX_BATCH,
  );

  /** Counting token lookups, batched while statements are out (see `authenticateCounting`). */
  readonly counting = new Batcher<repo.CountingLookup, repo.CountedUser | undefined>(
    (lookups) => repo.findUsersByTokenHashesCounting(this.ctx.store.db, lookups),
    LOOKUPS_IN_FLIGHT,
    LOOKUPS_MAX_BATCH,
  );

  async createUser(input: { email: string; password: string; name?: string }): Promise<repo.AuthUser> {
    const email = normaliseEmail(input.email);
    const existing = await repo.findUserByEmail(this.ctx.store.db, email);
    if (existing) throw Errors.userExists();
    const password_hash = await hashPassword(input.password, this.ctx.config.passwordScryptN);
    const name = input.name?.trim() || email.split('@')[0] || email;
    return repo.insertUser(this.ctx.store.db, { name, email, password_hash, nowMs: this.ctx.clock.nowMs() });
  }

  /** Creates the bootstrap user when it does not exist yet; returns true when it was created. */
  findUserByEmail(email: string): Promise<repo.AuthUser | undefined> {
    return repo.findUserByEmail(this.ctx.store.db, normaliseEmail(email));
  }

  async ensureUser(email: string, password: string): Promise<boolean> {
    const existing = await repo.findUserByEmail(this.ctx.store.db, normaliseEmail(email));
    if (existing) return false;
    await this.createUser({ email, password });
    return true;
  }

  async login(emailRaw: string, password: string, ip: string, session?: 'dashboard') {
    const email = normaliseEmail(emailRaw);
    const now = this.ctx.clock.nowMs();
    const failures = this.failures;
    if (failures === null) throw new Error('AuthService.login needs the login counters');
    await this.countAttempt(failures, email, ip, now);
    const cost = this.ctx.config.passwordScryptN;
    const user = await repo.findUserByEmail(this.ctx.store.db, email);
    const valid = await verifyPassword(password, user?.password_hash ?? (await dummyPasswordHash(cost)));
    // A failed attempt keeps the points counted before the check.
    if (!user || !valid) throw Errors.invalidCredentials();
    await Promise.all([failures.reset(`e:${email}`, now), failures.giveBack(`i:${ip}`, now)]);
    if (needsRehash(user.password_hash, cost)) {
      // The stored parameters are older than the current cost: store a new hash now that the
      // password is known. The login does not depend on it.
      const rehashed = await hashPassword(password, cost);
      await repo.updatePasswordHash(this.ctx.store.db, user.id, user.password_hash, rehashed, now);
      this.ctx.log.info({ user_id: user.id, scrypt_n: cost }, 'password rehashed at the current cost');
    }
    const token = `${session === 'dashboard' ? DASHBOARD_TOKEN_PREFIX : ''}${randomTokenString(32)}`;
    const expiresAt = now + this.ctx.config.tokenTtlS * 1000;
    await repo.insertAccessToken(this.ctx.store.db, {
      user_id: user.id,
      token_hash: sha256Hex(token),
      expires_at: expiresAt,
      nowMs: now,
    });
    this.ctx.log.info({ user_id: user.id }, 'user logged in');
    return { token, expiresAtMs: expiresAt };
  }

  /**
   * Counts the attempt per email and per IP BEFORE its password is checked, and answers 429 when
   * that takes either past this minute's limit: N concurrent attempts cannot all pass a check made
   * before any of them was counted, so at most `limit` of them reach scrypt (which shares libuv's
   * threads with DNS lookups). A success resets the email's count and gives the IP's point back,
   * so only failures (and attempts still being checked) use the budget.
   */
  private async countAttempt(failures: WindowCounters, email: string, ip: string, now: number): Promise<void> {
    const limit = this.ctx.config.loginAttemptsPerMinute;
    // The email first, then the IP, one after the other: counted at once, the two counters could
    // order concurrent attempts differently (PostgreSQL, Redis), letting fewer than `limit` of one
    // email's attempts through; an attempt the email already refuses does not use the IP's budget.
    const byEmail = await failures.hit(`e:${email}`, now);
    const byIp = byEmail.count > limit ? null : await failures.hit(`i:${ip}`, now);
    const over = [byEmail, byIp].filter((w): w is WindowState => w !== null && w.count > limit);
    if (over.length > 0) throw Errors.tooManyRequests(Math.max(...over.map((w) => retryAfterS(w, now))));
  }

  /** The user and token id for a bearer token, or throws 401 Invalid token. */
  async authenticate(token: string): Promise<{ user: repo.AuthUser; tokenId: number }> {
    if (!TOKEN_PATTERN.test(token)) throw Errors.invalidToken();
    const tokenHash = sha256Hex(token);
    const nowMs = this.ctx.clock.nowMs();
    // SQLite: one process, the row served from the read cache. PostgreSQL: never cached (a logout
    // must be refused by every process at once); lookups batched as the counting ones are.
    const row =
      this.ctx.store.driver === 'postgres'
        ? await this.lookups.submit({ tokenHash, nowMs })
        : await repo.findUserByTokenHash(this.ctx.store.db, tokenHash, nowMs);
    if (!row) throw Errors.invalidToken();
    const { token_id, ...user } = row;
    return { user, tokenId: token_id };
  }

  /**
   * `authenticate`, and the user's request counted in `window` in the same statement
   * (PostgreSQL with the counters in `rate_limits`). Returns the window's count after it.
   * Lookups that arrive while LOOKUPS_IN_FLIGHT statements are out wait and go out together in
   * the next one (src/lib/batcher.ts): one round trip and one PostgreSQL transaction for all of
   * them, each still reading the tokens as they are when that statement runs (a logout committed
   * before is refused, as with a statement of its own).
   */
  async authenticateCounting(
    token: string,
    userKeyPrefix: string,
    window: SqlWindow,
  ): Promise<{ user: repo.AuthUser; tokenId: number; count: number }> {
    if (!TOKEN_PATTERN.test(token)) throw Errors.invalidToken();
    const row = await this.counting.submit({ tokenHash: sha256Hex(token), userKeyPrefix, window });
    if (!row) throw Errors.invalidToken();
    const { token_id, points, ...user } = row;
    return { user, tokenId: token_id, count: points };
  }

  async logout(tokenId: number): Promise<void> {
    await repo.revokeToken(this.ctx.store.db, tokenId, this.ctx.clock.nowMs());
  }
}
