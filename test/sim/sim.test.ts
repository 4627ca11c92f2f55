/**
 * The short simulation (docs/simulation.md): real service processes, a real anvil behind the
 * fault proxy, every fault kind, then the invariants. Two seeds on SQLite; one on PostgreSQL when
 * DATABASE_URL is set (the run makes and drops its own database on that server). Each seed runs
 * 30 s of workload, then quiesces (up to 240 s; charges expire 60 s after creation).
 * A violation prints the seed: `npm run sim -- --seed N --seconds 30` replays its workload.
 */
import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, runSim } from '../../sim/run.js';
import { summary } from '../../sim/summary.js';

const postgres = process.env.DATABASE_URL ?? null;
const seeds = postgres ? [1803] : [1801, 1802];

describe(`fault simulation on ${postgres ? 'PostgreSQL' : 'SQLite'}`, () => {
  for (const seed of seeds) {
    it(`seed ${seed}: 30 s under kills, reorgs, RPC faults and failing deliveries; every wei accounted for`, async () => {
      const r = await runSim({ seed, seconds: 30, postgresUrl: postgres, faults: new Set(FAULT_KINDS), quiesceS: 240, log: () => undefined });
      const text = summary(r);
      process.stdout.write(`${text}\n`);
      // The run did something of each kind it is meant to exercise.
      expect(r.faults.kill, text).toBeGreaterThan(0);
      expect(r.faults.reorg, text).toBeGreaterThan(0);
      expect(Object.keys(r.ops).filter((k) => k.startsWith('charge-')).length, text).toBeGreaterThan(0);
      expect(r.violations, text).toEqual([]);
    }, 600_000);
  }
});
