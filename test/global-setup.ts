/**
 * Before any test file: the dashboard's script and stylesheet are built (the service serves them
 * from dashboard/dist), and the service's entry points are bundled into build/ (the tests start
 * the server and the CLI from there: scripts/build-entries.mjs).
 */
// @ts-expect-error: a plain ESM build script, no declaration file
import { buildDashboard } from '../scripts/build-dashboard.mjs';
// @ts-expect-error: a plain ESM build script, no declaration file
import { buildEntries } from '../scripts/build-entries.mjs';

export default async function setup(): Promise<void> {
  await Promise.all([buildDashboard(), buildEntries()]);
}
