/**
 * The baseline of bench/export.ts, in a process of its own: the export's rows read with the bare
 * driver and written to a file, no service, no formatting. On SQLite one SELECT iterated
 * (better-sqlite3 `iterate`, raw rows); on PostgreSQL the same SELECT in keyset pages of 1,000
 * by id (node-postgres has no cursor without `pg-cursor`, and one SELECT would hold every row).
 * Each row's values joined by commas, written with backpressure. Prints
 * `{"rows", "seconds", "idleRssMiB", "peakRssMiB"}`.
 *
 *   node --import tsx bench/export-bare.ts sqlite DATA_DIR WALLET_ID OUT_FILE
 *   node --import tsx bench/export-bare.ts postgres DATABASE_URL WALLET_ID OUT_FILE
 */
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';

const COLUMNS = `tx.id, tx.created_at, tx.type, tx.status, wt.symbol, tx.amount, tx.fee_paid, tx.from_address, tx.to_address,
  tx.tx_hash, tx.block_number, tx.reference FROM transactions tx JOIN wallet_tokens wt ON wt.id = tx.token_id`;
const PAGE = 1000;
const CHUNK_CHARS = 64 * 1024;

const [driver, where, walletArg, outFile] = process.argv.slice(2);
if ((driver !== 'sqlite' && driver !== 'postgres') || !where || !walletArg || !outFile)
  throw new Error('usage: export-bare.ts sqlite|postgres DATA_DIR|DATABASE_URL WALLET_ID OUT_FILE');
const walletId = Number(walletArg);

const rssMiB = (field: 'VmRSS' | 'VmHWM') =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

/** Writes `s`, waiting for the file to drain when its buffer is full. */
async function write(out: WriteStream, s: string): Promise<void> {
  if (!out.write(s)) await once(out, 'drain');
}

async function sqlite(out: WriteStream): Promise<number> {
  const db = new Database(join(where!, 'wallet.sqlite'), { readonly: true });
  const stmt = db.prepare(`SELECT ${COLUMNS} WHERE tx.wallet_id = ? AND tx.seq > 0 ORDER BY tx.id`).raw();
  let rows = 0;
  let chunk = '';
  for (const r of stmt.iterate(walletId) as Iterable<unknown[]>) {
    chunk += `${r.join(',')}\r\n`;
    rows++;
    if (chunk.length >= CHUNK_CHARS) {
      await write(out, chunk);
      chunk = '';
    }
  }
  await write(out, chunk);
  db.close();
  return rows;
}

async function postgres(out: WriteStream): Promise<number> {
  const client = new pg.Client({ connectionString: where });
  await client.connect();
  let rows = 0;
  for (let after = 0; ;) {
    const page = await client.query({
      text: `SELECT ${COLUMNS} WHERE tx.wallet_id = $1 AND tx.seq > 0 AND tx.id > $2 ORDER BY tx.id LIMIT ${PAGE}`,
      values: [walletId, after],
      rowMode: 'array',
    });
    let chunk = '';
    for (const r of page.rows as unknown[][]) chunk += `${r.join(',')}\r\n`;
    await write(out, chunk);
    rows += page.rows.length;
    if (page.rows.length < PAGE) break;
    after = Number((page.rows.at(-1) as unknown[])[0]);
  }
  await client.end();
  return rows;
}

const idleRssMiB = rssMiB('VmRSS');
const out = createWriteStream(outFile);
const t0 = performance.now();
const rows = driver === 'sqlite' ? await sqlite(out) : await postgres(out);
out.end();
await once(out, 'finish');
const seconds = (performance.now() - t0) / 1000;
process.stdout.write(`${JSON.stringify({ rows, seconds, idleRssMiB, peakRssMiB: rssMiB('VmHWM') })}\n`);
