/**
 * The simulation's only source of randomness: a small PRNG (mulberry32) seeded by `--seed`.
 * Each actor (workload, proxy, kills, reorgs, receiver) takes its own stream (`fork`), so the
 * operations one actor picks do not depend on how many times another drew (timing may vary).
 */
export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A new stream derived from this seed and a name. */
  fork(name: string): Prng {
    let h = this.state ^ 0x9e3779b9;
    for (const c of name) h = Math.imul(h ^ c.charCodeAt(0), 0x85ebca6b) >>> 0;
    return new Prng(h);
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[this.int(0, items.length - 1)]!;
  }

  /** Picks a key of `weights` with probability proportional to its weight. */
  weighted<K extends string>(weights: Record<K, number>): K {
    const entries = Object.entries(weights) as Array<[K, number]>;
    const total = entries.reduce((s, [, w]) => s + w, 0);
    let r = this.next() * total;
    for (const [k, w] of entries) {
      r -= w;
      if (r < 0) return k;
    }
    return entries[entries.length - 1]![0];
  }

  /** A bigint in [min, max]. */
  bigint(min: bigint, max: bigint): bigint {
    const span = max - min + 1n;
    const r = BigInt(Math.floor(this.next() * 2 ** 32)) * BigInt(Math.floor(this.next() * 2 ** 32));
    return min + (r % span);
  }
}
