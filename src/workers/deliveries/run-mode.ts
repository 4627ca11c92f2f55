/**
 * The modes of a delivery worker (deliveries.ts), one at a time, each move checked:
 *
 *   created  → running    start(): the loop ticks (fan out, claim, send)
 *   running  → stopping   stop(): no fan-out lease, claim or send begins any more; the tick in
 *                         progress finishes
 *   stopping → draining   the loop has ended: the queued rows are given back, and the sends in
 *                         flight finish and are recorded
 *   draining → stopped    every outcome handed over is written, the connections are closed
 *
 * No mode is entered twice and none is skipped: any other move is a bug in the worker and
 * throws, rather than leave it half running (a second start would run two loops on one queue,
 * a stop before the start would close what was never opened).
 */
export type RunMode = 'created' | 'running' | 'stopping' | 'draining' | 'stopped';

const ALLOWED: Readonly<Record<RunMode, readonly RunMode[]>> = {
  created: ['running'],
  running: ['stopping'],
  stopping: ['draining'],
  draining: ['stopped'],
  stopped: [],
};

export class RunState {
  #mode: RunMode = 'created';

  get mode(): RunMode {
    return this.#mode;
  }

  /** Moves from `from` to `to`; throws when the worker is not in `from` or `to` does not follow it. */
  transition(from: RunMode, to: RunMode): void {
    if (this.#mode !== from) throw new Error(`delivery worker: ${from} → ${to} asked in mode ${this.#mode}`);
    if (!ALLOWED[from].includes(to)) throw new Error(`delivery worker: ${from} → ${to} is not a transition`);
    this.#mode = to;
  }
}
