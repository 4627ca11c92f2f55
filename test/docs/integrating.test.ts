/**
 * docs/integrating.md runs: each `<!-- example: NAME -->` shell block is run with bash and curl
 * against a real service, and its output must have the status, message and field names (at
 * every level, with their JSON types) of the `<!-- response: NAME -->` block the page shows.
 * The `catch-up.mjs` and `verify-standard.mjs` blocks are imported and run (the latter against
 * real deliveries from the worker to a real receiver). A renamed field, path or message fails here.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createWalletRow } from '../helpers/factories.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';
import { startDeliveryWorker } from '../../src/workers/deliveries.js';

const run = promisify(execFile);
const md = readFileSync(fileURLToPath(new URL('../../docs/integrating.md', import.meta.url)), 'utf8');

function block(marker: string, lang: string): string {
  const m = new RegExp(`<!-- ${marker.replace(/[.*]/g, '\\$&')} -->\\s*\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(md);
  if (!m) throw new Error(`docs/integrating.md has no ${lang} block after <!-- ${marker} -->`);
  return m[1]!;
}

/** Field names and JSON types at every level; an array by its first item. */
function shape(v: unknown): unknown {
  if (v === null) return 'null';
  if (Array.isArray(v)) return v.length === 0 ? [] : [shape(v[0])];
  if (typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, shape((v as Record<string, unknown>)[k])]));
  return typeof v;
}

type Verify = (base: string, key: string, cursor: number, handle: (e: { id: number }) => Promise<void>) => Promise<number>;

describe('docs/integrating.md', () => {
  let t: TestApp;
  let dir: string;
  const env: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp();
    dir = mkdtempSync(join(tmpdir(), 'integrating-docs-'));
    const password = 'a long docs password';
    const user = await t.services.auth.createUser({ email: 'shop@example.com', password, name: 'Shop' });
    Object.assign(env, { BASE: t.url, EMAIL: 'shop@example.com', PASSWORD: password, WALLET: String((await createWalletRow(t, user.id)).id) });
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function example(name: string) {
    const { stdout } = await run('bash', ['-euc', block(`example: ${name}`, 'sh')], { env: { PATH: process.env.PATH ?? '', ...env } });
    const actual = JSON.parse(stdout);
    const documented = JSON.parse(block(`response: ${name}`, 'json'));
    expect({ name, status: actual.status, message: actual.message }).toEqual({ name, status: documented.status, message: documented.message });
    expect(shape(actual.data)).toEqual(shape(documented.data));
    return actual.data;
  }

  it('runs the key, charge and events examples as documented', async () => {
    env.TOKEN = (await example('login')).token;
    const key = await example('create-key');
    expect(key.scopes).toEqual(['read', 'charges:write']);
    env.KEY = key.key;
    const charge = await example('create-charge');
    expect(charge).toMatchObject({ amount: '0.250000000000000000', info: { order_id: 'A-1001' }, status: 'pending' });
    env.CHARGE = charge.uuid;
    expect((await example('show-charge')).id).toBe(charge.id);
    // The documented Idempotency-Key: the same request again returns the same charge.
    expect((await example('create-charge')).id).toBe(charge.id);
    expect(await example('refused')).toBeNull();
    const deposit = await example('create-deposit-address');
    expect(deposit).toMatchObject({ reference: 'customer-1042', label: 'Ada Lovelace', deposit_kind: 'keyed' });
    env.DEPOSIT = String(deposit.id);
    expect(await example('show-deposit-address')).toEqual({ ...deposit, received: [], sweeps: [] });
    const events = await example('events');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ event: 'charge.created', data: { uuid: charge.uuid, amount: '0.250000000000000000' } });
  });

  it('catch-up.mjs reads every event once and returns the cursor to resume from', async () => {
    const file = join(dir, 'catch-up.mjs');
    writeFileSync(file, block('catch-up.mjs', 'js'));
    const { catchUp } = (await import(pathToFileURL(file).href)) as { catchUp: Verify };

    const wallet = Number(env.WALLET);
    const charge = (amount: string) => t.request('POST', `/api/wallet/${wallet}/charge/create`, { token: env.KEY, body: { amount, token: 'ETH' } });
    for (let i = 1; i <= 120; i++) expect((await charge(`0.${i}`)).status).toBe(200);

    const seen: number[] = [];
    const cursor = await catchUp(t.url, env.KEY!, 0, async (e) => void seen.push(e.id));
    expect(seen).toHaveLength(121);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(cursor).toBe(seen.at(-1));

    await charge('9');
    const more: number[] = [];
    expect(await catchUp(t.url, env.KEY!, cursor, async (e) => void more.push(e.id))).toBe(more[0]);
    expect(more).toHaveLength(1);
    expect(more[0]).toBeGreaterThan(cursor);
  });

  it('verify-standard.mjs verifies real deliveries with standardwebhooks, through a secret rotation', async () => {
    // Inside node_modules/.cache so the block's `import 'standardwebhooks'` resolves to the project's.
    const own = mkdtempSync(fileURLToPath(new URL('../../node_modules/.cache/integrating-', import.meta.url)));
    const rx = await startReceiver();
    const worker = startDeliveryWorker(t.ctx, { webhooks: t.services.webhooks });
    try {
      const file = join(own, 'verify-standard.mjs');
      writeFileSync(file, block('verify-standard.mjs', 'js'));
      type Verify = (headers: Record<string, unknown>, rawBody: Buffer) => { event: string; data: Record<string, unknown> };
      const { webhookVerifier } = (await import(pathToFileURL(file).href)) as { webhookVerifier: (secret: string) => Verify };

      const login = await t.request('POST', '/api/auth/login', { body: { email: env.EMAIL, password: env.PASSWORD } });
      env.TOKEN = login.body.data.token;
      const [oldSecret, newSecret] = ['whsec_docs-old-4411', 'whsec_docs-new-5522'];
      const hook = await t.request('POST', `/api/wallet/${env.WALLET}/webhook/create`, {
        token: env.TOKEN,
        body: { url: `${rx.url}/docs`, type: 'charge', events: ['paid'], signature: oldSecret },
      });
      expect(hook.status, hook.text).toBe(200);
      env.WEBHOOK = String(hook.body.data.id);

      const sent = await example('webhook-test');
      expect(sent.event).toBe('webhook.test');
      const first = await waitFor(() => rx.to('/docs')[0]);
      expect(first.headers['webhook-id']).toBe(sent.uuid);
      const body = Buffer.from(first.body);
      expect(webhookVerifier(oldSecret)(first.headers, body)).toEqual({ event: 'webhook.test', data: { webhook_id: hook.body.data.id, sent_at: expect.any(String) } });
      expect(() => webhookVerifier(newSecret)(first.headers, body)).toThrow();
      expect(() => webhookVerifier(oldSecret)(first.headers, Buffer.from(first.body.replace('webhook.test', 'webhook.tesT')))).toThrow();

      // Rotated: during the overlap a receiver with either secret verifies.
      const upd = await t.request('POST', `/api/wallet/${env.WALLET}/webhook/${env.WEBHOOK}/update`, { token: env.TOKEN, body: { signature: newSecret } });
      expect(upd.status, upd.text).toBe(200);
      await example('webhook-test');
      const second = await waitFor(() => rx.to('/docs')[1]);
      for (const secret of [oldSecret, newSecret]) expect(webhookVerifier(secret)(second.headers, Buffer.from(second.body)).event).toBe('webhook.test');
      expect(() => webhookVerifier('whsec_someone-else')(second.headers, Buffer.from(second.body))).toThrow();
    } finally {
      await worker.stop();
      await rx.close();
      rmSync(own, { recursive: true, force: true });
    }
  });
});
