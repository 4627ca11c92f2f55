/**
 * Funding from the local devnet (a newcomer's first minutes, README "Start"): one of anvil's
 * unlocked dev accounts sends ether to an address in a real transfer, so the service sees it
 * as any payment (a receipt, `balance.updated`, reconciliation in agreement), never by
 * `anvil_setBalance`, which reconciliation would rightly flag.
 *
 * Refused on every network but the local devnet: the network must be the one `npm start`
 * registers (chain id 31337) AND its node must say it is anvil (`web3_clientVersion`), so a
 * misconfigured production network can never be "funded" by this path.
 */
import { createPublicClient, getAddress, http, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import type { Executor } from '../../db/index.js';
import type { NetworkRow } from '../../db/types.js';
import { formatUnits18 } from '../../lib/money.js';
import { findNetwork } from './networks.repository.js';
import { DEVNET_CHAIN_ID } from './networks.service.js';

export class NotDevnet extends Error {
  constructor(what: string) {
    super(`only the local devnet (chain id ${DEVNET_CHAIN_ID}, an anvil node) can fund from its dev accounts; ${what}`);
  }
}

/** The dev account holds less than the amount and its fee: nothing is sent. */
export class DevnetShort extends Error {
  constructor(readonly available: bigint) {
    super(`the devnet's dev account holds ${formatUnits18(available, 18)} ETH, less than that amount and its fee`);
  }
}

/** A transfer's gas on anvil, with a margin for its fee (a plain transfer uses 21,000). */
const FEE_GAS = 21_000n;

/** The local devnet's node and its first dev account (NotDevnet on any other network or node). */
export async function devAccount(network: NetworkRow): Promise<{ client: PublicClient; from: Address }> {
  if (network.chain_id !== DEVNET_CHAIN_ID) throw new NotDevnet(`network ${network.id} (${network.name}) has chain id ${network.chain_id}`);
  const client = createPublicClient({ transport: http(network.rpc_url, { retryCount: 0, timeout: 10_000 }) });
  const version = await client.request({ method: 'web3_clientVersion' as never }).catch(() => '');
  if (!String(version).toLowerCase().startsWith('anvil'))
    throw new NotDevnet(`the node of network ${network.id} is not anvil (${String(version) || 'no client version'})`);
  const [from] = (await client.request({ method: 'eth_accounts' as never })) as Address[];
  if (!from) throw new NotDevnet(`the node of network ${network.id} has no dev account`);
  return { client, from };
}

/** Sends a transaction from the devnet's dev account (unlocked: the node signs; no `to`: a contract creation) and waits for its receipt. */
export async function sendFromDevAccount(
  { client, from }: { client: PublicClient; from: Address },
  tx: { to?: Address; value?: bigint; data?: Hex },
): Promise<TransactionReceipt> {
  const hash = (await client.request({
    method: 'eth_sendTransaction' as never,
    params: [
      {
        from,
        ...(tx.to !== undefined ? { to: tx.to } : {}),
        ...(tx.value !== undefined ? { value: `0x${tx.value.toString(16)}` } : {}),
        ...(tx.data ? { data: tx.data } : {}),
      },
    ] as never,
  })) as Hex;
  return client.waitForTransactionReceipt({ hash, timeout: 30_000, pollingInterval: 100 });
}

/** Sends `wei` from anvil's first dev account to `to` and waits for its receipt (DevnetShort when it cannot pay it). */
export async function fundFromDevnet(network: NetworkRow, to: string, wei: bigint): Promise<{ tx_hash: Hex; block_number: number }> {
  const dev = await devAccount(network);
  const [balance, gasPrice] = await Promise.all([dev.client.getBalance({ address: dev.from }), dev.client.getGasPrice()]);
  if (wei + FEE_GAS * gasPrice * 2n > balance) throw new DevnetShort(balance);
  const receipt = await sendFromDevAccount(dev, { to: getAddress(to), value: wei });
  return { tx_hash: receipt.transactionHash, block_number: Number(receipt.blockNumber) };
}

/** Funds a wallet's main address (the CLI's devnet:fund and POST .../devnet/fund): what was sent, in the API's shape. */
export async function fundWalletFromDevnet(db: Executor, wallet: { id: number; address: string; network_id: number }, wei: bigint) {
  const network = await findNetwork(db, wallet.network_id);
  if (!network) throw new NotDevnet(`wallet ${wallet.id} has no network`);
  const sent = await fundFromDevnet(network, wallet.address, wei);
  return { wallet_id: wallet.id, address: wallet.address, amount: formatUnits18(wei, 18), token: 'ETH', ...sent };
}
