import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// `*.pg.test.ts` are PostgreSQL-only (several service processes on one database); they are
// collected only when DATABASE_URL is set, so the SQLite run neither runs nor skips them.
// `*.sqlite.test.ts` would be SQLite-only likewise (none today).
// The files that do not depend on the database (pure unit tests beside the code, the pages in a
// browser, the OpenAPI document, helpers) run once, in the SQLite run: running them again on
// PostgreSQL proved nothing more and cost ~1 minute of CI's 15.
const ONCE = [
  'src/**/*.test.ts',
  'test/checkout/checkout-browser.test.ts',
  'test/checkout/checkout-states-browser.test.ts',
  'test/checkout/checkout-price-browser.test.ts',
  'test/refunds/refund-browser.test.ts',
  'test/dashboard/dashboard-*.test.ts',
  'test/dashboard/journey-*.test.ts',
  'test/dashboard/api-types.test.ts',
  'test/operations/docs-browser.test.ts',
  'test/operations/openapi.test.ts',
  'test/http/openapi-lint.test.ts',
  'test/checkout/links.test.ts',
  'test/operations/deploy.test.ts',
  'test/http/serializer.test.ts',
  'test/webhooks/schedule.test.ts',
  'test/webhooks/claim-plan.test.ts',
  'test/helpers/erc20.test.ts',
  'test/chain/transport.test.ts',
  'test/sweeper/sweeper.test.ts',
];
const exclude = process.env.DATABASE_URL ? ['**/*.sqlite.test.ts', ...ONCE] : ['**/*.pg.test.ts'];

/**
 * The simulation (~2 minutes in one file) starts first. Without a results cache (a fresh clone:
 * CI) vitest starts the largest files first, and this small file started last and ran alone for
 * ~100 s while the other forks idled. Starting every slow file first was tried and was slower
 * (590 s against ~450 s for the SQLite suite: the child-process-heavy files, the CLI's and the
 * server's, all at once); only the simulation moves.
 */
const SLOW_FIRST = ['test/sim/sim.test.ts'];

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
    // Not isolated: the three forks live through the run and each file reuses the modules the
    // files before it loaded (the service's ~400 modules were imported again for every file:
    // "collect" 492 s of a 673 s SQLite run in CI; 19 s of 249 s without, on this machine).
    // Each file closes the apps, chains and receivers it starts (afterAll). The forks are never
    // fewer than three: with minForks 1, twice in two runs, the last two files were cut short
    // ("Terminating worker thread", the fork's IPC channel closed under it): tinypool retires a
    // fork above minForks once it looks idle, and reused forks only look idle between files.
    poolOptions: { forks: { maxForks: 3, minForks: 3, isolate: false } },
    sequence: { sequencer: SlowFirstSequencer },
    // The dashboard is built once before the files run (test/global-setup.ts).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
