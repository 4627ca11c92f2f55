/** Before any test file: the dashboard's script and stylesheet are built (the service serves them from dashboard/dist). */
// @ts-expect-error: a plain ESM build script, no declaration file
import { buildDashboard } from '../scripts/build-dashboard.mjs';

export default async function setup(): Promise<void> {
  await buildDashboard();
}
