import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { startLoop, type Loop, type RoundCause } from './loop.js';

const log = pino({ level: 'silent' });

/** A loop whose rounds are recorded; `during(n)` runs inside round n (1-based), after its first await. */
function recorded(intervalMs: number, during: (n: number, loop: Loop) => void = () => undefined) {
  const rounds: RoundCause[] = [];
  /** The pauses taken before each round. */
  const pausedBefore: number[] = [];
  let pauses = 0;
  const loop: Loop = startLoop({
    name: 'test',
    intervalMs,
    log,
    tick: async (_stopping, cause) => {
      rounds.push(cause);
      pausedBefore.push(pauses);
      await Promise.resolve();
      during(rounds.length, loop);
    },
    beforePause: () => (pauses += 1),
  });
  return { loop, rounds, pausedBefore, pauses: () => pauses };
}

const until = async (ok: () => boolean) => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(ok()).toBe(true);
};

describe('the shared loop', () => {
  it('runs the next round at once, without a pause, after a wake during a round', async () => {
    const r = recorded(60_000, (n, loop) => n === 1 && loop.wake());
    await until(() => r.rounds.length === 2);
    expect(r.rounds).toEqual(['start', 'wake']);
    expect(r.pausedBefore).toEqual([0, 0]);
    await until(() => r.pauses() === 1);
    await r.loop.stop();
  });

  it('wakes a sleeping loop at once, and says when the pause ran its course instead', async () => {
    const r = recorded(60_000);
    await until(() => r.pauses() === 1);
    r.loop.wake();
    await until(() => r.rounds.length === 2);
    expect(r.rounds).toEqual(['start', 'wake']);
    expect(r.pausedBefore).toEqual([0, 1]);
    await r.loop.stop();

    const t = recorded(10);
    await until(() => t.rounds.length === 3);
    expect(t.rounds).toEqual(['start', 'timer', 'timer']);
    await t.loop.stop();
  });

  it('ignores a wake once stopped', async () => {
    const r = recorded(60_000);
    await until(() => r.pauses() === 1);
    await r.loop.stop();
    r.loop.wake();
    await new Promise((res) => setTimeout(res, 20));
    expect(r.rounds).toEqual(['start']);
    expect(r.loop.status()).toBe('stopped');
  });
});
