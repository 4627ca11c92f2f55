/**
 * The OpenAPI document: 3.1, public and bare, valid by an OpenAPI schema validator, with
 * exactly the routes the app registered, each with a summary, a description, its errors and an
 * example. Types generated from it by openapi-typescript compile together with the
 * openapi-fetch example of docs/examples/client.ts, which then runs against the real service.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import openapiTS, { astToString } from 'openapi-typescript';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createWalletRow } from '../helpers/factories.js';
import { ROOT } from '../helpers/process.js';
import { registeredRoutes } from '../../src/http/docs.js';

const run = promisify(execFile);
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** `/api/wallet/:wallet` → `/api/wallet/{wallet}` */
function openapiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\/$/, '');
}

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: any;
  beforeAll(async () => {
    t = await startTestApp();
    const res = await fetch(`${t.url}/api/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    doc = await res.json();
  });
  afterAll(async () => t?.close());

  it('is OpenAPI 3.1, served bare without a token, and valid', async () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.status).toBeUndefined(); // not the envelope
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it("sends the reference's index.html with a query string to the page, not round in circles", async () => {
    const res = await fetch(`${t.url}/api/docs/static/index.html?url=x`, { redirect: 'manual' });
    expect([res.status, res.headers.get('location')]).toEqual([302, '/api/docs/']);
    const page = await fetch(`${t.url}/api/docs/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('swagger-ui');
  });

  it('has exactly the routes Fastify registered, except the document, the reference and /metrics', () => {
    const fromApp = registeredRoutes(t.app)
      .filter((r) => !r.hidden)
      .map((r) => `${r.method} ${openapiPath(r.url)}`)
      .sort();
    const fromDoc = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, ops]) => METHODS.filter((m) => ops[m] !== undefined).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    expect(fromApp.length).toBeGreaterThanOrEqual(28);
    expect(fromDoc).toEqual(fromApp);
    const hidden = registeredRoutes(t.app)
      .filter((r) => r.hidden)
      .map((r) => r.url);
    expect(hidden).toEqual(expect.arrayContaining(['/api/openapi.json', '/api/docs', '/metrics']));
  });

  it('gives every operation a summary, a description, its error responses and an example', () => {
    // A shared error response (`#/components/responses/NotFound`) is read where it is listed.
    const resolved = (r: any) => (typeof r.$ref === 'string' ? doc.components.responses[r.$ref.split('/').pop()] : r);
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const m of METHODS) {
        const op = ops[m];
        if (!op) continue;
        const where = `${m.toUpperCase()} ${path}`;
        expect(op.summary, where).toMatch(/\w/);
        expect(op.description, where).toMatch(/\w{3,}/);
        const codes = Object.keys(op.responses);
        expect(codes, where).toEqual(expect.arrayContaining(['200', '422', '429', '500']));
        if (path !== '/api/auth/login') expect(codes, where).toContain('401');
        for (const code of codes) {
          const response = resolved(op.responses[code]);
          // A CSV export answers its file as text/csv (its errors as JSON).
          const media = response.content?.['application/json'] ?? response.content?.['text/csv'];
          expect(media?.example, `${where} ${code} example`).toBeDefined();
          expect(response.description, `${where} ${code}`).not.toBe('Default Response');
          if (code !== '200') expect(response.description, `${where} ${code}`).not.toMatch(/^Success/);
        }
        if (op.requestBody) expect(op.requestBody.content['application/json'].example, `${where} body example`).toBeDefined();
      }
    }
    expect(doc.paths['/api/wallet/{wallet}'].get.responses['404']).toEqual({ $ref: '#/components/responses/NotFound' });
    expect(doc.paths['/api/auth/login'].post.security).toEqual([]);
    expect(doc.paths['/api/auth/login'].post.responses['401'].content['application/json'].example).toEqual({
      status: 'error',
      message: 'Invalid credentials',
      data: null,
    });
  });

  it('documents each CSV export as a text/csv 200 and its errors as the JSON envelope', () => {
    for (const kind of ['transactions', 'charges', 'payouts']) {
      const op = doc.paths[`/api/wallet/{wallet}/export/${kind}.csv`].get;
      expect(Object.keys(op.responses['200'].content), kind).toEqual(['text/csv']);
      expect(op.responses['200'].content['text/csv'].example, kind).toMatch(/^[a-z_]+(,[a-z_]+)+\r\n/);
      expect(op.responses['422'], kind).toEqual({ $ref: '#/components/responses/ValidationFailed' });
      expect(op.parameters.map((p: { name: string }) => p.name).sort(), kind).toEqual(['from', 'to', 'wallet']);
    }
  });

  it('generates types with openapi-typescript that compile with the openapi-fetch example, which then runs', async () => {
    const dir = join(ROOT, 'test/artifacts/openapi-client');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'api.d.ts'), astToString(await openapiTS(doc)));
    copyFileSync(join(ROOT, 'docs/examples/client.ts'), join(dir, 'client.ts'));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: [],
        },
        files: ['api.d.ts', 'client.ts'],
      }),
    );
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const compiled = await run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { cwd: dir }).catch((e) => e);
    expect(`${compiled.stdout ?? ''}${compiled.stderr ?? ''}`).toBe('');

    const user = await t.createUser();
    await createWalletRow(t, user.id, { name: 'Shop till' });
    type Example = (baseUrl: string, email: string, password: string) => Promise<{ wallet: string; charge: Record<string, unknown> }>;
    const { example } = (await import(join(dir, 'client.ts'))) as { example: Example };
    const out = await example(t.url, user.email, user.password);
    expect(out.wallet).toBe('Shop till');
    expect(out.charge).toMatchObject({ amount: '0.250000000000000000', token: 'ETH', status: 'pending' });
  }, 120_000);
});
