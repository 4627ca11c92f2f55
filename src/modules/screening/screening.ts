/**
 * Screening (docs/money-out.md, "Screening"): SCREENING_FILE names a file of blocked
 * addresses, one `0x` address a line, `#` starting a comment (whole-line or trailing), blank
 * lines ignored, any letter case (matching is case-insensitive; a mixed-case line is not checked
 * against its EIP-55 checksum, lists come in every case).
 *
 * - Outgoing: a transfer, a contract call, a payout item or a refund to a listed address is 400
 *   `Address is blocked by screening`, checked at the request's entry before anything is
 *   recorded (transactions.routes.ts, payouts.service.ts, refunds.service.ts).
 * - Incoming: a charge payment whose sender is listed is recorded with `screened` set and not
 *   counted toward `paid` (charges.chain-sync.ts, charges.decide.ts); `charge.screened` is
 *   written once for it (charges.settlement.ts).
 *
 * The file is read at boot: missing, unreadable, larger than MAX_FILE_BYTES or with a bad line,
 * the service does not start (a ConfigError naming the file, and the line). Afterwards a use looks
 * at the file's modification time, size and inode at most once every STAT_EVERY_MS and reads it
 * again when one of them changed: a change is in force within a second. A reload that fails (the
 * file gone, unreadable, a bad line) keeps the last good list and logs one warning per
 * failing version of the file: a half-written or mistyped list never empties the screening.
 * Without SCREENING_FILE nothing is blocked and no file is looked at.
 */
import { readFileSync, statSync, type Stats } from 'node:fs';
import type { Logger } from 'pino';
import { ConfigError } from '../../config.js';
import { Errors } from '../../errors.js';

/** What the modules ask (on the app context as `ctx.screening`). */
export interface Screening {
  /**
   * True when `address` (a `0x` address in any case) is on the list in force; false for anything
   * else, and always false without SCREENING_FILE. Synchronous; costs a map lookup, plus a
   * `stat` of the file at most once a second.
   */
  isBlocked(address: string): boolean;
}

/** How often at most a use looks at the file for a change. */
export const STAT_EVERY_MS = 1000;
/** The largest list read (about 380,000 addresses of 43 bytes a line). */
export const MAX_FILE_BYTES = 16 * 1024 * 1024;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** A line of the file that is neither blank, a comment nor an address (1-based). */
export class ScreeningLineError extends Error {
  constructor(
    readonly line: number,
    readonly text: string,
  ) {
    super(`line ${line} is not an address: "${text.length > 80 ? `${text.slice(0, 80)}…` : text}"`);
    this.name = 'ScreeningLineError';
  }
}

/** The addresses of a list's text, lowercase; throws ScreeningLineError at the first bad line. */
export function parseScreeningList(text: string): Set<string> {
  const out = new Set<string>();
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const hash = lines[i]!.indexOf('#');
    const entry = (hash === -1 ? lines[i]! : lines[i]!.slice(0, hash)).trim();
    if (entry === '') continue;
    if (!ADDRESS.test(entry)) throw new ScreeningLineError(i + 1, entry);
    out.add(entry.toLowerCase());
  }
  return out;
}

/** Nothing screened (no SCREENING_FILE). */
const NONE: Screening = { isBlocked: () => false };

/** The file's identity: a change of any part means it was written or replaced. */
const versionOf = (s: Stats) => `${s.ino}:${s.size}:${s.mtimeMs}`;

class ScreeningFile implements Screening {
  private list: Set<string>;
  private version: string;
  private checkedAtMs: number;
  /** The version of the file whose reload failed last (one warning each). */
  private failedVersion: string | null = null;

  constructor(
    private readonly path: string,
    private readonly log: Logger,
    private readonly nowMs: () => number,
  ) {
    const first = this.read();
    this.list = first.list;
    this.version = first.version;
    this.checkedAtMs = nowMs();
    this.log.info({ file: path, addresses: this.list.size }, 'screening list loaded');
  }

  isBlocked(address: string): boolean {
    this.refresh();
    return this.list.has(address.toLowerCase());
  }

  /** Reads the file again when it changed since the last look (looking at most every STAT_EVERY_MS). */
  private refresh(): void {
    const now = this.nowMs();
    if (now - this.checkedAtMs < STAT_EVERY_MS) return;
    this.checkedAtMs = now;
    let version: string;
    try {
      version = versionOf(statSync(this.path));
    } catch (e) {
      return this.warnOnce(`missing:${(e as NodeJS.ErrnoException).code ?? 'error'}`, e);
    }
    if (version === this.version) {
      this.failedVersion = null;
      return;
    }
    if (version === this.failedVersion) return;
    try {
      const next = this.read();
      this.list = next.list;
      this.version = next.version;
      this.failedVersion = null;
      this.log.info({ file: this.path, addresses: next.list.size }, 'screening list reloaded');
    } catch (e) {
      this.warnOnce(version, e);
    }
  }

  private warnOnce(version: string, e: unknown): void {
    if (this.failedVersion === version) return;
    this.failedVersion = version;
    const problem = e instanceof ScreeningLineError ? e.message : ((e as NodeJS.ErrnoException).code ?? String(e));
    this.log.warn(
      { file: this.path, problem, addresses: this.list.size },
      'screening list not reloaded: the last good list stays in force',
    );
  }

  /** The file's list and version; throws (the cause named) when it cannot be read or has a bad line. */
  private read(): { list: Set<string>; version: string } {
    const before = statSync(this.path);
    if (!before.isFile()) throw Object.assign(new Error('not a file'), { code: 'ENOTFILE' });
    if (before.size > MAX_FILE_BYTES) throw Object.assign(new Error('too large'), { code: 'EFBIG' });
    const list = parseScreeningList(readFileSync(this.path, 'utf8'));
    return { list, version: versionOf(before) };
  }
}

/**
 * The screening of SCREENING_FILE (`path`, null: none), read now. Throws a ConfigError naming
 * SCREENING_FILE, the file and the reason (or the bad line): the service does not start on it.
 */
export function openScreening(path: string | null, log: Logger, nowMs: () => number = Date.now): Screening {
  if (path === null) return NONE;
  let screening: ScreeningFile;
  try {
    screening = new ScreeningFile(path, log.child({ component: 'screening' }), nowMs);
  } catch (e) {
    const reason = e instanceof ScreeningLineError ? e.message : `cannot be read (${(e as NodeJS.ErrnoException).code ?? String(e)})`;
    throw new ConfigError('SCREENING_FILE', `names ${path}: ${reason}`);
  }
  return screening;
}

/** 400 `Address is blocked by screening` when any of `addresses` is listed (before anything is recorded). */
export function refuseBlocked(screening: Screening, addresses: Iterable<string>): void {
  for (const a of addresses) if (screening.isBlocked(a)) throw Errors.addressBlocked();
}
