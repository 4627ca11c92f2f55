/**
 * The screening list's file (screening.ts): its lines, the boot errors that name the file and
 * the line, a change read at the next look after STAT_EVERY_MS, and a bad or missing version
 * that keeps the last good list with one warning.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../config.js';
import { createLogger } from '../../logger.js';
import { openScreening, parseScreeningList, ScreeningLineError, STAT_EVERY_MS } from './screening.js';

const A = '0x8589427373D6D84E98730D7795D8f6f8731FDA16';
const B = '0x722122dF12D4e14e13Ac3b6895a86e84145b6967';
const dir = mkdtempSync(join(tmpdir(), 'screening-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function capturingLog() {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _e, cb) => void (lines.push(chunk.toString()), cb()) });
  return { lines, log: createLogger('info', sink as never) };
}

/** A clock moved by hand past the throttle. */
function handClock() {
  let ms = 1_000_000;
  return { now: () => ms, pass: () => void (ms += STAT_EVERY_MS) };
}

describe('parseScreeningList', () => {
  it('takes one address a line in any case, skipping comments and blank lines', () => {
    const list = parseScreeningList(`\uFEFF# a list\r\n${A}\r\n\n   ${B.toLowerCase()}   # trailing\n# ${'0x' + '1'.repeat(40)}\n`);
    expect([...list]).toEqual([A.toLowerCase(), B.toLowerCase()]);
  });

  it('names the first bad line', () => {
    for (const [text, line] of [
      [`${A}\n0x1234\n`, 2],
      [`${A} ${B}\n`, 1],
      [`\n\nnot an address`, 3],
    ] as const) {
      try {
        parseScreeningList(text);
        expect.unreachable(text);
      } catch (e) {
        expect(e).toBeInstanceOf(ScreeningLineError);
        expect((e as ScreeningLineError).line).toBe(line);
      }
    }
  });
});

describe('openScreening', () => {
  it('blocks nothing without a file', () => {
    expect(openScreening(null, capturingLog().log).isBlocked(A)).toBe(false);
  });

  it('refuses to start on a missing file or a bad line, naming SCREENING_FILE, the file and the line', () => {
    const missing = join(dir, 'missing.txt');
    expect(() => openScreening(missing, capturingLog().log)).toThrow(ConfigError);
    expect(() => openScreening(missing, capturingLog().log)).toThrow(
      `Invalid configuration: SCREENING_FILE names ${missing}: cannot be read (ENOENT)`,
    );
    const bad = join(dir, 'bad.txt');
    writeFileSync(bad, `${A}\n# fine\nnope\n`);
    expect(() => openScreening(bad, capturingLog().log)).toThrow(
      `Invalid configuration: SCREENING_FILE names ${bad}: line 3 is not an address: "nope"`,
    );
    expect(() => openScreening(dir, capturingLog().log)).toThrow(/cannot be read/);
  });

  it('reads a change at the first look after STAT_EVERY_MS; a bad or missing version keeps the last good list, warned once', () => {
    const file = join(dir, 'list.txt');
    writeFileSync(file, `${A}\n`);
    const { lines, log } = capturingLog();
    const clock = handClock();
    const s = openScreening(file, log, clock.now);
    expect([
      s.isBlocked(A.toLowerCase()),
      s.isBlocked(A.toUpperCase().replace('0X', '0x')),
      s.isBlocked(B),
      s.isBlocked('nonsense'),
    ]).toEqual([true, true, false, false]);

    writeFileSync(file, `${A}\n${B}\n`);
    expect(s.isBlocked(B)).toBe(false); // within the throttle: not looked at yet
    clock.pass();
    expect(s.isBlocked(B)).toBe(true);

    writeFileSync(file, `${A}\n0xbad\n`);
    clock.pass();
    expect([s.isBlocked(A), s.isBlocked(B)]).toEqual([true, true]);
    clock.pass();
    expect(s.isBlocked(B)).toBe(true);
    expect(lines.filter((l) => l.includes('screening list not reloaded'))).toHaveLength(1);
    expect(lines.find((l) => l.includes('screening list not reloaded'))).toContain('line 2 is not an address');

    rmSync(file);
    clock.pass();
    expect(s.isBlocked(B)).toBe(true);
    expect(lines.filter((l) => l.includes('screening list not reloaded'))).toHaveLength(2);

    writeFileSync(file, `${B}\n`);
    clock.pass();
    expect([s.isBlocked(A), s.isBlocked(B)]).toEqual([false, true]);
  });
});
