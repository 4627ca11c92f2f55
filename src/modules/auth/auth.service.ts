/**
 * Users, login and opaque bearer tokens. A token is 32 random bytes (base64url) shown once;
 * only its SHA-256 is stored. Passwords are scrypt hashes; an unknown email still runs one
 * scrypt verification against a dummy hash, so both paths take the same time.
 */
import { AppError, Errors } from '../../errors.js';
import { dummyPasswordHash, hashPassword, randomTokenString, sha256Hex, verifyPassword } from '../../lib/crypto.js';
import { FixedWindowCounter } from '../../http/rate-limit.js';
import type { AppContext } from '../../context.js';
import * as repo from './auth.repository.js';

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{20,200}$/;

export class AuthService {
  private readonly failures = new FixedWindowCounter(60_000);

  constructor(private readonly ctx: AppContext) {}

  async createUser(input: { email: string; password: string; name?: string }): Promise<repo.AuthUser> {
    const email = normaliseEmail(input.email);
    const existing = await repo.findUserByEmail(this.ctx.store.db, email);
    if (existing) throw new AppError(422, 'USER_EXISTS', 'The email has already been taken', { data: { email: ['The email has already been taken.'] } });
    const password_hash = await hashPassword(input.password);
    const name = input.name?.trim() || email.split('@')[0] || email;
    return repo.insertUser(this.ctx.store.db, { name, email, password_hash, nowMs: this.ctx.clock.nowMs() });
  }

  /** Creates the bootstrap user when it does not exist yet; returns true when it was created. */
  async ensureUser(email: string, password: string): Promise<boolean> {
    const existing = await repo.findUserByEmail(this.ctx.store.db, normaliseEmail(email));
    if (existing) return false;
    await this.createUser({ email, password });
    return true;
  }

  async login(emailRaw: string, password: string, ip: string) {
    const email = normaliseEmail(emailRaw);
    const now = this.ctx.clock.nowMs();
    const limit = this.ctx.config.loginAttemptsPerMinute;
    const byEmail = this.failures.peek(`e:${email}`, now);
    const byIp = this.failures.peek(`i:${ip}`, now);
    if (byEmail.count >= limit || byIp.count >= limit) {
      const resetAt = Math.max(byEmail.count >= limit ? byEmail.resetAtMs : 0, byIp.count >= limit ? byIp.resetAtMs : 0);
      throw Errors.tooManyRequests(Math.max(1, Math.ceil((resetAt - now) / 1000)));
    }
    const user = await repo.findUserByEmail(this.ctx.store.db, email);
    const valid = await verifyPassword(password, user?.password_hash ?? (await dummyPasswordHash()));
    if (!user || !valid) {
      this.failures.hit(`e:${email}`, now);
      this.failures.hit(`i:${ip}`, now);
      throw Errors.invalidCredentials();
    }
    this.failures.reset(`e:${email}`);
    const token = randomTokenString(32);
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

  /** The user and token id for a bearer token, or throws 401 Invalid token. */
  async authenticate(token: string): Promise<{ user: repo.AuthUser; tokenId: number }> {
    if (!TOKEN_PATTERN.test(token)) throw Errors.invalidToken();
    const row = await repo.findUserByTokenHash(this.ctx.store.db, sha256Hex(token), this.ctx.clock.nowMs());
    if (!row) throw Errors.invalidToken();
    const { token_id, ...user } = row;
    return { user, tokenId: token_id };
  }

  async logout(tokenId: number): Promise<void> {
    await repo.revokeToken(this.ctx.store.db, tokenId, this.ctx.clock.nowMs());
  }
}
