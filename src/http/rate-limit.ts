/**
 * Fixed-window counters in memory: per user for the API, per email and per IP for failed
 * logins. Bounded: a sweep drops windows that have ended, and at most `maxKeys` keys are kept
 * (the oldest window is evicted first), so a flood of distinct keys cannot exhaust memory.
 * Per process: with several processes, each enforces the limit on its own share of traffic.
 */
export interface WindowState {
  count: number;
  resetAtMs: number;
}

export class FixedWindowCounter {
  private readonly windows = new Map<string, WindowState>();
  private lastSweepMs = 0;

  constructor(
    private readonly windowMs: number,
    private readonly maxKeys = 100_000,
  ) {}

  /** Adds one hit and returns the window after it. */
  hit(key: string, nowMs: number): WindowState {
    const state = this.current(key, nowMs);
    state.count += 1;
    return state;
  }

  /** Reads the window without counting. */
  peek(key: string, nowMs: number): WindowState {
    const w = this.windows.get(key);
    if (!w || w.resetAtMs <= nowMs) return { count: 0, resetAtMs: nowMs + this.windowMs };
    return w;
  }

  reset(key: string): void {
    this.windows.delete(key);
  }

  private current(key: string, nowMs: number): WindowState {
    this.sweep(nowMs);
    let w = this.windows.get(key);
    if (!w || w.resetAtMs <= nowMs) {
      if (this.windows.size >= this.maxKeys) {
        const oldest = this.windows.keys().next().value;
        if (oldest !== undefined) this.windows.delete(oldest);
      }
      w = { count: 0, resetAtMs: nowMs + this.windowMs };
      this.windows.delete(key);
      this.windows.set(key, w);
    }
    return w;
  }

  private sweep(nowMs: number): void {
    if (nowMs - this.lastSweepMs < this.windowMs) return;
    this.lastSweepMs = nowMs;
    for (const [k, w] of this.windows) if (w.resetAtMs <= nowMs) this.windows.delete(k);
  }
}
