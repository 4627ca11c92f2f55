/**
 * PostgreSQL only: the events cursor never skips an event, although event ids are drawn from a
 * sequence at insert and transactions commit in their own order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { createWalletRow } from '../helpers/factories.js';
import { recordEvent } from '../../src/modules/events/outbox.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A gate a test opens by hand. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

describe('events cursor on PostgreSQL', () => {
  let t: TestApp;
  let user: TestUser;
  let walletId: number;

  beforeAll(async () => {
    t = await startTestApp({ env: { DB_POOL_SIZE: '12' } });
    user = await t.createUser();
    walletId = (await createWalletRow(t, user.id)).id;
  });
  afterAll(async () => t?.close());

  const ids = async (after: number, token = user.token, limit = 1000): Promise<number[]> => {
    const res = await t.request('GET', `/api/events?after=${after}&limit=${limit}`, { token });
    expect(res.status).toBe(200);
    return res.body.data.map((e: { id: number }) => e.id);
  };
  const event = (n: number) => ({
    userId: user.id,
    walletId,
    name: 'balance.updated' as const,
    payload: { wallet_id: walletId, n },
    nowMs: Date.now(),
  });

  it('shows the hazard without the lock: a plain insert that commits late is skipped by the cursor', async () => {
    const other = await t.createUser();
    const w = await createWalletRow(t, other.id);
    const row = (n: number) => ({
      user_id: other.id,
      wallet_id: w.id,
      type: 'balance',
      name: 'balance.updated',
      payload: `{"n":${n}}`,
      dispatched_at: 1,
      created_at: Date.now(),
    });
    const hold = gate();
    let early = 0;
    const slow = t.store.db.transaction().execute(async (trx) => {
      early = (await trx.insertInto('events').values(row(1)).returning('id').executeTakeFirstOrThrow()).id;
      await hold.opened;
    });
    await sleep(50);
    const late = (await t.store.db.insertInto('events').values(row(2)).returning('id').executeTakeFirstOrThrow()).id;
    expect(late).toBeGreaterThan(early);
    expect(await ids(0, other.token)).toEqual([late]); // the reader moves its cursor to `late`...
    hold.open();
    await slow;
    expect(await ids(late, other.token)).toEqual([]); // ...and never sees `early`
  });

  it('with recordEvent, the event committing late holds back the later ones instead', async () => {
    const before = Math.max(0, ...(await ids(0)));
    const hold = gate();
    let first = 0;
    const slow = t.store.db.transaction().execute(async (trx) => {
      first = await recordEvent(trx, event(1));
      await hold.opened;
    });
    await sleep(50);
    const second = t.store.db.transaction().execute((trx) => recordEvent(trx, event(2)));
    await sleep(100);
    expect(await ids(before)).toEqual([]); // the second waits for the first's commit
    hold.open();
    await slow;
    const secondId = await second;
    expect(secondId).toBeGreaterThan(first);
    expect(await ids(before)).toEqual([first, secondId]);
  });

  it('a reader paging with the cursor sees every event of 4 concurrent writers exactly once, in order', async () => {
    const start = Math.max(0, ...(await ids(0)));
    const perWriter = 40;
    const written: number[] = [];
    let writing = true;

    const writer = async (w: number) => {
      for (let i = 0; i < perWriter; i++) {
        const id = await t.store.db.transaction().execute(async (trx) => {
          await sleep(Math.random() * 4); // other work before the event
          const id = await recordEvent(trx, event(w * 1000 + i));
          await sleep(Math.random() * 8); // and after it, before the commit
          return id;
        });
        written.push(id);
      }
    };

    const seen: number[] = [];
    let pages = 0;
    const reader = async () => {
      let cursor = start;
      for (;;) {
        const done = !writing; // read once more after the writers finished
        const res = await t.request('GET', `/api/events?after=${cursor}&limit=7`, { token: user.token });
        expect(res.status).toBe(200);
        const page: number[] = res.body.data.map((e: { id: number }) => e.id);
        pages++;
        seen.push(...page);
        cursor = Number(res.headers.get('x-next-cursor'));
        if (page.length === 0) {
          if (done) return;
          await sleep(3);
        }
      }
    };

    const readerDone = reader();
    await Promise.all([0, 1, 2, 3].map(writer));
    writing = false;
    await readerDone;

    expect(written).toHaveLength(4 * perWriter);
    expect(pages).toBeGreaterThan(10); // it really read while the writers wrote
    expect(seen).toEqual([...written].sort((a, b) => a - b));
  });
});
