/**
 * The transaction list: newest first, page N found by its sequence range (`seq`, and
 * `symbol_seq` with a token filter: both dense per wallet, migration 002), so every page costs
 * one index range scan whatever its number.
 *
 * A list page can be 1,000 rows, so this path is kept cheap per row (BENCHMARKS.md, "Transaction
 * list"): it selects only the columns a list item shows (not the ~40 of a `TxRecord`, and
 * without the join to `wallets`), leaves amounts as the stored decimal strings (the view
 * formats them without a bigint round trip), and its queries are compiled once per dialect
 * (src/db/prepared.ts). Orphaned receipts have sequence 0, so no range here ever holds one.
 *
 * Numbering a new row (`insertTransaction` in transactions.repository.ts, under the wallet lock)
 * draws the same highest sequence number inside its INSERT.
 */
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';
import { dialectOf } from '../../db/dialect.js';
import { prepare } from '../../db/prepared.js';
import { OUTPUT_DECIMALS } from '../../lib/money.js';
import { LAST_FOUR_DIGIT_YEAR_MS } from '../../lib/time.js';

export interface ListQuery {
  page: number;
  limit: number;
  token?: string;
}

/** A list row as stored: amounts are decimal strings of base units, times epoch milliseconds. */
export interface ListRow {
  id: number;
  type: string;
  status: string;
  amount: string;
  tx_hash: string | null;
  block_number: number | null;
  block_timestamp: number | null;
  block_hash: string | null;
  nonce: number | null;
  gas: string | null;
  gas_price: string | null;
  gas_used: string | null;
  cumulative_gas_used: string | null;
  receipt_status: number | null;
  created_at: number;
  updated_at: number;
  data: string | null;
  failure_reason: string | null;
  /** Comma-separated, oldest first (migration 006); null when never replaced. */
  replaced_hashes: string | null;
  stuck_at: number | null;
  symbol: string;
  decimals: number;
  refund_id: number | null;
  payout_id: number | null;
  reference: string | null;
}

export interface ListPage {
  items: ListRow[];
  page: number;
  limit: number;
  total: number;
  pages: number;
}

/** A page whose items are their JSON already (`listPageJson`). */
export interface JsonListPage extends Omit<ListPage, 'items'> {
  json: string[];
}

/** The columns of a list row, in the order `toListRow` reads them. */
const LIST_COLUMNS = [
  'tx.id',
  'tx.type',
  'tx.status',
  'tx.amount',
  'tx.tx_hash',
  'tx.block_number',
  'tx.block_timestamp',
  'tx.block_hash',
  'tx.nonce',
  'tx.gas',
  'tx.gas_price',
  'tx.gas_used',
  'tx.cumulative_gas_used',
  'tx.receipt_status',
  'tx.created_at',
  'tx.updated_at',
  'tx.data',
  'tx.failure_reason',
  'tx.replaced_hashes',
  'tx.stuck_at',
  'wt.symbol',
  'wt.decimals',
  'tx.refund_id',
  'tx.payout_id',
  'tx.reference',
] as const;

function listRows(db: Executor, walletId: number) {
  return db.selectFrom('transactions as tx').innerJoin('wallet_tokens as wt', 'wt.id', 'tx.token_id').select(LIST_COLUMNS).where('tx.wallet_id', '=', walletId);
}

/** Rows with `seq` in (low, high], newest first. */
const rangeAll = prepare((db: Executor, walletId: number, low: number, high: number) =>
  listRows(db, walletId).where('tx.seq', '>', low).where('tx.seq', '<=', high).orderBy('tx.seq', 'desc'),
);

/** Rows of one symbol with `symbol_seq` in (low, high], newest first. */
const rangeSymbol = prepare((db: Executor, walletId: number, symbolKey: string, low: number, high: number) =>
  listRows(db, walletId)
    .where('tx.symbol_key', '=', symbolKey)
    .where('tx.symbol_seq', '>', low)
    .where('tx.symbol_seq', '<=', high)
    .orderBy('tx.symbol_seq', 'desc'),
);

const lastSeq = prepare((db: Executor, walletId: number) =>
  db.selectFrom('transactions').select('seq').where('wallet_id', '=', walletId).orderBy('seq', 'desc').limit(1),
);

const lastSymbolSeq = prepare((db: Executor, walletId: number, symbolKey: string) =>
  db
    .selectFrom('transactions')
    .select('symbol_seq')
    .where('wallet_id', '=', walletId)
    .where('symbol_key', '=', symbolKey)
    .orderBy('symbol_seq', 'desc')
    .limit(1),
);

/** Rows in the list (all, or one symbol): the highest sequence number, since it is dense. */
async function countRows(db: Executor, walletId: number, symbolKey: string | null): Promise<number> {
  if (symbolKey === null) {
    const r = await lastSeq.executeTakeFirst(db, walletId);
    return r ? Number(r.seq) : 0;
  }
  const r = await lastSymbolSeq.executeTakeFirst(db, walletId, symbolKey);
  return r ? Number(r.symbol_seq) : 0;
}

/** A row as `executeArrays` gives it: the values of LIST_COLUMNS, in that order. */
function toListRow(a: unknown[]): ListRow {
  return {
    id: a[0] as number,
    type: a[1] as string,
    status: a[2] as string,
    amount: a[3] as string,
    tx_hash: a[4] as string | null,
    block_number: a[5] as number | null,
    block_timestamp: a[6] as number | null,
    block_hash: a[7] as string | null,
    nonce: a[8] as number | null,
    gas: a[9] as string | null,
    gas_price: a[10] as string | null,
    gas_used: a[11] as string | null,
    cumulative_gas_used: a[12] as string | null,
    receipt_status: a[13] as number | null,
    created_at: a[14] as number,
    updated_at: a[15] as number,
    data: a[16] as string | null,
    failure_reason: a[17] as string | null,
    replaced_hashes: a[18] as string | null,
    stuck_at: a[19] as number | null,
    symbol: a[20] as string,
    decimals: a[21] as number,
    refund_id: a[22] === null ? null : Number(a[22]),
    payout_id: a[23] === null ? null : Number(a[23]),
    reference: a[24] as string | null,
  };
}

/**
 * Rows whose sequence number is in (low, high], newest first: one index range scan. Read as
 * arrays (on SQLite better-sqlite3 then builds no object per row, the larger part of the
 * statement's cost at 1,000 rows) and made into ListRow objects here.
 */
async function listSeqRange(db: Executor, walletId: number, symbolKey: string | null, low: number, high: number): Promise<ListRow[]> {
  const rows = symbolKey === null ? await rangeAll.executeArrays(db, walletId, low, high) : await rangeSymbol.executeArrays(db, walletId, symbolKey, low, high);
  return rows.map(toListRow);
}

/** The sequence range of page `q.page` and the counts of its list (all, or one symbol). */
async function pageRange(db: Executor, walletId: number, q: ListQuery) {
  const symbolKey = q.token === undefined || q.token.trim() === '' ? null : q.token.trim().toUpperCase();
  const total = await countRows(db, walletId, symbolKey);
  // Newest first: page 1 holds sequence numbers (total - limit, total], page N the range below.
  const high = total - (q.page - 1) * q.limit;
  return { symbolKey, total, pages: Math.ceil(total / q.limit), low: Math.max(0, high - q.limit), high };
}

/**
 * Page `q.page` of the wallet's list, `q.limit` rows, newest first; `q.token` filters by symbol
 * (trimmed, case-insensitive; blank means none). A page past the end is empty.
 */
export async function listPage(db: Executor, walletId: number, q: ListQuery): Promise<ListPage> {
  const r = await pageRange(db, walletId, q);
  const items = r.high <= 0 ? [] : await listSeqRange(db, walletId, r.symbolKey, r.low, r.high);
  return { items, page: q.page, limit: q.limit, total: r.total, pages: r.pages };
}

// ---------------------------------------------------------------------------------------------
// Each item's JSON written by the database itself.
//
// A 1000-row page read as values costs the database driver's row loop plus, in JavaScript, a
// string per text value, an array (or object) per row, the item object and its JSON (and the
// garbage of all of them): about half of a long page's CPU on SQLite, more on PostgreSQL, whose
// driver parses every column of every row. Instead the item's JSON is one expression of the
// query, evaluated by the database: the same bytes `JSON.stringify(transactionListItem(row))`
// gives (a test holds the two equal over rows that exercise every field and escape, on both
// databases). SQLite's `json_quote` and PostgreSQL's `to_json(text)` escape as JSON.stringify does
// (every character but a lone surrogate, which neither database's UTF-8 can hold); amounts are
// the stored base-unit integers cut at their decimals; dates are the whole second in UTC. A row
// whose values fall outside what the expression formats exactly (decimals over 18, an amount not
// a canonical non-negative integer, a time outside years 1970–9999) gives NULL, and the page is
// read the usual way.
// ---------------------------------------------------------------------------------------------

const ZEROS = '0'.repeat(OUTPUT_DECIMALS);

/** The SQL of each piece of the item expression, per database. */
interface JsonDialect {
  /** A column as text (SQLite's `||` converts by itself). */
  text(c: string): string;
  /** A text column as a JSON string. */
  quote(c: string): string;
  /** A canonical non-negative integer (as `formatStoredUnits18` takes on its fast path). */
  canonical(c: string): string;
  /** `formatDateTime(ms)` of 0 ≤ ms ≤ the last millisecond of 9999, as a JSON string. */
  dateTime(c: string): string;
}

const SQLITE_JSON: JsonDialect = {
  text: (c) => c,
  quote: (c) => `json_quote(${c})`,
  // Stored amounts are text on SQLite.
  canonical: (c) => `(${c} = '0' OR (${c} GLOB '[1-9]*' AND NOT ${c} GLOB '*[^0-9]*'))`,
  dateTime: (c) => `'"' || datetime(${c} / 1000, 'unixepoch') || '"'`,
};

const POSTGRES_JSON: JsonDialect = {
  text: (c) => `(${c})::text`,
  quote: (c) => `to_json(${c})::text`,
  // numeric(78, 0): an integer always, written without exponent or sign when non-negative.
  canonical: (c) => `(${c} >= 0)`,
  dateTime: (c) => `'"' || to_char(to_timestamp(${c} / 1000) at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '"'`,
};

/** `formatStoredUnits18(c, d)` of a canonical non-negative `c` and 0 ≤ `d` ≤ 18, as a JSON string. */
function units18(j: JsonDialect, column: string, d: string): string {
  const c = j.text(column);
  return (
    `'"' || CASE WHEN length(${c}) > ${d} THEN substr(${c}, 1, length(${c}) - ${d}) || '.' || substr(${c}, length(${c}) - ${d} + 1) ` +
    `ELSE '0.' || substr('${ZEROS}', 1, ${d} - length(${c})) || ${c} END || substr('${ZEROS}', 1, ${OUTPUT_DECIMALS} - ${d}) || '"'`
  );
}

/** The item's JSON where the row is one the expression formats exactly, else NULL. */
function itemJsonSql(j: JsonDialect): string {
  const orNull = (c: string, json: string) => `CASE WHEN ${c} IS NULL THEN 'null' ELSE ${json} END`;
  const quoted = (c: string) => orNull(c, j.quote(c));
  const integer = (c: string) => `coalesce(${j.text(c)}, 'null')`;
  const inDateRange = (c: string) => `(${c} BETWEEN 0 AND ${LAST_FOUR_DIGIT_YEAR_MS})`;
  const exact = [
    `wt.decimals BETWEEN 0 AND ${OUTPUT_DECIMALS}`,
    j.canonical('tx.amount'),
    ...['tx.gas', 'tx.gas_price', 'tx.gas_used', 'tx.cumulative_gas_used'].map((c) => `(${c} IS NULL OR ${j.canonical(c)})`),
    inDateRange('tx.created_at'),
    inDateRange('tx.updated_at'),
    `(tx.block_timestamp IS NULL OR ${inDateRange('tx.block_timestamp')})`,
  ].join(' AND ');
  // `JSON.stringify(transactionListItem(row))`, field for field in its order.
  const item = [
    `'{"id":' || ${j.text('tx.id')}`,
    `',"amount":' || ${units18(j, 'tx.amount', 'wt.decimals')}`,
    `',"type":' || ${j.quote('tx.type')}`,
    `',"status":' || ${j.quote('tx.status')}`,
    `',"tx_hash":' || ${quoted('tx.tx_hash')}`,
    `',"block_number":' || ${integer('tx.block_number')}`,
    `',"failure_reason":' || CASE WHEN tx.status = 'failed' AND tx.failure_reason IS NOT NULL THEN ${j.quote('tx.failure_reason')} ELSE 'null' END`,
    // Comma-separated hashes: each quoted, as split(',') then JSON (escaping never writes a comma).
    `',"replaced_hashes":' || CASE WHEN tx.replaced_hashes IS NULL OR tx.replaced_hashes = '' THEN '[]' ELSE '[' || replace(${j.quote('tx.replaced_hashes')}, ',', '","') || ']' END`,
    `',"stuck":' || CASE WHEN tx.status = 'pending' AND tx.stuck_at IS NOT NULL THEN 'true' ELSE 'false' END`,
    `',"data":' || ${quoted('tx.data')}`,
    `',"block_timestamp":' || ${orNull('tx.block_timestamp', j.dateTime('tx.block_timestamp'))}`,
    `',"block_hash":' || ${quoted('tx.block_hash')}`,
    `',"nonce":' || ${integer('tx.nonce')}`,
    `',"gas":' || ${orNull('tx.gas', units18(j, 'tx.gas', '0'))}`,
    `',"gas_price":' || ${orNull('tx.gas_price', units18(j, 'tx.gas_price', String(OUTPUT_DECIMALS)))}`,
    `',"gas_used":' || ${orNull('tx.gas_used', units18(j, 'tx.gas_used', '0'))}`,
    `',"cumulative_gas_used":' || ${orNull('tx.cumulative_gas_used', units18(j, 'tx.cumulative_gas_used', '0'))}`,
    `',"receipt_status":' || CASE WHEN tx.receipt_status IS NULL THEN 'null' WHEN tx.receipt_status = 1 THEN 'true' ELSE 'false' END`,
    `',"symbol":' || ${j.quote('wt.symbol')}`,
    `',"refund_id":' || ${integer('tx.refund_id')}`,
    `',"payout_id":' || ${integer('tx.payout_id')}`,
    `',"reference":' || ${quoted('tx.reference')}`,
    `',"created_at":' || ${j.dateTime('tx.created_at')}`,
    `',"updated_at":' || ${j.dateTime('tx.updated_at')} || '}'`,
  ].join(' || ');
  return `CASE WHEN ${exact} THEN ${item} ELSE NULL END`;
}

const ITEM_JSON = { sqlite: itemJsonSql(SQLITE_JSON), postgres: itemJsonSql(POSTGRES_JSON) };

function jsonRows(db: Executor, walletId: number) {
  const itemJson = sql<string | null>`${sql.raw(ITEM_JSON[dialectOf(db).driver])}`;
  return db.selectFrom('transactions as tx').innerJoin('wallet_tokens as wt', 'wt.id', 'tx.token_id').select(itemJson.as('j')).where('tx.wallet_id', '=', walletId);
}

const rangeAllJson = prepare((db: Executor, walletId: number, low: number, high: number) =>
  jsonRows(db, walletId).where('tx.seq', '>', low).where('tx.seq', '<=', high).orderBy('tx.seq', 'desc'),
);

const rangeSymbolJson = prepare((db: Executor, walletId: number, symbolKey: string, low: number, high: number) =>
  jsonRows(db, walletId).where('tx.symbol_key', '=', symbolKey).where('tx.symbol_seq', '>', low).where('tx.symbol_seq', '<=', high).orderBy('tx.symbol_seq', 'desc'),
);

/**
 * `listPage` with each item as its JSON, written by the database; null when a row of the page is
 * one the expression does not format exactly (then `listPage` serves it).
 */
export async function listPageJson(db: Executor, walletId: number, q: ListQuery): Promise<JsonListPage | null> {
  const r = await pageRange(db, walletId, q);
  const rows =
    r.high <= 0 ? [] : r.symbolKey === null ? await rangeAllJson.executeArrays(db, walletId, r.low, r.high) : await rangeSymbolJson.executeArrays(db, walletId, r.symbolKey, r.low, r.high);
  const json: string[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const j = rows[i]![0] as string | null;
    if (j === null) return null;
    json[i] = j;
  }
  return { json, page: q.page, limit: q.limit, total: r.total, pages: r.pages };
}
