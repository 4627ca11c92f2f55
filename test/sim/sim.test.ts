/** The short simulation: seed 1801 on SQLite, seed 1803 on PostgreSQL when DATABASE_URL is set (it makes and drops its own database there). */
import { simulationTest } from './seed.js';

const postgres = process.env.DATABASE_URL ?? null;
simulationTest(postgres ? 1803 : 1801, postgres);
