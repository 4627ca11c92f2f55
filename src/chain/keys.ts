/**
 * Keys: BIP-39 mnemonics and BIP-44 derivation (m/44'/60'/0'/0/i) through viem; wallets'
 * transactions signed by libsecp256k1 where its binding is built for the platform.
 */
import { createRequire } from 'node:module';
import {
  bytesToHex,
  getAddress,
  hexToBytes,
  keccak256,
  serializeTransaction,
  toHex,
  type Address,
  type Hex,
  type TransactionSerializable,
} from 'viem';
import { english, generateMnemonic, mnemonicToAccount, privateKeyToAccount, signTransaction, type PrivateKeyAccount } from 'viem/accounts';

export interface DerivedKey {
  address: Address;
  privateKey: Hex;
}

export function deriveKey(mnemonic: string, addressIndex: number): DerivedKey {
  const hd = mnemonicToAccount(mnemonic, { addressIndex });
  const pk = hd.getHdKey().privateKey;
  if (!pk) throw new Error('HD derivation produced no private key');
  return { address: hd.address, privateKey: toHex(pk) };
}

/** A fresh wallet: a new 12-word mnemonic and its first address (index 0). */
export function newWalletKeys(): DerivedKey & { mnemonic: string } {
  const mnemonic = generateMnemonic(english);
  return { mnemonic, ...deriveKey(mnemonic, 0) };
}

export function accountFromKey(privateKey: Hex): PrivateKeyAccount {
  return privateKeyToAccount(privateKey);
}

/** What signs a wallet's transactions. */
export interface TransactionSigner {
  readonly address: Address;
  signTransaction(transaction: TransactionSerializable): Promise<Hex>;
}

/**
 * A signer for a key whose address is stored with it (a wallet's): signs without deriving the
 * public key and address again, a curve multiplication as costly as the signature itself, on
 * every transfer. The address is the one the key was created with (`newWalletKeys`).
 */
export function signerFor(privateKey: Hex, address: string): TransactionSigner {
  const native = nativeSigner;
  if (!native) return { address: getAddress(address), signTransaction: (transaction) => signTransaction({ privateKey, transaction }) };
  const key = hexToBytes(privateKey);
  return { address: getAddress(address), signTransaction: async (transaction) => signNatively(native, key, transaction) };
}

/**
 * The `secp256k1` package's binding of bitcoin-core's libsecp256k1 (prebuilt in the package for
 * linux-x64, darwin-arm64 and win32-x64; never its pure-JavaScript fallback). A signature there
 * costs a fraction of one in viem's JavaScript signer, on the event loop's thread of every
 * transfer create (BENCHMARKS.md); both are RFC 6979 and low-S, so the raw transaction
 * is byte for byte viem's (test/chain/signing.test.ts). Null where no binding loads: viem signs.
 */
interface NativeSecp256k1 {
  ecdsaSign(message: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recid: number };
}

export const nativeSigner: NativeSecp256k1 | null = loadNativeSigner();

function loadNativeSigner(): NativeSecp256k1 | null {
  try {
    return createRequire(import.meta.url)('secp256k1/bindings') as NativeSecp256k1;
  } catch {
    return null;
  }
}

/** viem's `signTransaction` with libsecp256k1's signature: the same serialisation, the same signature fields. */
export function signNatively(native: NativeSecp256k1, privateKey: Uint8Array, transaction: TransactionSerializable): Hex {
  if (transaction.type === 'eip4844') throw new Error('blob transactions are not signed here');
  const { signature, recid } = native.ecdsaSign(hexToBytes(keccak256(serializeTransaction(transaction))), privateKey);
  // 2 and 3 mean r overflowed the group order (probability ~2^-127); Ethereum has no parity for them.
  if (recid > 1) throw new Error(`signature recovery id ${recid} has no y parity`);
  const r = bytesToHex(signature.subarray(0, 32));
  const s = bytesToHex(signature.subarray(32, 64));
  return serializeTransaction(transaction, { r, s, v: recid === 1 ? 28n : 27n, yParity: recid });
}
