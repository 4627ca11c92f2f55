/**
 * Putting the Sweeper on a network and recording it (`networks.sweeper`): the local devnet's at
 * start, from anvil's dev account; any other network's by `network:deploy-sweeper`, from a
 * wallet's main address through the service's own create path (src/chain/sweeper.ts says why it
 * goes through the deterministic-deployment proxy). A network is given a sweeper only once its
 * code is on the chain, and never one it does not hold: deploying where the code already is
 * records it and sends nothing.
 */
import type { Logger } from 'pino';
import type { Address, Hex, PublicClient } from 'viem';
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import type { NetworkRow } from '../../db/types.js';
import { CREATE2_FACTORY, hasCode, sweeperAddress, sweeperDeployData } from '../../chain/sweeper.js';
import { listTokens } from '../tokens/tokens.repository.js';
import { TransactionService } from '../transactions/transactions.service.js';
import { findWalletView } from '../wallets/wallets.repository.js';
import { WalletService } from '../wallets/wallets.service.js';
import { devAccount, sendFromDevAccount } from './devnet-fund.js';
import { findNetwork, setSweeper } from './networks.repository.js';

/** How long `network:deploy-sweeper` waits for its transaction to be mined. */
const DEPLOY_WAIT_MS = 180_000;

/** Why a network cannot take the Sweeper (no deterministic-deployment proxy, a reverted deploy). */
export class SweeperDeployError extends Error {}

async function requireFactory(client: PublicClient, network: NetworkRow): Promise<void> {
  if (!(await hasCode(client, CREATE2_FACTORY)))
    throw new SweeperDeployError(
      `network ${network.id} (${network.name}) has no deterministic-deployment proxy at ${CREATE2_FACTORY}, through which the Sweeper is deployed; keyless deposit addresses stay off there`,
    );
}

/** Records the sweeper once its code is there; false when it is not. */
async function recordIfDeployed(db: Executor, client: PublicClient, network: NetworkRow, nowMs: number): Promise<boolean> {
  const address = sweeperAddress();
  if (!(await hasCode(client, address))) return false;
  if (network.sweeper !== address) await setSweeper(db, network.id, address, nowMs);
  return true;
}

/**
 * The devnet's Sweeper, at start: deployed from anvil's first dev account when the chain has none
 * (a devnet state kept across restarts already has it). A devnet that cannot take it (no
 * proxy) keeps its keyed deposit addresses, with a warning: the service still starts.
 */
export async function ensureDevnetSweeper(db: Executor, network: NetworkRow, log: Logger, nowMs: number): Promise<void> {
  try {
    const dev = await devAccount(network);
    if (await recordIfDeployed(db, dev.client, network, nowMs)) return;
    await requireFactory(dev.client, network);
    const receipt = await sendFromDevAccount(dev, { to: CREATE2_FACTORY, data: sweeperDeployData() });
    if (receipt.status !== 'success' || !(await recordIfDeployed(db, dev.client, network, nowMs)))
      throw new SweeperDeployError(`the deploy transaction ${receipt.transactionHash} left no code at ${sweeperAddress()}`);
    log.info(
      { network_id: network.id, sweeper: sweeperAddress(), tx_hash: receipt.transactionHash },
      'sweeper deployed on the local devnet',
    );
  } catch (e) {
    // A devnet whose state was reset no longer holds the sweeper recorded before.
    if (network.sweeper !== null) await setSweeper(db, network.id, null, nowMs);
    log.warn({ network_id: network.id, err: e }, 'no sweeper on the local devnet: its charges keep keyed deposit addresses');
  }
}

export interface DeployedSweeper {
  network_id: number;
  sweeper: Address;
  /** False when the code was already there: nothing was sent. */
  deployed: boolean;
  transaction_id: number | null;
  tx_hash: Hex | null;
}

/**
 * `network:deploy-sweeper --network ID --wallet W`: the Sweeper deployed from wallet W's main
 * address (a `contract` transaction of W, to the proxy, as any call: its policy may hold it for
 * approval), waited for, and recorded on the network.
 */
export async function deploySweeper(ctx: AppContext, networkId: number, walletId: number): Promise<DeployedSweeper> {
  const network = await findNetwork(ctx.store.db, networkId);
  if (!network) throw new SweeperDeployError(`no network ${networkId}`);
  const wallet = await findWalletView(ctx.store.db, walletId);
  if (!wallet) throw new SweeperDeployError(`no wallet ${walletId}`);
  if (wallet.network_id !== network.id)
    throw new SweeperDeployError(`wallet ${walletId} is on network ${wallet.network_id}, not on network ${network.id}`);
  const client = ctx.chains.get(network);
  const address = sweeperAddress();
  const done = (tx: { id: number; tx_hash: Hex } | null): DeployedSweeper => ({
    network_id: network.id,
    sweeper: address,
    deployed: tx !== null,
    transaction_id: tx?.id ?? null,
    tx_hash: tx?.tx_hash ?? null,
  });
  if (await recordIfDeployed(ctx.store.db, client, network, ctx.clock.nowMs())) return done(null);
  await requireFactory(client, network);

  const native = (await listTokens(ctx.store.db, wallet.id, { activeOnly: true })).find((t) => t.is_native === 1);
  if (!native) throw new SweeperDeployError(`wallet ${walletId} has no native token`);
  const transactions = new TransactionService(ctx, new WalletService(ctx));
  const tx = await transactions.create(wallet, { amount: 0n, token: native, to: CREATE2_FACTORY, data: sweeperDeployData() });
  if (tx.status === 'awaiting_approval')
    throw new SweeperDeployError(
      `the deploy (transaction ${tx.id} of wallet ${walletId}) awaits approval under the wallet's policy; approve it, then run this again once it is confirmed`,
    );
  const hash = tx.tx_hash as Hex;
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: DEPLOY_WAIT_MS, pollingInterval: 1_000 });
  if (receipt.status !== 'success' || !(await recordIfDeployed(ctx.store.db, client, network, ctx.clock.nowMs())))
    throw new SweeperDeployError(`the deploy (transaction ${tx.id}, ${hash}) left no code at ${address}`);
  return done({ id: tx.id, tx_hash: hash });
}
