import { defineConfig } from 'vitest/config';

// `*.pg.test.ts` are PostgreSQL-only (several service processes on one database); they are
// collected only when DATABASE_URL is set, so the SQLite run neither runs nor skips them.
// `*.sqlite.test.ts` would be SQLite-only likewise (none today).
const exclude = process.env.DATABASE_URL ? ['**/*.sqlite.test.ts'] : ['**/*.pg.test.ts'];

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', ...exclude],
    pool: 'forks',
    // Each file starts its own service, database and (where needed) anvil chain; two cores.
    poolOptions: { forks: { maxForks: 3, minForks: 1 } },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
