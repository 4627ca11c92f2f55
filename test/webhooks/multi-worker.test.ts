import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, TEST_APP_KEY, type TestApp } from '../helpers/app.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';
import { recordEvent } from '../../src/modules/events/outbox.js';
import { createWebhook, owner } from './fixtures.js';

const EVENTS = 1000;
const SLOW_FIRST = 40;
const SCRIPT = fileURLToPath(new URL('./worker-process.ts', import.meta.url));

interface Proc {
  child: ChildProcess;
  lines: string[];
}

function spawnWorker(t: TestApp): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'test',
      ...(t.database.databaseUrl ? { DATABASE_URL: t.database.databaseUrl } : {}),
      DATA_DIR: t.database.dataDir,
      APP_KEY: TEST_APP_KEY,
      DEVNET: 'off',
      LOG_LEVEL: 'warn',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_POLL_MS: '20',
      WEBHOOK_CONCURRENCY: '8',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  let buf = '';
  child.stdout.on('data', (c: Buffer) => {
    buf += c.toString();
    const parts = buf.split('\n');
    buf = parts.pop() ?? '';
    lines.push(...parts);
  });
  return { child, lines };
}

async function stopWorker(p: Proc): Promise<{ id: string; delivered: number; failedAttempts: number }> {
  const exited = new Promise<number | null>((resolve) => p.child.once('exit', resolve));
  p.child.kill('SIGTERM');
  expect(await exited).toBe(0);
  const line = p.lines.find((l) => l.startsWith('STATS '));
  return JSON.parse(line!.slice('STATS '.length));
}

// On PostgreSQL the claim is FOR UPDATE SKIP LOCKED; on SQLite the two processes take turns
// at the single writer (BEGIN IMMEDIATE). Either way no delivery may be sent twice.
describe('delivery workers in several processes', () => {
  let t: TestApp;
  let rx: Receiver;
  const procs: Proc[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    // A little latency per answer, so both processes have work in flight at the same time. The
    // first answers are slow: a worker holds at most its per-webhook share of one webhook's rows
    // and writes nothing while they wait, so the other process claims rows in that window even
    // on SQLite, where a busy worker's back-to-back commits could otherwise keep the single
    // writer lock from it the whole run (a CI run saw one process deliver all 1000).
    rx = await startReceiver((_req, n) => ({ status: 200, delayMs: n < SLOW_FIRST ? 250 : 2 }));
  });
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await rx?.close();
    await t?.close();
  });

  it(`two worker processes deliver each of ${EVENTS} events exactly once`, { timeout: 90_000 }, async () => {
    const o = await owner(t);
    const hook = await createWebhook(t, o, { url: `${rx.url}/many`, type: 'transaction', events: ['*'], signature: 'whsec_multi' });
    procs.push(spawnWorker(t), spawnWorker(t));
    await waitFor(() => procs.every((p) => p.lines.some((l) => l.startsWith('READY'))), { timeoutMs: 30_000, message: 'workers ready' });

    const now = Date.now();
    await t.store.db.transaction().execute(async (trx) => {
      for (let i = 1; i <= EVENTS; i++) {
        await recordEvent(trx, {
          userId: o.user.id,
          walletId: o.walletId,
          name: 'transaction.created',
          payload: {
            transaction_id: i,
            wallet_id: o.walletId,
            amount: '1.000000000000000000',
            token: 'ETH',
            tx_hash: `0x${i.toString(16).padStart(64, '0')}`,
            block_number: null,
            status: 'pending',
            type: 'transfer',
            created_at: '2025-01-01 00:00:00',
          },
          nowMs: now,
        });
      }
    });

    await waitFor(
      async () => {
        const row = await t.store.db
          .selectFrom('webhook_deliveries')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('webhook_id', '=', hook.id)
          .where('status', '=', 'delivered')
          .executeTakeFirstOrThrow();
        return Number(row.n) === EVENTS;
      },
      { timeoutMs: 60_000, message: `${EVENTS} deliveries delivered` },
    );
    const stats = await Promise.all(procs.map(stopWorker));

    const reqs = rx.to('/many');
    expect(reqs).toHaveLength(EVENTS);
    expect(new Set(reqs.map((r) => r.headers['x-webhook-delivery'])).size).toBe(EVENTS);
    const ids = reqs.map((r) => JSON.parse(r.body).data.transaction_id as number).sort((a, b) => a - b);
    expect(ids).toEqual(Array.from({ length: EVENTS }, (_, i) => i + 1));

    const rows = await t.store.db
      .selectFrom('webhook_deliveries')
      .select(['attempts', 'status'])
      .where('webhook_id', '=', hook.id)
      .execute();
    expect(rows).toHaveLength(EVENTS);
    expect(rows.every((r) => r.attempts === 1 && r.status === 'delivered')).toBe(true);
    const attempts = await t.store.db
      .selectFrom('webhook_attempts')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(attempts.n)).toBe(EVENTS);

    // Both processes took part, and together they delivered each event once.
    expect(stats.map((s) => s.delivered).reduce((a, b) => a + b, 0)).toBe(EVENTS);
    for (const s of stats) expect(s.delivered).toBeGreaterThan(0);
  });
});
