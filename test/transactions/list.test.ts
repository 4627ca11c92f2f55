/**
 * GET /wallet/{wallet}/transaction: the list's own read path (transactions.list.repository.ts,
 * `transactionListItem`) gives, item for item and key for key, what the full-record view of the
 * show route gives for the same row, over rows that exercise every field: amounts from 0 to
 * 2^256-1 at 0, 6 and 18 decimals, null and set block and gas fields, failed, pending, stuck,
 * replaced and contract rows, an orphaned receipt (never listed). Also the paging and the token
 * filter on those rows. No chain: rows are written with the repository's own insert.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { createWalletRow } from '../helpers/factories.js';
import { driverName } from '../helpers/db.js';
import { insertTransaction, orphanTransaction, type NewTx } from '../../src/modules/transactions/transactions.repository.js';
import { CHUNKED_FROM_ITEMS } from '../../src/http/chunked-json.js';
import { listPageJson } from '../../src/modules/transactions/transactions.list.repository.js';

let t: TestApp;
let user: TestUser;
let walletId: number;
const ids: number[] = [];
let orphanId = 0;

const MAX_UINT256 = (1n << 256n) - 1n;
const T0 = Date.UTC(2024, 1, 29, 23, 59, 59, 999);
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

async function token(symbol: string, decimals: number): Promise<number> {
  const now = Date.now();
  const r = await t.store.db
    .insertInto('wallet_tokens')
    .values({
      wallet_id: walletId,
      name: symbol,
      symbol,
      decimals,
      contract: `0x${'ab'.repeat(19)}${decimals.toString(16).padStart(2, '0')}`,
      is_native: 0,
      is_active: 1,
      is_testnet: 1,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return r.id;
}

function row(i: number, tok: { id: number; symbol: string }, over: Partial<NewTx>): NewTx {
  return {
    wallet_id: walletId,
    token_id: tok.id,
    symbol: tok.symbol,
    type: 'transfer',
    status: 'confirmed',
    amount: BigInt(i),
    fee_reserved: 0n,
    from_address: '0x000000000000000000000000000000000000bEEF',
    to_address: '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720',
    tx_hash: hash(i + 1),
    log_index: -1,
    block_number: 100 + i,
    block_hash: hash(1000 + i),
    block_timestamp: T0 + i * 3_600_001,
    nonce: i,
    gas: 21000n,
    gas_price: 1_000_000_007n,
    gas_used: 21000n,
    cumulative_gas_used: 42000n + BigInt(i),
    receipt_status: 1,
    raw_tx: null,
    confirmed_at: T0,
    ...over,
  };
}

beforeAll(async () => {
  t = await startTestApp();
  user = await t.createUser();
  walletId = (await createWalletRow(t, user.id)).id;
  const eth = {
    id: (await t.store.db.selectFrom('wallet_tokens').select('id').where('wallet_id', '=', walletId).executeTakeFirstOrThrow()).id,
    symbol: 'ETH',
  };
  const tusd = { id: await token('TUSD', 6), symbol: 'TUSD' };
  const whole = { id: await token('Whole', 0), symbol: 'Whole' };
  const db = t.store.db;
  const specs: Array<[{ id: number; symbol: string }, Partial<NewTx>]> = [
    [eth, { amount: 0n }],
    [tusd, { amount: 1n }],
    [whole, { amount: 123456789n }],
    [eth, { amount: MAX_UINT256 }],
    [
      tusd,
      {
        amount: 1_500_000n,
        status: 'pending',
        block_number: null,
        block_hash: null,
        block_timestamp: null,
        gas_used: null,
        cumulative_gas_used: null,
        receipt_status: null,
        confirmed_at: null,
      },
    ],
    [whole, { amount: MAX_UINT256, type: 'receipt', gas: null, gas_price: null, nonce: null, log_index: 3 }],
    [eth, { amount: 10n ** 18n, status: 'failed', receipt_status: 0 }],
    [eth, { amount: 999_999_999_999_999_999n, type: 'contract', data: '0xa9059cbb' }],
    [tusd, { amount: 1_000_000n, type: 'receipt', log_index: 0 }],
    [
      eth,
      {
        amount: 5n,
        status: 'pending',
        block_number: null,
        block_hash: null,
        block_timestamp: null,
        gas_used: null,
        cumulative_gas_used: null,
        receipt_status: null,
      },
    ],
    [tusd, { amount: 7n }],
    // Held for approval (migration 039): awaiting, over ETH's threshold; a contract call held by
    // its token call's TUSD threshold; a contract call held as unreadable, rejected since.
    [
      eth,
      {
        amount: 2n * 10n ** 18n,
        status: 'awaiting_approval',
        tx_hash: null,
        nonce: null,
        block_number: null,
        block_hash: null,
        block_timestamp: null,
        gas_used: null,
        cumulative_gas_used: null,
        receipt_status: null,
        confirmed_at: null,
        held_rule: 'approval_above',
        held_limit: 10n ** 18n,
        held_symbol: 'ETH',
        held_decimals: 18,
      },
    ],
    [
      eth,
      {
        amount: 0n,
        type: 'contract',
        data: '0xa9059cbb',
        held_rule: 'approval_above',
        held_limit: 2_500_000n,
        held_symbol: 'TUSD',
        held_decimals: 6,
      },
    ],
    [eth, { amount: 1n, type: 'contract', data: '0x12345678', status: 'failed', tx_hash: null, nonce: null, held_rule: 'contract_call' }],
  ];
  for (const [i, [tok, over]] of specs.entries()) {
    const id = await insertTransaction(db, row(i, tok, over), T0 - 86_400_000 * 400 + i * 61_001);
    ids.push(id!);
  }
  // Finality fields: a failed row with its reason and earlier hashes; a stuck pending one; a
  // failure_reason left on a row that is not failed (shown as null); an updated_at apart.
  await db
    .updateTable('transactions')
    .set({ failure_reason: 'cancelled', replaced_hashes: `${hash(77)},${hash(78)}`, updated_at: T0 + 1 })
    .where('id', '=', ids[6]!)
    .execute();
  await db
    .updateTable('transactions')
    .set({ stuck_at: T0, replaced_hashes: hash(79) })
    .where('id', '=', ids[9]!)
    .execute();
  await db.updateTable('transactions').set({ failure_reason: 'dropped', stuck_at: T0 }).where('id', '=', ids[4]!).execute();
  // An orphaned receipt: never listed, and the rows after it renumbered.
  orphanId = ids[8]!;
  await orphanTransaction(db, orphanId, T0);
  ids.splice(8, 1);
});

afterAll(async () => {
  await t?.close();
});

const list = (qs: string) => t.request('GET', `/api/wallet/${walletId}/transaction${qs}`, { token: user.token });

describe(`transaction list (${driverName})`, () => {
  it('lists each row exactly as the show route shows it, without wallet_token', async () => {
    const res = await list('?limit=1000');
    expect(res.status).toBe(200);
    expect(res.body.data.map((x: any) => x.id)).toEqual([...ids].reverse());
    expect(res.text).not.toContain(`"id":${orphanId},`);
    for (const item of res.body.data) {
      const shown = await t.request('GET', `/api/wallet/${walletId}/transaction/show/${item.id}`, { token: user.token });
      const { wallet_token, ...rest } = shown.body.data;
      expect(wallet_token).toBeDefined();
      // Same keys in the same order, same values: the same bytes.
      expect(JSON.stringify(item)).toBe(JSON.stringify(rest));
    }
    const heldBy = (id: number) => res.body.data.find((x: any) => x.id === id).held_by;
    expect(heldBy(ids[ids.length - 3]!)).toEqual({ rule: 'approval_above', limit: '1.000000000000000000', token: 'ETH' });
    expect(heldBy(ids[ids.length - 2]!)).toEqual({ rule: 'approval_above', limit: '2.500000000000000000', token: 'TUSD' });
    expect(heldBy(ids[ids.length - 1]!)).toEqual({ rule: 'contract_call', limit: null, token: null });
    expect(heldBy(ids[0]!)).toBeNull();
  });

  it('writes a list item byte for byte as before', async () => {
    const res = await list('?limit=1&page=7');
    expect(res.body.data[0].id).toBe(ids[6]);
    const item = res.text.slice(res.text.indexOf('"data":[') + 8, res.text.lastIndexOf(']'));
    expect(item).toBe(
      `{"id":${ids[6]},"amount":"1.000000000000000000","type":"transfer","status":"failed","tx_hash":"${hash(7)}","block_number":106,` +
        `"failure_reason":"cancelled","replaced_hashes":["${hash(77)}","${hash(78)}"],"stuck":false,"stuck_reason":null,"data":null,` +
        `"block_timestamp":"2024-03-01 06:00:00","block_hash":"${hash(1006)}","nonce":6,"gas":"21000.000000000000000000",` +
        `"gas_price":"0.000000001000000007","gas_used":"21000.000000000000000000","cumulative_gas_used":"42006.000000000000000000",` +
        `"receipt_status":false,"symbol":"ETH","refund_id":null,"payout_id":null,"reference":null,"batch_index":null,"deposit_address_id":null,"created_at":"2023-01-26 00:06:06","updated_at":"2024-03-01 00:00:00","internal":false,"held_by":null,` +
        `"from":"0x000000000000000000000000000000000000bEEF","to":"0xa0Ee7A142d267C1f36714E4a8F75612F20a79720"}`,
    );
    const amounts = (await list('?limit=1000')).body.data.map((x: any) => [x.symbol, x.amount]);
    expect(amounts).toContainEqual(['ETH', '115792089237316195423570985008687907853269984665640564039457.584007913129639935']);
    expect(amounts).toContainEqual([
      'Whole',
      '115792089237316195423570985008687907853269984665640564039457584007913129639935.000000000000000000',
    ]);
    expect(amounts).toContainEqual(['TUSD', '0.000001000000000000']);
    expect(amounts).toContainEqual(['ETH', '0.000000000000000000']);
  });

  it('pages by sequence, newest first, past the end empty', async () => {
    const all = [...ids].reverse();
    const p1 = await list('?limit=3');
    expect(p1.body.data.map((x: any) => x.id)).toEqual(all.slice(0, 3));
    expect(p1.headers.get('x-pagination-total')).toBe(String(ids.length));
    expect(p1.headers.get('x-pagination-pages')).toBe(String(Math.ceil(ids.length / 3)));
    const last = await list(`?limit=3&page=${Math.ceil(ids.length / 3)}`);
    expect(last.body.data.map((x: any) => x.id)).toEqual(all.slice(3 * (Math.ceil(ids.length / 3) - 1)));
    expect((await list('?limit=3&page=99')).body.data).toEqual([]);
  });

  it('filters by symbol, trimmed and case-insensitive, the orphan left out', async () => {
    const tusd = await list(`?token=${encodeURIComponent(' tusd ')}&limit=2`);
    expect(tusd.body.data.map((x: any) => x.symbol)).toEqual(['TUSD', 'TUSD']);
    expect(tusd.headers.get('x-pagination-total')).toBe('3');
    expect(tusd.body.data.map((x: any) => x.id)).toEqual([ids[9], ids[4]]);
    const p2 = await list('?token=TUSD&limit=2&page=2');
    expect(p2.body.data.map((x: any) => x.id)).toEqual([ids[1]]);
    expect((await list('?token=WHOLE')).body.data.map((x: any) => x.id)).toEqual([ids[5], ids[2]]);
    const none = await list('?token=NOPE');
    expect(none.body.data).toEqual([]);
    expect(none.headers.get('x-pagination-total')).toBe('0');
    expect((await list('?token=%20')).headers.get('x-pagination-total')).toBe(String(ids.length));
  });

  it('answers a long page in chunks, with the bytes the short pages have', async () => {
    const other = (await createWalletRow(t, user.id)).id;
    const eth = {
      id: (await t.store.db.selectFrom('wallet_tokens').select('id').where('wallet_id', '=', other).executeTakeFirstOrThrow()).id,
      symbol: 'ETH',
    };
    const count = CHUNKED_FROM_ITEMS * 2 + 37;
    for (let i = 0; i < count; i++) {
      const over: Partial<NewTx> =
        i % 3 === 0
          ? {
              status: 'pending',
              block_number: null,
              block_hash: null,
              block_timestamp: null,
              gas_used: null,
              cumulative_gas_used: null,
              receipt_status: null,
              confirmed_at: null,
            }
          : { type: 'contract', data: `0x${'ab'.repeat(i)}`, amount: MAX_UINT256 - BigInt(i) };
      await insertTransaction(t.store.db, { ...row(i, eth, over), wallet_id: other }, T0 + i);
    }
    const get = (qs: string) => t.request('GET', `/api/wallet/${other}/transaction${qs}`, { token: user.token });
    const long = await get('?limit=1000');
    expect(long.status).toBe(200);
    expect(long.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(long.headers.get('transfer-encoding')).toBe('chunked');
    expect(long.body.data).toHaveLength(count);
    // The short pages (one piece each, the route's serializer) hold the same items, byte for byte.
    const inner = (text: string) => text.slice(text.indexOf('"data":[') + 8, text.lastIndexOf(']'));
    const pieces: string[] = [];
    let head = '';
    for (let page = 1; page <= Math.ceil(count / 50); page++) {
      const short = await get(`?limit=50&page=${page}`);
      expect(short.headers.get('content-length')).toBe(String(Buffer.byteLength(short.text)));
      head = short.text.slice(0, short.text.indexOf('"data":[') + 8);
      pieces.push(inner(short.text));
    }
    expect(head).toBe('{"status":"success","message":"Transactions retrieved","data":[');
    expect(long.text).toBe(`${head}${pieces.join(',')}]}`);
  });
});

describe(`transaction list, a long page's items as the database writes them (${driverName})`, () => {
  it('gives the bytes of the short pages over every field and escape, and falls back for a row it does not format', async () => {
    const other = (await createWalletRow(t, user.id)).id;
    const db = t.store.db;
    const now = Date.now();
    const addToken = async (symbol: string, decimals: number) =>
      (
        await db
          .insertInto('wallet_tokens')
          .values({
            wallet_id: other,
            name: symbol,
            symbol,
            decimals,
            contract: `0x${'cd'.repeat(19)}${decimals.toString(16).padStart(2, '0')}`,
            is_native: 0,
            is_active: 1,
            is_testnet: 1,
            created_at: now,
            updated_at: now,
          })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
    const odd = { id: await addToken('Q"u\\o\u00e9', 6), symbol: 'Q"u\\o\u00e9' };
    const eth = {
      id: (
        await db
          .selectFrom('wallet_tokens')
          .select('id')
          .where('wallet_id', '=', other)
          .where('is_native', '=', 1)
          .executeTakeFirstOrThrow()
      ).id,
      symbol: 'ETH',
    };
    // Addresses as a node answers them (lower case), all upper case, and checksummed (the rest).
    const sender = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
    const rows: Array<[{ id: number; symbol: string }, Partial<NewTx>]> = [
      [odd, { amount: 0n, from_address: sender.toLowerCase() }],
      [odd, { amount: 999_999n, status: 'failed', receipt_status: 0 }],
      [
        odd,
        {
          amount: 10n ** 30n + 1n,
          status: 'pending',
          block_number: null,
          block_hash: null,
          block_timestamp: null,
          gas_used: null,
          cumulative_gas_used: null,
          receipt_status: null,
        },
      ],
      [eth, { amount: 1n, type: 'contract', data: '0x' }],
      // Held for approval: a threshold of a token whose symbol needs escaping, at 6 decimals; a contract call.
      [
        odd,
        {
          amount: 10n ** 31n,
          status: 'awaiting_approval',
          tx_hash: null,
          nonce: null,
          held_rule: 'approval_above',
          held_limit: 10n ** 30n + 7n,
          held_symbol: odd.symbol,
          held_decimals: 6,
        },
      ],
      [eth, { amount: 0n, type: 'contract', data: '0x', status: 'failed', held_rule: 'contract_call' }],
      [eth, { amount: MAX_UINT256, gas: 0n, gas_price: 0n, block_timestamp: 0 }],
      [
        eth,
        {
          amount: 123n,
          type: 'receipt',
          gas: null,
          gas_price: null,
          nonce: null,
          log_index: 2,
          block_timestamp: 253_402_300_799_999,
          from_address: sender.toLowerCase(),
          to_address: '0xA0EE7A142D267C1F36714E4A8F75612F20A79720',
        },
      ],
    ];
    const made: number[] = [];
    for (const [i, [tok, over]] of rows.entries())
      made.push((await insertTransaction(db, { ...row(i, tok, over), wallet_id: other }, T0 + i * 1_001))!);
    await db
      .updateTable('transactions')
      .set({ failure_reason: 'said "low"\n\t\u0001\u007f\u2028😀\\', replaced_hashes: `${hash(5)},${hash(6)},${hash(7)}` })
      .where('id', '=', made[1]!)
      .execute();
    await db
      .updateTable('transactions')
      .set({ stuck_at: T0, reference: 'order "7" / naïve \u001f end' })
      .where('id', '=', made[2]!)
      .execute();
    await db.updateTable('transactions').set({ reference: '' }).where('id', '=', made[3]!).execute();
    // Stuck once, then confirmed: not stuck any more; a reason left on a row that did not fail: none.
    await db.updateTable('transactions').set({ stuck_at: T0, failure_reason: 'dropped' }).where('id', '=', made[0]!).execute();
    const get = async (qs: string) => (await t.request('GET', `/api/wallet/${other}/transaction${qs}`, { token: user.token })).text;
    const inner = (text: string) => text.slice(text.indexOf('"data":[') + 8, text.lastIndexOf(']'));
    const shortPages = async (n: number) => {
      const pieces: string[] = [];
      for (let page = 1; page <= Math.ceil(n / 4); page++) pieces.push(inner(await get(`?limit=4&page=${page}`)));
      return pieces.join(',');
    };
    const q = { page: 1, limit: 1000 };
    // The database writes these items itself (SQLite and PostgreSQL alike).
    const written = await listPageJson(db, other, q);
    expect(written === null ? null : written.json.length).toBe(rows.length);
    // Newest first: the receipt stored in lower and upper case, then the row of the checksummed ones.
    expect(written!.json[0]!.endsWith(`"from":"${sender}","to":"0xa0Ee7A142d267C1f36714E4a8F75612F20a79720"}`)).toBe(true);
    expect(written!.json[rows.length - 1]!.endsWith(`"from":"${sender}","to":"0xa0Ee7A142d267C1f36714E4a8F75612F20a79720"}`)).toBe(true);
    expect(
      written!.json[1]!.endsWith('"from":"0x000000000000000000000000000000000000bEEF","to":"0xa0Ee7A142d267C1f36714E4a8F75612F20a79720"}'),
    ).toBe(true);
    expect(inner(await get('?limit=1000'))).toBe(await shortPages(rows.length));
    expect(written!.json.join()).toContain(
      `"held_by":{"rule":"approval_above","limit":"1000000000000000000000000.000007000000000000","token":"Q\\"u\\\\oé"}`,
    );
    expect(written!.json.join()).toContain('"held_by":{"rule":"contract_call","limit":null,"token":null}');
    expect(inner(await get(`?limit=1000&token=${encodeURIComponent('q"U\\O\u00c9')}`))).toBe(
      inner(await get(`?limit=10&token=${encodeURIComponent('q"U\\O\u00c9')}`)),
    );
    // A stored address the expression leaves to JavaScript (not 0x and 40 hex digits): shown as
    // stored, the page read the usual way, the same bytes still.
    await db.updateTable('transactions').set({ to_address: '0xnot "an" address' }).where('id', '=', made[3]!).execute();
    expect(await listPageJson(db, other, q)).toBeNull();
    expect(await get('?limit=1000')).toContain('"to":"0xnot \\"an\\" address"}');
    expect(inner(await get('?limit=1000'))).toBe(await shortPages(rows.length));
    await db
      .updateTable('transactions')
      .set({ to_address: '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720' })
      .where('id', '=', made[3]!)
      .execute();
    expect(await listPageJson(db, other, q)).not.toBeNull();
    // A stored amount the expression leaves to JavaScript (not a canonical non-negative integer):
    // the page is read the usual way, the same bytes still.
    await insertTransaction(db, { ...row(rows.length, eth, { amount: -5n }), wallet_id: other }, T0 + 99_000);
    expect(await listPageJson(db, other, q)).toBeNull();
    expect(inner(await get('?limit=1000'))).toBe(await shortPages(rows.length + 1));
  });
});
