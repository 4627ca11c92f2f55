/**
 * The follower reads blocks in rounds (READ_AHEAD at once, src/workers/watcher.ts): our
 * transfers among a round's blocks are looked up in one statement (`lookupOurs`), where each
 * block took one, and each block's read finds in it what its own lookup found; and one
 * statement tells whether any charge address is watched from the round's first block on, so
 * that, with none, no block reads the watched addresses. Statements are counted with a Kysely
 * plugin on the scope's database handle.
 */
import type { KyselyPlugin, RootOperationNode } from 'kysely';
import type { Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FullBlock } from '../../src/chain/blocks.js';
import { anyDepositWatched } from '../../src/modules/charges/charges.chain-sync.js';
import { loadWatched, lookupOurs, readBlockTransfers, type SyncScope } from '../../src/modules/transactions/transactions.chain-sync.js';
import { driverName } from '../helpers/db.js';
import { ETH, fundedWallet, RECIPIENT } from '../helpers/transfers.js';
import { startStepSuite, syncScope, type StepSuite } from './watcher-steps.js';

const BLOCKS = 4;

describe(`the follower's read of a round of blocks (${driverName})`, () => {
  let s: StepSuite;
  let blocks: FullBlock[];
  const sent: Array<{ id: number; hash: Hex }> = [];
  let statements = 0;
  let counted: SyncScope;

  beforeAll(async () => {
    s = await startStepSuite();
    const { t, chain, user, networkId } = s;
    // One transfer of ours in each of four blocks, each from its own wallet.
    for (let i = 0; i < BLOCKS; i++) {
      const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
      const res = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
        token: user.token,
        body: { amount: '1', token: 'ETH', address: RECIPIENT },
      });
      expect(res.status, res.text).toBe(200);
      sent.push({ id: res.body.data.id as number, hash: res.body.data.tx_hash as Hex });
      await chain.mine(1);
    }
    const scope = syncScope(s);
    const head = await scope.client.getBlockNumber();
    blocks = await Promise.all(
      Array.from(
        { length: BLOCKS },
        (_, i) => scope.client.getBlock({ blockNumber: head - BigInt(BLOCKS - 1 - i), includeTransactions: true }) as Promise<FullBlock>,
      ),
    );
    const counting: KyselyPlugin = {
      transformQuery: (args): RootOperationNode => args.node,
      // Once an executed statement (transformQuery also runs for a statement's parts).
      transformResult: async (args) => {
        statements++;
        return args.result;
      },
    };
    counted = { ...scope, ctx: { ...scope.ctx, store: { ...scope.ctx.store, db: scope.ctx.store.db.withPlugin(counting) } } };
  });

  afterAll(async () => s?.close());

  it('finds our transfer in each of four blocks: one statement for the round, one a block alone', async () => {
    const watched = await loadWatched(s.t.store.db, s.networkId);
    const ours = (b: Awaited<ReturnType<typeof readBlockTransfers>>) => b.ours.map((o) => ({ id: o.rec.id, hash: o.hash }));

    statements = 0;
    const alone = [];
    for (const block of blocks) alone.push(ours(await readBlockTransfers(counted, block, watched)));
    expect(statements).toBe(BLOCKS);

    statements = 0;
    const lookup = await lookupOurs(counted, blocks, watched);
    const inRound = [];
    for (const block of blocks) inRound.push(ours(await readBlockTransfers(counted, block, watched, lookup)));
    expect(statements).toBe(1);

    expect(inRound).toEqual(sent.map((t) => [t]));
    expect(alone).toEqual(inRound);
  });

  it('tells whether a charge address is watched from a block on: none before the first charge, then its', async () => {
    const { t, user, chain, networkId } = s;
    const stampMs = Number(blocks.at(-1)!.timestamp) * 1000;
    statements = 0;
    expect(await anyDepositWatched(counted, stampMs)).toBe(false);
    expect(statements).toBe(1);
    const w = await fundedWallet(t, chain, user, networkId, ETH);
    const res = await t.request('POST', `/api/wallet/${w.id}/charge/create`, {
      token: user.token,
      body: { amount: '0.5', token: 'ETH', expires: 60 },
    });
    expect(res.status, res.text).toBe(200);
    expect(await anyDepositWatched(counted, stampMs)).toBe(true);
    // Watched while pending, whatever the block's stamp.
    expect(await anyDepositWatched(counted, stampMs + 3_600_000)).toBe(true);
  });
});
