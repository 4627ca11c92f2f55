import { describe, expect, it } from 'vitest';
import { Batcher } from './batcher.js';

/** A `run` whose batches are answered by hand, so a test decides when each round trip returns. */
function manualRun() {
  const calls: Array<{ items: number[]; answer: (out: string[]) => void; fail: (err: Error) => void }> = [];
  const run = (items: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      calls.push({ items, answer: resolve, fail: reject });
    });
  return { calls, run };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('Batcher', () => {
  it('runs a lone item at once, alone', async () => {
    const { calls, run } = manualRun();
    const b = new Batcher(run, 1, 10);
    const p = b.submit(7);
    expect(calls.map((c) => c.items)).toEqual([[7]]);
    calls[0]!.answer(['seven']);
    await expect(p).resolves.toBe('seven');
    expect(b.stats).toEqual({ batches: 1, items: 1, largest: 1 });
  });

  it('holds what arrives while maxInFlight batches are out, then sends it together, in order, at most maxBatch at a time', async () => {
    const { calls, run } = manualRun();
    const b = new Batcher(run, 2, 3);
    const ps = [1, 2, 3, 4, 5, 6, 7].map((i) => b.submit(i));
    // Two out at once (1 and 2), the rest waiting.
    expect(calls.map((c) => c.items)).toEqual([[1], [2]]);
    calls[0]!.answer(['a1']);
    await tick();
    // The first answer frees a slot: the next three go out as one batch.
    expect(calls.map((c) => c.items)).toEqual([[1], [2], [3, 4, 5]]);
    calls[1]!.answer(['a2']);
    await tick();
    expect(calls[3]!.items).toEqual([6, 7]);
    calls[2]!.answer(['a3', 'a4', 'a5']);
    calls[3]!.answer(['a6', 'a7']);
    expect(await Promise.all(ps)).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7']);
    expect(b.stats).toEqual({ batches: 4, items: 7, largest: 3 });
  });

  it("fails every item of a failed batch with its error, and only that batch's", async () => {
    const { calls, run } = manualRun();
    const b = new Batcher(run, 1, 10);
    const first = b.submit(1);
    const [second, third] = [b.submit(2), b.submit(3)];
    calls[0]!.answer(['ok']);
    await tick();
    calls[1]!.fail(new Error('connection lost'));
    await expect(first).resolves.toBe('ok');
    await expect(second).rejects.toThrow('connection lost');
    await expect(third).rejects.toThrow('connection lost');
    // The batcher goes on after a failure.
    const later = b.submit(4);
    calls[2]!.answer(['four']);
    await expect(later).resolves.toBe('four');
  });

  it('rejects a batch answered with the wrong number of results, and a run that throws', async () => {
    const short = new Batcher(async (items: number[]) => items.slice(1).map(String), 1, 10);
    await expect(short.submit(1)).rejects.toThrow('0 results for 1 items');
    const throwing = new Batcher<number, string>(
      () => {
        throw new Error('no connection');
      },
      1,
      10,
    );
    await expect(throwing.submit(1)).rejects.toThrow('no connection');
    await expect(throwing.submit(2)).rejects.toThrow('no connection');
  });

  it('refuses bounds below one', () => {
    expect(() => new Batcher(async () => [], 0, 1)).toThrow('at least 1');
    expect(() => new Batcher(async () => [], 1, 0)).toThrow('at least 1');
  });
});
