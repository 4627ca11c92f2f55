/** The query of the CSV exports and its parser: `from` and `to`, datetimes on `created_at`. */
import { Type, type Static } from '@sinclair/typebox';
import { Errors, validationError, type AppError, type FieldErrors } from '../../errors.js';
import { parseDateTime } from '../../lib/time.js';

export const ExportQuery = Type.Object({
  from: Type.Optional(
    Type.String({ description: 'UTC datetime YYYY-MM-DD HH:MM:SS: rows created at or after it', examples: ['2026-01-01 00:00:00'] }),
  ),
  to: Type.Optional(
    Type.String({
      description: 'UTC datetime YYYY-MM-DD HH:MM:SS: rows created at or before it (that whole second included)',
      examples: ['2026-01-31 23:59:59'],
    }),
  ),
});
export type ExportQueryInput = Static<typeof ExportQuery>;

/** Rows with `created_at` in [fromMs, toMs). */
export interface CreatedRange {
  fromMs: number;
  toMs: number;
}

/** An unbounded end of the range: every stored millisecond timestamp is inside it. */
const NO_BOUND = Number.MAX_SAFE_INTEGER;

/**
 * The range of `created_at` an export covers, or a 422 naming each bad field: each must be a
 * real `YYYY-MM-DD HH:MM:SS`, and `to` not before `from`. `to` takes in its whole second, so a
 * row whose `created_at` shows as `to` in the file is in it.
 */
export function parseCreatedRange(q: ExportQueryInput): CreatedRange {
  const fromMs = q.from === undefined ? -NO_BOUND : parseDateTime(q.from);
  const toMs = q.to === undefined ? NO_BOUND : parseDateTime(q.to);
  const refusals: AppError[] = [];
  if (fromMs === null) refusals.push(Errors.invalidDateTime('from'));
  if (toMs === null) refusals.push(Errors.invalidDateTime('to'));
  else if (fromMs !== null && toMs < fromMs) refusals.push(Errors.dateTimeBefore('to', 'from'));
  if (fromMs === null || toMs === null || refusals.length > 0) {
    throw validationError(Object.assign({}, ...refusals.map((e) => e.data as FieldErrors)) as FieldErrors);
  }
  return { fromMs, toMs: toMs === NO_BOUND ? NO_BOUND : toMs + 1000 };
}
