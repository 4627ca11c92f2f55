/**
 * The OpenAPI document as the service serves it passes Redocly's linter (`redocly lint` from
 * @redocly/cli, its `recommended` rules) with no error, and every operation has its id from the
 * one table, src/http/operation-ids.ts.
 *
 * The only warnings allowed are the ambiguous paths listed below, exactly those: each pair is an
 * original path of the API (`.../show/{id}`, `.../webhook/event/{event}`) beside one added later
 * (`.../{id}/<action>`), both published. The router is not ambiguous (a static segment wins over a
 * parameter, and no id is ever `show` or `event`); a generic tool cannot know that.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ROOT } from '../helpers/process.js';
import { registeredRoutes } from '../../src/http/docs.js';
import { OPERATION_IDS, operationKey } from '../../src/http/operation-ids.js';

const run = promisify(execFile);
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const REDOCLY = join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');

/** The original path, then the added one that a linter cannot tell from it. */
const AMBIGUOUS_SPEC_PATHS = [
  ['/api/wallet/{wallet}/charge/show/{charge}', '/api/wallet/{wallet}/charge/{charge}/refund'],
  ['/api/wallet/{wallet}/charge/show/{charge}', '/api/wallet/{wallet}/charge/{charge}/sweep'],
  ['/api/wallet/{wallet}/transaction/show/{transaction}', '/api/wallet/{wallet}/transaction/{transaction}/approve'],
  ['/api/wallet/{wallet}/transaction/show/{transaction}', '/api/wallet/{wallet}/transaction/{transaction}/cancel'],
  ['/api/wallet/{wallet}/transaction/show/{transaction}', '/api/wallet/{wallet}/transaction/{transaction}/reject'],
  ['/api/wallet/{wallet}/transaction/show/{transaction}', '/api/wallet/{wallet}/transaction/{transaction}/speed-up'],
  ['/api/wallet/{wallet}/webhook/event/{event}', '/api/wallet/{wallet}/webhook/{webhook}/deliveries'],
  ['/api/wallet/{wallet}/webhook/event/{event}', '/api/wallet/{wallet}/webhook/{webhook}/recover'],
  ['/api/wallet/{wallet}/webhook/event/{event}', '/api/wallet/{wallet}/webhook/{webhook}/test'],
  ['/api/wallet/{wallet}/webhook/event/{event}', '/api/wallet/{wallet}/webhook/{webhook}/update'],
].map(([spec, contract]) => `${spec} | ${contract}`);

interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer?: string }[];
}
interface LintResult {
  totals: { errors: number; warnings: number };
  problems: LintProblem[];
}

/** Runs `redocly lint` on the document in a folder of its own (no redocly.yaml is picked up). */
async function redoclyLint(doc: unknown): Promise<LintResult> {
  const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
  try {
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc));
    const args = [REDOCLY, 'lint', 'openapi.json', '--extends=recommended', '--format=json', '--max-problems=1000'];
    // Exit code 1 when there is an error: the JSON on stdout says which.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
    const out = await run(process.execPath, args, { cwd: dir, env, maxBuffer: 16 * 1024 * 1024 }).catch(
      (e: { stdout?: string; stderr?: string }) => e,
    );
    expect(out.stdout, out.stderr).toMatch(/^\s*\{/);
    return JSON.parse(out.stdout!) as LintResult;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `Found two ambiguous paths: `a` and `b`.` → `a | b` */
function ambiguousPair(p: LintProblem): string {
  const paths = [...p.message.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  return paths.sort().join(' | ');
}

describe('OpenAPI document, linted', () => {
  let t: TestApp;
  let doc: any;
  beforeAll(async () => {
    t = await startTestApp();
    const res = await fetch(`${t.url}/api/openapi.json`);
    expect(res.status).toBe(200);
    doc = await res.json();
  });
  afterAll(async () => t?.close());

  it('gives every route its operationId from src/http/operation-ids.ts, each id once', () => {
    const routes = registeredRoutes(t.app)
      .filter((r) => !r.hidden)
      .map((r) => operationKey(r.method, r.url));
    const missing = routes.filter((key) => !Object.hasOwn(OPERATION_IDS, key));
    expect(missing, 'add a line for each of these routes to OPERATION_IDS in src/http/operation-ids.ts').toEqual([]);
    const stale = Object.keys(OPERATION_IDS).filter((key) => !routes.includes(key));
    expect(stale, 'these lines of src/http/operation-ids.ts name no registered route').toEqual([]);
    const ids = Object.values(OPERATION_IDS);
    expect(
      ids.filter((id, i) => ids.indexOf(id) !== i),
      'operationIds used twice',
    ).toEqual([]);
    for (const id of ids) expect(id, 'camelCase, letters only').toMatch(/^[a-z][A-Za-z]+$/);

    const fromDoc = Object.entries(doc.paths as Record<string, Record<string, { operationId?: string }>>)
      .flatMap(([path, ops]) => METHODS.filter((m) => ops[m]).map((m) => `${m.toUpperCase()} ${path} ${ops[m]!.operationId}`))
      .sort();
    const fromTable = Object.entries(OPERATION_IDS)
      .map(([key, id]) => `${key.replace(/:([A-Za-z0-9_]+)/g, '{$1}')} ${id}`)
      .sort();
    expect(fromDoc).toEqual(fromTable);
  });

  it('says where the API is (relative to this origin) and under which license', () => {
    expect(doc.servers).toEqual([{ url: '/', description: expect.any(String) }]);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { license: string };
    expect(doc.info.license).toEqual({ name: pkg.license, identifier: pkg.license });
  });

  it("passes `redocly lint` (recommended): no error, no warning but SPEC's ambiguous paths", async () => {
    const result = await redoclyLint(doc);
    const errors = result.problems.filter((p) => p.severity === 'error');
    expect(errors.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
    const warnings = result.problems.filter((p) => p.severity !== 'error');
    const other = warnings.filter((p) => p.ruleId !== 'no-ambiguous-paths');
    expect(other.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
    expect(warnings.map(ambiguousPair).sort()).toEqual([...AMBIGUOUS_SPEC_PATHS].sort());
    expect(result.totals).toMatchObject({ errors: 0, warnings: AMBIGUOUS_SPEC_PATHS.length });
  });
});
