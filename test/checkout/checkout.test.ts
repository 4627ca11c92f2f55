/**
 * The payer's side of a charge over HTTP: `hosted_url` and `payment_uri` on every Charge, the
 * public JSON (the contract's fields and the page's state, clock and payments, no token needed, 404 in the envelope), and the
 * public page (HTML with a strict policy, escaped merchant text, the QR code, a plain 404 page).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20 } from '../helpers/erc20.js';
import { RateService } from '../../src/modules/rates/rates.service.js';

const PUBLIC_URL = 'https://pay.example.com';
const PUBLIC_KEYS = [
  'address',
  'amount',
  'content',
  'expires_at',
  'now_ms',
  'paid_amount',
  'paid_fraction',
  'payment_uri',
  'payments',
  'price',
  'quotes',
  'refunds',
  'state',
  'status',
  'token',
  'uuid',
];

describe('checkout: hosted_url, payment_uri, the public JSON and page', () => {
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let wallet: { id: number; address: string };
  let usdc: string;
  let networkId: number;

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ env: { PUBLIC_URL: `${PUBLIC_URL}/` } });
    networkId = await chain.register(t);
    alice = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Shop', network_id: networkId } })).body
      .data;
    usdc = await deployErc20(chain.rpcUrl, { name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: alice.token, body: { contract: usdc } })).status).toBe(
      200,
    );
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  const create = async (body: Record<string, unknown>) => {
    const res = await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, { token: alice.token, body });
    expect(res.status, res.text).toBe(200);
    return res.body.data;
  };

  it('puts hosted_url and an EIP-681 payment_uri on the Charge: create, show and list, native and ERC-20', async () => {
    const eth = await create({ amount: '0.25', token: 'ETH' });
    expect(eth.hosted_url).toBe(`${PUBLIC_URL}/pay/${eth.uuid}`);
    expect(eth.payment_uri).toBe(`ethereum:${eth.address}@31337?value=${parseEther('0.25')}`);
    expect(eth.payment_uri).toBe(`ethereum:${eth.address}@31337?value=250000000000000000`);

    const token = await create({ amount: '12.345678', token: 'USDC' });
    const row = await t.store.db
      .selectFrom('wallet_tokens')
      .select('contract')
      .where('wallet_id', '=', wallet.id)
      .where('symbol', '=', 'USDC')
      .executeTakeFirstOrThrow();
    expect(row.contract.toLowerCase()).toBe(usdc.toLowerCase());
    expect(token.payment_uri).toBe(`ethereum:${row.contract}@31337/transfer?address=${token.address}&uint256=12345678`);
    expect(token.hosted_url).toBe(`${PUBLIC_URL}/pay/${token.uuid}`);

    for (const c of [eth, token]) {
      const shown = await t.request('GET', `/api/wallet/${wallet.id}/charge/show/${c.id}`, { token: alice.token });
      expect(shown.body.data).toMatchObject({ hosted_url: c.hosted_url, payment_uri: c.payment_uri });
    }
    const list = await t.request('GET', `/api/wallet/${wallet.id}/charge`, { token: alice.token });
    expect(list.body.data.map((c: { payment_uri: string }) => c.payment_uri)).toEqual([token.payment_uri, eth.payment_uri]);
  });

  it('GET /api/pay/{uuid}: public, the contract’s fields and the page’s state, clock and payments, in the envelope', async () => {
    const c = await create({
      amount: '1.5',
      token: 'ETH',
      expires: 600,
      content: { title: 'Order 7', description: 'Two mugs' },
      info: { customer_email: 'bob@example.com', internal: 'secret-note' },
    });
    const res = await t.request('GET', `/api/pay/${c.uuid}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body.status).toBe('success');
    expect(Object.keys(res.body.data).sort()).toEqual(PUBLIC_KEYS);
    expect(res.body.data).toEqual({
      uuid: c.uuid,
      status: 'pending',
      amount: '1.500000000000000000',
      paid_amount: '0.000000000000000000',
      token: 'ETH',
      address: c.address,
      payment_uri: c.payment_uri,
      price: null,
      paid_fraction: '0.000000000000000000',
      quotes: [],
      expires_at: c.expires_at,
      content: { title: 'Order 7', description: 'Two mugs' },
      state: 'awaiting',
      now_ms: expect.any(Number),
      payments: [],
      refunds: [],
    });
    // Nothing of the user, the wallet or the merchant's info anywhere in the answer.
    for (const secret of ['secret-note', 'bob@example.com', alice.email, wallet.address]) expect(res.text).not.toContain(secret);
    // The uuid in capitals is the same charge.
    expect((await t.request('GET', `/api/pay/${c.uuid.toUpperCase()}`)).body.data.uuid).toBe(c.uuid);
  });

  it('GET /api/pay/{uuid}: 404 Charge not found for an unknown or malformed uuid', async () => {
    for (const ref of ['00000000-0000-4000-8000-000000000000', 'nope', '1', `${'9'.repeat(100)}`]) {
      const res = await t.request('GET', `/api/pay/${ref}`);
      expect(res.status, ref).toBe(404);
      expect(res.body).toEqual({ status: 'error', message: 'Charge not found', data: null });
    }
  });

  it('GET /pay/{uuid}: the page, with a strict policy, the escaped merchant text, amount, address and QR code', async () => {
    const c = await create({
      amount: '0.5',
      token: 'ETH',
      content: { title: '<script>alert("t")</script> Mug', description: 'Blue & <b>big</b>' },
      info: { internal: 'secret-note' },
    });
    const res = await fetch(`${t.url}/pay/${c.uuid}`);
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/]+=*'(;|$)/);
    expect(csp).toMatch(/style-src 'sha256-[A-Za-z0-9+/]+=*'(;|$)/);
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');

    expect(html).toContain('&#60;script&#62;alert(&#34;t&#34;)&#60;/script&#62; Mug');
    expect(html).toContain('Blue &#38; &#60;b&#62;big&#60;/b&#62;');
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<b>big</b>');
    expect(html).not.toContain('secret-note');
    expect(html).toContain(`<code id="address" aria-labelledby="address-label">${c.address}</code>`);
    expect(html).toContain('<span id="amount-value">0.5</span><span class="token">ETH</span>');
    expect(html).toMatch(/<img id="qr" src="data:image\/svg\+xml;base64,[A-Za-z0-9+/]+=*"/);
    expect(html).toContain(`href="${c.payment_uri}"`);
    // Every script and stylesheet is inline (allowed by hash): nothing to load from anywhere.
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+stylesheet|https?:\/\/(?!www\.w3\.org)/);
  });

  it('a price charge: the price, each quote with its own payment_uri, and a token picker on the page', async () => {
    const rates = new RateService(t.ctx);
    await rates.setManual({ symbol: 'USDC', currency: 'USD', value: '1', networkId });
    await rates.setManual({ symbol: 'ETH', currency: 'USD', value: '2500', networkId });
    const c = await create({ price: { amount: '25', currency: 'USD' }, tokens: ['USDC', 'ETH'], expires: 600 });
    const contract = (
      await t.store.db
        .selectFrom('wallet_tokens')
        .select('contract')
        .where('wallet_id', '=', wallet.id)
        .where('symbol', '=', 'USDC')
        .executeTakeFirstOrThrow()
    ).contract;
    const usdcUri = `ethereum:${contract}@31337/transfer?address=${c.address}&uint256=25000000`;
    const ethUri = `ethereum:${c.address}@31337?value=${parseEther('0.01')}`;

    const res = await t.request('GET', `/api/pay/${c.uuid}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(PUBLIC_KEYS);
    expect(res.body.data).toMatchObject({
      token: 'USDC',
      amount: '25.000000000000000000',
      payment_uri: usdcUri,
      price: { amount: '25.00', currency: 'USD' },
      paid_fraction: '0.000000000000000000',
      state: 'awaiting',
      quotes: [
        { token: 'USDC', amount: '25.000000000000000000', payment_uri: usdcUri },
        { token: 'ETH', amount: '0.010000000000000000', payment_uri: ethUri },
      ],
    });
    expect(res.body.data.payment_uri).toBe(c.payment_uri);

    const html = await (await fetch(`${t.url}/pay/${c.uuid}`)).text();
    expect(html).toContain('<h1 id="heading">Pay 25.00 USD</h1>');
    expect(html).toContain('<span class="label" id="amount-label" data-closed="Price">Price</span>');
    expect(html).toContain('<span id="amount-value">25.00</span><span class="token">USD</span>');
    expect(html).toContain('<fieldset class="picker" id="picker"><legend class="label">Pay with</legend>');
    expect(html).toContain(
      '<label class="choice"><input type="radio" name="quote" value="0" checked><span class="choice-token">USDC</span> <span class="choice-amount">25</span></label>',
    );
    expect(html).toContain(
      '<label class="choice"><input type="radio" name="quote" value="1"><span class="choice-token">ETH</span> <span class="choice-amount">0.01</span></label>',
    );
    // Each token's amount, QR code and wallet link; the first shown, the others for the script to show when picked.
    expect(html).toContain('<p class="hint" data-quote="0">Send exactly <strong>25 USDC</strong>');
    expect(html).toContain('<p class="hint" data-quote="1" hidden>Send exactly <strong>0.01 ETH</strong>');
    expect(html).toMatch(/<div class="qr" data-quote="0"><img id="qr-0" src="data:image\/svg\+xml;base64,/);
    expect(html).toMatch(/<div class="qr" data-quote="1" hidden><img id="qr-1" src="data:image\/svg\+xml;base64,/);
    expect(html).toContain(`id="open-wallet-0" href="${usdcUri.replace('&', '&#38;')}"`);
    expect(html).toContain(`id="open-wallet-1" href="${ethUri}"`);
    expect(html.match(/id="address"/g)).toHaveLength(1);
  });

  it('GET /pay/{uuid}: a plain 404 page for an unknown or malformed uuid', async () => {
    for (const ref of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const res = await fetch(`${t.url}/pay/${ref}`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await res.text();
      expect(html).toContain('<h1>Payment not found</h1>');
      expect(html).not.toContain('"status"');
    }
  });
});
