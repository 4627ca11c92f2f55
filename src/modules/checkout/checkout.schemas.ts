/** The public charge on the wire (GET /api/pay/{uuid}): the contract's nine fields, nothing more. */
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
    expires_at: Type.String(),
    content: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
      description: 'What the merchant chose to show the payer',
    }),
  },
  { additionalProperties: false },
);
