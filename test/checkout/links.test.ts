/**
 * Pure pieces of the checkout: the EIP-681 payment URI (native and ERC-20), the hosted URL and
 * PUBLIC_URL's default, and the page's text helpers (escaping, amounts, state texts) and the
 * state it shows for each charge, payments and time (checkout.state.ts).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { hostedUrl, paymentUri } from '../../src/modules/checkout/checkout.links.js';
import { countdownText, escapeHtml } from '../../src/modules/checkout/checkout.page.js';
import type { CheckoutRow } from '../../src/modules/checkout/checkout.repository.js';
import { amountDue, checkoutState, dueIn, seenShare, type SeenPayment } from '../../src/modules/checkout/checkout.state.js';
import { shortAmount, stateTexts } from '../../src/modules/checkout/checkout.texts.js';

const DEPOSIT = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const USDC = '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48';

describe('payment_uri (EIP-681)', () => {
  it('asks for the native token in wei: ethereum:{address}@{chain_id}?value={wei}', () => {
    const uri = paymentUri({
      address: DEPOSIT,
      contract: '0x0000000000000000000000000000000000000000',
      chain_id: 1,
      amount: 250_000_000_000_000_000n,
    });
    expect(uri).toBe(`ethereum:${DEPOSIT}@1?value=250000000000000000`);
  });

  it('asks for an ERC-20 transfer in token units: ethereum:{contract}@{chain_id}/transfer?address={address}&uint256={units}', () => {
    const uri = paymentUri({ address: DEPOSIT, contract: USDC, chain_id: 137, amount: 12_345_678n });
    expect(uri).toBe(`ethereum:${USDC}@137/transfer?address=${DEPOSIT}&uint256=12345678`);
  });

  it('writes amounts of any size as plain integers, never an exponent', () => {
    const uri = paymentUri({
      address: DEPOSIT,
      contract: '0x0000000000000000000000000000000000000000',
      chain_id: 31337,
      amount: 10n ** 30n,
    });
    expect(uri).toBe(`ethereum:${DEPOSIT}@31337?value=1${'0'.repeat(30)}`);
  });
});

describe('hosted_url and PUBLIC_URL', () => {
  it('is PUBLIC_URL + /pay/{uuid}', () => {
    expect(hostedUrl('https://pay.example.com', '6f1c2c1e-0f5e-4c43-9d38-2f5e3c1b9a10')).toBe(
      'https://pay.example.com/pay/6f1c2c1e-0f5e-4c43-9d38-2f5e3c1b9a10',
    );
  });

  it('defaults PUBLIC_URL to the listen address and drops a trailing slash', () => {
    expect(loadConfig({ NODE_ENV: 'development', HOST: '0.0.0.0', PORT: '3000' }).publicUrl).toBe('http://0.0.0.0:3000');
    expect(loadConfig({}).publicUrl).toBe('http://127.0.0.1:8080');
    expect(loadConfig({ HOST: '::1', PORT: '9000' }).publicUrl).toBe('http://[::1]:9000');
    expect(loadConfig({ PUBLIC_URL: 'https://pay.example.com/' }).publicUrl).toBe('https://pay.example.com');
    expect(() => loadConfig({ PUBLIC_URL: 'ftp://pay.example.com' })).toThrow('Invalid configuration: PUBLIC_URL must use http: or https:');
  });
});

describe('checkout page texts', () => {
  const row = (over: Partial<CheckoutRow>): CheckoutRow => ({
    id: 1,
    uuid: 'u',
    status: 'pending',
    mode: 'test',
    amount: 2_000_000n,
    paid_amount: 0n,
    expires_at: 0,
    content: null,
    address: DEPOSIT,
    symbol: 'USDC',
    decimals: 6,
    contract: USDC,
    chain_id: 1,
    network_name: 'Ethereum',
    block_explorer: '',
    network_id: 1,
    is_native: 0,
    settled_block: null,
    token_id: 7,
    price_amount: null,
    price_currency: null,
    paid_fraction: null,
    quotes: [],
    ...over,
  });

  it('escapes every HTML-special character', () => {
    expect(escapeHtml(`<img src=x onerror="alert('1')">&`)).toBe('&#60;img src=x onerror=&#34;alert(&#39;1&#39;)&#34;&#62;&#38;');
  });

  it('shows amounts without trailing zeros, exactly', () => {
    expect(shortAmount(250_000_000_000_000_000n, 18)).toBe('0.25');
    expect(shortAmount(1_000_000n, 6)).toBe('1');
    expect(shortAmount(1n, 18)).toBe('0.000000000000000001');
    expect(shortAmount(0n, 18)).toBe('0');
  });

  const seen = (amount: bigint, o: Partial<SeenPayment> = {}): SeenPayment => ({
    tx_hash: `0x${'ab'.repeat(32)}`,
    token_id: 7,
    symbol: 'USDC',
    decimals: 6,
    amount,
    confirmed: true,
    late: false,
    ...o,
  });

  it('says what is missing when underpaid, and what is over when overpaid', () => {
    expect(stateTexts(row({ paid_amount: 500_000n }), [seen(500_000n)]).partial).toBe('Received 0.5 USDC. Send the remaining 1.5 USDC.');
    expect(stateTexts(row({ paid_amount: 500_000n }), [seen(500_000n), seen(250_000n, { confirmed: false })]).partial).toBe(
      'Received 0.75 USDC (0.25 USDC of it still confirming). Send the remaining 1.25 USDC.',
    );
    expect(stateTexts(row({ status: 'failed', paid_amount: 500_000n }), [])).toMatchObject({
      failed: 'Received 0.5 of 2 USDC before the request expired.',
      missing: '1.5 USDC missing',
    });
    expect(stateTexts(row({ status: 'paid', paid_amount: 2_500_000n }), []).paid).toBe('2.5 USDC received (0.5 USDC more than asked).');
    expect(stateTexts(row({ status: 'expired' }), [seen(300_000n, { late: true })]).late).toBe('0.3 USDC');
  });

  it('takes payment only before expires_at by the clock, whatever the status says', () => {
    const at = 1_000_000;
    const pending = row({ expires_at: at });
    expect(checkoutState(pending, [], at - 1)).toBe('awaiting');
    // The chain has not decided (no block after the expiry), the clock has: no more payment taken.
    expect(checkoutState(pending, [], at)).toBe('closed');
    expect(checkoutState(row({ expires_at: at, paid_amount: 500_000n }), [seen(500_000n)], at - 1)).toBe('partial');
    expect(checkoutState(row({ expires_at: at, paid_amount: 500_000n }), [seen(500_000n)], at + 1)).toBe('closed');
  });

  it('says confirming only while a payment seen in time waits for its confirmations', () => {
    const at = 1_000_000;
    const c = row({ expires_at: at });
    // Paid in full, not confirmed yet: nothing more to pay.
    expect(checkoutState(c, [seen(2_000_000n, { confirmed: false })], at - 1)).toBe('confirming');
    expect(amountDue(c, [seen(2_000_000n, { confirmed: false })])).toBe(0n);
    // Part of it, time left: the rest is asked for.
    expect(checkoutState(c, [seen(500_000n, { confirmed: false })], at - 1)).toBe('partial');
    expect(amountDue(c, [seen(500_000n, { confirmed: false })])).toBe(1_500_000n);
    // Part of it, time up: confirming, payment no longer taken.
    expect(checkoutState(c, [seen(500_000n, { confirmed: false })], at + 1)).toBe('confirming');
    // A late payment is never "confirming", confirmed or not.
    expect(checkoutState(c, [seen(2_000_000n, { confirmed: false, late: true })], at + 1)).toBe('late');
  });

  it('tells a late payment from nothing, after any outcome', () => {
    const late = seen(250_000n, { late: true });
    expect(checkoutState(row({ status: 'expired' }), [], 0)).toBe('expired');
    expect(checkoutState(row({ status: 'expired' }), [late], 0)).toBe('late');
    expect(checkoutState(row({ status: 'paid', paid_amount: 2_000_000n }), [seen(2_000_000n), late], 0)).toBe('paid');
    expect(checkoutState(row({ status: 'failed', paid_amount: 500_000n }), [seen(500_000n), late], 0)).toBe('failed');
  });

  it('counts down in mm:ss, with hours from an hour up', () => {
    expect(countdownText(299_001)).toBe('05:00');
    expect(countdownText(59_000)).toBe('00:59');
    expect(countdownText(3_600_000 + 61_000)).toBe('1:01:01');
    expect(countdownText(-5)).toBe('00:00');
  });
});

describe('a price charge on the page: shares of the price, each payment at its quote', () => {
  const ETH_ID = 1;
  const ONE = 10n ** 18n;
  const quotes = [
    { token_id: 7, symbol: 'USDC', decimals: 6, contract: USDC, is_native: 0, amount: 30_000_000n },
    {
      token_id: ETH_ID,
      symbol: 'ETH',
      decimals: 18,
      contract: '0x0000000000000000000000000000000000000000',
      is_native: 1,
      amount: ONE / 100n,
    },
  ];
  const priced = (over: Partial<CheckoutRow>): CheckoutRow => ({
    id: 1,
    uuid: 'u',
    status: 'pending',
    mode: 'test',
    amount: 30_000_000n,
    paid_amount: 0n,
    expires_at: 1_000_000,
    content: null,
    address: DEPOSIT,
    symbol: 'USDC',
    decimals: 6,
    contract: USDC,
    chain_id: 1,
    network_name: 'Ethereum',
    block_explorer: '',
    network_id: 1,
    is_native: 0,
    settled_block: null,
    token_id: 7,
    price_amount: '30.00',
    price_currency: 'USD',
    paid_fraction: null,
    quotes,
    ...over,
  });
  const usdc = (amount: bigint, o: Partial<SeenPayment> = {}): SeenPayment => ({
    tx_hash: `0x${'ab'.repeat(32)}`,
    token_id: 7,
    symbol: 'USDC',
    decimals: 6,
    amount,
    confirmed: true,
    late: false,
    ...o,
  });
  const eth = (wei: bigint, o: Partial<SeenPayment> = {}) => usdc(wei, { token_id: ETH_ID, symbol: 'ETH', decimals: 18, ...o });
  const dues = (c: CheckoutRow, ps: SeenPayment[]) => quotes.map((q) => dueIn(q, seenShare(c, ps)));
  const now = 999_000;

  it('asks each quote whole, then what is left of the price in each token', () => {
    expect(checkoutState(priced({}), [], now)).toBe('awaiting');
    expect(dues(priced({}), [])).toEqual([30_000_000n, ONE / 100n]);
    // 12 USDC counted: 0.4 of the price.
    const part = priced({ paid_fraction: (ONE * 4n) / 10n, paid_amount: 12_000_000n });
    const counted = [usdc(12_000_000n)];
    expect(checkoutState(part, counted, now)).toBe('partial');
    expect(dues(part, counted)).toEqual([18_000_000n, (ONE * 6n) / 1000n]);
    expect(amountDue(part, counted)).toBe(18_000_000n);
    expect(stateTexts(part, counted).partial).toBe('40% paid. Send the remaining 18.00 USD in the token you pick.');
    // And 0.003 ETH still confirming: 0.7 seen.
    const more = [...counted, eth((ONE * 3n) / 1000n, { confirmed: false })];
    expect(dues(part, more)).toEqual([9_000_000n, (ONE * 3n) / 1000n]);
    expect(stateTexts(part, more).partial).toBe(
      '70% paid (0.003 ETH of it still confirming). Send the remaining 9.00 USD in the token you pick.',
    );
    // The rest in ETH, confirming: nothing more to pay.
    const all = [...counted, eth((ONE * 6n) / 1000n, { confirmed: false })];
    expect(checkoutState(part, all, now)).toBe('confirming');
    expect(dues(part, all)).toEqual([0n, 0n]);
    expect(stateTexts(part, all).confirming).toBe('0.006 ETH reached the address and is waiting for the network’s confirmations.');
    const both = [usdc(12_000_000n, { confirmed: false }), eth((ONE * 6n) / 1000n, { confirmed: false })];
    expect(stateTexts(priced({}), both).confirming).toBe(
      '12 USDC and 0.006 ETH reached the address and are waiting for the network’s confirmations.',
    );
  });

  it('says what arrived in each token, and what is missing of the price', () => {
    const paid = [usdc(12_000_000n), eth((ONE * 6n) / 1000n)];
    expect(stateTexts(priced({ status: 'paid', paid_fraction: ONE, paid_amount: 30_000_000n }), paid).paid).toBe(
      '12 USDC and 0.006 ETH received for 30.00 USD.',
    );
    const over = [usdc(12_000_000n), eth((ONE * 8n) / 1000n)];
    expect(stateTexts(priced({ status: 'paid', paid_fraction: (ONE * 12n) / 10n, paid_amount: 36_000_000n }), over).paid).toBe(
      '12 USDC and 0.008 ETH received for 30.00 USD (20% more than asked).',
    );
    const failed = priced({ status: 'failed', paid_fraction: (ONE * 4n) / 10n, paid_amount: 12_000_000n });
    expect(stateTexts(failed, [usdc(12_000_000n), eth(ONE / 1000n, { late: true })])).toMatchObject({
      failed: 'Received 40% of 30.00 USD (12 USDC) before the request expired.',
      missing: '18.00 USD missing',
      late: '0.001 ETH',
    });
    expect(checkoutState(failed, [], now)).toBe('failed');
  });

  it('rounds a share down in percent and up in what is still asked', () => {
    // A third of 10.00 GBP, quoted 3.333333333333333334 ETH (at 3 GBP an ETH).
    const third = priced({
      price_amount: '10.00',
      price_currency: 'GBP',
      paid_fraction: ONE / 3n,
      quotes: [{ ...quotes[1]!, amount: 3_333_333_333_333_333_334n }],
      amount: 3_333_333_333_333_333_334n,
      token_id: ETH_ID,
      symbol: 'ETH',
      decimals: 18,
    });
    expect(stateTexts(third, []).partial).toBe('33% paid. Send the remaining 6.67 GBP in the token you pick.');
    expect(amountDue(third, [])).toBe(2_222_222_222_222_222_224n);
    expect(stateTexts(priced({ paid_fraction: ONE / 1000n }), []).partial).toBe(
      'Less than 1% paid. Send the remaining 29.97 USD in the token you pick.',
    );
  });
});
