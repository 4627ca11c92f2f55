/**
 * The service's log lines (src/logger.ts): the request summary line, built as a template string,
 * is byte for byte the line pino writes for the same fields; and standard output, written in
 * batches, loses no line: one alone arrives within the flush interval, every line of a burst
 * arrives, and so do the lines logged just before the process exits (process.exit included).
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { accessLine, createLogger, fixedLine } from '../../src/logger.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A destination keeping what is written. */
function capture(): { lines: string[]; write(s: string): void } {
  const lines: string[] = [];
  return { lines, write: (s: string) => void lines.push(s) };
}

const withoutTime = (line: string) => line.replace(/"time":"[^"]+"/, '"time":"T"');

describe('the request summary line', () => {
  const cases: Array<[string, string, string, number, number]> = [
    ['e8414520-4039-4763-ae67-0620d742f671', 'GET', '/api/wallet/:wallet/balance', 200, 0],
    ['checkout-7f3a:retry#2', 'POST', '/api/wallet/:wallet/transaction/create', 422, 17],
    ['quote " back \\ slash', 'DELETE', '/api/odd "path"/\u00e9\u2028\u0007', 404, 12345],
  ];

  it('is the line pino writes for the same fields, escapes included', () => {
    const mine = capture();
    const log = createLogger('info', mine);
    const write = accessLine(log, 'request_id');
    const theirs = capture();
    const reference = pino(
      { level: 'info', base: { service: 'wallet-service' }, timestamp: pino.stdTimeFunctions.isoTime },
      theirs as never,
    );
    for (const [id, method, route, status, ms] of cases) {
      write(id, method, route, status, ms);
      reference.info({ request_id: id, method, route, status, ms }, 'request');
    }
    expect(mine.lines).toHaveLength(cases.length);
    expect(mine.lines.map(withoutTime)).toEqual(theirs.lines.map(withoutTime));
    const parsed = mine.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed[2]).toMatchObject({
      level: 30,
      service: 'wallet-service',
      request_id: 'quote " back \\ slash',
      route: '/api/odd "path"/\u00e9\u2028\u0007',
      status: 404,
      ms: 12345,
      msg: 'request',
    });
    expect(Math.abs(Date.parse(parsed[0]!.time as string) - Date.now())).toBeLessThan(5_000);
  });

  it('is not written when the level is above info', () => {
    const mine = capture();
    const log = createLogger('warn', mine);
    accessLine(log, 'request_id')('id', 'GET', '/api/health', 200, 1);
    log.warn('kept');
    expect(mine.lines.map((l) => JSON.parse(l).msg)).toEqual(['kept']);
  });
});

describe("a fixed line (a hot path's line built as a template string)", () => {
  it("is the line pino writes for a child logger's bindings and the same fields, null and escapes included", () => {
    const mine = capture();
    const child = createLogger('info', mine as never).child({ component: 'deliveries', worker: 'host:1:"ab"' });
    const write = fixedLine(child, 'info', 'webhook delivered', ['delivery', 'webhook_id', 'status_code', 'ok', 'event']);
    const theirs = capture();
    const reference = pino(
      { level: 'info', base: { service: 'wallet-service' }, timestamp: pino.stdTimeFunctions.isoTime },
      theirs as never,
    ).child({ component: 'deliveries', worker: 'host:1:"ab"' });
    const rows: Array<[string, number, number | null, boolean, string]> = [
      ['0b4e3c1a-7d2f-4e5a-9c8b-1a2b3c4d5e6f', 7, 200, true, 'wallet.updated'],
      ['tab\there \u2028', 12, null, false, 'quote " back \\ slash'],
    ];
    for (const [delivery, webhookId, status, ok, event] of rows) {
      write(delivery, webhookId, status, ok, event);
      reference.info({ delivery, webhook_id: webhookId, status_code: status, ok, event }, 'webhook delivered');
    }
    expect(mine.lines.map(withoutTime)).toEqual(theirs.lines.map(withoutTime));
    expect(JSON.parse(mine.lines[1]!)).toMatchObject({
      level: 30,
      service: 'wallet-service',
      component: 'deliveries',
      worker: 'host:1:"ab"',
      delivery: 'tab\there \u2028',
      status_code: null,
      ok: false,
      msg: 'webhook delivered',
    });
  });

  it('is written at its own level only when that level is enabled', () => {
    const mine = capture();
    const log = createLogger('warn', mine);
    fixedLine(log, 'info', 'quiet', ['n'])(1);
    fixedLine(log, 'warn', 'loud', ['n'])(2);
    expect(mine.lines.map((l) => JSON.parse(l))).toMatchObject([{ level: 40, msg: 'loud', n: 2 }]);
  });

  it('cannot have a field that the logger redacts', () => {
    const log = createLogger('info', capture());
    for (const name of ['secret', 'signature', 'headers', 'private_key', 'token', 'authorization']) {
      expect(() => fixedLine(log, 'info', 'x', ['id', name])).toThrow(`a fixed log line cannot have the redacted field ${name}`);
    }
  });
});

/** Runs a script with the service's logger on standard output; its stdout lines with their arrival times. */
function runLogging(
  script: string,
): Promise<{ code: number | null; lines: Array<{ at: number; line: Record<string, unknown> }>; started: number }> {
  const body = `import { createLogger } from ${JSON.stringify(join(ROOT, 'src', 'logger.ts'))};\nconst log = createLogger('info');\n${script}`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', body], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const started = Date.now();
  const lines: Array<{ at: number; line: Record<string, unknown> }> = [];
  let rest = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop()!;
    for (const p of parts) lines.push({ at: Date.now(), line: JSON.parse(p) as Record<string, unknown> });
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, lines, started })));
}

describe('standard output in batches', () => {
  it('a line alone arrives within the flush interval, long before the process ends', async () => {
    const r = await runLogging(`log.info({ n: 1 }, 'alone'); setTimeout(() => log.info('end'), 3000);`);
    expect(r.code).toBe(0);
    expect(r.lines.map((l) => l.line.msg)).toEqual(['alone', 'end']);
    // 'end' is logged 3 s after 'alone': 'alone' came well before it.
    expect(r.lines[1]!.at - r.lines[0]!.at).toBeGreaterThan(2_000);
  }, 30_000);

  it('the lines logged just before process.exit arrive while the thread pool is busy', async () => {
    // Four long pbkdf2 jobs fill libuv's thread pool: the write handed on at exit waits behind
    // them, and must still be done before the process ends.
    const r = await runLogging(
      `import { pbkdf2 } from 'node:crypto'; log.info({ n: 1 }, 'before'); for (let i = 0; i < 4; i++) pbkdf2('x', 'y', 2_000_000, 32, 'sha256', () => undefined); log.info({ n: 2 }, 'at exit'); process.exit(0);`,
    );
    expect(r.code).toBe(0);
    expect(r.lines.map((l) => l.line.msg)).toEqual(['before', 'at exit']);
  }, 30_000);

  it('every line of a burst arrives, in order, and the last ones before process.exit', async () => {
    const r = await runLogging(
      `for (let i = 0; i < 20000; i++) log.info({ n: i }, 'burst'); log.fatal({ n: 20000 }, 'last words'); process.exit(3);`,
    );
    expect(r.code).toBe(3);
    expect(r.lines).toHaveLength(20_001);
    expect(r.lines.map((l) => l.line.n)).toEqual(Array.from({ length: 20_001 }, (_, i) => i));
    expect(r.lines.at(-1)!.line).toMatchObject({ level: 60, msg: 'last words' });
  }, 30_000);
});
