/**
 * Putting the Sweeper on a network and recording it (`networks.sweeper`): the local devnet's at
 * start, from anvil's dev account; any other network's by `network:deploy-sweeper`, from a
 * wallet's main address through the service's own create path (src/chain/sweeper.ts says why it
 * goes through the deterministic-deployment proxy). A network is given a sweeper only once its
 * code is on the chain and a probe sweep left its address deleted; where the code already is, it
 * is not sent again, and where the network already uses it, nothing is sent.
 */
import type { Logger } from 'pino';
import { getAddress, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import type { AppContext } from '../../context.js';
import { isAppError } from '../../errors.js';
import type { Executor } from '../../db/index.js';
import type { NetworkRow } from '../../db/types.js';
import { CREATE2_FACTORY, hasCode, probeLeftDeleted, probeSweepData, sweeperAddress, sweeperDeployData } from '../../chain/sweeper.js';
import { findNativeToken } from '../tokens/tokens.repository.js';
import { TransactionService } from '../transactions/transactions.service.js';
import { findWalletView } from '../wallets/wallets.repository.js';
import { WalletService } from '../wallets/wallets.service.js';
import { devAccount, sendFromDevAccount } from './devnet-fund.js';
import { findNetwork, setSweeper } from './networks.repository.js';

/** How long `network:deploy-sweeper` waits for its transaction to be mined. */
const DEPLOY_WAIT_MS = 180_000;

/** Why a network cannot take the Sweeper (no deterministic-deployment proxy, a reverted deploy, a failed probe). */
export class SweeperDeployError extends Error {}

async function requireFactory(client: PublicClient, network: NetworkRow): Promise<void> {
  if (!(await hasCode(client, CREATE2_FACTORY)))
    throw new SweeperDeployError(
      `network ${network.id} (${network.name}) has no deterministic-deployment proxy at ${CREATE2_FACTORY}, through which the Sweeper is deployed; keyless deposit addresses stay off there`,
    );
}

/** Sends one transaction of the deploy (the code, the probe) and answers its mined receipt. */
type Send = (tx: { to: Address; data: Hex }) => Promise<{ receipt: TransactionReceipt; transaction_id: number | null }>;

interface Outcome {
  deployed: { transaction_id: number | null; tx_hash: Hex } | null;
  probe: { transaction_id: number | null; tx_hash: Hex } | null;
}

/**
 * Puts the Sweeper's code on the network when it is not there, then, unless the network already
 * uses it, probes it (src/chain/sweeper.ts `PROBE_SALT`) and records it only once the probe left
 * its address deleted. `from`: the account that pays (the probe sweeps that account's own probe
 * address). A step that fails throws, and the network keeps no sweeper.
 */
async function deployAndProbe(db: Executor, client: PublicClient, network: NetworkRow, from: Address, send: Send, nowMs: () => number) {
  const address = sweeperAddress();
  const out: Outcome = { deployed: null, probe: null };
  if (network.sweeper === address && (await hasCode(client, address))) return out;
  if (!(await hasCode(client, address))) {
    await requireFactory(client, network);
    const { receipt, transaction_id } = await send({ to: CREATE2_FACTORY, data: sweeperDeployData() });
    if (receipt.status !== 'success' || !(await hasCode(client, address)))
      throw new SweeperDeployError(`the deploy transaction ${receipt.transactionHash} left no code at ${address}`);
    out.deployed = { transaction_id, tx_hash: receipt.transactionHash };
  }
  const failed = (why: string) =>
    new SweeperDeployError(
      `network ${network.id} (${network.name}) failed the Sweeper's probe (${why}): SELFDESTRUCT does not delete an account created in the same transaction there, so keyless deposit addresses stay off`,
    );
  // A probe whose estimate reverts is refused before anything is signed (the service's create).
  const { receipt, transaction_id } = await send({ to: address, data: probeSweepData() }).catch((e: unknown) => {
    throw isAppError(e) && e.code === 'WOULD_REVERT' ? failed('it would revert') : e;
  });
  out.probe = { transaction_id, tx_hash: receipt.transactionHash };
  if (receipt.status !== 'success') throw failed(`${receipt.transactionHash} reverted`);
  if (!(await probeLeftDeleted(client, address, from, receipt.blockNumber)))
    throw failed(`${receipt.transactionHash} left the swept address with code or a nonce`);
  await setSweeper(db, network.id, address, nowMs());
  return out;
}

/**
 * The devnet's Sweeper, at start: deployed and probed from anvil's first dev account when the
 * network does not use it yet (a devnet state kept across restarts already has it). A devnet that
 * cannot take it keeps its keyed deposit addresses, with a warning: the service still starts.
 */
export async function ensureDevnetSweeper(db: Executor, network: NetworkRow, log: Logger, nowMs: number): Promise<void> {
  try {
    const dev = await devAccount(network);
    const send: Send = async (tx) => ({ receipt: await sendFromDevAccount(dev, tx), transaction_id: null });
    const out = await deployAndProbe(db, dev.client, network, dev.from, send, () => nowMs);
    if (out.probe)
      log.info(
        { network_id: network.id, sweeper: sweeperAddress(), deployed: out.deployed?.tx_hash ?? null },
        'sweeper ready on the local devnet',
      );
  } catch (e) {
    // A sweeper recorded before stays recorded: a fault of an endpoint at start is no proof its
    // code is gone, and a batch is never sent to a Sweeper without code (charges.batch-sweeps.ts).
    log.warn(
      { network_id: network.id, sweeper: network.sweeper, err: e },
      network.sweeper === null
        ? 'no sweeper on the local devnet: its charges keep keyed deposit addresses'
        : 'the local devnet sweeper could not be checked at start; kept as recorded',
    );
  }
}

export interface DeployedSweeper {
  network_id: number;
  sweeper: Address;
  /** The deploy, null when the code was already there. */
  deployed: { transaction_id: number | null; tx_hash: Hex } | null;
  /** The probe, null when the network already used this Sweeper (nothing was sent). */
  probe: { transaction_id: number | null; tx_hash: Hex } | null;
}

/**
 * `network:deploy-sweeper --network ID --wallet W`: the Sweeper deployed from wallet W's main
 * address and probed (each a `contract` transaction of W, as any call: its policy may hold it
 * for approval), waited for, and recorded on the network.
 */
export async function deploySweeper(ctx: AppContext, networkId: number, walletId: number): Promise<DeployedSweeper> {
  const network = await findNetwork(ctx.store.db, networkId);
  if (!network) throw new SweeperDeployError(`no network ${networkId}`);
  const wallet = await findWalletView(ctx.store.db, walletId);
  if (!wallet) throw new SweeperDeployError(`no wallet ${walletId}`);
  if (wallet.network_id !== network.id)
    throw new SweeperDeployError(`wallet ${walletId} is on network ${wallet.network_id}, not on network ${network.id}`);
  const native = await findNativeToken(ctx.store.db, wallet.id, { activeOnly: true });
  if (!native) throw new SweeperDeployError(`wallet ${walletId} has no native token`);
  const client = ctx.chains.get(network);
  const transactions = new TransactionService(ctx, new WalletService(ctx));
  const send: Send = async ({ to, data }) => {
    const tx = await transactions.create(wallet, { amount: 0n, token: native, to, data });
    if (tx.status === 'awaiting_approval')
      throw new SweeperDeployError(
        `transaction ${tx.id} of wallet ${walletId} (to ${to}) awaits approval under the wallet's policy; approve it, then run this again once it is confirmed`,
      );
    const receipt = await client.waitForTransactionReceipt({ hash: tx.tx_hash as Hex, timeout: DEPLOY_WAIT_MS, pollingInterval: 1_000 });
    return { receipt, transaction_id: tx.id };
  };
  const out = await deployAndProbe(ctx.store.db, client, network, getAddress(wallet.address), send, () => ctx.clock.nowMs());
  return { network_id: network.id, sweeper: sweeperAddress(), ...out };
}
