import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createPublicClient, erc20Abi, http, parseAbi, type Address } from 'viem';
import { foundry } from 'viem/chains';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePort, startDevnet, type Devnet } from '../../src/chain/devnet.js';
import { compileTestContracts, deployErc20, deployNotAToken, erc20BalanceOf, mintErc20 } from './erc20.js';

const RECIPIENT: Address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

describe('test ERC-20 helpers', { timeout: 30_000 }, () => {
  let devnet: Devnet;

  beforeAll(async () => {
    devnet = await startDevnet({ port: await findFreePort() });
  }, 30_000);
  afterAll(async () => {
    await devnet?.stop();
  }, 15_000);

  it('compiles once and caches on disk', () => {
    const first = compileTestContracts();
    expect(compileTestContracts()).toBe(first); // in-memory cache
    expect(first.erc20.bytecode).toMatch(/^0x[0-9a-f]+$/);
    expect(first.notAToken.bytecode).toMatch(/^0x[0-9a-f]+$/);
    const names = first.erc20.abi.flatMap((item) => ('name' in item && item.name ? [item.name] : []));
    for (const name of [
      'name',
      'symbol',
      'decimals',
      'totalSupply',
      'balanceOf',
      'transfer',
      'transferFrom',
      'approve',
      'allowance',
      'mint',
      'Transfer',
      'Approval',
    ]) {
      expect(names).toContain(name);
    }
    const cacheDir = fileURLToPath(new URL('../../node_modules/.cache/wallet-service-contracts/', import.meta.url));
    expect(existsSync(cacheDir)).toBe(true);
    expect(readdirSync(cacheDir).some((f) => /^[0-9a-f]{64}\.json$/.test(f))).toBe(true);
  });

  it('deploys a 6-decimal token, mints and reads the balance exactly', async () => {
    const token = await deployErc20(devnet.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
    const client = createPublicClient({ chain: foundry, transport: http(devnet.rpcUrl) });
    expect(await client.readContract({ address: token, abi: erc20Abi, functionName: 'name' })).toBe('Test USD');
    expect(await client.readContract({ address: token, abi: erc20Abi, functionName: 'symbol' })).toBe('TUSD');
    expect(await client.readContract({ address: token, abi: erc20Abi, functionName: 'decimals' })).toBe(6);

    expect(await erc20BalanceOf(devnet.rpcUrl, token, RECIPIENT)).toBe(0n);
    const hash = await mintErc20(devnet.rpcUrl, token, RECIPIENT, 1234567n);
    expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await erc20BalanceOf(devnet.rpcUrl, token, RECIPIENT)).toBe(1234567n);
    expect(await client.readContract({ address: token, abi: erc20Abi, functionName: 'totalSupply' })).toBe(1234567n);

    const receipt = await client.getTransactionReceipt({ hash });
    expect(receipt.status).toBe('success');
    expect(receipt.logs).toHaveLength(1); // Transfer(0x0, RECIPIENT, 1234567)
    expect(receipt.logs[0]?.address.toLowerCase()).toBe(token.toLowerCase());
  });

  it('rejects a mint that reverts', async () => {
    const token = await deployErc20(devnet.rpcUrl, { name: 'Eighteen', symbol: 'E18', decimals: 18 });
    await expect(mintErc20(devnet.rpcUrl, token, '0x0000000000000000000000000000000000000000', 1n)).rejects.toThrow(/mint to zero address/);
  });

  it('deploys NotAToken, which answers ping() but not ERC-20 calls', async () => {
    const address = await deployNotAToken(devnet.rpcUrl);
    const client = createPublicClient({ chain: foundry, transport: http(devnet.rpcUrl) });
    const ping = await client.readContract({
      address,
      abi: parseAbi(['function ping() pure returns (uint256)']),
      functionName: 'ping',
    });
    expect(ping).toBe(1n);
    await expect(client.readContract({ address, abi: erc20Abi, functionName: 'decimals' })).rejects.toThrow();
  });
});
