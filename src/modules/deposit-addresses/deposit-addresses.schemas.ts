/** Deposit address shapes on the wire, and the create body parsed into a typed input. */
import { SweepSchema } from '../charges/charges.schemas.js';
import { Type, type Static } from '@sinclair/typebox';
import { component } from '../../http/components.js';
import { validationError, type FieldErrors } from '../../errors.js';

export const REFERENCE_MAX = 128;
export const LABEL_MAX = 255;

const Fields = {
  id: Type.Integer(),
  reference: Type.String({ description: 'Your reference for the address (1 to 128 characters), unique per wallet' }),
  label: Type.Union([Type.String(), Type.Null()], { description: 'A free text up to 255 characters, or null' }),
  address: Type.String({ description: 'The address to pay: native coin or any active token of the wallet, any number of times' }),
  deposit_kind: Type.String({
    enum: ['keyless', 'keyed'],
    description:
      "`keyless`: an address of the network's Sweeper contract bound to the wallet's main address, with no key, swept in batches from the main address. `keyed`: an address with a key of its own (a network without a Sweeper), swept by transactions it signs.",
  }),
  created_at: Type.String(),
};

export const DepositAddressSchema = Type.Object(Fields);
export const DepositAddressRef = component('DepositAddress', DepositAddressSchema);

export const ReceivedSchema = Type.Object({
  token: Type.String({ description: 'The token’s symbol' }),
  amount: Type.String({ description: 'The sum of its confirmed receipts to the address, 18 places' }),
});

export const DepositAddressDetailSchema = Type.Object({
  ...Fields,
  received: Type.Array(ReceivedSchema, {
    description:
      'What the address received, per token: the sum of its confirmed `receipt` transactions (each carries `deposit_address_id` and `reference`), whatever has been swept since; tokens it never received are absent',
  }),
  sweeps: Type.Array(SweepSchema, {
    description:
      'Transfers of what the address received to the wallet’s main address, oldest first, one entry per token moved, as a charge’s `sweeps`: a keyless address’s entries name the batch transaction that swept it (`tx_hash`, shared with the other addresses of the batch)',
  }),
});
export const DepositAddressDetailRef = component('DepositAddressDetail', DepositAddressDetailSchema);

export const DepositAddressParams = Type.Object({ wallet: Type.String(), deposit_address: Type.String() });

export const CreateDepositAddressBody = Type.Object({
  reference: Type.Unknown({ description: 'A string of 1 to 128 characters, unique among the wallet’s deposit addresses' }),
  label: Type.Optional(Type.Unknown({ description: 'A string of at most 255 characters, or null' })),
});

export interface DepositAddressInput {
  reference: string;
  label: string | null;
}

/** Checks the create body; throws 422 with every failing field. */
export function parseDepositAddressInput(body: Static<typeof CreateDepositAddressBody>): DepositAddressInput {
  const errors: FieldErrors = {};
  const { reference, label } = body as { reference?: unknown; label?: unknown };
  if (reference === undefined || reference === null || reference === '') errors.reference = ['The reference field is required.'];
  else if (typeof reference !== 'string') errors.reference = ['The reference field must be a string.'];
  else if ([...reference].length > REFERENCE_MAX)
    errors.reference = [`The reference field must not be greater than ${REFERENCE_MAX} characters.`];
  if (label !== undefined && label !== null) {
    if (typeof label !== 'string') errors.label = ['The label field must be a string.'];
    else if ([...label].length > LABEL_MAX) errors.label = [`The label field must not be greater than ${LABEL_MAX} characters.`];
  }
  if (Object.keys(errors).length > 0) throw validationError(errors);
  return { reference: reference as string, label: typeof label === 'string' ? label : null };
}
