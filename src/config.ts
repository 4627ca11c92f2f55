/**
 * The one place that reads the environment. `loadConfig` parses and checks every variable
 * once and returns a frozen, typed Config; a bad value throws a ConfigError whose message is
 * one line naming the variable. Nothing else in the code base reads `process.env`.
 */
import { isIP } from 'node:net';
import { resolve } from 'node:path';

export type NodeEnv = 'development' | 'production' | 'test';

export interface Config {
  readonly nodeEnv: NodeEnv;
  readonly host: string;
  readonly port: number;
  /** Where payers reach this service (hosted checkout links); PUBLIC_URL, default `http://HOST:PORT`. */
  readonly publicUrl: string;
  readonly logLevel: string;
  readonly dataDir: string;
  /** PostgreSQL URL, or null for the embedded SQLite store in dataDir. */
  readonly databaseUrl: string | null;
  readonly dbPoolSize: number;
  /** Base64 APP_KEY as given, or null (development then generates a key file). */
  readonly appKey: string | null;
  /** Older keys (base64, comma-separated) still accepted for decryption after a rotation. */
  readonly appPreviousKeys: readonly string[];
  readonly devnet: {
    /** Start a local anvil child process (when no DEVNET_RPC_URL is given and DEVNET is not off). */
    readonly spawn: boolean;
    /** Register the `Local devnet` network at start. */
    readonly register: boolean;
    readonly port: number;
    /** The first of `rpcUrls`. */
    readonly rpcUrl: string;
    /** DEVNET_RPC_URL: one URL or a comma-separated list of endpoints (else the spawned anvil). */
    readonly rpcUrls: readonly string[];
  };
  /** RPC_MAX_LAG_BLOCKS: an endpoint whose head is further behind the best one serves no reads. */
  readonly rpcMaxLagBlocks: number;
  readonly networksFile: string | null;
  /** SCREENING_FILE: blocked addresses, one a line (src/modules/screening/screening.ts), as an absolute path; null: none. */
  readonly screeningFile: string | null;
  readonly tokenTtlS: number;
  /** Requests a minute per user made with API keys (servers); 0 turns that limit (and its headers) off. */
  readonly rateLimitPerMinute: number;
  /**
   * Requests a minute per user made with dashboard sessions (login with `session: "dashboard"`),
   * counted apart from the per-user limit that login tokens and API keys share, so the dashboard
   * never uses up the integration's budget nor the other way round; 0 turns it (and its headers) off.
   */
  readonly dashboardRateLimitPerMinute: number;
  /** Redis for the shared rate-limit counters (else PostgreSQL when used, else memory). */
  readonly redisUrl: string | null;
  /** scrypt cost (N) for new password hashes; older hashes are rehashed at the next login. */
  readonly passwordScryptN: number;
  /** A pending transfer older than this is reported as stuck on /metrics. */
  readonly txStuckAfterS: number;
  /** Outgoing transactions of one wallet that may be unconfirmed at once (one more: 400). */
  readonly maxPendingPerWallet: number;
  /** Bearer token /metrics requires, or null (then open when metricsPublic, else not served). */
  readonly metricsToken: string | null;
  /** METRICS_PUBLIC: without METRICS_TOKEN, serve /metrics to anyone; default true except in production. */
  readonly metricsPublic: boolean;
  readonly loginAttemptsPerMinute: number;
  readonly balanceMaxAgeS: number;
  readonly webhook: {
    readonly retryDelaysS: readonly number[];
    readonly allowPrivate: boolean;
    readonly concurrency: number;
    readonly pollIntervalMs: number;
    readonly connectTimeoutMs: number;
    readonly readTimeoutMs: number;
    readonly totalTimeoutMs: number;
    /** How long a replaced secret still signs deliveries (besides the new one). */
    readonly secretOverlapS: number;
    /** A webhook failing every delivery this long becomes inactive; 0 never. */
    readonly disableAfterS: number;
  };
  readonly watcher: {
    readonly pollIntervalMs: number;
    /** The tick interval while a transfer of the network is unconfirmed (its confirmation is what users wait for); at most pollIntervalMs. */
    readonly pendingPollMs: number;
    /** Wake the watcher on each new head the node announces over a WebSocket, where it allows it (src/chain/heads.ts). */
    readonly followHeads: boolean;
    readonly maxBlocksPerTick: number;
    readonly leaseTtlMs: number;
    /** How long a pending transfer not seen in a block goes before the node is asked about it again (and it is re-sent if unknown). */
    readonly recheckMs: number;
  };
  /** Events, webhook deliveries and attempts are kept this many days, then pruned. */
  readonly eventRetentionDays: number;
  /** Interval of the charge worker (settlement and sweeping). */
  readonly chargesPollMs: number;
  /** How long after `expires_at` a charge's deposit address is still watched for late payments (seconds). */
  readonly chargeWatchAfterS: number;
  /** Keyless deposit addresses swept in one transaction, at most; a wallet's batch is sent when this many are due. */
  readonly sweepBatchMax: number;
  /** A wallet's due keyless addresses are swept once the oldest has waited this long, however few (seconds). */
  readonly sweepMaxWaitS: number;
  /** A rate read from a price feed older than this is no rate (RATE_MAX_AGE_S). */
  readonly rateMaxAgeS: number;
  /** A payout's ERC-20 items paid in one Sweeper call, at most (on a network with a Sweeper). */
  readonly payoutBatchMax: number;
  /**
   * Up to this many watched deposit addresses, a block is matched against all of them (read whole,
   * the node filters the logs on them); above, the block's recipients are looked up by address.
   */
  readonly chargeWatchListMax: number;
  /** How long a transfer held by the policy's `approval_above` waits for a decision before it fails (`approval_expired`), seconds. */
  readonly approvalTtlS: number;
  /** REFUND_CLAIM_TTL_S: how long a refund claim's link can be used (docs/money-out.md, "Refunds"). */
  readonly refundClaimTtlS: number;
  readonly workers: boolean;
  readonly bootstrap: { readonly email: string; readonly password: string } | null;
  readonly shutdownTimeoutMs: number;
  /**
   * Which hops' X-Forwarded-For to believe (Fastify's `trustProxy`): true (every hop), false, a
   * hop count, or a list of trusted proxy addresses and CIDRs.
   */
  readonly trustProxy: boolean | number | string[];
  /** Requests without a valid credential per client address per minute (0: no limit). */
  readonly publicRateLimitPerMinute: number;
}

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`Invalid configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

function str(env: Env, name: string, fallback: string): string {
  const v = env[name];
  return v === undefined || v === '' ? fallback : v;
}

function optional(env: Env, name: string): string | null {
  const v = env[name];
  return v === undefined || v === '' ? null : v;
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

/** `localhost`, 127.0.0.0/8 or ::1: only this machine can reach the listener. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

/** TRUST_PROXY: true/false, a hop count (1-100; 0 is false), or comma-separated IPs and CIDRs. */
function trustProxy(env: Env): boolean | number | string[] {
  const raw = optional(env, 'TRUST_PROXY');
  if (raw === null) return false;
  const v = raw.trim().toLowerCase();
  if (['true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  // A number is a hop count ("1": the one proxy in front), as Express reads it.
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    if (hops > 100) throw new ConfigError('TRUST_PROXY', `must be at most 100 hops, got ${hops}`);
    return hops;
  }
  const entries = raw
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  for (const e of entries) {
    if (!isAddressOrCidr(e)) {
      throw new ConfigError('TRUST_PROXY', `must be true, false, a hop count, or comma-separated addresses/CIDRs, got "${e}"`);
    }
  }
  return entries;
}

function isAddressOrCidr(entry: string): boolean {
  const [addr = '', prefix, ...rest] = entry.split('/');
  const family = isIP(addr);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

function url(env: Env, name: string, protocols: string[]): string | null {
  const raw = optional(env, name);
  if (raw === null) return null;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, 'must be a valid URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}`);
  }
  return raw;
}

/** A comma-separated list of URLs (empty when unset), each checked as `url` does. */
function urlList(env: Env, name: string, protocols: string[]): string[] {
  const raw = optional(env, name);
  if (raw === null) return [];
  const list = raw
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  if (list.length === 0) throw new ConfigError(name, 'must be a valid URL');
  return list.map((u) => url({ [name]: u }, name, protocols)!);
}

function delays(env: Env, name: string, fallback: number[]): number[] {
  const raw = optional(env, name);
  if (raw === null) return fallback;
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length < 1 || parts.length > 20 || parts.some((p) => !/^\d+$/.test(p) || Number(p) > 604800)) {
    throw new ConfigError(name, `must be a comma-separated list of seconds (e.g. 60,300,900), got "${raw}"`);
  }
  return parts.map(Number);
}

export function loadConfig(env: Env = process.env): Config {
  const host = str(env, 'HOST', '127.0.0.1');
  const nodeEnv = nodeEnvOf(env, host);
  const production = nodeEnv === 'production';

  const appKey = optional(env, 'APP_KEY');
  if (production && appKey === null) {
    throw new ConfigError('APP_KEY', 'is required when NODE_ENV=production (32 bytes, base64)');
  }
  if (appKey !== null) checkKey('APP_KEY', appKey);
  const appPreviousKeys = (optional(env, 'APP_PREVIOUS_KEYS') ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  for (const k of appPreviousKeys) checkKey('APP_PREVIOUS_KEYS', k);

  const logLevel = str(env, 'LOG_LEVEL', 'info');
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of fatal, error, warn, info, debug, trace, silent`);
  }

  const devnetPort = int(env, 'DEVNET_PORT', 8545, 1, 65535);
  const devnetRpcUrls = urlList(env, 'DEVNET_RPC_URL', ['http:', 'https:']);
  const devnetRpcUrl = devnetRpcUrls[0] ?? null;
  const devnetOn = bool(env, 'DEVNET', !production);

  const bootstrapEmail = optional(env, 'BOOTSTRAP_EMAIL');
  const bootstrapPassword = optional(env, 'BOOTSTRAP_PASSWORD');
  if ((bootstrapEmail === null) !== (bootstrapPassword === null)) {
    throw new ConfigError(bootstrapEmail === null ? 'BOOTSTRAP_EMAIL' : 'BOOTSTRAP_PASSWORD', 'must be set together with its pair');
  }
  if (bootstrapPassword !== null && bootstrapPassword.length < 8) {
    throw new ConfigError('BOOTSTRAP_PASSWORD', 'must be at least 8 characters');
  }

  const databaseUrl = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  const port = int(env, 'PORT', 8080, 0, 65535);

  const config: Config = {
    nodeEnv,
    host,
    port,
    publicUrl: (url(env, 'PUBLIC_URL', ['http:', 'https:']) ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(
      /\/+$/,
      '',
    ),
    logLevel,
    dataDir: resolve(str(env, 'DATA_DIR', './data')),
    databaseUrl,
    dbPoolSize: int(env, 'DB_POOL_SIZE', 10, 1, 200),
    appKey,
    appPreviousKeys,
    devnet: {
      spawn: devnetOn && devnetRpcUrl === null,
      register: devnetOn || devnetRpcUrl !== null,
      port: devnetPort,
      rpcUrl: devnetRpcUrl ?? `http://127.0.0.1:${devnetPort}`,
      rpcUrls: devnetRpcUrls.length > 0 ? devnetRpcUrls : [`http://127.0.0.1:${devnetPort}`],
    },
    rpcMaxLagBlocks: int(env, 'RPC_MAX_LAG_BLOCKS', 3, 0, 10_000),
    networksFile: optional(env, 'NETWORKS_FILE'),
    screeningFile: screeningFile(env),
    tokenTtlS: int(env, 'TOKEN_TTL', 86400, 1, 31_536_000),
    rateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 60, 0, 1_000_000),
    dashboardRateLimitPerMinute: int(env, 'DASHBOARD_RATE_LIMIT_PER_MINUTE', 600, 0, 1_000_000),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    passwordScryptN: scryptCost(env),
    txStuckAfterS: int(env, 'TX_STUCK_AFTER_S', 600, 1, 31_536_000),
    maxPendingPerWallet: int(env, 'MAX_PENDING_PER_WALLET', 64, 1, 100_000),
    metricsToken: optional(env, 'METRICS_TOKEN'),
    metricsPublic: bool(env, 'METRICS_PUBLIC', !production),
    loginAttemptsPerMinute: int(env, 'LOGIN_ATTEMPTS_PER_MINUTE', 5, 1, 10_000),
    publicRateLimitPerMinute: int(env, 'PUBLIC_RATE_LIMIT_PER_MINUTE', 600, 0, 1_000_000),
    balanceMaxAgeS: int(env, 'BALANCE_MAX_AGE_S', 5, 0, 86400),
    webhook: {
      retryDelaysS: delays(env, 'WEBHOOK_RETRY_DELAYS', [60, 300, 900]),
      // Private targets are a development convenience: on by default only for development on a
      // loopback address (a development build exposed on a network must not reach its LAN).
      allowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE', nodeEnv === 'development' && isLoopbackHost(host)),
      concurrency: int(env, 'WEBHOOK_CONCURRENCY', 64, 1, 256),
      pollIntervalMs: int(env, 'WEBHOOK_POLL_MS', 500, 10, 60_000),
      connectTimeoutMs: int(env, 'WEBHOOK_CONNECT_TIMEOUT_MS', 10_000, 100, 60_000),
      readTimeoutMs: int(env, 'WEBHOOK_READ_TIMEOUT_MS', 20_000, 100, 120_000),
      totalTimeoutMs: int(env, 'WEBHOOK_TOTAL_TIMEOUT_MS', 30_000, 100, 180_000),
      secretOverlapS: int(env, 'WEBHOOK_SECRET_OVERLAP_S', 86_400, 0, 2_592_000),
      disableAfterS: int(env, 'WEBHOOK_DISABLE_AFTER_S', 432_000, 0, 31_536_000),
    },
    watcher: {
      pollIntervalMs: int(env, 'WATCHER_POLL_MS', 1000, 10, 600_000),
      pendingPollMs: int(env, 'WATCHER_PENDING_POLL_MS', 200, 10, 600_000),
      maxBlocksPerTick: int(env, 'WATCHER_MAX_BLOCKS', 100, 1, 10_000),
      leaseTtlMs: int(env, 'WATCHER_LEASE_MS', 10_000, 1000, 600_000),
      recheckMs: int(env, 'WATCHER_RECHECK_MS', 30_000, 100, 3_600_000),
      followHeads: bool(env, 'WATCHER_FOLLOW_HEADS', true),
    },
    chargesPollMs: int(env, 'CHARGES_POLL_MS', 1000, 10, 600_000),
    chargeWatchAfterS: int(env, 'CHARGE_WATCH_AFTER_S', 86_400, 0, 31_536_000),
    // The Sweeper takes at most SWEEP_BATCH_MAX (100) addresses a call.
    sweepBatchMax: int(env, 'SWEEP_BATCH_MAX', 50, 1, 100),
    sweepMaxWaitS: int(env, 'SWEEP_MAX_WAIT_S', 60, 0, 86_400),
    rateMaxAgeS: int(env, 'RATE_MAX_AGE_S', 3600, 1, 604_800),
    // The Sweeper pays at most PAYOUT_BATCH_MAX (100) items a call.
    payoutBatchMax: int(env, 'PAYOUT_BATCH_MAX', 100, 1, 100),
    // At most the recipients a log query is filtered on (MAX_TOPIC_ADDRESSES, src/chain/blocks.ts).
    chargeWatchListMax: int(env, 'CHARGE_WATCH_LIST_MAX', 500, 0, 500),
    approvalTtlS: int(env, 'APPROVAL_TTL_S', 86_400, 1, 31_536_000),
    refundClaimTtlS: int(env, 'REFUND_CLAIM_TTL_S', 604_800, 1, 31_536_000),
    eventRetentionDays: int(env, 'EVENT_RETENTION_DAYS', 30, 1, 3650),
    workers: bool(env, 'WORKERS', true),
    bootstrap: bootstrapEmail !== null && bootstrapPassword !== null ? { email: bootstrapEmail, password: bootstrapPassword } : null,
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 100, 600_000),
    trustProxy: trustProxy(env),
  };
  return deepFreeze(config);
}

/** SCREENING_FILE, resolved against the working directory (it is read now and again when it changes). */
function screeningFile(env: Env): string | null {
  const raw = optional(env, 'SCREENING_FILE');
  return raw === null ? null : resolve(raw.trim());
}

/**
 * NODE_ENV, `development` when unset, except on a HOST others can reach: the development defaults
 * (a master key generated next to the data, the devnet and its public pay route) are for one
 * machine, so a service listening on a network must say which it is. `NODE_ENV=development`
 * there keeps them on purpose (with their warnings); unset is a boot error naming the variable.
 */
function nodeEnvOf(env: Env, host: string): NodeEnv {
  const raw = optional(env, 'NODE_ENV');
  if (raw === null && !isLoopbackHost(host)) {
    throw new ConfigError(
      'NODE_ENV',
      `must be set when HOST (${host}) is not a loopback address: NODE_ENV=production for a service others reach (APP_KEY required, no devnet), or NODE_ENV=development to expose the development defaults on purpose`,
    );
  }
  const value = raw ?? 'development';
  if (!['development', 'production', 'test'].includes(value)) {
    throw new ConfigError('NODE_ENV', `must be development, production or test, got "${value}"`);
  }
  return value as NodeEnv;
}

/** PASSWORD_SCRYPT_N: a power of two from 2^10 to 2^20; default 2^17 (OWASP's scrypt guidance). */
function scryptCost(env: Env): number {
  const n = int(env, 'PASSWORD_SCRYPT_N', 131_072, 1024, 1_048_576);
  if ((n & (n - 1)) !== 0) throw new ConfigError('PASSWORD_SCRYPT_N', `must be a power of two, got ${n}`);
  return n;
}

function checkKey(name: string, value: string): void {
  const b64 = value.startsWith('base64:') ? value.slice(7) : value;
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(b64) || Buffer.from(b64, 'base64').length !== 32) {
    throw new ConfigError(name, 'must be 32 bytes encoded as base64 (e.g. `openssl rand -base64 32`)');
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
