/** A second short simulation seed (1802), on SQLite only (`*.sqlite.test.ts` is left out of the PostgreSQL run). */
import { simulationTest } from './seed.js';

simulationTest(1802, null);
