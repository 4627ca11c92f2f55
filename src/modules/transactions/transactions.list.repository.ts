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
import { ITEM_JSON_EXPRESSION, STORED_ITEM_JSON, withChecksummedAddresses } from './transactions.item-json.repository.js';

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
  /** Migration 024: why every endpoint refused its re-send, else null. */
  stuck_reason: string | null;
  symbol: string;
  decimals: number;
  refund_id: number | null;
  payout_id: number | null;
  reference: string | null;
  log_index: number;
  batch_index: number | null;
  /** Migration 035: the deposit address a receipt reached (absent: null). */
  deposit_address_id?: number | null;
  /** Migration 039: why it was held for approval (`TxRecord`'s `held_*`), base units as stored. */
  held_rule: string | null;
  held_limit: string | null;
  held_symbol: string | null;
  held_decimals: number | null;
  /** As stored: checksummed by the view. */
  from_address: string;
  to_address: string;
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
  'tx.log_index',
  'tx.stuck_reason',
  'tx.batch_index',
  'tx.deposit_address_id',
  'tx.from_address',
  'tx.to_address',
  'tx.held_rule',
  'tx.held_limit',
  'tx.held_symbol',
  'tx.held_decimals',
] as const;

function listRows(db: Executor, walletId: number) {
  return db
    .selectFrom('transactions as tx')
    .innerJoin('wallet_tokens as wt', 'wt.id', 'tx.token_id')
    .select(LIST_COLUMNS)
    .where('tx.wallet_id', '=', walletId);
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
    log_index: Number(a[25]),
    stuck_reason: a[26] as string | null,
    batch_index: a[27] === null ? null : Number(a[27]),
    deposit_address_id: a[28] === null ? null : Number(a[28]),
    from_address: a[29] as string,
    to_address: a[30] as string,
    held_rule: a[31] as string | null,
    held_limit: a[32] as string | null,
    held_symbol: a[33] as string | null,
    held_decimals: a[34] === null ? null : Number(a[34]),
  };
}

/**
 * Rows whose sequence number is in (low, high], newest first: one index range scan. Read as
 * arrays (on SQLite better-sqlite3 then builds no object per row, the larger part of the
 * statement's cost at 1,000 rows) and made into ListRow objects here.
 */
async function listSeqRange(db: Executor, walletId: number, symbolKey: string | null, low: number, high: number): Promise<ListRow[]> {
  const rows =
    symbolKey === null
      ? await rangeAll.executeArrays(db, walletId, low, high)
      : await rangeSymbol.executeArrays(db, walletId, symbolKey, low, high);
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

// Each item's JSON is written by the database (transactions.item-json.repository.ts): on SQLite the stored
// `item_json`, on PostgreSQL the expression evaluated in the query.
const ITEM_JSON = { sqlite: `tx.${STORED_ITEM_JSON}`, postgres: ITEM_JSON_EXPRESSION.postgres };

function jsonRows(db: Executor, walletId: number) {
  const itemJson = sql<string | null>`${sql.raw(ITEM_JSON[dialectOf(db).driver])}`;
  return db
    .selectFrom('transactions as tx')
    .innerJoin('wallet_tokens as wt', 'wt.id', 'tx.token_id')
    .select(itemJson.as('j'))
    .where('tx.wallet_id', '=', walletId);
}

const rangeAllJson = prepare((db: Executor, walletId: number, low: number, high: number) =>
  jsonRows(db, walletId).where('tx.seq', '>', low).where('tx.seq', '<=', high).orderBy('tx.seq', 'desc'),
);

const rangeSymbolJson = prepare((db: Executor, walletId: number, symbolKey: string, low: number, high: number) =>
  jsonRows(db, walletId)
    .where('tx.symbol_key', '=', symbolKey)
    .where('tx.symbol_seq', '>', low)
    .where('tx.symbol_seq', '<=', high)
    .orderBy('tx.symbol_seq', 'desc'),
);

/**
 * `listPage` with each item as its JSON, written by the database, its addresses checksummed here;
 * null when a row of the page is one the expression does not format exactly (then `listPage`
 * serves it).
 */
export async function listPageJson(db: Executor, walletId: number, q: ListQuery): Promise<JsonListPage | null> {
  const r = await pageRange(db, walletId, q);
  const rows =
    r.high <= 0
      ? []
      : r.symbolKey === null
        ? await rangeAllJson.executeArrays(db, walletId, r.low, r.high)
        : await rangeSymbolJson.executeArrays(db, walletId, r.symbolKey, r.low, r.high);
  const json = new Array<string>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const j = rows[i]![0] as string | null;
    const item = j === null ? null : withChecksummedAddresses(j);
    if (item === null) return null;
    json[i] = item;
  }
  return { json, page: q.page, limit: q.limit, total: r.total, pages: r.pages };
}

/** A row of the CSV export (exports.service.ts): amounts as stored, times epoch milliseconds. */
export interface ExportRow {
  id: number;
  created_at: number;
  type: string;
  status: string;
  symbol: string;
  decimals: number;
  amount: string;
  fee_paid: string | null;
  gas_used: string | null;
  gas_price: string | null;
  from_address: string;
  to_address: string;
  tx_hash: string | null;
  block_number: number | null;
  reference: string | null;
}

/** Rows an export reads per query: a page of the keyset walk, its memory bound. */
export const EXPORT_PAGE_ROWS = 1000;

/**
 * The list's rows (those numbered: `seq` above 0, so never an orphaned receipt) with id above
 * `afterId` and `created_at` in [fromMs, toMs), oldest first, a page at a time: one range scan
 * of the (wallet_id, id) index. By id rather than by `seq`, which a reorg renumbers.
 */
const exportRange = prepare((db: Executor, walletId: number, afterId: number, fromMs: number, toMs: number) =>
  db
    .selectFrom('transactions as tx')
    .innerJoin('wallet_tokens as wt', 'wt.id', 'tx.token_id')
    .select([
      'tx.id',
      'tx.created_at',
      'tx.type',
      'tx.status',
      'wt.symbol',
      'wt.decimals',
      'tx.amount',
      'tx.fee_paid',
      'tx.gas_used',
      'tx.gas_price',
      'tx.from_address',
      'tx.to_address',
      'tx.tx_hash',
      'tx.block_number',
      'tx.reference',
    ])
    .where('tx.wallet_id', '=', walletId)
    .where('tx.id', '>', afterId)
    .where('tx.seq', '>', 0)
    .where('tx.created_at', '>=', fromMs)
    .where('tx.created_at', '<', toMs)
    .orderBy('tx.id', 'asc')
    .limit(EXPORT_PAGE_ROWS),
);

/** The next page of the export after `afterId` (empty at the end). */
export async function exportPage(db: Executor, walletId: number, afterId: number, fromMs: number, toMs: number): Promise<ExportRow[]> {
  const rows = await exportRange.executeArrays(db, walletId, afterId, fromMs, toMs);
  return rows.map((a) => ({
    id: Number(a[0]),
    created_at: Number(a[1]),
    type: a[2] as string,
    status: a[3] as string,
    symbol: a[4] as string,
    decimals: Number(a[5]),
    amount: a[6] as string,
    fee_paid: a[7] as string | null,
    gas_used: a[8] as string | null,
    gas_price: a[9] as string | null,
    from_address: a[10] as string,
    to_address: a[11] as string,
    tx_hash: a[12] as string | null,
    block_number: a[13] === null ? null : Number(a[13]),
    reference: a[14] as string | null,
  }));
}
