/**
 * A hot wallet's signer is kept (src/modules/wallets/wallets.service.ts, `signer`): its next
 * creates within SIGNER_KEEP_MS of the last use neither read nor decrypt the key again; after
 * that, or for the same id under another address, the key is read and decrypted again, and a
 * stored key that is not the address's is refused, never used.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SIGNER_KEEP_MS } from '../../src/modules/wallets/wallets.service.js';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { ensureNetwork } from '../helpers/factories.js';

let t: TestApp;
let alice: TestUser;
const clock = new ManualClock();
const wallets: Array<{ id: number; address: string }> = [];

beforeAll(async () => {
  t = await startTestApp({ clock });
  alice = await t.createUser();
  const network = await ensureNetwork(t);
  for (const name of ['Hot', 'Other']) {
    const res = await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name, network_id: network.id } });
    expect(res.status).toBe(200);
    wallets.push({ id: res.body.data.id, address: res.body.data.address });
  }
});
afterAll(async () => t?.close());

describe("a wallet's signer, kept between creates", () => {
  it('is decrypted once while in use, and again after SIGNER_KEEP_MS unused', async () => {
    const decrypt = vi.spyOn(t.ctx.secrets, 'decrypt');
    const [hot, other] = wallets as [{ id: number; address: string }, { id: number; address: string }];
    const first = await t.services.wallets.signer(hot);
    expect(first.address).toBe(hot.address);
    expect(decrypt).toHaveBeenCalledTimes(1);
    clock.advance(SIGNER_KEEP_MS - 1);
    expect(await t.services.wallets.signer(hot)).toBe(first);
    clock.advance(SIGNER_KEEP_MS - 1); // kept from its last use, not its first
    expect(await t.services.wallets.signer(hot)).toBe(first);
    expect(decrypt).toHaveBeenCalledTimes(1);
    // Another wallet has its own.
    expect((await t.services.wallets.signer(other)).address).toBe(other.address);
    expect(decrypt).toHaveBeenCalledTimes(2);
    clock.advance(SIGNER_KEEP_MS);
    const again = await t.services.wallets.signer(hot);
    expect(again).not.toBe(first);
    expect(again.address).toBe(hot.address);
    expect(decrypt).toHaveBeenCalledTimes(3);
    // Both sign the same bytes (the same key).
    const tx = { chainId: 31337, nonce: 0, gas: 21_000n, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n, to: other.address as `0x${string}`, value: 1n };
    expect(await again.signTransaction(tx)).toBe(await first.signTransaction(tx));
    decrypt.mockRestore();
  });

  it("serves an id only under its own address: the same id with another address reads the key again and refuses it", async () => {
    const [hot, other] = wallets as [{ id: number; address: string }, { id: number; address: string }];
    await t.services.wallets.signer(hot);
    await expect(t.services.wallets.signer({ id: hot.id, address: other.address })).rejects.toThrow(`wallet ${hot.id}: its stored key is not its address's`);
    // The refusal left the kept signer as it was.
    expect((await t.services.wallets.signer(hot)).address).toBe(hot.address);
  });
});
