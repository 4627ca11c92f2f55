/**
 * The dashboard's API client is typed from the service's own OpenAPI document
 * (dashboard/src/schema.d.ts, `npm run dashboard:types`): this fails while the committed types
 * and the document the service serves disagree, so a route whose schema changed cannot ship
 * without the dashboard being compiled against it (`npm run typecheck` compiles the dashboard).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { generatedTypes, TYPES_FILE } from '../../scripts/dashboard-types.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('the dashboard API types', () => {
  it('are the OpenAPI document the service serves, as openapi-typescript makes them', async () => {
    const doc = await t.request('GET', '/api/openapi.json');
    expect(doc.status).toBe(200);
    const fresh = await generatedTypes(doc.body);
    const committed = readFileSync(TYPES_FILE, 'utf8');
    // A mismatch is fixed by `npm run dashboard:types` (then the dashboard must still typecheck).
    expect(committed === fresh, 'dashboard/src/schema.d.ts is stale: run `npm run dashboard:types`').toBe(true);
  });
});
