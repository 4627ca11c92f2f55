/**
 * A worker that runs `tick` every `intervalMs` until stopped, or again at once while a tick
 * reports more work waiting (a backlog is worked through batch after batch) or after `wake()`.
 * A tick that throws is logged and the loop goes on; `stop()` wakes the sleeping loop and
 * resolves after the tick in progress (and `onStop`) has finished.
 */
import type { Logger } from 'pino';
import type { Worker } from './worker.js';

/**
 * Why a round runs: the loop's first; `more` after a round that said more work is waiting;
 * `wake` after `wake()` (during the pause, or during the round before); `timer` when the pause
 * ran its course (the interval, or a shorter one after `'soon'` or a nudge).
 */
export type RoundCause = 'start' | 'more' | 'wake' | 'timer';

export interface LoopOptions {
  name: string;
  intervalMs: number;
  log: Logger;
  /**
   * One round of work; `true` when more is waiting (the loop goes on at once, not after
   * `intervalMs`); `'soon'` when something is expected shortly (the next round after `soonMs`).
   */
  tick: (stopping: () => boolean, cause: RoundCause) => Promise<void | boolean | 'soon'>;
  /** The pause after a round that answered `'soon'` (at most `intervalMs`). */
  soonMs?: number;
  /** Called before each pause, when the loop has nothing to do until the timer or a wake. */
  beforePause?: () => void;
  /** Called at once when stop is asked for (e.g. to abandon calls in flight). */
  onStopRequested?: () => void;
  /** Called after the last tick, before stop resolves. */
  onStop?: () => Promise<void>;
}

/**
 * A loop's worker, `nudge(ms)`: the next round comes at most `ms` from now (never later than
 * planned), and `wake()`: the next round comes at once (asked during a round, right after it).
 */
export interface Loop extends Worker {
  nudge(ms: number): void;
  wake(): void;
}

/**
 * The pause between rounds: `sleep(ms)` resolves true after `ms`, or false earlier by `wake()`
 * (at once); `nudge(ms)` makes it end (true) at most `ms` from now, and a nudge while no pause
 * runs shortens the next one.
 */
class Pause {
  #timer: NodeJS.Timeout | null = null;
  #resolve: ((timedOut: boolean) => void) | null = null;
  #until = 0;
  #nudgedMs: number | null = null;

  sleep(planned: number): Promise<boolean> {
    const ms = this.#nudgedMs === null ? planned : Math.min(planned, this.#nudgedMs);
    this.#nudgedMs = null;
    return new Promise<boolean>((resolve) => {
      this.#resolve = resolve;
      this.#arm(ms);
    }).finally(() => {
      this.#resolve = null;
    });
  }

  nudge(ms: number): void {
    if (this.#resolve === null) this.#nudgedMs = Math.min(this.#nudgedMs ?? ms, ms);
    else if (this.#until - Date.now() > ms) this.#arm(ms);
  }

  wake(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#resolve?.(false);
  }

  #arm(ms: number): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#until = Date.now() + ms;
    const resolve = this.#resolve!;
    this.#timer = setTimeout(() => resolve(true), ms);
  }
}

export function startLoop(o: LoopOptions): Loop {
  let stopping = false;
  let state: 'running' | 'stopped' = 'running';
  // A wake asked since the current round began: the next round follows it without a pause.
  let woken = false;
  const pause = new Pause();
  const isStopping = () => stopping;

  const run = async () => {
    let cause: RoundCause = 'start';
    while (!stopping) {
      woken = false;
      let more = false;
      let soon = false;
      try {
        const r = await o.tick(isStopping, cause);
        more = r === true;
        soon = r === 'soon';
      } catch (e) {
        o.log.warn({ err: e }, `${o.name} tick failed; retrying`);
      }
      if (stopping) break;
      if (more) {
        // Backlog: the next round at once, after one turn of the event loop (requests go first).
        await new Promise<void>((resolve) => setImmediate(resolve));
        cause = 'more';
      } else if (woken) {
        cause = 'wake';
      } else {
        o.beforePause?.();
        const timedOut = await pause.sleep(soon ? Math.min(o.soonMs ?? o.intervalMs, o.intervalMs) : o.intervalMs);
        cause = timedOut ? 'timer' : 'wake';
      }
    }
    await o.onStop?.();
  };
  const running = run();

  return {
    name: o.name,
    nudge: (ms) => {
      if (!stopping) pause.nudge(ms);
    },
    wake: () => {
      if (stopping) return;
      woken = true;
      pause.wake();
    },
    status: () => state,
    stop: async () => {
      stopping = true;
      o.onStopRequested?.();
      pause.wake();
      await running;
      state = 'stopped';
    },
  };
}
