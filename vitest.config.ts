import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// `*.pg.test.ts` are PostgreSQL-only (several service processes on one database); they are
// collected only when DATABASE_URL is set, so the SQLite run neither runs nor skips them.
// `*.sqlite.test.ts` would be SQLite-only likewise (none today).
const exclude = process.env.DATABASE_URL ? ['**/*.sqlite.test.ts'] : ['**/*.pg.test.ts'];

/**
 * The files that take longest, started first (longest first). Without a results cache (a fresh
 * clone: CI) vitest starts the largest files first, and the simulation (a small file running
 * for ~2 minutes) started last and ran alone while the other forks idled: ~100 s of each
 * suite's wall time. Measured with `--reporter=json` on the SQLite suite, 2026-11-26.
 */
const SLOW_FIRST = [
  'test/sim/sim.test.ts',
  'test/operations/cli.test.ts',
  'test/operations/server.test.ts',
  'test/webhooks/operations.test.ts',
  'test/networks/endpoints-config.test.ts',
  'test/webhooks/delivery.test.ts',
  'test/networks/presets.test.ts',
  'test/ops/service.test.ts',
  'test/charges/settlement.test.ts',
  'test/checkout/checkout-browser.test.ts',
  'test/keys/keys.test.ts',
  'test/auth/auth.test.ts',
];

class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = SLOW_FIRST.findIndex((p) => f.moduleId.endsWith(p));
      return i === -1 ? SLOW_FIRST.length : i;
    };
    // Array#sort is stable: the rest keeps the base order (cached durations, else sizes).
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', ...exclude],
    pool: 'forks',
    // Each file starts its own service, database and (where needed) anvil chain; two cores.
    poolOptions: { forks: { maxForks: 3, minForks: 1 } },
    sequence: { sequencer: SlowFirstSequencer },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
