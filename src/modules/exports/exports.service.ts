/**
 * The CSV exports (docs/exports.md): every row the wallet's list would show, oldest first,
 * written as it is read.
 *
 * The rows are read by keyset pagination (id above the last one sent, a bounded page per
 * query) rather than one streamed query: a page is one short indexed query on either driver, so
 * a download of any length holds no database connection, no transaction and no snapshot
 * between pages (SQLite has one connection per process, used by one holder at a time; a
 * PostgreSQL cursor would need `pg-cursor` and pin a pooled connection for the whole download),
 * and memory stays one page whatever the file's size. The price: the file is not one snapshot; a
 * row changed while the download runs shows as its page read it.
 *
 * Each generator yields chunks of records (lib/csv.ts `CsvChunks`, about 64 KiB); the route sends
 * them as a stream, which asks for the next only when the client has taken the last
 * (backpressure), so a page is read only when the one before is on its way.
 */
import type { AppContext } from '../../context.js';
import { CsvChunks, csvRecord, type CsvField } from '../../lib/csv.js';
import * as chargesRepo from '../charges/charges.repository.js';
import * as payoutsRepo from '../payouts/payouts.repository.js';
import { EXPORT_PAGE_ROWS, exportPage } from '../transactions/transactions.list.repository.js';
import type { CreatedRange } from './exports.schemas.js';
import { CHARGE_COLUMNS, chargeFields, PAYOUT_COLUMNS, payoutItemFields, TRANSACTION_COLUMNS, transactionFields } from './exports.views.js';

/** Charges read a page: each row joins four tables and carries its JSON text. */
const CHARGE_PAGE = 500;
/** Payouts read a page; a payout has at most 500 items, so a page holds at most 10,000. */
const PAYOUT_PAGE = 20;

/** A page of what an export writes, one record each, and the id to read the next page after (null: the last page). */
interface Page<T> {
  items: T[];
  next: number | null;
}

/** The id after which the page following `rows` starts: its last row's, or null when the page was not full. */
function nextAfter(rows: { id: number }[], pageSize: number): number | null {
  return rows.length < pageSize ? null : rows[rows.length - 1]!.id;
}

/** The header, then a record for each item of each page `read` gives, in chunks (`CsvChunks`). */
async function* records<T>(
  header: readonly string[],
  read: (afterId: number) => Promise<Page<T>>,
  fields: (item: T) => CsvField[],
): AsyncGenerator<Buffer> {
  const out = new CsvChunks();
  out.add(csvRecord(header));
  for (let after: number | null = 0; after !== null;) {
    const page: Page<T> = await read(after);
    for (const item of page.items) {
      const full = out.add(csvRecord(fields(item)));
      if (full) yield full;
    }
    after = page.next;
  }
  const last = out.flush();
  if (last) yield last;
}

export class ExportService {
  constructor(private readonly ctx: AppContext) {}

  transactions(walletId: number, range: CreatedRange): AsyncGenerator<Buffer> {
    const read = async (after: number) => {
      const rows = await exportPage(this.ctx.store.db, walletId, after, range.fromMs, range.toMs);
      return { items: rows, next: nextAfter(rows, EXPORT_PAGE_ROWS) };
    };
    return records(TRANSACTION_COLUMNS, read, transactionFields);
  }

  charges(walletId: number, range: CreatedRange): AsyncGenerator<Buffer> {
    const read = async (after: number) => {
      const rows = await chargesRepo.listChargesAfter(this.ctx.store.db, walletId, after, range, CHARGE_PAGE);
      return { items: rows, next: nextAfter(rows, CHARGE_PAGE) };
    };
    return records(CHARGE_COLUMNS, read, chargeFields);
  }

  /** One record per item: payouts oldest first, each payout's items in their order. */
  payouts(walletId: number, range: CreatedRange): AsyncGenerator<Buffer> {
    const db = this.ctx.store.db;
    const read = async (after: number) => {
      const payouts = await payoutsRepo.listPayoutsAfter(db, walletId, after, range, PAYOUT_PAGE);
      const byId = new Map(payouts.map((p) => [p.id, p]));
      const items = await payoutsRepo.listItems(db, [...byId.keys()]);
      return { items: items.map((i) => [byId.get(i.payout_id)!, i] as const), next: nextAfter(payouts, PAYOUT_PAGE) };
    };
    return records(PAYOUT_COLUMNS, read, ([p, i]) => payoutItemFields(p, i));
  }
}
