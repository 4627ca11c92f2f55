import { describe, expect, it } from 'vitest';
import { CsvChunks, csvRecord, userText } from './csv.js';

describe('csvRecord', () => {
  it('ends a record in CRLF and leaves plain fields as they are', () => {
    expect(csvRecord(['1', 'ETH', '0.500000000000000000'])).toBe('1,ETH,0.500000000000000000\r\n');
  });

  it('writes null as an empty field', () => {
    expect(csvRecord([null, 'a', null])).toBe(',a,\r\n');
  });

  it('quotes a field with a comma, a quote, CR or LF, doubling its quotes', () => {
    expect(csvRecord(['a,b', 'say "hi"', 'line\nbreak', 'cr\rhere', 'x'])).toBe('"a,b","say ""hi""","line\nbreak","cr\rhere",x\r\n');
  });
});

describe('userText', () => {
  it.each(['=1+2', '+1', '-1', '@SUM(A1)', '\tx', '\rx'])('puts a quote before %j, which a spreadsheet reads as a formula', (v) => {
    expect(userText(v)).toBe(`'${v}`);
  });

  it('leaves other text and null alone', () => {
    expect(userText('order 42')).toBe('order 42');
    expect(userText('{"a":1}')).toBe('{"a":1}');
    expect(userText(null)).toBeNull();
  });

  it('is quoted in a record when the quote is not enough (a formula with a comma)', () => {
    expect(csvRecord([userText('=HYPERLINK("http://x","y")')])).toBe(`"'=HYPERLINK(""http://x"",""y"")"\r\n`);
  });
});

describe('CsvChunks', () => {
  it('gives back every record, in order, in chunks of at most 64 KiB, a record never split', () => {
    const chunks = new CsvChunks();
    const out: Buffer[] = [];
    const records = Array.from({ length: 3000 }, (_, i) => csvRecord([String(i), 'é'.repeat(i % 50), 'x']));
    records.push(csvRecord(['y'.repeat(100_000)]));
    records.push(csvRecord(['last']));
    for (const r of records) {
      const full = chunks.add(r);
      if (full) out.push(full);
    }
    const rest = chunks.flush();
    if (rest) out.push(rest);
    expect(chunks.flush()).toBeNull();
    expect(Buffer.concat(out).toString('utf8')).toBe(records.join(''));
    for (const c of out.slice(0, -2)) expect(c.length).toBeLessThanOrEqual(64 * 1024);
    for (const c of out) expect(c.toString('utf8').endsWith('\r\n')).toBe(true);
  });
});
