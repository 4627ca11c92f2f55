import { describe, expect, it } from 'vitest';
import { decide, worthInToken, type PaymentFacts, type Terms } from './charges.decide.js';

const A = 1;
const B = 2;
const pay = (token_id: number, amount: bigint, block_number = 1): PaymentFacts => ({
  token_id,
  amount,
  block_number,
  block_timestamp: 1_000,
  log_index: 0,
  screened: 0,
});

describe('decide, with the quotes of a price charge', () => {
  // 3 units of A or 7 units of B pay it whole.
  const terms: Terms = {
    amount: 3n,
    token_id: A,
    expires_at: 2_000,
    quotes: new Map([
      [A, 3n],
      [B, 7n],
    ]),
  };

  it('counts each payment over its quote exactly: 1/3 + 4/7 is short of 1, 2/3 + 3/7 is over it', () => {
    const short = decide(terms, [pay(A, 1n), pay(B, 4n)], 10, 1_500);
    expect(short).toMatchObject({ status: 'pending', fraction: 904_761_904_761_904_761n, paid: 2n });
    const over = decide(terms, [pay(A, 2n), pay(B, 3n, 2)], 10, 1_500);
    expect(over).toMatchObject({ status: 'paid', fraction: 1_095_238_095_238_095_238n, paid: 3n, paidAtMs: 1_000 });
    // Exactly the price in two parts: 1/3 + 14/21 (2/3) = 1, paid, no rounding on the way.
    const q = {
      ...terms,
      quotes: new Map([
        [A, 3n],
        [B, 21n],
      ]),
    };
    expect(decide(q, [pay(A, 1n), pay(B, 14n)], 10, 1_500)).toMatchObject({ status: 'paid', fraction: 10n ** 18n });
  });

  it('ignores a token it did not quote, a screened payment and one above the height; fails after expiry with a part paid', () => {
    const d = decide(terms, [pay(A, 1n), pay(9, 100n), { ...pay(B, 7n), screened: 1 }, pay(B, 7n, 11)], 10, 2_500);
    expect(d).toMatchObject({ status: 'failed', paid: 1n, fraction: 333_333_333_333_333_333n });
  });

  it('keeps a charge of one token as before: paid_amount the sum, fraction the sum over amount', () => {
    const one: Terms = { amount: 4n, token_id: A, expires_at: 2_000, quotes: null };
    expect(decide(one, [pay(A, 1n), pay(A, 2n)], 10, 1_500)).toMatchObject({ status: 'pending', paid: 3n, fraction: 75n * 10n ** 16n });
    expect(worthInToken(one, [{ token_id: A, amount: 5n }])).toBe(5n);
  });

  it('values payments in the charge’s token at their quotes (a refund’s ceiling), rounded down', () => {
    expect(
      worthInToken(terms, [
        { token_id: A, amount: 1n },
        { token_id: B, amount: 4n },
      ]),
    ).toBe(2n); // 3 × 19/21
    expect(worthInToken(terms, [{ token_id: B, amount: 14n }])).toBe(6n);
  });
});
