/**
 * The systemd unit in deploy/ passes `systemd-analyze verify` (and a broken copy does not), and
 * its environment is one the service accepts, trusting one proxy hop (issue 47, c).
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';
import { loadConfig } from '../../src/config.js';

const run = promisify(execFile);

async function verify(file: string): Promise<{ code: number; output: string }> {
  try {
    const r = await run('systemd-analyze', ['verify', file]);
    return { code: 0, output: `${r.stdout}${r.stderr}` };
  } catch (e) {
    const err = e as { code?: number | string; stdout?: string; stderr?: string };
    if (err.code === 'ENOENT') throw new Error('systemd-analyze is not installed (Debian: apt-get install systemd)', { cause: e });
    return { code: Number(err.code), output: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

describe('deploy/wallet-service@.service', () => {
  it('passes systemd-analyze verify as an instance', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'unit-'));
    const unit = join(dir, 'wallet-service@8081.service');
    copyFileSync(join(ROOT, 'deploy/wallet-service@.service'), unit);
    const ok = await verify(unit);
    expect(ok.output).toBe('');
    expect(ok.code).toBe(0);

    const broken = join(dir, 'broken-wallet@8081.service');
    writeFileSync(broken, readFileSync(unit, 'utf8').replace('ExecStart=/usr/bin/node', 'ExecStart=node-without-a-path'));
    const bad = await verify(broken);
    expect(bad.code).not.toBe(0);
  });

  it('trusts one proxy hop, never every X-Forwarded-For entry', () => {
    const unit = readFileSync(join(ROOT, 'deploy/wallet-service@.service'), 'utf8');
    const env = Object.fromEntries([...unit.matchAll(/^Environment=([A-Z_]+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!.replace('%i', '8081')]));
    expect(env.TRUST_PROXY).toBe('1');
    const config = loadConfig({ ...env, APP_KEY: Buffer.alloc(32, 1).toString('base64') });
    expect(config.trustProxy).toBe(1);
    expect(config.host).toBe('127.0.0.1');
  });
});
