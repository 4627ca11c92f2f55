/**
 * A worker that runs `tick` every `intervalMs` until stopped, or again at once while a tick
 * reports more work waiting (a backlog is worked through batch after batch). A tick that throws is logged and
 * the loop goes on; `stop()` wakes the sleeping loop and resolves after the tick in progress
 * (and `onStop`) has finished.
 */
import type { Logger } from 'pino';
import type { Worker } from './worker.js';

export interface LoopOptions {
  name: string;
  intervalMs: number;
  log: Logger;
  /**
   * One round of work; `true` when more is waiting (the loop goes on at once, not after
   * `intervalMs`); `'soon'` when something is expected shortly (the next round after `soonMs`).
   */
  tick: (stopping: () => boolean) => Promise<void | boolean | 'soon'>;
  /** The pause after a round that answered `'soon'` (at most `intervalMs`). */
  soonMs?: number;
  /** Called at once when stop is asked for (e.g. to abandon calls in flight). */
  onStopRequested?: () => void;
  /** Called after the last tick, before stop resolves. */
  onStop?: () => Promise<void>;
}

/** A loop's worker, and `nudge(ms)`: the next round comes at most `ms` from now (never later than planned). */
export interface Loop extends Worker {
  nudge(ms: number): void;
}

export function startLoop(o: LoopOptions): Loop {
  let stopping = false;
  let state: 'running' | 'stopped' = 'running';
  let wake: (() => void) | null = null;
  /** The sleep in progress: when it ends, and how to end it earlier. */
  let sleeping: { until: number; reschedule(ms: number): void } | null = null;
  /** A nudge during a round: the pause after it is at most this long. */
  let nudgedMs: number | null = null;
  const isStopping = () => stopping;

  const run = async () => {
    while (!stopping) {
      let more = false;
      let soon = false;
      try {
        const r = await o.tick(isStopping);
        more = r === true;
        soon = r === 'soon';
      } catch (e) {
        o.log.warn({ err: e }, `${o.name} tick failed; retrying`);
      }
      if (stopping) break;
      if (more) {
        // Backlog: the next round at once, after one turn of the event loop (requests go first).
        await new Promise<void>((resolve) => setImmediate(resolve));
        continue;
      }
      const planned = soon ? Math.min(o.soonMs ?? o.intervalMs, o.intervalMs) : o.intervalMs;
      const pause = nudgedMs === null ? planned : Math.min(planned, nudgedMs);
      nudgedMs = null;
      await new Promise<void>((resolve) => {
        let timer = setTimeout(resolve, pause);
        sleeping = {
          until: Date.now() + pause,
          reschedule: (ms) => {
            clearTimeout(timer);
            timer = setTimeout(resolve, ms);
          },
        };
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
      sleeping = null;
    }
    await o.onStop?.();
  };
  const running = run();

  return {
    name: o.name,
    nudge: (ms) => {
      if (stopping) return;
      if (sleeping === null) nudgedMs = Math.min(nudgedMs ?? ms, ms);
      else if (sleeping.until - Date.now() > ms) {
        sleeping.until = Date.now() + ms;
        sleeping.reschedule(ms);
      }
    },
    status: () => state,
    stop: async () => {
      stopping = true;
      o.onStopRequested?.();
      wake?.();
      await running;
      state = 'stopped';
    },
  };
}
