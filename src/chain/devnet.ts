// Local development chain: runs the anvil binary shipped in the
// @foundry-rs/anvil npm package as a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';

const DEFAULT_HOST = '127.0.0.1';
const DEFAULT_CHAIN_ID = 31337;
const READY_TIMEOUT_MS = 15_000;
const READY_POLL_INTERVAL_MS = 50;
const READY_REQUEST_TIMEOUT_MS = 1_000;
const STOP_GRACE_MS = 5_000;
const PIPE_FLUSH_MS = 500;
/** How often anvil dumps its state to `statePath` while running. */
const STATE_INTERVAL_S = 5;
/** How many trailing output lines to keep for error messages. */
const OUTPUT_TAIL_LINES = 20;

const PLATFORM_PACKAGES: Record<string, string> = {
  'linux-x64': '@foundry-rs/anvil-linux-amd64',
  'linux-arm64': '@foundry-rs/anvil-linux-arm64',
  'darwin-x64': '@foundry-rs/anvil-darwin-amd64',
  'darwin-arm64': '@foundry-rs/anvil-darwin-arm64',
};

/** The local devnet cannot start here; the message says what to do (the start prints it without a stack). */
export class DevnetUnavailable extends Error {}

const WITHOUT_DEVNET = 'or start without the devnet: DEVNET=off, or DEVNET_RPC_URL=<a node>';

/**
 * Path of the anvil binary from the platform-specific npm package. `@foundry-rs/anvil` is an
 * optional dependency (only development's devnet needs it), so a production install
 * (`npm install --omit=optional --omit=dev`) fetches no native binary.
 */
export function anvilBinaryPath(): string {
  const platformKey = `${process.platform}-${process.arch}`;
  const pkg = PLATFORM_PACKAGES[platformKey];
  if (!pkg) {
    throw new DevnetUnavailable(
      `anvil: no prebuilt binary package for ${platformKey} (supported: ${Object.keys(PLATFORM_PACKAGES).join(', ')}); ${WITHOUT_DEVNET}`,
    );
  }
  let pkgJsonPath: string;
  try {
    pkgJsonPath = createRequire(import.meta.url).resolve(`${pkg}/package.json`);
  } catch {
    throw new DevnetUnavailable(
      `the local devnet needs anvil from the optional npm package @foundry-rs/anvil (${pkg} on this platform), which is not installed: run \`npm install\` without --omit=optional, ${WITHOUT_DEVNET}`,
    );
  }
  const binary = join(dirname(pkgJsonPath), 'bin', 'anvil');
  if (!existsSync(binary))
    throw new DevnetUnavailable(`anvil: binary not found at ${binary}; reinstall with \`npm install\`, ${WITHOUT_DEVNET}`);
  return binary;
}

export interface Devnet {
  rpcUrl: string;
  port: number;
  stop(): Promise<void>;
}

export interface DevnetLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export interface StartDevnetOptions {
  port: number;
  host?: string;
  chainId?: number;
  /** File anvil loads at start and dumps to periodically and on exit. */
  statePath?: string;
  blockTimeS?: number;
  accounts?: number;
  logger?: DevnetLogger;
}

function anvilArgs(opts: StartDevnetOptions, host: string): string[] {
  const args = ['--host', host, '--port', String(opts.port), '--chain-id', String(opts.chainId ?? DEFAULT_CHAIN_ID), '--silent'];
  if (opts.statePath !== undefined) {
    args.push('--state', opts.statePath, '--state-interval', String(STATE_INTERVAL_S));
  }
  if (opts.blockTimeS !== undefined) args.push('--block-time', String(opts.blockTimeS));
  if (opts.accounts !== undefined) args.push('--accounts', String(opts.accounts));
  return args;
}

/** Keeps the last few lines written by the child, for error messages. */
class OutputTail {
  readonly #lines: string[] = [];
  #partial = '';

  push(chunk: Buffer): void {
    const pieces = (this.#partial + chunk.toString('utf8')).split('\n');
    this.#partial = pieces.pop() ?? '';
    for (const line of pieces) this.#add(line);
  }

  text(): string {
    const lines = this.#partial ? [...this.#lines, this.#partial] : this.#lines;
    return lines.join('\n');
  }

  #add(line: string): void {
    if (line.trim() === '') return;
    this.#lines.push(line);
    if (this.#lines.length > OUTPUT_TAIL_LINES) this.#lines.shift();
  }
}

/** True once the child has exited, or if it never started (spawn failure leaves pid unset). */
function isGone(child: ChildProcess): boolean {
  return child.pid === undefined || child.exitCode !== null || child.signalCode !== null;
}

/** Resolves true once the child has exited (immediately if it already has), false on timeout. */
function waitForExit(child: ChildProcess, timeout_ms: number): Promise<boolean> {
  if (isGone(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, timeout_ms);
    const onExit = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

/** One JSON-RPC call to the devnet: its `result` (undefined when it has none). */
async function devnetCall(rpcUrl: string, method: string, timeoutMs: number): Promise<unknown> {
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: [] }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) return undefined;
  return ((await res.json()) as { result?: unknown }).result;
}

async function answersChainId(rpcUrl: string): Promise<boolean> {
  try {
    return typeof (await devnetCall(rpcUrl, 'eth_chainId', READY_REQUEST_TIMEOUT_MS)) === 'string';
  } catch {
    return false; // not listening yet
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Poll eth_chainId until it answers. Returns undefined when ready, otherwise
 * why it never became ready (child exited, or the deadline passed).
 */
async function waitUntilReady(child: ChildProcess, rpcUrl: string): Promise<string | undefined> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (isGone(child)) {
      const how = child.exitCode !== null ? `code ${child.exitCode}` : `signal ${String(child.signalCode)}`;
      return `anvil exited with ${how} before becoming ready`;
    }
    if (await answersChainId(rpcUrl)) return undefined;
    await sleep(READY_POLL_INTERVAL_MS);
  }
  return `anvil did not answer eth_chainId at ${rpcUrl} within ${READY_TIMEOUT_MS} ms`;
}

function formatTail(tail: OutputTail): string {
  const text = tail.text();
  return text ? `; last output:\n${text}` : '';
}

/**
 * The chain's state as anvil dumps it to `--state` (`anvil_dumpState` answers the same JSON,
 * gzipped), or null when anvil does not answer in time.
 */
async function dumpState(rpcUrl: string): Promise<string | null> {
  try {
    const result = await devnetCall(rpcUrl, 'anvil_dumpState', STOP_GRACE_MS);
    return typeof result === 'string' ? gunzipSync(Buffer.from(result.slice(2), 'hex')).toString('utf8') : null;
  } catch {
    return null;
  }
}

/**
 * True when anvil wrote `path` at `sinceMs` or after and it holds a whole JSON document: its exit
 * dump, not missing, not cut short, and not an older periodic dump left by an exit that wrote none.
 */
function dumpedSince(path: string, sinceMs: number): boolean {
  try {
    if (statSync(path).mtimeMs < sinceMs) return false;
    JSON.parse(readFileSync(path, 'utf8'));
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops anvil keeping its state: the state is read over JSON-RPC first, then anvil is stopped
 * (it dumps its state on SIGTERM), and unless anvil's own dump was written since and is whole,
 * the state read first is written (atomically). anvil has been seen to exit on a SIGTERM sent
 * right after it started answering without writing its file (CI, a busy machine), and a dump cut
 * by the SIGKILL after the grace period would leave a file the next start cannot load.
 */
async function stopKeepingState(child: ChildProcess, rpcUrl: string, statePath: string): Promise<void> {
  // A moment before the read, so that anvil's dump after it counts as newer on a coarse clock.
  const readAtMs = Date.now() - 1;
  const state = isGone(child) ? null : await dumpState(rpcUrl);
  await terminate(child);
  if (state === null || dumpedSince(statePath, readAtMs)) return;
  const tmp = `${statePath}.${process.pid}.tmp`;
  mkdirSync(dirname(statePath), { recursive: true });
  writeFileSync(tmp, state);
  renameSync(tmp, statePath);
}

/** SIGTERM (anvil dumps its state on it), then SIGKILL if it does not exit in time. */
async function terminate(child: ChildProcess): Promise<void> {
  if (isGone(child)) return;
  child.kill('SIGTERM');
  if (await waitForExit(child, STOP_GRACE_MS)) return;
  child.kill('SIGKILL');
  await waitForExit(child, STOP_GRACE_MS);
}

/** The anvil process, its output's tail, and its pipes' close. */
async function spawnAnvil(
  opts: StartDevnetOptions,
  host: string,
): Promise<{ child: ChildProcess; tail: OutputTail; closed: Promise<void> }> {
  const binary = anvilBinaryPath();
  const child = spawn(binary, anvilArgs(opts, host), { stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) {
    // Spawn failed (e.g. EACCES); the reason arrives as an 'error' event.
    const [err] = (await once(child, 'error')) as [Error];
    throw new Error(`anvil failed to start (${binary}): ${err.message}`);
  }
  // Later 'error' events (e.g. a failed kill) must not crash the process.
  child.on('error', (err) => opts.logger?.warn({ err: err.message }, 'anvil child process error'));
  const tail = new OutputTail();
  // Always drain the pipes, otherwise a chatty child blocks on a full pipe.
  child.stdout?.on('data', (chunk: Buffer) => tail.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => tail.push(chunk));
  // Not events.once(): that would reject on an 'error' event nobody awaits.
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return { child, tail, closed };
}

/** Start anvil and wait until it answers JSON-RPC. */
export async function startDevnet(opts: StartDevnetOptions): Promise<Devnet> {
  const host = opts.host ?? DEFAULT_HOST;
  // anvil silently skips dumping state if the parent directory is missing.
  if (opts.statePath !== undefined) mkdirSync(dirname(opts.statePath), { recursive: true });

  // Readiness is detected by polling the port, so something else already
  // listening there would be mistaken for our anvil. Refuse that up front.
  await assertPortFree(host, opts.port);
  const { child, tail, closed } = await spawnAnvil(opts, host);

  // 'exit' handlers must be synchronous; a plain SIGKILL is the best we can do there.
  const killOnParentExit = (): void => {
    child.kill('SIGKILL');
  };
  process.on('exit', killOnParentExit);

  const urlHost = host.includes(':') ? `[${host}]` : host; // IPv6 literal
  const rpcUrl = `http://${urlHost}:${opts.port}`;
  const failure = await waitUntilReady(child, rpcUrl);
  if (failure !== undefined) {
    await terminate(child);
    process.off('exit', killOnParentExit);
    // 'exit' can precede the last stdio data; give the pipes a moment to flush.
    await Promise.race([closed, sleep(PIPE_FLUSH_MS)]);
    throw new Error(`${failure}${formatTail(tail)}`);
  }

  let stopping = false;
  child.once('exit', (code, signal) => {
    process.off('exit', killOnParentExit);
    if (!stopping) opts.logger?.warn({ code, signal, output: tail.text() }, 'anvil devnet exited unexpectedly');
  });
  opts.logger?.info(
    { rpcUrl, pid: child.pid, chainId: opts.chainId ?? DEFAULT_CHAIN_ID, statePath: opts.statePath },
    'anvil devnet started',
  );

  let stopped: Promise<void> | undefined;
  return {
    rpcUrl,
    port: opts.port,
    stop(): Promise<void> {
      stopping = true;
      const statePath = opts.statePath;
      stopped ??= (statePath === undefined ? terminate(child) : stopKeepingState(child, rpcUrl, statePath)).finally(() =>
        process.off('exit', killOnParentExit),
      );
      return stopped;
    },
  };
}

function assertPortFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (err: NodeJS.ErrnoException) => {
      const reason = err.code === 'EADDRINUSE' ? 'is already in use (another `npm start`?)' : `cannot be bound (${err.message})`;
      reject(new DevnetUnavailable(`anvil: port ${port} on ${host} ${reason}: set DEVNET_PORT to a free port, ${WITHOUT_DEVNET}`));
    });
    server.listen(port, host, () => server.close(() => resolve()));
  });
}

/** A port that was free a moment ago on 127.0.0.1 (racy by nature; fine for tests/dev). */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : undefined;
      server.close((err) => {
        if (err) reject(err);
        else if (port === undefined) reject(new Error('findFreePort: could not determine port'));
        else resolve(port);
      });
    });
  });
}
