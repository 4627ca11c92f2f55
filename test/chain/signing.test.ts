/**
 * Wallets' transactions are signed by libsecp256k1 (src/chain/keys.ts, `signerFor`): the binding
 * loads where the package ships it prebuilt, and its raw transactions are byte for byte the ones
 * viem's JavaScript signer makes (both RFC 6979, low-S), for every kind the service sends, over
 * enough signatures that r and s with leading zero bytes occur; the sender recovered from each
 * is the wallet's address.
 */
import { describe, expect, it } from 'vitest';
import { encodeFunctionData, erc20Abi, hexToBytes, parseTransaction, recoverTransactionAddress, type TransactionSerializable } from 'viem';
import { generatePrivateKey, privateKeyToAccount, signTransaction } from 'viem/accounts';
import { nativeSigner, signerFor } from '../../src/chain/keys.js';

const PREBUILT = ['linux-x64', 'darwin-arm64', 'win32-x64'];
const TO = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720';

function kinds(nonce: number): TransactionSerializable[] {
  const value = 10n ** 15n * BigInt(nonce + 1);
  return [
    {
      chainId: 31337,
      nonce,
      gas: 21_000n,
      maxFeePerGas: 2_000_000_000n + BigInt(nonce),
      maxPriorityFeePerGas: 1_000_000_000n,
      to: TO,
      value,
    },
    {
      chainId: 1,
      nonce,
      gas: 65_000n,
      maxFeePerGas: 30_000_000_000n,
      maxPriorityFeePerGas: 0n,
      to: TO,
      value: 0n,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [TO, value] }),
    },
    { type: 'legacy', chainId: 56, nonce, gas: 21_000n, gasPrice: 3_000_000_000n + BigInt(nonce), to: TO, value },
  ];
}

describe('transaction signing', () => {
  it('loads libsecp256k1 where the package ships it prebuilt', () => {
    if (PREBUILT.includes(`${process.platform}-${process.arch}`)) expect(nativeSigner).not.toBeNull();
  });

  it('makes the raw transactions viem makes, and they recover to the wallet', async () => {
    let signed = 0;
    let leadingZero = 0;
    for (let k = 0; k < 8; k++) {
      const privateKey = generatePrivateKey();
      const address = privateKeyToAccount(privateKey).address;
      const signer = signerFor(privateKey, address.toLowerCase());
      expect(signer.address).toBe(address);
      for (let nonce = 0; nonce < 100; nonce++) {
        for (const tx of kinds(nonce)) {
          const raw = await signer.signTransaction(tx);
          expect(raw).toBe(await signTransaction({ privateKey, transaction: tx }));
          const parsed = parseTransaction(raw);
          if (hexToBytes(parsed.r!)[0] === 0 || hexToBytes(parsed.s!)[0] === 0) leadingZero++;
          if (nonce % 25 === 0) expect(await recoverTransactionAddress({ serializedTransaction: raw as never })).toBe(address);
          signed++;
        }
      }
    }
    expect(signed).toBe(2400);
    // r or s below 2^248 in about 1 of 128 signatures: the padding is exercised.
    expect(leadingZero).toBeGreaterThan(0);
  });
});
