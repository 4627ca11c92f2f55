/**
 * JSON numbers exactly as written. `JSON.parse` turns `1.123456789012345678` into the nearest
 * double (1.1234567890123457) and Node 20 has no reviver source access, so the body parser
 * parses as usual (every number stays a JS number: ids, limits and the like behave as before)
 * and then one linear pass over the same text records, for each number whose text is not what
 * `String(value)` gives back, that text against its holder (object or array) and key. A money
 * field reads `numberText(holder, key)` instead of the lossy double.
 *
 * The pass runs only on text the parser accepted (valid JSON, depth already bounded), follows
 * the parsed value as it goes, and records nothing where the two disagree: a key dropped by
 * the prototype-poisoning protection, or an earlier duplicate key (JSON.parse keeps the last,
 * and so does this, writing in text order).
 */

/** Exact source text of numbers that do not survive the round trip, per holder and key. */
const sources = new WeakMap<object, Map<string, string>>();

/** Character codes of JSON's structure, for the linear passes over a body's text (here and the depth check). */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const OPEN_OBJECT = 0x7b;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_OBJECT = 0x7d;
export const CLOSE_ARRAY = 0x5d;
const NUMBER_CHAR = /[-+.eE0-9]/;

interface Frame {
  node: unknown;
  isArray: boolean;
  key: string | null;
  index: number;
}

function childOf(node: unknown, key: string): unknown {
  return node !== null && typeof node === 'object' && Object.hasOwn(node, key) ? (node as Record<string, unknown>)[key] : undefined;
}

function keyOf(f: Frame): string | null {
  return f.isArray ? String(f.index) : f.key;
}

function record(frame: Frame | undefined, text: string): void {
  const key = frame ? keyOf(frame) : null;
  if (!frame || key === null) return;
  const value = childOf(frame.node, key);
  if (typeof value !== 'number' || Number(text) !== value || String(value) === text) return;
  const holder = frame.node as object;
  let map = sources.get(holder);
  if (!map) sources.set(holder, (map = new Map<string, string>()));
  map.set(key, text);
}

/** End index (inclusive) of the string starting at `i` (a quote). */
export function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const d = text.charCodeAt(j);
    if (d === BACKSLASH) j++;
    else if (d === QUOTE) return j;
  }
  return text.length;
}

/** Records the exact text of the numbers of `root`, parsed from `text` (see above). */
export function recordNumberSources(text: string, root: unknown): void {
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const top = stack[stack.length - 1];
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (top && !top.isArray && top.key === null) top.key = JSON.parse(text.slice(i, end + 1)) as string;
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const key = top ? keyOf(top) : null;
      const node = top ? (key === null ? undefined : childOf(top.node, key)) : root;
      stack.push({ node, isArray: c === OPEN_ARRAY, key: null, index: 0 });
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      stack.pop();
    } else if (c === COMMA) {
      if (top?.isArray) top.index++;
      else if (top) top.key = null;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      while (j < text.length && NUMBER_CHAR.test(text[j]!)) j++;
      record(top, text.slice(i, j));
      i = j - 1;
    }
  }
}

/**
 * The text of `holder[key]` as the client wrote it when it is a JSON number: the recorded
 * source, else `String(value)` (which is then exactly the source's value). Undefined when the
 * value is not a number.
 */
export function numberText(holder: object, key: string): string | undefined {
  const value = (holder as Record<string, unknown>)[key];
  if (typeof value !== 'number') return undefined;
  return sources.get(holder)?.get(key) ?? String(value);
}
