/**
 * The CSV exports (docs/exports.md), through HTTP with a real anvil, on SQLite and
 * (DATABASE_URL) PostgreSQL. The files are read with an RFC 4180 reader of the test's own
 * (test/helpers/csv.ts), which refuses a bare LF or an unbalanced quote:
 * - transactions.csv: the list's rows oldest first, with the list's amounts, statuses, hashes
 *   and blocks; `fee` the fee the chain charged (0 for a receipt); `from` and `to` checksummed;
 *   a reference with a comma, quotes and a newline read back whole, one that a spreadsheet
 *   would take for a formula prefixed with `'`;
 * - charges.csv: `content` and `info` as JSON text; a price charge's price in `price_*`, empty
 *   for a charge of an amount of one token;
 * - payouts.csv: one record per item with the payout's item status and hash;
 * - `from`/`to` on `created_at` (a manual clock spaces the rows an hour apart; `to` takes in its
 *   whole second), and the 422 on each bad field;
 * - another user's wallet is 404 as on every wallet route; a key without `read` is 403;
 * - more rows than a page (directly inserted) come out once each, in order.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress, parseEther, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { formatDateTime } from '../../src/lib/time.js';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { csvObjects, parseCsv } from '../helpers/csv.js';
import { expectValidationError } from '../helpers/expect.js';
import { createWalletRow } from '../helpers/factories.js';
import {
  dec18,
  fundedWallet,
  OUTSIDER,
  publicClient,
  RECIPIENT,
  sendFromOutsider,
  waitForStatus,
  type FundedWallet,
} from '../helpers/transfers.js';
import { waitFor } from '../helpers/wait.js';
import { RateService } from '../../src/modules/rates/rates.service.js';

const HOUR = 3_600_000;
const clock = new ManualClock();
let chain: TestChain;
let t: TestApp;
let user: TestUser;
let stranger: TestUser;
let w: FundedWallet;
let t0: number;

const TX_HEADER = ['id', 'created_at', 'type', 'status', 'token', 'amount', 'fee', 'from', 'to', 'tx_hash', 'block_number', 'reference'];
const CHARGE_HEADER = [
  'id',
  'uuid',
  'created_at',
  'status',
  'token',
  'amount',
  'paid_amount',
  'price_amount',
  'price_currency',
  'content',
  'info',
];
const PAYOUT_HEADER = [
  'payout_id',
  'item_id',
  'reference',
  'address',
  'token',
  'amount',
  'status',
  'tx_hash',
  'failure_reason',
  'created_at',
];

const TRICKY_REFERENCE = 'line one, "quoted"\r\nline two';
const FORMULA_REFERENCE = '=HYPERLINK("http://example.com","x")';
const CONTENT = { title: 'Order, "special"', lines: ['a', 'b'] };
const INFO = { order: 42 };

const fresh = (): Address => privateKeyToAccount(generatePrivateKey()).address;
const get = (path: string, token = user.token) => t.request('GET', path, { token });
const exportOf = (kind: string, query = '', walletId = w.id, token = user.token) =>
  get(`/api/wallet/${walletId}/export/${kind}.csv${query}`, token);
const at = (ms: number) => encodeURIComponent(formatDateTime(ms));

let charge1: any;
let charge2: any;
let priced: any;
let payout: any;
let transferId: number;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ clock, env: { WATCHER_POLL_MS: '50' } });
  const networkId = await chain.register(t);
  user = await t.createUser();
  stranger = await t.createUser();
  t.startWorkers();
  w = await fundedWallet(t, chain, user, networkId, parseEther('5'));
  t0 = clock.nowMs();
  // Hour 0: a receipt and a transfer.
  await sendFromOutsider(chain.rpcUrl, w.address, parseEther('1'));
  await waitFor(
    async () =>
      (await get(`/api/wallet/${w.id}/transaction`)).body.data?.find((x: any) => x.type === 'receipt' && x.status === 'confirmed'),
    { timeoutMs: 20_000, message: 'receipt confirmed' },
  );
  const sent = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
    token: user.token,
    body: { amount: '0.1', token: 'ETH', address: RECIPIENT },
  });
  expect(sent.status, sent.text).toBe(200);
  transferId = sent.body.data.id;
  await waitForStatus(t, user, w.id, transferId, 'confirmed');
  // Hour 1: a charge. Hour 2: a payout, sent and confirmed. Hour 3: another charge.
  clock.advance(HOUR);
  charge1 = (
    await t.request('POST', `/api/wallet/${w.id}/charge/create`, {
      token: user.token,
      body: { amount: '0.25', token: 'ETH', content: CONTENT, info: INFO },
    })
  ).body.data;
  clock.advance(HOUR);
  const items = [
    { address: fresh(), amount: '0.01', reference: TRICKY_REFERENCE },
    { address: fresh(), amount: '0.02', reference: FORMULA_REFERENCE },
  ];
  const created = await t.request('POST', `/api/wallet/${w.id}/payout/create`, { token: user.token, body: { token: 'ETH', items } });
  expect(created.status, created.text).toBe(200);
  payout = await waitFor(
    async () => {
      const r = await get(`/api/wallet/${w.id}/payout/${created.body.data.id}`);
      return r.body.data?.status === 'completed' ? r.body.data : null;
    },
    { timeoutMs: 30_000, message: 'payout completed' },
  );
  clock.advance(HOUR);
  charge2 = (await t.request('POST', `/api/wallet/${w.id}/charge/create`, { token: user.token, body: { amount: '1', token: 'ETH' } })).body
    .data;
  // And a price charge: 50.00 EUR at 2000 EUR an ETH.
  await new RateService(t.ctx).setManual({ symbol: 'ETH', currency: 'EUR', value: '2000', networkId });
  const pricedRes = await t.request('POST', `/api/wallet/${w.id}/charge/create`, {
    token: user.token,
    body: { price: { amount: '50', currency: 'EUR' }, tokens: ['ETH'] },
  });
  expect(pricedRes.status, pricedRes.text).toBe(200);
  priced = pricedRes.body.data;
}, 90_000);

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

describe('transactions.csv', () => {
  it('is a CSV attachment of every row of the list, oldest first, with the list’s values', async () => {
    const res = await exportOf('transactions');
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="wallet-${w.id}-transactions.csv"`);
    const { header, rows } = csvObjects(res.text);
    expect(header).toEqual(TX_HEADER);
    const list = (await get(`/api/wallet/${w.id}/transaction?limit=1000`)).body.data as any[];
    expect(list.length).toBe(4); // the receipt, the transfer, two payout items
    expect(rows.map((r) => Number(r.id))).toEqual(list.map((x) => x.id).reverse());
    for (const [i, x] of [...list].reverse().entries()) {
      const r = rows[i]!;
      expect({ created_at: r.created_at, type: r.type, status: r.status, token: r.token, amount: r.amount, tx_hash: r.tx_hash }).toEqual({
        created_at: x.created_at,
        type: x.type,
        status: x.status,
        token: x.symbol,
        amount: x.amount,
        tx_hash: x.tx_hash,
      });
      expect(r.block_number).toBe(String(x.block_number));
    }
  });

  it('gives the fee the chain charged (0 for a receipt) and checksummed from and to', async () => {
    const { rows } = csvObjects((await exportOf('transactions')).text);
    const receipt = rows.find((r) => r.type === 'receipt')!;
    expect(receipt).toMatchObject({
      fee: '0.000000000000000000',
      from: OUTSIDER.address,
      to: getAddress(w.address),
      amount: '1.000000000000000000',
    });
    const transfer = rows.find((r) => Number(r.id) === transferId)!;
    const mined = await publicClient(chain.rpcUrl).getTransactionReceipt({ hash: transfer.tx_hash as `0x${string}` });
    expect(mined.gasUsed * mined.effectiveGasPrice).toBeGreaterThan(0n);
    expect(transfer).toMatchObject({
      fee: dec18(mined.gasUsed * mined.effectiveGasPrice),
      from: getAddress(w.address),
      to: RECIPIENT,
      amount: '0.100000000000000000',
      reference: '',
    });
  });

  it('reads back a reference with a comma, quotes and a line break, and guards one a spreadsheet takes for a formula', async () => {
    const res = await exportOf('transactions');
    expect(res.text).toContain(`"line one, ""quoted""\r\nline two"`);
    const refs = csvObjects(res.text)
      .rows.map((r) => r.reference)
      .filter((x) => x !== '');
    expect(refs).toEqual([TRICKY_REFERENCE, `'${FORMULA_REFERENCE}`]);
  });
});

describe('HEAD', () => {
  it('answers the headers of each export, checked as the GET is, without a body', async () => {
    for (const kind of ['transactions', 'charges', 'payouts']) {
      const head = await t.request('HEAD', `/api/wallet/${w.id}/export/${kind}.csv`, { token: user.token });
      expect(head.status, kind).toBe(200);
      expect(head.headers.get('content-type'), kind).toBe('text/csv; charset=utf-8');
      expect(head.headers.get('content-disposition'), kind).toBe(`attachment; filename="wallet-${w.id}-${kind}.csv"`);
      expect(head.text, kind).toBe('');
      const refused = await t.request('HEAD', `/api/wallet/${w.id}/export/${kind}.csv?from=x`, { token: user.token });
      expect(refused.status, kind).toBe(422);
    }
  });
});

describe('charges.csv', () => {
  it('lists the charges oldest first with content and info as JSON text, and a price charge’s price', async () => {
    const res = await exportOf('charges');
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="wallet-${w.id}-charges.csv"`);
    const { header, rows } = csvObjects(res.text);
    expect(header).toEqual(CHARGE_HEADER);
    expect(rows).toEqual([
      {
        id: String(charge1.id),
        uuid: charge1.uuid,
        created_at: charge1.created_at,
        status: 'pending',
        token: 'ETH',
        amount: '0.250000000000000000',
        paid_amount: '0.000000000000000000',
        price_amount: '',
        price_currency: '',
        content: JSON.stringify(CONTENT),
        info: JSON.stringify(INFO),
      },
      expect.objectContaining({
        id: String(charge2.id),
        amount: '1.000000000000000000',
        price_amount: '',
        price_currency: '',
        content: '',
        info: '',
      }),
      {
        id: String(priced.id),
        uuid: priced.uuid,
        created_at: priced.created_at,
        status: 'pending',
        token: 'ETH',
        amount: '0.025000000000000000',
        paid_amount: '0.000000000000000000',
        price_amount: '50.00',
        price_currency: 'EUR',
        content: '',
        info: '',
      },
    ]);
    expect(priced.price).toEqual({ amount: '50.00', currency: 'EUR' });
  });
});

describe('payouts.csv', () => {
  it('has one record per item, with the payout’s item status, hash and reference', async () => {
    const res = await exportOf('payouts');
    expect(res.status, res.text).toBe(200);
    const { header, rows } = csvObjects(res.text);
    expect(header).toEqual(PAYOUT_HEADER);
    expect(rows).toEqual(
      payout.items.map((i: any) => ({
        payout_id: String(payout.id),
        item_id: String(i.id),
        reference: i.reference.startsWith('=') ? `'${i.reference}` : i.reference,
        address: i.address,
        token: 'ETH',
        amount: i.amount,
        status: 'confirmed',
        tx_hash: i.tx_hash,
        failure_reason: '',
        created_at: payout.created_at,
      })),
    );
  });
});

describe('from and to', () => {
  const ids = async (kind: string, query: string, column = 'id') =>
    csvObjects((await exportOf(kind, query)).text).rows.map((r) => Number(r[column]));

  it('filter each export on created_at, `to` taking in its whole second', async () => {
    const list = (await get(`/api/wallet/${w.id}/transaction?limit=1000`)).body.data as any[];
    const hourZero = list
      .filter((x) => x.payout_id === null)
      .map((x) => x.id)
      .sort((a, b) => a - b);
    const items = list
      .filter((x) => x.payout_id !== null)
      .map((x) => x.id)
      .sort((a, b) => a - b);
    expect(await ids('transactions', `?to=${at(t0)}`)).toEqual(hourZero);
    expect(await ids('transactions', `?from=${at(t0 + HOUR)}`)).toEqual(items);
    expect(await ids('transactions', `?from=${at(t0 + 2 * HOUR)}&to=${at(t0 + 2 * HOUR)}`)).toEqual(items);
    expect(await ids('charges', `?to=${encodeURIComponent(charge1.created_at)}`)).toEqual([charge1.id]);
    expect(await ids('charges', `?from=${at(t0 + 2 * HOUR)}`)).toEqual([charge2.id, priced.id]);
    expect(await ids('payouts', `?to=${at(t0 + HOUR)}`, 'payout_id')).toEqual([]);
    expect(await ids('payouts', `?from=${at(t0 + 2 * HOUR)}&to=${at(t0 + 2 * HOUR)}`, 'payout_id')).toEqual([payout.id, payout.id]);
  });

  it('answers 422 on a bad from or to, with each field named', async () => {
    const DATETIME = (f: string) => `The ${f} field must be a datetime in the format YYYY-MM-DD HH:MM:SS.`;
    for (const kind of ['transactions', 'charges', 'payouts']) {
      expectValidationError(await exportOf(kind, '?from=2026-02-30%2000:00:00'), { from: [DATETIME('from')] }, kind);
      expectValidationError(await exportOf(kind, '?to=yesterday'), { to: [DATETIME('to')] }, kind);
      expectValidationError(
        await exportOf(kind, '?from=2026-01-01T00:00:00Z&to=x'),
        { from: [DATETIME('from')], to: [DATETIME('to')] },
        kind,
      );
      expectValidationError(
        await exportOf(kind, '?from=2026-01-02%2000:00:00&to=2026-01-01%2023:59:59'),
        { to: ['The to field must be a date after or equal to from.'] },
        kind,
      );
    }
  });
});

describe('who may export', () => {
  it('answers another user 404 Wallet not found, as every wallet route, and gives them only their own rows', async () => {
    for (const kind of ['transactions', 'charges', 'payouts']) {
      const res = await exportOf(kind, '', w.id, stranger.token);
      expect(res.status, kind).toBe(404);
      expect(res.body, kind).toEqual({ status: 'error', message: 'Wallet not found', data: null });
      const own = await createWalletRow(t, stranger.id);
      const mine = await exportOf(kind, '', own.id, stranger.token);
      expect(mine.status, kind).toBe(200);
      expect(parseCsv(mine.text).length, kind).toBe(1); // the header alone
    }
  });

  it('takes an API key with read, refuses one without', async () => {
    const key = async (scopes: string[]) =>
      (await t.request('POST', '/api/auth/key/create', { token: user.token, body: { name: scopes.join(), scopes } })).body.data
        .key as string;
    const reader = await key(['read']);
    const writer = await key(['charges:write']);
    for (const kind of ['transactions', 'charges', 'payouts']) {
      expect((await exportOf(kind, '', w.id, reader)).status, kind).toBe(200);
      const refused = await exportOf(kind, '', w.id, writer);
      expect(refused.status, kind).toBe(403);
      expect(refused.body, kind).toEqual({ status: 'error', message: 'Insufficient scope', data: null });
    }
  });
});

describe('a long export', () => {
  it('sends every row once, oldest first, across pages', async () => {
    const own = await createWalletRow(t, user.id);
    const tokenId = (await t.store.db.selectFrom('wallet_tokens').select('id').where('wallet_id', '=', own.id).executeTakeFirstOrThrow())
      .id;
    const n = 2_345;
    const base = clock.nowMs();
    for (let i = 0; i < n; i += 500) {
      const rows = Array.from({ length: Math.min(500, n - i) }, (_, k) => ({
        wallet_id: own.id,
        token_id: tokenId,
        type: 'receipt',
        status: 'confirmed',
        amount: String(i + k + 1),
        fee_reserved: '0',
        from_address: OUTSIDER.address.toLowerCase(),
        to_address: own.address,
        tx_hash: `0x${randomBytes(32).toString('hex')}`,
        log_index: 0,
        block_number: i + k + 1,
        seq: i + k + 1,
        symbol_key: 'ETH',
        symbol_seq: i + k + 1,
        created_at: base + i + k,
        updated_at: base + i + k,
      }));
      await t.store.db.insertInto('transactions').values(rows).execute();
    }
    const { rows } = csvObjects((await exportOf('transactions', '', own.id)).text);
    expect(rows.length).toBe(n);
    expect(rows.map((r) => r.block_number)).toEqual(Array.from({ length: n }, (_, k) => String(k + 1)));
    expect(new Set(rows.map((r) => r.id)).size).toBe(n);
    expect(rows[0]).toMatchObject({ amount: '0.000000000000000001', from: OUTSIDER.address, to: own.address });
  });
});
