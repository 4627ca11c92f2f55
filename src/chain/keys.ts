/** Keys: BIP-39 mnemonics and BIP-44 derivation (m/44'/60'/0'/0/i) through viem. */
import { toHex, type Address, type Hex } from 'viem';
import { english, generateMnemonic, mnemonicToAccount, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';

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
