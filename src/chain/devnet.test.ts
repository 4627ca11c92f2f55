import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers/wait.js';
import { anvilBinaryPath, findFreePort, startDevnet, type Devnet } from './devnet.js';

async function rpc(rpcUrl: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(5_000),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

const running: Devnet[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
}, 15_000);

async function start(opts: Partial<Parameters<typeof startDevnet>[0]> = {}): Promise<Devnet> {
  const devnet = await startDevnet({ port: await findFreePort(), ...opts });
  running.push(devnet);
  return devnet;
}

describe('anvilBinaryPath', () => {
  it('resolves an existing binary', () => {
    const path = anvilBinaryPath();
    expect(path).toMatch(/@foundry-rs[/\\]anvil-[a-z]+-(amd64|arm64)[/\\]bin[/\\]anvil$/);
    expect(existsSync(path)).toBe(true);
  });
});

describe('findFreePort', () => {
  it('returns a usable TCP port', async () => {
    const port = await findFreePort();
    expect(Number.isInteger(port)).toBe(true);
    expect(port).toBeGreaterThan(0);
    expect(port).toBeLessThan(65536);
  });
});

// anvil starts in well under a second, but allow for slow CI machines.
describe('startDevnet', { timeout: 30_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'devnet-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('starts anvil, answers JSON-RPC and stops', async () => {
    const infos: string[] = [];
    const devnet = await start({
      logger: { info: (_obj, msg) => infos.push(msg ?? ''), warn: () => undefined },
    });
    expect(devnet.rpcUrl).toBe(`http://127.0.0.1:${devnet.port}`);
    expect(infos).toContain('anvil devnet started');

    expect(BigInt((await rpc(devnet.rpcUrl, 'eth_chainId')) as string)).toBe(31337n);
    // A fresh chain without a block time is at genesis and mines only on demand.
    expect(BigInt((await rpc(devnet.rpcUrl, 'eth_blockNumber')) as string)).toBe(0n);
    await rpc(devnet.rpcUrl, 'evm_mine');
    expect(BigInt((await rpc(devnet.rpcUrl, 'eth_blockNumber')) as string)).toBe(1n);

    await devnet.stop();
    await devnet.stop(); // idempotent
    await expect(rpc(devnet.rpcUrl, 'eth_chainId')).rejects.toThrow();
  });

  it('honours chainId and accounts', async () => {
    const devnet = await start({ chainId: 1337, accounts: 2 });
    expect(BigInt((await rpc(devnet.rpcUrl, 'eth_chainId')) as string)).toBe(1337n);
    expect(await rpc(devnet.rpcUrl, 'eth_accounts')).toHaveLength(2);
  });

  it('persists state across restarts with statePath', async () => {
    // Nested, not yet existing directory: anvil would silently skip the dump.
    const statePath = join(dir, 'nested', 'state.json');
    const address = '0x1111111111111111111111111111111111111111';
    const balance = 123456789n * 10n ** 9n;

    const first = await start({ statePath });
    await rpc(first.rpcUrl, 'anvil_setBalance', [address, `0x${balance.toString(16)}`]);
    await first.stop();
    expect(existsSync(statePath)).toBe(true);

    const second = await start({ statePath, port: first.port });
    expect(BigInt((await rpc(second.rpcUrl, 'eth_getBalance', [address, 'latest'])) as string)).toBe(balance);
  });

  it('keeps the state across a restart when anvil does not write its own dump on stop', async () => {
    // anvil skips its dump when the file's directory is gone: a stand-in for the exits without a
    // dump seen in CI (a SIGTERM soon after start on a busy machine). The state read over
    // JSON-RPC just before the SIGTERM is written instead.
    const statePath = join(dir, 'gone', 'state.json');
    const address = '0x2222222222222222222222222222222222222222';
    const balance = 987654321n * 10n ** 9n;

    const first = await start({ statePath });
    await rpc(first.rpcUrl, 'anvil_setBalance', [address, `0x${balance.toString(16)}`]);
    rmSync(join(dir, 'gone'), { recursive: true, force: true });
    await first.stop();
    expect(existsSync(statePath)).toBe(true);

    const second = await start({ statePath, port: first.port });
    expect(BigInt((await rpc(second.rpcUrl, 'eth_getBalance', [address, 'latest'])) as string)).toBe(balance);
  });

  it('mines on an interval with blockTimeS', async () => {
    const devnet = await start({ blockTimeS: 1 });
    const before = BigInt((await rpc(devnet.rpcUrl, 'eth_blockNumber')) as string);
    // Nothing is sent, so only interval mining can move the head: two blocks within 10 s.
    await waitFor(async () => BigInt((await rpc(devnet.rpcUrl, 'eth_blockNumber')) as string) >= before + 2n, {
      timeoutMs: 10_000,
      intervalMs: 100,
      message: 'two blocks mined by the 1 s block time',
    });
  });

  it('refuses a port that is already in use', async () => {
    const devnet = await start();
    await expect(startDevnet({ port: devnet.port })).rejects.toThrow(/port \d+ on 127\.0\.0\.1 is already in use/);
  });

  it('fails with anvil output when anvil exits during startup', async () => {
    const statePath = join(dir, 'corrupt.json');
    writeFileSync(statePath, 'not json');
    await expect(startDevnet({ port: await findFreePort(), statePath })).rejects.toThrow(
      /anvil exited with code \d+ before becoming ready; last output:\n.*corrupt\.json/,
    );
  });
});
