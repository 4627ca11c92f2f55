/**
 * `npm start` once ready prints the URL, the dashboard's and the docs' URLs, the data folder, the database driver,
 * each network with its RPC origin only, and a warning for each development default in force.
 * The RPC URL's path and query (an API key) appear nowhere in the output, not even in the
 * errors the watcher logs when the node cannot be reached.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../src/chain/devnet.js';
import { createTestDatabase, driverName, type TestDatabase } from '../helpers/db.js';
import { runTs, until, type Proc } from '../helpers/process.js';

describe('start banner', () => {
  let proc: Proc | null = null;
  let database: TestDatabase | null = null;
  afterAll(async () => {
    proc?.child.kill('SIGKILL');
    await proc?.exited;
    await database?.drop();
  });

  it('shows where everything is, RPC hosts only, and warns about development defaults', async () => {
    database = await createTestDatabase();
    const dir = mkdtempSync(join(tmpdir(), 'banner-'));
    const networksFile = join(dir, 'networks.json');
    writeFileSync(
      networksFile,
      JSON.stringify([
        { name: 'Paid node', rpc_url: 'http://127.0.0.1:9/v2/SECRETKEY123?apikey=QUERYKEY456', chain_id: 11155111, currency_symbol: 'ETH' },
      ]),
    );
    const port = await findFreePort();
    proc = runTs('src/server.ts', [], {
      NODE_ENV: 'development',
      PORT: String(port),
      DATA_DIR: database.dataDir,
      ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
      DEVNET_RPC_URL: 'http://127.0.0.1:1/devnet/DEVNETKEY789',
      NETWORKS_FILE: networksFile,
      WATCHER_POLL_MS: '50',
      LOG_LEVEL: 'debug',
    });
    const out = await until(
      async () => (proc!.output().includes('WARNING: WEBHOOK_ALLOW_PRIVATE') ? proc!.output() : null),
      30_000,
      'the banner',
    );
    const lines = out.split('\n');
    expect(lines).toContain(`wallet service listening on http://127.0.0.1:${port}`);
    expect(lines).toContain(`  dashboard:     http://127.0.0.1:${port}/dashboard`);
    expect(lines).toContain(`  API reference: http://127.0.0.1:${port}/api/docs`);
    expect(lines).toContain(`  data folder:   ${database.dataDir}`);
    expect(lines).toContain(`  database:      ${driverName}`);
    expect(lines.some((l) => /^ {2}network #\d+: Local devnet \(chain 31337\) via http:\/\/127\.0\.0\.1:1$/.test(l))).toBe(true);
    expect(lines.some((l) => /^ {2}network #\d+: Paid node \(chain 11155111\) via http:\/\/127\.0\.0\.1:9$/.test(l))).toBe(true);
    expect(lines.filter((l) => l.startsWith('WARNING: '))).toEqual([
      `WARNING: APP_KEY is not set: secrets are encrypted with the development key generated in ${join(database.dataDir, 'app.key')}; set APP_KEY in production`,
      'WARNING: the local devnet (anvil, chain id 31337) is registered as a network: its coins are not real; set DEVNET=off in production',
      'WARNING: WEBHOOK_ALLOW_PRIVATE is on: webhooks may target loopback and private addresses; turn it off in production',
    ]);
    // The watcher fails against both nodes for a while: its errors name the host, never the key.
    await until(async () => proc!.output().includes('watcher tick failed'), 30_000, 'a watcher error');
    const all = proc.output();
    // The error did name the node: by its origin.
    expect(all.split('\n').some((l) => l.includes('watcher tick failed') && /http:\/\/127\.0\.0\.1:(1|9)\b/.test(l))).toBe(true);
    for (const secret of ['SECRETKEY123', 'QUERYKEY456', 'DEVNETKEY789', '/v2/', '/devnet/']) expect(all, secret).not.toContain(secret);
    const res = await fetch(`http://127.0.0.1:${port}/api/networks`);
    expect(res.status).toBe(401);
  }, 60_000);
});
