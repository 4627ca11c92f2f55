/**
 * The README's first run, as a newcomer types it: the `sh` blocks of its "Start" section, in
 * order, against `npm start` (SQLite, the local devnet) in a data folder of its own on free
 * ports. The commands are read from README.md itself, so the README cannot drift from what
 * works: `npm install` and `npm test` are the two this test cannot run inside the suite (the
 * tree is installed, and this is `npm test`); every other line runs in bash with `set -e`, its
 * addresses moved to this test's ports. `npm start`'s prestart (the dashboard's build) is left to
 * the suite's global setup, which built the same files: building them again here would rewrite
 * them under the browser tests running beside this one.
 *
 * Then a second `npm start` beside the first stops with one line naming the port it found taken
 * (DEVNET_PORT), not a stack trace.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../src/chain/devnet.js';
import { ROOT, until, type Proc } from '../helpers/process.js';

/** The `sh` blocks of the README's "Start" section, in order. */
function startBlocks(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.slice(readme.indexOf('\n## Start\n'), readme.indexOf('\n## ', readme.indexOf('\n## Start\n') + 1));
  return [...start.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/**
 * Runs `command` in bash from the repository's root, in a process group of its own, with this
 * process's environment less the test run's database and mode, plus `env`.
 */
function bash(command: string, env: Record<string, string>): Proc {
  const base = { ...process.env };
  for (const k of ['DATABASE_URL', 'NODE_ENV', 'APP_KEY', 'VITEST', 'VITEST_POOL_ID', 'VITEST_WORKER_ID']) delete base[k];
  const child = spawn('bash', ['-c', command], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout.on('data', (d) => (out += d.toString()));
  child.stderr.on('data', (d) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

/** Each line of `out` that is a JSON object, parsed. */
function jsonLines(out: string): Array<Record<string, any>> {
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, any>);
}

describe("the README's first run", () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'readme-'));
  const started: Proc[] = [];
  let devnetPort = 0;
  afterAll(async () => {
    for (const p of started) {
      try {
        process.kill(-p.child.pid!, 'SIGTERM');
      } catch {
        /* the group has ended */
      }
      await p.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs its commands in order: a user, a token, a funded wallet, a transfer, a charge; the dashboard answers', async () => {
    const blocks = startBlocks();
    expect(blocks[0]!.trim().split('\n')).toEqual(['npm install', 'npm start']);
    expect(blocks[1]!.trim()).toBe('npm test');
    const port = await findFreePort();
    devnetPort = await findFreePort();
    const env = { PORT: String(port), DEVNET_PORT: String(devnetPort), DATA_DIR: dataDir, npm_config_ignore_scripts: 'true' };

    const server = bash('exec npm start --silent', env);
    started.push(server);
    const banner = await until(async () => (server.output().includes('  database:') ? server.output() : null), 90_000, 'the start banner');
    expect(banner).toContain(`wallet service listening on http://127.0.0.1:${port}`);
    expect(banner).toContain(`  dashboard:     http://127.0.0.1:${port}/dashboard`);

    // Every answer on a line of its own; a refused request fails the run.
    const rest = blocks.slice(2).join('\n').replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);
    const run = bash(`set -euo pipefail\ncurl() { command curl -sS --fail-with-body "$@"; echo; }\n${rest}`, env);
    started.push(run);
    const code = await run.exited;
    const out = run.output();
    expect(code, out).toBe(0);

    const answers = jsonLines(out);
    const networks = answers.find((a) => Array.isArray(a.data) && a.data[0]?.chain_id === 31337);
    expect(networks?.data[0], out).toMatchObject({ id: 1, name: 'Local devnet' });
    expect(answers.find((a) => a.data?.name === 'Main')?.data, out).toMatchObject({ id: 1, name: 'Main' });
    expect(
      answers.find((a) => a.wallet_id === 1 && a.tx_hash),
      out,
    ).toMatchObject({ amount: '10.000000000000000000', token: 'ETH' });
    const sent = answers.find((a) => a.data?.amount === '0.500000000000000000');
    expect(sent?.data, out).toMatchObject({ symbol: 'ETH', to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' });
    const charge = answers.find((a) => typeof a.data?.hosted_url === 'string');
    expect(charge?.data.hosted_url, out).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/pay/[0-9a-f-]{36}$`));

    const dashboard = await fetch(`http://127.0.0.1:${port}/`);
    expect([dashboard.status, dashboard.url]).toEqual([200, `http://127.0.0.1:${port}/dashboard`]);
  }, 180_000);

  it('a second npm start beside the first stops with one line naming DEVNET_PORT', async () => {
    expect(started[0]?.child.exitCode, 'the first service still runs').toBeNull();
    const second = bash('exec npm start --silent', {
      PORT: String(await findFreePort()),
      DEVNET_PORT: String(devnetPort),
      DATA_DIR: join(dataDir, 'second'),
      npm_config_ignore_scripts: 'true',
    });
    started.push(second);
    expect(await second.exited).toBe(1);
    const lines = second
      .output()
      .trim()
      .split('\n')
      .filter((l) => !l.startsWith('{'));
    expect(lines).toEqual([
      `fatal: anvil: port ${devnetPort} on 127.0.0.1 is already in use (another \`npm start\`?): set DEVNET_PORT to a free port, or start without the devnet: DEVNET=off, or DEVNET_RPC_URL=<a node>`,
    ]);
  }, 90_000);
});
