/**
 * Pure pieces of the checkout: the EIP-681 payment URI (native and ERC-20), the hosted URL and
 * PUBLIC_URL's default, and the page's text helpers (escaping, amounts, state texts) and the
 * state it shows for each charge, payments and time (checkout.state.ts).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { hostedUrl, paymentUri } from '../../src/modules/checkout/checkout.links.js';
import { countdownText, escapeHtml, shortAmount, stateTexts } from '../../src/modules/checkout/checkout.page.js';
import type { CheckoutRow } from '../../src/modules/checkout/checkout.repository.js';
import { amountDue, checkoutState, type SeenPayment } from '../../src/modules/checkout/checkout.state.js';

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
