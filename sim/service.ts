/**
 * The service as users run it, bundled: `node build/server.mjs` (src/server.ts bundled by
 * scripts/build-entries.mjs, which `npm run sim` and the tests' global setup run first; one process, so a SIGKILL reaches the
 * server itself, and a restart costs a fraction of tsx's loading), its data in a temp
 * folder, its chain behind the fault proxy. `kill()` is a SIGKILL (no drain); `start()` again
 * brings it back on the same port and data. The API client retries a request whose answer a kill
 * or a fault cut (network error, 5xx, 429) with the same Idempotency-Key.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const SIM_EMAIL = 'sim@example.com';
export const SIM_PASSWORD = 'sim-password-1';

export class ServiceProcess {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  starts = 0;
  kills = 0;
  readonly logPath: string;

  constructor(
    readonly port: number,
    private readonly env: Record<string, string>,
    logPath: string,
  ) {
    this.logPath = logPath;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== null;
  }

  async start(timeoutMs = 60_000): Promise<void> {
    const fd = openSync(this.logPath, 'a');
    const child = spawn(process.execPath, ['build/server.mjs'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...this.env, PORT: String(this.port) },
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    this.child = child;
    this.starts += 1;
    this.exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    void this.exited.then(() => {
      if (this.child === child) this.child = null;
    });
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child !== child) throw new Error(`the service exited during start-up; see ${this.logPath}`);
      const ok = await fetch(`${this.url}/api/openapi.json`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      await sleep(200);
    }
    throw new Error(`the service did not answer within ${timeoutMs} ms; see ${this.logPath}`);
  }

  /** Runs the service's CLI (`node build/cli.mjs`) on the same data; rejects unless it exits 0. */
  async cli(args: string[]): Promise<void> {
    const child = spawn(process.execPath, ['build/cli.mjs', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...this.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    if (code !== 0) throw new Error(`cli ${args.join(' ')} exited ${code}: ${err.slice(0, 500)}`);
  }

  /** SIGKILL: no drain, no goodbye. */
  async kill(): Promise<void> {
    const c = this.child;
    if (!c) return;
    this.kills += 1;
    c.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM (the drain), bounded; SIGKILL after. */
  async stop(): Promise<void> {
    const c = this.child;
    if (!c) return;
    c.kill('SIGTERM');
    const t = setTimeout(() => c.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(t);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export interface ApiAnswer<T = any> {
  status: number;
  /** How many times the request was sent (more than 1: an earlier attempt was cut, or answered 5xx, 429 or 409 in progress). */
  attempts?: number;
  message: string;
  data: T;
  headers: Headers;
}

/** Where a request went wrong on its way (counted for the summary). */
export interface ApiStats {
  retries: number;
  serverErrors: Map<string, number>;
}

export class Api {
  private token = '';
  readonly stats: ApiStats = { retries: 0, serverErrors: new Map() };

  constructor(private readonly svc: ServiceProcess) {}

  async login(): Promise<void> {
    const r = await this.call('POST', '/api/auth/login', { email: SIM_EMAIL, password: SIM_PASSWORD }, { auth: false });
    if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.message}`);
    this.token = (r.data as { token: string }).token;
  }

  /**
   * One request, sent again (same body, same Idempotency-Key) until it has an answer that is not
   * a cut, a 5xx or a 429, or `deadlineMs` passes (then it throws).
   */
  async call<T = any>(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    opts: { key?: string; deadlineMs?: number; auth?: boolean } = {},
  ): Promise<ApiAnswer<T>> {
    const deadline = Date.now() + (opts.deadlineMs ?? 180_000);
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (opts.key) headers['idempotency-key'] = opts.key;
    for (let attempt = 0; ; attempt++) {
      if (opts.auth !== false) headers.authorization = `Bearer ${this.token}`;
      const answer = await this.once<T>(method, path, body, headers);
      // 409 "still in progress": the first attempt of this key has not finished (or never will,
      // if a crash left the key blocked): asked again until the deadline, as a careful client does.
      const inProgress = answer?.status === 409 && /still in progress/.test(answer.message);
      if (answer && answer.status < 500 && answer.status !== 429 && !inProgress) return { ...answer, attempts: attempt + 1 };
      if (answer && answer.status >= 500) {
        const k = `${answer.status} ${answer.message}`;
        this.stats.serverErrors.set(k, (this.stats.serverErrors.get(k) ?? 0) + 1);
      }
      if (Date.now() > deadline)
        throw new Error(
          `${method} ${path}: no answer before the deadline (last: ${answer ? `${answer.status} ${answer.message}` : 'no connection'})`,
        );
      this.stats.retries += 1;
      await sleep(Math.min(2000, 200 * 2 ** Math.min(attempt, 4)));
    }
  }

  private async once<T>(method: string, path: string, body: unknown, headers: Record<string, string>): Promise<ApiAnswer<T> | null> {
    try {
      const res = await fetch(`${this.svc.url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      let json: { message?: string; data?: T } = {};
      try {
        json = JSON.parse(text) as typeof json;
      } catch {
        /* not the envelope */
      }
      return { status: res.status, message: json.message ?? '', data: json.data as T, headers: res.headers };
    } catch {
      return null;
    }
  }

  /** Every item of a paginated list. */
  async all<T = any>(path: string): Promise<T[]> {
    const out: T[] = [];
    for (let page = 1; ; page++) {
      const sep = path.includes('?') ? '&' : '?';
      const r = await this.call<T[]>('GET', `${path}${sep}limit=1000&page=${page}`);
      if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.message}`);
      out.push(...r.data);
      if (r.data.length < 1000) return out;
    }
  }
}
