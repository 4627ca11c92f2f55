/**
 * One short simulation run as a test (docs/simulation.md): real service processes, a real anvil
 * behind three fault proxies (the service's endpoints, each with its own faults), every fault
 * kind, then the invariants. 30 s of workload, then quiesce
 * (up to 240 s; charges expire 60 s after creation). A violation prints the seed:
 * `npm run sim -- --seed N --seconds 30` replays its workload. Each seed is its own test file, so
 * the runs (mostly waiting for blocks and expiries) overlap with the rest of the suite.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_ENDPOINTS, FAULT_KINDS, runSim } from '../../sim/run.js';
import { summary } from '../../sim/summary.js';

export function simulationTest(seed: number, postgresUrl: string | null): void {
  describe(`fault simulation on ${postgresUrl ? 'PostgreSQL' : 'SQLite'}`, () => {
    it(`seed ${seed}: 30 s on ${DEFAULT_ENDPOINTS} endpoints under kills, reorgs, RPC faults, views behind, refusals, glitches, a missing trace API and failing deliveries; every wei accounted for`, async () => {
      const r = await runSim({
        seed,
        seconds: 30,
        postgresUrl,
        faults: new Set(FAULT_KINDS),
        endpoints: DEFAULT_ENDPOINTS,
        quiesceS: 240,
        log: () => undefined,
      });
      const text = summary(r);
      process.stdout.write(`${text}\n`);
      // The run did something of each kind it is meant to exercise.
      expect(r.faults.kill, text).toBeGreaterThan(0);
      expect(r.faults.reorg, text).toBeGreaterThan(0);
      expect(r.faults['rpc-behind'], text).toBeGreaterThan(0);
      expect(r.faults['rpc-glitch'], text).toBeGreaterThan(0);
      expect(r.faults['rpc-ahead'], text).toBeGreaterThan(0);
      expect(Object.keys(r.ops).filter((k) => k.startsWith('charge-')).length, text).toBeGreaterThan(0);
      expect(r.violations, text).toEqual([]);
    }, 600_000);
  });
}
