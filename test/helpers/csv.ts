/**
 * An RFC 4180 reader for the tests, written apart from src/lib/csv.ts: records end in CRLF (a
 * bare LF or CR outside quotes is refused), a quoted field may hold commas, CR, LF and doubled
 * quotes. Throws on anything else, so a malformed file fails the test that reads it.
 */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let i = 0;
  while (i < text.length) {
    let field = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new Error('unterminated quoted field');
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += text[i++];
      }
    } else {
      while (i < text.length && text[i] !== ',' && text[i] !== '\r' && text[i] !== '\n') {
        if (text[i] === '"') throw new Error(`a quote inside an unquoted field at ${i}`);
        field += text[i++];
      }
    }
    record.push(field);
    if (text[i] === ',') {
      i++;
      continue;
    }
    if (text.startsWith('\r\n', i)) {
      records.push(record);
      record = [];
      i += 2;
      continue;
    }
    throw new Error(`expected a comma or CRLF at ${i}, found ${JSON.stringify(text.slice(i, i + 10))}`);
  }
  if (record.length > 0) throw new Error('the last record does not end in CRLF');
  return records;
}

/** The records after the header as objects keyed by the header's names. */
export function csvObjects(text: string): { header: string[]; rows: Record<string, string>[] } {
  const [header, ...records] = parseCsv(text);
  if (!header) throw new Error('no header row');
  for (const r of records) if (r.length !== header.length) throw new Error(`a record of ${r.length} fields under ${header.length} columns`);
  return { header, rows: records.map((r) => Object.fromEntries(header.map((h, k) => [h, r[k]!]))) };
}
