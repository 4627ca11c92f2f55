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

/**
 * One field of the item, in `transactionListItem`'s order: how its value is made from the row.
 * `int` an integer column or null; `text` a text column or null; `units` a stored base-unit
 * integer (or null) cut at `decimals`; `date` a millisecond time (or null) as its UTC second;
 * `json` SQL whose value is the field's JSON text already (never null); `list` comma-separated
 * text as an array of strings (as split(',') then JSON; escaping never writes a comma).
 */
type Field =
  | { key: string; int: string }
  | { key: string; text: string }
  | { key: string; units: string; decimals: string }
  | { key: string; date: string }
  | { key: string; json: string }
  | { key: string; list: string };

const ITEM_FIELDS: Field[] = [
  { key: 'id', int: 'tx.id' },
  { key: 'amount', units: 'tx.amount', decimals: 'wt.decimals' },
  { key: 'type', text: 'tx.type' },
  { key: 'status', text: 'tx.status' },
  { key: 'tx_hash', text: 'tx.tx_hash' },
  { key: 'block_number', int: 'tx.block_number' },
  { key: 'failure_reason', text: `CASE WHEN tx.status = 'failed' THEN tx.failure_reason END` },
  { key: 'replaced_hashes', list: 'tx.replaced_hashes' },
  { key: 'stuck', json: `CASE WHEN tx.status = 'pending' AND tx.stuck_at IS NOT NULL THEN 'true' ELSE 'false' END` },
  { key: 'data', text: 'tx.data' },
  { key: 'block_timestamp', date: 'tx.block_timestamp' },
  { key: 'block_hash', text: 'tx.block_hash' },
  { key: 'nonce', int: 'tx.nonce' },
  { key: 'gas', units: 'tx.gas', decimals: '0' },
  { key: 'gas_price', units: 'tx.gas_price', decimals: String(OUTPUT_DECIMALS) },
  { key: 'gas_used', units: 'tx.gas_used', decimals: '0' },
  { key: 'cumulative_gas_used', units: 'tx.cumulative_gas_used', decimals: '0' },
  { key: 'receipt_status', json: `CASE WHEN tx.receipt_status IS NULL THEN 'null' WHEN tx.receipt_status = 1 THEN 'true' ELSE 'false' END` },
  { key: 'symbol', text: 'wt.symbol' },
  { key: 'refund_id', int: 'tx.refund_id' },
  { key: 'payout_id', int: 'tx.payout_id' },
  { key: 'reference', text: 'tx.reference' },
  { key: 'created_at', date: 'tx.created_at' },
  { key: 'updated_at', date: 'tx.updated_at' },
];

/** The rows the expression formats exactly; `canonical` tests a stored base-unit integer. */
function exactRows(canonical: (c: string) => string): string {
  const inDateRange = (c: string) => `(${c} BETWEEN 0 AND ${LAST_FOUR_DIGIT_YEAR_MS})`;
  return [
    `wt.decimals BETWEEN 0 AND ${OUTPUT_DECIMALS}`,
    canonical('tx.amount'),
    ...['tx.gas', 'tx.gas_price', 'tx.gas_used', 'tx.cumulative_gas_used'].map((c) => `(${c} IS NULL OR ${canonical(c)})`),
    inDateRange('tx.created_at'),
    inDateRange('tx.updated_at'),
    `(tx.block_timestamp IS NULL OR ${inDateRange('tx.block_timestamp')})`,
  ].join(' AND ');
}

/** A `list` field's JSON text, given how the database quotes a text as a JSON string. */
function list(c: string, quote: (c: string) => string): string {
  return `CASE WHEN ${c} IS NULL OR ${c} = '' THEN '[]' ELSE '[' || replace(${quote(c)}, ',', '","') || ']' END`;
}

/** `formatStoredUnits18(c, d)` of the text `c` of a canonical non-negative integer and 0 ≤ `d` ≤ 18 (unquoted). */
function units18(c: string, d: string): string {
  return (
    `CASE WHEN length(${c}) > ${d} THEN substr(${c}, 1, length(${c}) - ${d}) || '.' || substr(${c}, length(${c}) - ${d} + 1) ` +
    `ELSE '0.' || substr('${ZEROS}', 1, ${d} - length(${c})) || ${c} END || substr('${ZEROS}', 1, ${OUTPUT_DECIMALS} - ${d})`
  );
}

/**
 * SQLite: one `json_object` per row (written in one pass in C; `||` of 24 pieces copied the
 * growing string at each step). Its text values are escaped as `json_quote` escapes them, its
 * integers written as they are, NULL as null, and a `json(…)` argument inserted as JSON.
 */
function sqliteItem(): string {
  const canonical = (c: string) => `(${c} = '0' OR (${c} GLOB '[1-9]*' AND NOT ${c} GLOB '*[^0-9]*'))`;
  const value = (f: Field): string => {
    if ('int' in f) return f.int;
    if ('text' in f) return f.text;
    if ('units' in f) return `CASE WHEN ${f.units} IS NULL THEN NULL ELSE ${units18(f.units, f.decimals)} END`;
    if ('date' in f) return `datetime(${f.date} / 1000, 'unixepoch')`;
    if ('list' in f) return `json(${list(f.list, (c) => `json_quote(${c})`)})`;
    return `json(${f.json})`;
  };
  return `CASE WHEN ${exactRows(canonical)} THEN json_object(${ITEM_FIELDS.map((f) => `'${f.key}', ${value(f)}`).join(', ')}) ELSE NULL END`;
}

/** PostgreSQL: the pieces concatenated, text through `to_json` (escaped as JSON.stringify escapes). */
function postgresItem(): string {
  // numeric(78, 0): an integer always, written without exponent or sign when non-negative.
  const canonical = (c: string) => `(${c} >= 0)`;
  const orNull = (c: string, json: string) => `CASE WHEN ${c} IS NULL THEN 'null' ELSE ${json} END`;
  const value = (f: Field): string => {
    if ('int' in f) return `coalesce((${f.int})::text, 'null')`;
    if ('text' in f) return orNull(f.text, `to_json(${f.text})::text`);
    if ('units' in f) return orNull(f.units, `'"' || ${units18(`(${f.units})::text`, f.decimals)} || '"'`);
    if ('date' in f) return orNull(f.date, `'"' || to_char(to_timestamp(${f.date} / 1000) at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '"'`);
    if ('list' in f) return list(f.list, (c) => `to_json(${c})::text`);
    return f.json;
  };
  const item = ITEM_FIELDS.map((f, i) => `'${i === 0 ? '{' : ','}"${f.key}":' || ${value(f)}`).join(' || ');
  return `CASE WHEN ${exactRows(canonical)} THEN ${item} || '}' ELSE NULL END`;
}

const ITEM_JSON = { sqlite: sqliteItem(), postgres: postgresItem() };

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
