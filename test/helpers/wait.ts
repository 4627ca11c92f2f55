/**
 * Poll for a condition with a deadline, instead of sleeping a fixed time. `fn` is called until
 * it returns something other than false, null or undefined (that value is returned) or the
 * deadline passes (then it throws, naming what was awaited and the last value or error seen).
 */
export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  message?: string;
}

export async function waitFor<T>(fn: () => T | Promise<T>, opts: WaitOptions = {}): Promise<Exclude<T, false | null | undefined>> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 25;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== false && v !== null && v !== undefined) return v as Exclude<T, false | null | undefined>;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      const seen = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`waitFor timed out after ${timeoutMs} ms${opts.message ? `: ${opts.message}` : ''} (last: ${seen})`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
