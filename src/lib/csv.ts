/**
 * CSV as RFC 4180 writes it: records end in CRLF; a field holding a comma, a double quote, CR or
 * LF is enclosed in double quotes, each double quote inside doubled. A null field is empty.
 *
 * Text a user wrote (a reference, a charge's `content`) may begin with a character a spreadsheet
 * reads as the start of a formula (`=`, `+`, `-`, `@`, tab, CR). OWASP's advice for CSV
 * injection: such a cell gets a leading single quote, and is quoted. `userText` does that; the
 * service's own fields (amounts, ids, datetimes, hashes, statuses) never begin with one and are
 * written untouched, so they stay exact for a program that reads the file.
 */

/** One field of a record: its text, or null for an empty field. */
export type CsvField = string | null;

const NEEDS_QUOTES = /[",\r\n]/;
const FORMULA_START = /^[=+\-@\t\r]/;

function field(v: CsvField): string {
  if (v === null) return '';
  return NEEDS_QUOTES.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

/** One record, its CRLF included. */
export function csvRecord(fields: readonly CsvField[]): string {
  let s = field(fields[0] ?? null);
  for (let i = 1; i < fields.length; i++) s += `,${field(fields[i]!)}`;
  return `${s}\r\n`;
}

/** Text from a user, as a field: with a leading `'` when a spreadsheet would read it as a formula. */
export function userText(v: string | null): CsvField {
  return v !== null && FORMULA_START.test(v) ? `'${v}` : v;
}

/** About this many bytes a chunk of a CSV answer. */
const CHUNK_BYTES = 64 * 1024;

/**
 * Records gathered into chunks of about 64 KiB, each copied in as it is added, so no string of
 * many records is ever built (a long string of concatenated records lives long enough to be
 * promoted to V8's old space; these copies leave only short-lived strings behind).
 */
export class CsvChunks {
  private buf = Buffer.allocUnsafe(CHUNK_BYTES);
  private used = 0;

  /** Adds a record; returns the chunk it filled, if it filled one. */
  add(record: string): Buffer | null {
    const bytes = Buffer.byteLength(record);
    let full: Buffer | null = null;
    if (this.used + bytes > CHUNK_BYTES) full = this.flush();
    if (bytes > CHUNK_BYTES) return full === null ? Buffer.from(record) : Buffer.concat([full, Buffer.from(record)]);
    this.used += this.buf.write(record, this.used);
    return full;
  }

  /** The records added since the last chunk (null when none), and a fresh chunk begun. */
  flush(): Buffer | null {
    if (this.used === 0) return null;
    const out = this.buf.subarray(0, this.used);
    this.buf = Buffer.allocUnsafe(CHUNK_BYTES);
    this.used = 0;
    return out;
  }
}
