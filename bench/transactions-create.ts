/**
 * Benchmark: the cost of SQLite `synchronous=FULL` (the service's setting) against NORMAL on
 * transfer creation, in the same run.
 *
 *   npm run bench:create [-- --count 200 --rounds 3]
 *
 * For each setting and round: a fresh SQLite database (in the OS temporary folder, on disk),
 * a fresh anvil, the real service (HTTP, auth, wallet lock, signing, outbox, broadcast; no
 * workers, so the watcher does not compete), a wallet holding plenty of ETH, then `--count`
 * sequential `POST /transaction/create` of 1 wei each, timed one by one. Settings alternate
 * round by round (FULL, NORMAL, FULL, ...) so drift on the machine hits both. NORMAL is set
 * on the store's single connection after start (`PRAGMA synchronous = NORMAL`).
 *
 * Prints a markdown table (median and p95 latency, creates per second, ratio FULL / NORMAL)
 * and writes it to bench/results/transactions-create.md. Never run by `npm test`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { percentile, positiveInt } from './common.js';
import { startTestApp } from '../test/helpers/app.js';
import { startTestChain } from '../test/helpers/chain.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'transactions-create.md');
const RECIPIENT = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720';

const { values: flags } = parseArgs({ options: { count: { type: 'string', default: '200' }, rounds: { type: 'string', default: '3' } } });
const count = positiveInt('count', flags.count);
const rounds = positiveInt('rounds', flags.rounds);

type Sync = 'FULL' | 'NORMAL';

/** One round: fresh database and chain, `count` sequential creates; the latency of each (ms). */
async function round(sync: Sync): Promise<number[]> {
  delete process.env.DATABASE_URL; // SQLite only: the setting does not exist on PostgreSQL
  // No watcher confirms them, so lift the cap on unconfirmed transactions of a wallet.
  const t = await startTestApp({ workers: false, env: { MAX_PENDING_PER_WALLET: '100000' } });
  const chain = await startTestChain();
  try {
    if (sync === 'NORMAL') await sql.raw('PRAGMA synchronous = NORMAL').execute(t.store.db);
    const mode = await sql.raw<{ synchronous: number }>('PRAGMA synchronous').execute(t.store.db);
    if (mode.rows[0]?.synchronous !== (sync === 'FULL' ? 2 : 1)) throw new Error(`synchronous is not ${sync}`);
    await chain.register(t);
    const user = await t.createUser();
    const network = await t.store.db.selectFrom('networks').select('id').executeTakeFirstOrThrow();
    const w = await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'bench', network_id: network.id } });
    await chain.setBalance(w.body.data.address, 10n ** 24n);
    const times: number[] = [];
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      const res = await t.request('POST', `/api/wallet/${w.body.data.id}/transaction/create`, {
        token: user.token,
        body: { amount: '0.000000000000000001', token: 'ETH', address: RECIPIENT },
      });
      times.push(performance.now() - started);
      if (res.status !== 200) throw new Error(`create ${i}: ${res.status} ${res.text}`);
    }
    return times;
  } finally {
    await t.close();
    await chain.stop();
  }
}

function summary(all: number[]) {
  const sorted = [...all].sort((a, b) => a - b);
  const total = all.reduce((a, b) => a + b, 0);
  return { median: percentile(sorted, 50), p95: percentile(sorted, 95), perSecond: (all.length / total) * 1000 };
}

async function main(): Promise<void> {
  const times: Record<Sync, number[]> = { FULL: [], NORMAL: [] };
  for (let r = 0; r < rounds; r++) {
    for (const sync of ['FULL', 'NORMAL'] as const) {
      times[sync].push(...(await round(sync)));
      console.error(`round ${r + 1}/${rounds} ${sync} done`);
    }
  }
  const full = summary(times.FULL);
  const normal = summary(times.NORMAL);
  const lines = [
    `Transfer creation, ${rounds} rounds × ${count} sequential creates per setting (SQLite on disk, anvil, no workers)`,
    '',
    '| synchronous | median ms | p95 ms | creates/s |',
    '|---|---:|---:|---:|',
    `| NORMAL | ${normal.median.toFixed(2)} | ${normal.p95.toFixed(2)} | ${normal.perSecond.toFixed(1)} |`,
    `| FULL | ${full.median.toFixed(2)} | ${full.p95.toFixed(2)} | ${full.perSecond.toFixed(1)} |`,
    '',
    `FULL / NORMAL: median latency × ${(full.median / normal.median).toFixed(3)}, throughput × ${(full.perSecond / normal.perSecond).toFixed(3)}`,
  ];
  const table = lines.join('\n');
  console.log(table);
  mkdirSync(dirname(RESULTS_FILE), { recursive: true });
  writeFileSync(RESULTS_FILE, `${table}\n`);
}

await main();
