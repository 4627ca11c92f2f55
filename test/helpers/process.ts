/** Running the real entry points (server, CLI) as child processes. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { findFreePort } from '../../src/chain/devnet.js';
import { TEST_APP_KEY } from './app.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface Proc {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/**
 * The entry points the tests start, as bundled by the global setup (scripts/build-entries.mjs):
 * the same source, loaded as one module instead of ~400 through tsx's loader.
 */
const BUNDLED: Record<string, string> = { 'src/server.ts': 'build/server.mjs', 'src/cli.ts': 'build/cli.mjs' };

/** Runs an entry point (its bundle), with only the given environment (plus PATH/HOME). */
export function runTs(entry: keyof typeof BUNDLED, args: string[], env: Record<string, string>): Proc {
  const bundle = BUNDLED[entry];
  if (!bundle) throw new Error(`no bundle for ${entry}`);
  const child = spawn(process.execPath, [bundle, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d.toString()));
  child.stderr.on('data', (d) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

export async function runCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; json: any }> {
  const p = runTs('src/cli.ts', args, env);
  const code = await p.exited;
  const lines = p.output().trim().split('\n');
  let json: any = null;
  for (const l of lines.reverse()) {
    try {
      json = JSON.parse(l);
      break;
    } catch {
      /* not the JSON line */
    }
  }
  return { code, stdout: p.output(), json };
}

/** Polls `fn` until it returns a truthy value or the deadline passes. */
export async function until<T>(fn: () => Promise<T | null | undefined | false>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

export interface Service {
  url: string;
  proc: Proc;
}

/**
 * A real service process (`src/server.ts`) on a test database, API only (no workers, no devnet),
 * answering once its OpenAPI document does. `env` adds to or overrides the defaults.
 */
export async function startService(
  database: { dataDir: string; databaseUrl: string | null },
  env: Record<string, string> = {},
): Promise<Service> {
  const port = await findFreePort();
  const proc = runTs('src/server.ts', [], {
    NODE_ENV: 'test',
    PORT: String(port),
    DATA_DIR: database.dataDir,
    ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    APP_KEY: TEST_APP_KEY,
    DEVNET: 'off',
    WORKERS: 'false',
    LOG_LEVEL: 'warn',
    PASSWORD_SCRYPT_N: '1024',
    PUBLIC_RATE_LIMIT_PER_MINUTE: '100000',
    // Test receivers listen on loopback (the default is on only for development on loopback).
    WEBHOOK_ALLOW_PRIVATE: 'true',
    ...env,
  });
  const url = `http://127.0.0.1:${port}`;
  // ~4–5 s on an idle 2-core machine; two at once beside the suite's other files took over 30 s once in CI.
  await until(async () => (await fetch(`${url}/api/openapi.json`).catch(() => null))?.ok, 75_000, `service on ${port}: ${proc.output()}`);
  return { url, proc };
}

export async function stop(s: Service | undefined): Promise<void> {
  if (!s) return;
  s.proc.child.kill('SIGTERM');
  await s.proc.exited;
}
