import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';
import { createWebhook, emit, owner, startWorker } from './fixtures.js';

type Verify = (secret: string, headers: Record<string, unknown>, rawBody: Buffer, nowS?: number) => { event: string; data: unknown };

/** The `verify-webhook.mjs` code block of docs/webhooks.md, as a module. */
async function loadDocsExample(dir: string): Promise<Verify> {
  const md = readFileSync(fileURLToPath(new URL('../../docs/webhooks.md', import.meta.url)), 'utf8');
  const m = /<!-- verify-webhook\.mjs -->\s*```js\n([\s\S]*?)```/.exec(md);
  expect(m, 'docs/webhooks.md has the verify-webhook.mjs block').not.toBeNull();
  const file = join(dir, 'verify-webhook.mjs');
  writeFileSync(file, m![1]!);
  return ((await import(pathToFileURL(file).href)) as { verifyWebhook: Verify }).verifyWebhook;
}

describe("the docs' receiver example", () => {
  let t: TestApp;
  let rx: Receiver;
  let dir: string;

  beforeAll(async () => {
    t = await startTestApp();
    rx = await startReceiver();
    dir = mkdtempSync(join(tmpdir(), 'webhook-docs-'));
  });
  afterAll(async () => {
    await rx?.close();
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('verifies both signatures of a real delivery and rejects tampering, a wrong secret and a replay', async () => {
    const verifyWebhook = await loadDocsExample(dir);
    const o = await owner(t);
    const secret = 'whsec_docs example ✓';
    await createWebhook(t, o, { url: `${rx.url}/docs`, type: 'charge', events: ['created'], signature: secret });
    const worker = startWorker(t);
    try {
      await emit(t, o, 'charge.created');
      await waitFor(() => rx.to('/docs').length === 1);
    } finally {
      await worker.stop();
    }
    const r = rx.to('/docs')[0]!;
    const raw = Buffer.from(r.body, 'utf8');

    expect(verifyWebhook(secret, r.headers, raw)).toEqual(JSON.parse(r.body));
    expect(() => verifyWebhook(secret, r.headers, Buffer.from(r.body.replace('"charge_id":', '"charge_id":1')))).toThrow(
      /X-Webhook-Signature/,
    );
    expect(() => verifyWebhook('another secret', r.headers, raw)).toThrow(/X-Webhook-Signature/);
    const forgedStd = { ...r.headers, 'webhook-signature': 'v1,AAAA' };
    expect(() => verifyWebhook(secret, forgedStd, raw)).toThrow(/webhook-signature/);
    const later = Number(r.headers['webhook-timestamp']) + 3600;
    expect(() => verifyWebhook(secret, r.headers, raw, later)).toThrow(/timestamp/);
  });
});
