/**
 * Starts the real service for a test file: real database (SQLite or PostgreSQL), real HTTP on
 * a free loopback port, captured logs. Requests go over HTTP with fetch.
 */
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import type { Store } from '../../src/db/index.js';
import { createLogger } from '../../src/logger.js';
import { createContext, openStore } from '../../src/runtime.js';
import type { ChainClientOptions } from '../../src/chain/clients.js';
import type { Clock } from '../../src/lib/time.js';
import type { App } from '../../src/http/types.js';
import type { Services } from '../../src/modules/index.js';
import { startWorkers, type Workers } from '../../src/workers/index.js';
import { createTestDatabase, type TestDatabase } from './db.js';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: { status: string; message: string; data: T };
  text: string;
}

export interface RequestOptions {
  token?: string | null;
  body?: unknown;
  /** Sent as is (for malformed JSON, other content types). */
  rawBody?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
}

export interface TestUser {
  id: number;
  email: string;
  password: string;
  token: string;
}

export interface TestApp {
  url: string;
  app: App;
  ctx: AppContext;
  store: Store;
  services: Services;
  config: Config;
  database: TestDatabase;
  logs: string[];
  workers: Workers | null;
  request<T = any>(method: string, path: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  createUser(opts?: { email?: string; password?: string; name?: string }): Promise<TestUser>;
  startWorkers(): Workers;
  close(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  /** Reuse a database (e.g. to restart the service on the same data). */
  database?: TestDatabase;
  /** Keep the database when closing (a later startTestApp reuses it). */
  keepDatabase?: boolean;
  workers?: boolean;
  /** A clock to control time (token expiry, rate-limit windows); the system clock by default. */
  clock?: Clock;
  /** The node clients' settings (a read's time-out) beside the defaults. */
  chains?: Partial<ChainClientOptions>;
  /** The loopback port to listen on (known before the start, as PUBLIC_URL needs it); a free one by default. */
  port?: number;
}

/** A clock the test moves by hand. */
export class ManualClock implements Clock {
  constructor(private ms = Date.now()) {}
  nowMs(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

export const TEST_APP_KEY = randomBytes(32).toString('base64');

export async function startTestApp(opts: StartOptions = {}): Promise<TestApp> {
  const database = opts.database ?? (await createTestDatabase());
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    DATA_DIR: database.dataDir,
    APP_KEY: TEST_APP_KEY,
    LOG_LEVEL: 'info',
    DEVNET: 'off',
    RATE_LIMIT_PER_MINUTE: '100000',
    DASHBOARD_RATE_LIMIT_PER_MINUTE: '100000',
    LOGIN_ATTEMPTS_PER_MINUTE: '1000',
    // 2^14 instead of the production 2^17: every test logs users in (test/operations/service.test.ts checks the rehash to the production cost).
    PASSWORD_SCRYPT_N: '1024',
    PUBLIC_RATE_LIMIT_PER_MINUTE: '100000',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WATCHER_POLL_MS: '100',
    WEBHOOK_POLL_MS: '50',
    ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    ...opts.env,
  };
  const config = loadConfig(env);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const log: Logger = createLogger(config.logLevel, sink);
  const store = await openStore(config, log);
  const ctx = createContext(config, store, log, opts.clock, opts.chains);
  const { app, services } = await buildApp(ctx);
  await app.listen({ host: '127.0.0.1', port: opts.port ?? 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  const url = `http://127.0.0.1:${address.port}`;

  const t: TestApp = {
    url,
    app,
    ctx,
    store,
    services,
    config,
    database,
    logs,
    workers: null,
    async request(method, path, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.token) headers.authorization = `Bearer ${o.token}`;
      let body: string | Buffer | undefined;
      if (o.rawBody !== undefined) {
        body = o.rawBody;
        if (o.contentType) headers['content-type'] = o.contentType;
      } else if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['content-type'] = o.contentType ?? 'application/json';
      }
      const res = await fetch(`${url}${path}`, {
        method,
        headers,
        body: typeof body === 'string' || body === undefined ? body : new Uint8Array(body),
      });
      const text = await res.text();
      let parsed: any;
      try {
        parsed = text === '' ? null : JSON.parse(text);
      } catch {
        parsed = { unparsed: text };
      }
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    async createUser(u = {}) {
      const email = u.email ?? `user-${randomBytes(4).toString('hex')}@example.com`;
      const password = u.password ?? `pw-${randomBytes(8).toString('hex')}`;
      const created = await services.auth.createUser({ email, password, name: u.name });
      const res = await t.request('POST', '/api/auth/login', { body: { email, password } });
      if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
      return { id: created.id, email, password, token: res.body.data.token };
    },
    startWorkers() {
      t.workers = startWorkers(ctx, services);
      return t.workers;
    },
    async close() {
      await t.workers?.stop();
      await app.close();
      ctx.chains.close();
      await store.destroy();
      if (!opts.keepDatabase) await database.drop();
    },
  };
  if (opts.workers) t.startWorkers();
  return t;
}
