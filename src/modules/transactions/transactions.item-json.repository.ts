/**
 * A list item's JSON, written by the database (the transaction list's long pages,
 * transactions.list.repository.ts).
 *
 * PostgreSQL evaluates the item expression in the query, in its own process. SQLite evaluates it
 * on the service's event loop, where it was most of a 1000-row page's cost (on the slowest
 * machine measured; BENCHMARKS.md, "A 1000-row page"); so on SQLite each row keeps
 * its item JSON in `transactions.item_json` (migration 023), written by triggers whenever a column
 * the item is made from changes (and for every row of a token whose symbol or decimals change),
 * and a page reads that text. Triggers, not the repositories' writes, keep it: no write path can
 * forget it, a previous version's writes included. The triggers' SQL is made here from the same
 * expression; at start (`syncStoredItemJson`, src/runtime.ts) a database whose triggers differ
 * from this version's (new, or made by another version) gets them again and every row's JSON
 * rewritten, in one transaction. A NULL `item_json` (a row the expression does not format
 * exactly) makes the page read the usual way, as before.
 */
import { sql } from 'kysely';
import { checksummedAddress } from '../../lib/address.js';
import type { AnyKysely } from '../../db/types.js';
import { OUTPUT_DECIMALS } from '../../lib/money.js';
import { LAST_FOUR_DIGIT_YEAR_MS } from '../../lib/time.js';
import { INTERNAL_LOG_BASE } from './transactions.repository.js';

// ---------------------------------------------------------------------------------------------
// Each item's JSON written by the database itself.
//
// A 1000-row page read as values costs the database driver's row loop plus, in JavaScript, a
// string per text value, an array (or object) per row, the item object and its JSON (and the
// garbage of all of them): about half of a long page's CPU on SQLite, more on PostgreSQL, whose
// driver parses every column of every row. Instead the item's JSON is one expression of the
// query, evaluated by the database: the same bytes `JSON.stringify(transactionListItem(row))`
// gives once the reader has checksummed its two addresses (`withChecksummedAddresses`; a test
// holds the two equal over rows that exercise every field and escape, on both databases).
// SQLite's `json_quote` and PostgreSQL's `to_json(text)` escape as JSON.stringify does
// (every character but a lone surrogate, which neither database's UTF-8 can hold); amounts are
// the stored base-unit integers cut at their decimals; dates are the whole second in UTC. A row
// whose values fall outside what the expression formats exactly (decimals over 18, an amount not
// a canonical non-negative integer, a time outside years 1970–9999, an address not 0x and 40 hex
// digits) gives NULL, and the page is read the usual way.
// ---------------------------------------------------------------------------------------------

const ZEROS = '0'.repeat(OUTPUT_DECIMALS);

/**
 * One field of the item, in `transactionListItem`'s order: how its value is made from the row.
 * `int` an integer column or null; `text` a text column or null; `units` a stored base-unit
 * integer (or null) cut at `decimals`; `date` a millisecond time (or null) as its UTC second;
 * `json` SQL whose value is the field's JSON text already (never null); `list` comma-separated
 * text as an array of strings (as split(',') then JSON; escaping never writes a comma); `object`
 * an object of the fields `object` when the SQL condition `when` holds, else null.
 */
type Field =
  | { key: string; int: string }
  | { key: string; text: string }
  | { key: string; units: string; decimals: string }
  | { key: string; date: string }
  | { key: string; json: string }
  | { key: string; list: string }
  | { key: string; object: Field[]; when: string };

/**
 * `from` and `to` close every item, as stored: neither database has the keccak hash of the EIP-55
 * checksum, so the page's reader puts it in (`withChecksummedAddresses`). The expression writes an
 * item only for a row whose two addresses are 0x and 40 hex digits (`exactRows`), so they are
 * always the item's last characters in one layout, `,"from":"0x…","to":"0x…"}`.
 */
const ADDRESS_FIELDS = [
  { key: 'from', text: 'tx.from_address' },
  { key: 'to', text: 'tx.to_address' },
];
const ADDRESS_CHARS = 42;
const FROM_KEY = ',"from":"';
const TO_KEY = '","to":"';
const END = '"}';
/** Counted back from the item's end: where `,"from":"` starts, where `from`'s address starts, where `to`'s does. */
const TAIL_CHARS = FROM_KEY.length + ADDRESS_CHARS + TO_KEY.length + ADDRESS_CHARS + END.length;
const FROM_AT = TAIL_CHARS - FROM_KEY.length;
const TO_AT = ADDRESS_CHARS + END.length;

/**
 * An item the expression wrote, with `from` and `to` checksummed (`checksummedAddress`, cached:
 * a page repeats few addresses); the same text when they were stored checksummed. Null for a
 * text without that ending (not this version's item): the page is then read the usual way.
 */
export function withChecksummedAddresses(item: string): string | null {
  const n = item.length;
  if (!item.startsWith(FROM_KEY, n - TAIL_CHARS) || !item.startsWith(TO_KEY, n - TO_AT - TO_KEY.length) || !item.endsWith(END)) return null;
  const from = item.slice(n - FROM_AT, n - FROM_AT + ADDRESS_CHARS);
  const to = item.slice(n - TO_AT, n - END.length);
  const checkedFrom = checksummedAddress(from);
  const checkedTo = checksummedAddress(to);
  if (checkedFrom === from && checkedTo === to) return item;
  return item.slice(0, n - FROM_AT) + checkedFrom + TO_KEY + checkedTo + END;
}

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
  { key: 'stuck_reason', text: `CASE WHEN tx.status = 'pending' THEN tx.stuck_reason END` },
  { key: 'data', text: 'tx.data' },
  { key: 'block_timestamp', date: 'tx.block_timestamp' },
  { key: 'block_hash', text: 'tx.block_hash' },
  { key: 'nonce', int: 'tx.nonce' },
  { key: 'gas', units: 'tx.gas', decimals: '0' },
  { key: 'gas_price', units: 'tx.gas_price', decimals: String(OUTPUT_DECIMALS) },
  { key: 'gas_used', units: 'tx.gas_used', decimals: '0' },
  { key: 'cumulative_gas_used', units: 'tx.cumulative_gas_used', decimals: '0' },
  {
    key: 'receipt_status',
    json: `CASE WHEN tx.receipt_status IS NULL THEN 'null' WHEN tx.receipt_status = 1 THEN 'true' ELSE 'false' END`,
  },
  { key: 'symbol', text: 'wt.symbol' },
  { key: 'refund_id', int: 'tx.refund_id' },
  { key: 'payout_id', int: 'tx.payout_id' },
  { key: 'reference', text: 'tx.reference' },
  { key: 'batch_index', int: 'tx.batch_index' },
  { key: 'deposit_address_id', int: 'tx.deposit_address_id' },
  { key: 'created_at', date: 'tx.created_at' },
  { key: 'updated_at', date: 'tx.updated_at' },
  { key: 'internal', json: `CASE WHEN tx.type = 'receipt' AND tx.log_index <= ${INTERNAL_LOG_BASE} THEN 'true' ELSE 'false' END` },
  {
    key: 'held_by',
    when: 'tx.held_rule IS NOT NULL',
    object: [
      { key: 'rule', text: 'tx.held_rule' },
      { key: 'limit', units: 'tx.held_limit', decimals: 'tx.held_decimals' },
      { key: 'token', text: 'tx.held_symbol' },
    ],
  },
  ...ADDRESS_FIELDS,
];

/** The rows the expression formats exactly; `canonical` tests a stored base-unit integer, `address` a stored address. */
function exactRows(canonical: (c: string) => string, address: (c: string) => string): string {
  const inDateRange = (c: string) => `(${c} BETWEEN 0 AND ${LAST_FOUR_DIGIT_YEAR_MS})`;
  return [
    `wt.decimals BETWEEN 0 AND ${OUTPUT_DECIMALS}`,
    canonical('tx.amount'),
    ...['tx.gas', 'tx.gas_price', 'tx.gas_used', 'tx.cumulative_gas_used'].map((c) => `(${c} IS NULL OR ${canonical(c)})`),
    inDateRange('tx.created_at'),
    inDateRange('tx.updated_at'),
    `(tx.block_timestamp IS NULL OR ${inDateRange('tx.block_timestamp')})`,
    `(tx.held_limit IS NULL OR (${canonical('tx.held_limit')} AND tx.held_decimals BETWEEN 0 AND ${OUTPUT_DECIMALS}))`,
    ...ADDRESS_FIELDS.map((f) => address(f.text)),
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
  const address = (c: string) => `(length(${c}) = ${ADDRESS_CHARS} AND ${c} GLOB '0x*' AND NOT substr(${c}, 3) GLOB '*[^0-9a-fA-F]*')`;
  const value = (f: Field): string => {
    if ('int' in f) return f.int;
    if ('text' in f) return f.text;
    if ('units' in f) return `CASE WHEN ${f.units} IS NULL THEN NULL ELSE ${units18(f.units, f.decimals)} END`;
    if ('date' in f) return `datetime(${f.date} / 1000, 'unixepoch')`;
    if ('list' in f) return `json(${list(f.list, (c) => `json_quote(${c})`)})`;
    if ('object' in f) return `json(CASE WHEN ${f.when} THEN ${object(f.object)} ELSE 'null' END)`;
    return `json(${f.json})`;
  };
  const object = (fields: Field[]) => `json_object(${fields.map((f) => `'${f.key}', ${value(f)}`).join(', ')})`;
  return `CASE WHEN ${exactRows(canonical, address)} THEN ${object(ITEM_FIELDS)} ELSE NULL END`;
}

/** PostgreSQL: the pieces concatenated, text through `to_json` (escaped as JSON.stringify escapes). */
function postgresItem(): string {
  // numeric(78, 0): an integer always, written without exponent or sign when non-negative.
  const canonical = (c: string) => `(${c} >= 0)`;
  const address = (c: string) => `(${c} ~ '^0x[0-9a-fA-F]{${ADDRESS_CHARS - 2}}$')`;
  const orNull = (c: string, json: string) => `CASE WHEN ${c} IS NULL THEN 'null' ELSE ${json} END`;
  const value = (f: Field): string => {
    if ('int' in f) return `coalesce((${f.int})::text, 'null')`;
    if ('text' in f) return orNull(f.text, `to_json(${f.text})::text`);
    if ('units' in f) return orNull(f.units, `'"' || ${units18(`(${f.units})::text`, f.decimals)} || '"'`);
    if ('date' in f)
      return orNull(f.date, `'"' || to_char(to_timestamp(${f.date} / 1000) at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '"'`);
    if ('list' in f) return list(f.list, (c) => `to_json(${c})::text`);
    if ('object' in f) return `CASE WHEN ${f.when} THEN ${object(f.object)} ELSE 'null' END`;
    return f.json;
  };
  const object = (fields: Field[]) => `${fields.map((f, i) => `'${i === 0 ? '{' : ','}"${f.key}":' || ${value(f)}`).join(' || ')} || '}'`;
  return `CASE WHEN ${exactRows(canonical, address)} THEN ${object(ITEM_FIELDS)} ELSE NULL END`;
}

/** The item's JSON as an expression over `tx` (transactions) and `wt` (its wallet_tokens row). */
export const ITEM_JSON_EXPRESSION = { sqlite: sqliteItem(), postgres: postgresItem() };

/** SQLite: the column holding each row's item JSON. */
export const STORED_ITEM_JSON = 'item_json';

/** The columns of `transactions` an item is made from: an UPDATE of any of them writes the item again. */
const SOURCE_COLUMNS = [...new Set([...ITEM_JSON_EXPRESSION.sqlite.matchAll(/\btx\.([a-z_]+)/g)].map((m) => m[1]!)), 'token_id'].sort();

/** The item of the `transactions` row whose id is the SQL `id`. */
function itemOf(id: string): string {
  return `(SELECT ${ITEM_JSON_EXPRESSION.sqlite} FROM transactions AS tx JOIN wallet_tokens AS wt ON wt.id = tx.token_id WHERE tx.id = ${id})`;
}

/** The triggers that keep `item_json`, by name: their CREATE statements as SQLite stores them. */
export function itemJsonTriggers(): Record<string, string> {
  const set = `UPDATE transactions SET ${STORED_ITEM_JSON} = ${itemOf('NEW.id')} WHERE id = NEW.id;`;
  return {
    transactions_item_json_insert: `CREATE TRIGGER transactions_item_json_insert AFTER INSERT ON transactions BEGIN ${set} END`,
    transactions_item_json_update: `CREATE TRIGGER transactions_item_json_update AFTER UPDATE OF ${SOURCE_COLUMNS.join(', ')} ON transactions BEGIN ${set} END`,
    wallet_tokens_item_json: `CREATE TRIGGER wallet_tokens_item_json AFTER UPDATE OF symbol, decimals ON wallet_tokens BEGIN UPDATE transactions SET ${STORED_ITEM_JSON} = ${itemOf('transactions.id')} WHERE token_id = NEW.id; END`,
  };
}

/**
 * SQLite: makes the item triggers this version's, and when they were not, writes every row's item
 * again (one transaction). Returns the rows written, 0 when the triggers were already these, and
 * null where there is nothing to keep (PostgreSQL; a schema before migration 023).
 */
export async function syncStoredItemJson(db: AnyKysely, driver: 'sqlite' | 'postgres'): Promise<number | null> {
  if (driver !== 'sqlite') return null;
  const column = await sql<{
    n: number;
  }>`SELECT count(*) AS n FROM pragma_table_info('transactions') WHERE name = ${STORED_ITEM_JSON}`.execute(db);
  if (Number(column.rows[0]!.n) === 0) return null;
  const wanted = itemJsonTriggers();
  const names = Object.keys(wanted);
  const found = await sql<{
    name: string;
    sql: string;
  }>`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN (${sql.join(names)})`.execute(db);
  const have = new Map(found.rows.map((r) => [r.name, r.sql]));
  if (names.every((n) => have.get(n) === wanted[n])) return 0;
  return db.transaction().execute(async (trx) => {
    for (const name of names) {
      await sql`DROP TRIGGER IF EXISTS ${sql.id(name)}`.execute(trx);
      await sql.raw(wanted[name]!).execute(trx);
    }
    const r = await sql.raw(`UPDATE transactions SET ${STORED_ITEM_JSON} = ${itemOf('transactions.id')}`).execute(trx);
    return Number(r.numAffectedRows ?? 0n);
  });
}
