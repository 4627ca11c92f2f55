/**
 * The public charge on the wire (GET /api/pay/{uuid}): the contract's nine fields, a price
 * charge's price, quotes and paid fraction, and what the checkout page needs besides (its state,
 * the service's clock, the payments seen), nothing more.
 */
import { Type } from '@sinclair/typebox';

export const PayParams = Type.Object({ uuid: Type.String({ description: 'The charge’s uuid (from its `hosted_url`)' }) });

export const PublicChargeSchema = Type.Object(
  {
    uuid: Type.String(),
    status: Type.String({ description: '`pending`, `paid`, `expired` or `failed`' }),
    amount: Type.String({ description: 'What is asked, 18 decimal places' }),
    paid_amount: Type.String({ description: 'What has arrived so far, 18 decimal places' }),
    token: Type.String({ description: 'The token’s symbol' }),
    address: Type.String({ description: 'The deposit address to pay to' }),
    payment_uri: Type.String({ description: 'EIP-681 payment request for wallet apps and QR codes' }),
    price: Type.Union(
      [
        Type.Object(
          {
            amount: Type.String({ description: 'A decimal string of 2 places', examples: ['25.00'] }),
            currency: Type.String({ enum: ['USD', 'EUR', 'GBP'] }),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      { description: 'A price charge’s price (docs/prices.md); null for a charge of an `amount` of a `token`' },
    ),
    paid_fraction: Type.String({
      description:
        'The counted payments, each divided by its token’s quote amount, summed (18 places, rounded down): `1.000000000000000000` or more is paid in full',
      examples: ['0.400000000000000000'],
    }),
    quotes: Type.Array(
      Type.Object(
        {
          token: Type.String({ description: 'The token’s symbol' }),
          amount: Type.String({ description: 'The amount of `token` that pays the whole price, 18 decimal places' }),
          payment_uri: Type.String({ description: 'EIP-681 payment request for that amount of `token`' }),
        },
        { additionalProperties: false },
      ),
      {
        description:
          'A price charge’s quotes, in order (the first is `token` and `amount`): the payer may pay in any of them, each payment counting at its quote; empty for a charge of one token',
      },
    ),
    expires_at: Type.String(),
    content: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
      description: 'What the merchant chose to show the payer',
    }),
    state: Type.String({
      description:
        'What the checkout page shows: `awaiting`, `partial` (both still take payment), `confirming`, `closed` (expired by the clock, not yet decided on the chain), `paid`, `expired`, `failed` or `late` (docs/charges.md, "What the page says")',
    }),
    now_ms: Type.Integer({
      description: 'The service’s clock (ms since the epoch) when it answered: the page counts down from it, not from the device’s clock',
    }),
    payments: Type.Array(
      Type.Object(
        {
          tx_hash: Type.Union([Type.String(), Type.Null()]),
          token: Type.String({ description: 'The token paid in (for a price charge, any quoted token)' }),
          amount: Type.String({ description: 'In `token`, 18 decimal places' }),
          confirmed: Type.Boolean(),
          late: Type.Boolean({ description: 'Arrived after the expiry (or after the charge was settled): not counted' }),
        },
        { additionalProperties: false },
      ),
      { description: 'The payments seen on the deposit address, oldest first (at most 20; a screened sender’s are not listed)' },
    ),
    refunds: Type.Array(
      Type.Object(
        {
          amount: Type.String({ description: 'In the charge’s `token`, 18 decimal places' }),
          tx_hash: Type.Union([Type.String(), Type.Null()], { description: 'Null while its transfer waits for approval' }),
          confirmed: Type.Boolean(),
        },
        { additionalProperties: false },
      ),
      { description: 'The refunds sent back to the payer, oldest first (at most 10; an unused claim is not listed)' },
    ),
  },
  { additionalProperties: false },
);
