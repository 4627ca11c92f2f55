/**
 * Fixed one-minute windows of counters, stored by rate-limiter-flexible where every process
 * sees them: Redis when REDIS_URL is set, else PostgreSQL when that is the database, else this
 * process's memory (SQLite runs as one process). Used for the per-user request limit and for
 * failed-login throttling (per email and per IP).
 *
 * A window is named by the clock (`<key>:<minute index>`), so every process counts into the
 * same window, and a test's clock moves windows without waiting. The store only keeps the
 * counter and forgets it after two windows. When the shared store fails, each process falls
 * back to counting in its own memory (rate-limiter-flexible's insurance limiter) rather than
 * failing requests; the log says so once a minute at most.
 */
import { CompiledQuery } from 'kysely';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Store } from '../db/index.js';
import { preferNamed } from '../db/named-statements.js';
import { sha256Hex } from './crypto.js';

export const WINDOW_MS = 60_000;
/** PostgreSQL table of the counters (created by rate-limiter-flexible, `key`, `points`, `expire`). */
export const LIMITS_TABLE = 'rate_limits';
/** Counters live two windows, so a window is never forgotten before it ends. */
const KEEP_S = (2 * WINDOW_MS) / 1000;

export interface WindowState {
  count: number;
  resetAtMs: number;
}

export type LimitsBackend = 'memory' | 'postgres' | 'redis';

/** Counters in fixed windows, shared by every process that uses the same store. */
/**
 * How a window's counter is stored in PostgreSQL's `rate_limits`, for a statement that counts in
 * SQL (the bearer-token lookup counts its user's request in the same round trip). The row's key
 * is `keyPrefix + sha256hex(key).slice(0, 32) + keySuffix`, exactly as `WindowCounters` writes it
 * through rate-limiter-flexible; `expire` as rate-limiter-flexible keeps it.
 */
export interface SqlWindow {
  keyPrefix: string;
  keySuffix: string;
  nowMs: number;
  expireAtMs: number;
  resetAtMs: number;
}

export class WindowCounters {
  constructor(
    private readonly limiter: RateLimiterAbstract,
    private readonly prefix: string,
    /** The counters are rows of PostgreSQL's `rate_limits` (a statement may count in SQL). */
    readonly inPostgres = false,
  ) {}

  /** PostgreSQL: where `hit` would count at `nowMs` (see SqlWindow). */
  sqlWindow(nowMs: number): SqlWindow {
    return {
      keyPrefix: `${LIMITS_TABLE}:${this.prefix}:`,
      keySuffix: `:${Math.floor(nowMs / WINDOW_MS)}`,
      nowMs,
      expireAtMs: nowMs + KEEP_S * 1000,
      resetAtMs: windowEnd(nowMs),
    };
  }

  /** Adds one hit and returns the window after it. */
  async hit(key: string, nowMs: number): Promise<WindowState> {
    const res = await this.limiter.penalty(this.keyOf(key, nowMs), 1);
    return { count: res.consumedPoints, resetAtMs: windowEnd(nowMs) };
  }

  /** Reads the window without counting. */
  async peek(key: string, nowMs: number): Promise<WindowState> {
    const res = await this.limiter.get(this.keyOf(key, nowMs));
    return { count: res?.consumedPoints ?? 0, resetAtMs: windowEnd(nowMs) };
  }

  /** Takes back one hit of this window (an attempt counted while it was checked that turned out fine). */
  async giveBack(key: string, nowMs: number): Promise<void> {
    await this.limiter.reward(this.keyOf(key, nowMs), 1);
  }

  async reset(key: string, nowMs: number): Promise<void> {
    await this.limiter.delete(this.keyOf(key, nowMs));
  }

  /** Keys are hashed: bounded length (the PostgreSQL column is varchar(255)) and no email at rest. */
  private keyOf(key: string, nowMs: number): string {
    return `${this.prefix}:${sha256Hex(key).slice(0, 32)}:${Math.floor(nowMs / WINDOW_MS)}`;
  }
}

function windowEnd(nowMs: number): number {
  return (Math.floor(nowMs / WINDOW_MS) + 1) * WINDOW_MS;
}

/** Seconds until the window ends, at least 1 (for Retry-After). */
export function retryAfterS(state: WindowState, nowMs: number): number {
  return Math.max(1, Math.ceil((state.resetAtMs - nowMs) / 1000));
}

export interface Limits {
  readonly backend: LimitsBackend;
  /** Requests per user. */
  readonly requests: WindowCounters;
  /** Failed logins, per email (`e:`) and per IP (`i:`). */
  readonly logins: WindowCounters;
  /** Requests without a valid credential, per client address. */
  readonly anonymous: WindowCounters;
  close(): Promise<void>;
}

/** The counters for this process: Redis (REDIS_URL), PostgreSQL (DATABASE_URL), else memory. */
export async function createLimits(
  config: Pick<Config, 'redisUrl' | 'databaseUrl' | 'dataDir'>,
  store: Store,
  log: Logger,
): Promise<Limits> {
  const insurance = new RateLimiterMemory({ points: Number.MAX_SAFE_INTEGER, duration: KEEP_S });
  let warnedAtMs = 0;
  const onStoreError = (err: unknown) => {
    const now = Date.now();
    if (now - warnedAtMs < WINDOW_MS) return;
    warnedAtMs = now;
    log.warn({ err }, 'rate-limit store unavailable; counting in this process only until it is back');
  };
  const common = { points: Number.MAX_SAFE_INTEGER, duration: KEEP_S, insuranceLimiter: insurance };

  if (config.redisUrl !== null) {
    // Auto-pipelining: the counts of requests answered in the same turn of the event loop go to
    // Redis in one write (ioredis's own batching; each command keeps its own answer).
    const redis = new Redis(config.redisUrl, {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: true,
      lazyConnect: false,
      enableAutoPipelining: true,
    });
    redis.on('error', onStoreError);
    // Processes on the same database share counters; another deployment on the same Redis does not.
    const keyPrefix = `wallet-rl:${sha256Hex(config.databaseUrl ?? config.dataDir).slice(0, 12)}`;
    const limiter = new RateLimiterRedis({ ...common, storeClient: redis, keyPrefix });
    return {
      backend: 'redis',
      requests: new WindowCounters(limiter, 'req'),
      logins: new WindowCounters(limiter, 'login'),
      anonymous: new WindowCounters(limiter, 'anon'),
      close: async () => {
        await redis.quit().catch(() => redis.disconnect());
      },
    };
  }
  if (store.driver === 'postgres') {
    const limiter = await postgresLimiter(store, common, onStoreError);
    return {
      backend: 'postgres',
      requests: new WindowCounters(limiter, 'req', true),
      logins: new WindowCounters(limiter, 'login'),
      anonymous: new WindowCounters(limiter, 'anon'),
      close: async () => undefined,
    };
  }
  const memory = new RateLimiterMemory({ points: Number.MAX_SAFE_INTEGER, duration: KEEP_S });
  return {
    backend: 'memory',
    requests: new WindowCounters(memory, 'req'),
    logins: new WindowCounters(memory, 'login'),
    anonymous: new WindowCounters(memory, 'anon'),
    close: async () => undefined,
  };
}

/** Counters in the UNLOGGED `rate_limits` table (migration 008), through the store's pool. */
async function postgresLimiter(
  store: Store,
  common: { points: number; duration: number; insuranceLimiter: RateLimiterAbstract },
  onStoreError: (err: unknown) => void,
): Promise<RateLimiterPostgres> {
  // rate-limiter-flexible speaks to a pg-like client; this one runs its queries on the store's pool.
  const client = {
    query: async (q: { text: string; values?: unknown[]; name?: string }) => {
      // rate-limiter-flexible names its hot statements: prepared once per connection too.
      if (q.name) preferNamed(q.text);
      try {
        const r = await store.db.executeQuery(CompiledQuery.raw(q.text, q.values ?? []));
        return { rows: r.rows, rowCount: r.numAffectedRows !== undefined ? Number(r.numAffectedRows) : r.rows.length };
      } catch (err) {
        onStoreError(err);
        throw err;
      }
    },
  };
  return new Promise<RateLimiterPostgres>((resolve, reject) => {
    const l: RateLimiterPostgres = new RateLimiterPostgres(
      { ...common, storeClient: client, storeType: 'client', tableName: LIMITS_TABLE, keyPrefix: LIMITS_TABLE },
      (err?: unknown) => (err ? reject(err as Error) : resolve(l)),
    );
  });
}
