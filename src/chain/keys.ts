/** Keys: BIP-39 mnemonics and BIP-44 derivation (m/44'/60'/0'/0/i) through viem. */
import { getAddress, toHex, type Address, type Hex, type TransactionSerializable } from 'viem';
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
  return { address: getAddress(address), signTransaction: (transaction) => signTransaction({ privateKey, transaction }) };
}
