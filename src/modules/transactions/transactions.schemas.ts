/**
 * Transaction shapes on the wire. Explicit schemas, so nothing else leaves (wallet_id,
 * token_id, input, info, raw_tx, error are never serialised).
 *
 * Decimals (amount, gas figures) are 18-place strings, except in the creation response, whose
 * gas fields are JSON numbers (docs/transactions.md, "Shapes"): `gas` in gas units, `gas_price`
 * in the native currency per gas unit; there `block_timestamp` is the integer Unix time of submission.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { component } from '../../http/components.js';
import { getAddress, zeroAddress, type Address, type Hex } from 'viem';
import { isValidAddress } from '../../chain/address.js';
import { calldataProblem, encodeCall, encodedSizeFloor, MAX_CALLDATA_BYTES, parseFunction } from '../../chain/contract.js';
import { FEE_LEVELS, type FeeLevel } from '../../chain/fees.js';
import type { WalletTokenRow } from '../../db/types.js';
import { validationError, type FieldErrors } from '../../errors.js';
import { PageQuerySchema } from '../../http/pagination.js';
import { checkAmountAndToken, checkDecimalField, orderErrors } from '../tokens/amount-field.js';
import { WalletTokenRef } from '../tokens/tokens.schemas.js';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

const HEAD = {
  id: Type.Integer(),
  amount: Type.String({ description: 'Decimal with 18 places' }),
  type: Type.String({ enum: ['transfer', 'receipt', 'contract'] }),
  status: Type.String({
    enum: ['pending', 'confirmed', 'failed', 'awaiting_approval'],
    description: "`awaiting_approval`: held by the policy's approval_above, nothing signed yet (tx_hash and nonce null)",
  }),
  tx_hash: Nullable(Type.String()),
  block_number: Nullable(Type.Integer()),
};

/** Finality fields, in every Transaction object (list, show, create and the replacement routes). */
const FINALITY = {
  failure_reason: Nullable(
    Type.String({
      enum: ['reverted', 'dropped', 'cancelled', 'rejected', 'rejected_by_approver', 'approval_expired', 'refused'],
      description:
        'Why a failed transaction failed; null otherwise. `refused`: a payout item of a batch that mined, which its token refused (the others were paid)',
    }),
  ),
  replaced_hashes: Type.Array(Type.String(), {
    description:
      'Hashes of earlier broadcasts at the same nonce (speed-up, cancel), oldest first; tx_hash is the latest, or the one that mined',
  }),
  stuck: Type.Boolean({
    description:
      'Pending longer than TX_STUCK_AFTER_S, or every endpoint refused its re-send for a reason other than its fee (`stuck_reason`)',
  }),
  stuck_reason: Nullable(
    Type.String({
      description:
        "The node's words when every endpoint refused the pending transfer's re-send for a reason other than its fee (it keeps its nonce until a speed-up, a cancel or the chain settles it); null otherwise",
    }),
  ),
};

/** Who sent and who receives, in every Transaction object (list, show, create and the replacement and approval routes). */
const ADDRESSES = {
  from: Type.String({
    description:
      "The sending address (EIP-55 checksummed): the wallet's own for what it sends; for a receipt its sender (of an ERC-20 receipt the token transfer's sender; of an internal receipt the sender of the transaction that carried it)",
  }),
  to: Type.String({
    description:
      "The recipient (EIP-55 checksummed): of an ERC-20 transfer its recipient, not the token contract; of a contract call the contract; of a receipt the wallet's own address (or its deposit address that received it)",
  }),
};

/**
 * Why a transfer or payout was held for a person's approval (migration 039): set when it is held,
 * kept once it is approved, rejected or expired; null for one never held, and for one held before
 * the service recorded it.
 */
export const HeldBySchema = Nullable(
  Type.Object(
    {
      rule: Type.String({
        enum: ['approval_above', 'contract_call'],
        description:
          "`approval_above`: the amount (a payout's total; a contract call's value, or the amount its token call moves) was over the token's approval threshold. `contract_call`: a call whose effect cannot be read from its calldata, to a contract not on the allowlist, on a wallet with a spending policy",
      }),
      limit: Nullable(
        Type.String({
          description: '`approval_above`: the threshold as it was at the hold, 18 places; null otherwise',
          examples: ['0.500000000000000000'],
        }),
      ),
      token: Nullable(Type.String({ description: '`approval_above`: the symbol of the token the threshold is set for; null otherwise' })),
    },
    { additionalProperties: false },
  ),
);

export const TransactionSchema = Type.Object({
  ...HEAD,
  ...FINALITY,
  data: Nullable(Type.String({ description: 'Calldata of a contract call (type `contract`); null otherwise' })),
  block_timestamp: Nullable(Type.String({ description: 'YYYY-MM-DD HH:MM:SS (UTC)' })),
  block_hash: Nullable(Type.String()),
  nonce: Nullable(Type.Integer()),
  gas: Nullable(Type.String({ description: 'Gas limit in gas units, 18 places' })),
  gas_price: Nullable(Type.String({ description: 'Native currency per gas unit, 18 places' })),
  gas_used: Nullable(Type.String()),
  cumulative_gas_used: Nullable(Type.String()),
  receipt_status: Nullable(Type.Boolean()),
  symbol: Type.String(),
  refund_id: Nullable(Type.Integer({ description: "The refund this transfer pays (a charge's refund); null otherwise" })),
  payout_id: Nullable(Type.Integer({ description: 'The payout this transfer is an item of; null otherwise' })),
  reference: Nullable(
    Type.String({ description: "The payout item's reference, or the deposit address's (a receipt to one); null otherwise" }),
  ),
  batch_index: Nullable(
    Type.Integer({
      description:
        "A payout item sent in a batch: its 0-based place in the batch, whose transaction it shares (`tx_hash`) with the batch's other items; null otherwise",
    }),
  ),
  deposit_address_id: Nullable(
    Type.Integer({
      description: 'A receipt to one of the wallet’s permanent deposit addresses: its id (`reference` is its reference); null otherwise',
    }),
  ),
  created_at: Type.String(),
  updated_at: Type.String(),
  internal: Type.Boolean({
    description:
      'A receipt of native coin a contract sent to the wallet inside a transaction (read from the call traces; `tx_hash` the transaction that carried it, `from` its sender); false otherwise',
  }),
  held_by: HeldBySchema,
  ...ADDRESSES,
});

export const TransactionRef = component('Transaction', TransactionSchema);

/** A transaction with the wallet token it moved (the show route). */
export const TransactionDetailSchema = Type.Intersect([TransactionRef, Type.Object({ wallet_token: WalletTokenRef })]);

export const CreatedTransactionSchema = Type.Object({
  ...HEAD,
  ...FINALITY,
  data: Nullable(Type.String({ description: 'Calldata of a contract call (type `contract`); null otherwise' })),
  block_timestamp: Type.Integer({ description: 'Unix time of submission (seconds)' }),
  block_hash: Nullable(Type.String()),
  nonce: Nullable(Type.Integer()),
  gas: Type.Number({ description: 'Gas limit in gas units' }),
  gas_price: Type.Number({ description: 'Native currency per gas unit' }),
  gas_used: Nullable(Type.Number()),
  cumulative_gas_used: Nullable(Type.Number()),
  receipt_status: Nullable(Type.Boolean()),
  symbol: Type.String(),
  refund_id: Nullable(Type.Integer({ description: "The refund this transfer pays (a charge's refund); null otherwise" })),
  payout_id: Nullable(Type.Integer({ description: 'The payout this transfer is an item of; null otherwise' })),
  reference: Nullable(Type.String({ description: "The payout item's reference; null otherwise" })),
  batch_index: Nullable(
    Type.Integer({
      description:
        "A payout item sent in a batch: its 0-based place in the batch, whose transaction it shares (`tx_hash`) with the batch's other items; null otherwise",
    }),
  ),
  created_at: Type.String(),
  updated_at: Type.String(),
  held_by: HeldBySchema,
  ...ADDRESSES,
});

export const TransactionParams = Type.Object({ wallet: Type.String(), transaction: Type.String() });

export const ListQuery = Type.Object({
  ...PageQuerySchema,
  token: Type.Optional(Type.String({ maxLength: 64, description: 'Token symbol' })),
});

/**
 * The create body. Fields are checked by `parseCreateInput` (so each gets the contract's
 * wording, and the amount's decimal places depend on the token); the schema documents them.
 */
export const CreateBody = Type.Object({
  amount: Type.Optional(Type.Unknown({ description: "Amount (JSON number or decimal string), > 0, at most the token's decimals" })),
  token: Type.Optional(Type.Unknown({ description: 'Symbol of an active token of the wallet' })),
  address: Type.Optional(
    Type.Unknown({
      description: 'Destination EVM address (EIP-55 checksum if mixed case), not the zero address; for a contract call the contract',
    }),
  ),
  fee_level: Type.Optional(Type.Unknown({ description: '`low`, `medium` (default) or `high`' })),
  max_fee_per_gas: Type.Optional(
    Type.Unknown({
      description:
        'Explicit max fee, native currency per gas unit (decimal string); with max_priority_fee_per_gas; at most 3× the current high level (422 above the cap)',
    }),
  ),
  max_priority_fee_per_gas: Type.Optional(
    Type.Unknown({ description: 'Explicit tip, native currency per gas unit (decimal string), at most max_fee_per_gas' }),
  ),
  data: Type.Optional(
    Type.Unknown({
      description:
        'Contract call: 0x-prefixed hex calldata, at most 64 KiB (token must be the native token; amount is the value, may be 0). A call to one of the wallet’s token contracts (transfer, transferFrom, approve, increaseAllowance, permit) is policed and reserved as that token; any other call waits for approval on a wallet with a policy unless its contract is allowlisted',
    }),
  ),
  function: Type.Optional(
    Type.Unknown({ description: 'Contract call: a Solidity signature such as `approve(address,uint256)`, with `args`' }),
  ),
  args: Type.Optional(Type.Unknown({ description: 'Arguments of `function` (numbers as decimal strings)' })),
});

export const FeePreviewQuery = Type.Object({
  token: Type.Optional(Type.String({ maxLength: 64, description: 'Symbol of an active token of the wallet' })),
  address: Type.Optional(Type.String({ maxLength: 64, description: 'Destination EVM address' })),
  amount: Type.Optional(Type.String({ maxLength: 200, description: 'Amount (decimal), > 0' })),
});

const FeeLevelSchema = Type.Object({
  max_fee_per_gas: Type.String({ description: 'Native currency per gas unit, 18 places' }),
  max_priority_fee_per_gas: Type.String({ description: 'Native currency per gas unit, 18 places' }),
  max_fee: Type.String({ description: 'Most the transfer can cost in fees: gas × max_fee_per_gas + l1_fee, 18 places' }),
});

export const FeePreviewSchema = Type.Object({
  base_fee: Nullable(
    Type.String({ description: "Next block's base fee per gas unit, 18 places; null on a network without one (legacy transactions)" }),
  ),
  gas: Type.String({ description: 'Gas limit estimate in gas units, 18 places' }),
  l1_fee: Type.String({ description: 'OP-stack L1 data fee included in each max_fee (0 elsewhere), 18 places' }),
  type: Type.String({ enum: ['legacy', 'eip1559'], description: 'Transaction type the service would send' }),
  levels: Type.Object({ low: FeeLevelSchema, medium: FeeLevelSchema, high: FeeLevelSchema }),
});

/** The speed-up and cancel body: optional fees, as for create (`fee_level`, or both explicit fields). */
export const ReplaceBody = Type.Object({
  fee_level: Type.Optional(
    Type.Unknown({
      description: '`low`, `medium` (default) or `high`: the quote the new fees are raised to when higher than the minimum +10%',
    }),
  ),
  max_fee_per_gas: Type.Optional(
    Type.Unknown({
      description:
        'Explicit max fee, native currency per gas unit (decimal string); at least 10% above the current one, at most 3× the current high level',
    }),
  ),
  max_priority_fee_per_gas: Type.Optional(
    Type.Unknown({ description: 'Explicit tip, native currency per gas unit (decimal string); at least 10% above the current one' }),
  ),
});

/** The fees a create (or a replacement) asks for: a level, or explicit fees in wei per gas unit. */
export type FeeChoice = { level: FeeLevel } | { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };

/** A transfer to make: the amount in the token's base units, an active token, a checked address. */
export interface TransferInput {
  amount: bigint;
  token: WalletTokenRow;
  to: Address;
  /** Fee level or explicit fees; absent: the `medium` level. */
  fees?: FeeChoice;
  /** Calldata of a contract call (type `contract`); absent for a transfer. */
  data?: Hex;
  /**
   * The service's own contract call on one of the wallet's tokens, told rather than read from the
   * calldata: `amount` is what it takes from the balance (a payout batch, whose Sweeper call pays
   * its items with `transferFrom`: checked, reserved until mined), `policed` what the daily limit
   * counts (0 for a batch, whose items' own rows count, and for the Sweeper's approval, which
   * lets only the wallet's own batches spend). Absent: read from the calldata when it calls a token.
   */
  spend?: { token: WalletTokenRow; amount: bigint; policed: bigint };
}

/** Checks the create body against the wallet's active tokens; throws 422 with every failing field. */
export function parseCreateInput(body: Record<string, unknown>, activeTokens: WalletTokenRow[]): TransferInput {
  const errors: FieldErrors = {};
  const isCall = body.data !== undefined || body.function !== undefined || body.args !== undefined;
  const { amount, token } = checkAmountAndToken(body, activeTokens, errors, { allowZero: isCall });
  if (isCall && token && token.is_native !== 1) errors.token = ['The token field must be the native token for a contract call.'];
  const fees = parseFeeChoice(body, errors);
  const data = isCall ? parseCallData(body, errors) : undefined;

  const to = checkAddressField(body, errors);

  // Field order of the request (amount, token, address, ...), as the envelope message uses the first.
  if (Object.keys(errors).length > 0) throw validationError(orderErrors(errors, CREATE_FIELDS));
  const input: TransferInput = { amount, token: token!, to: to! };
  if (fees) input.fees = fees;
  if (data) input.data = data;
  return input;
}

/** `address`: required, an EVM address (EIP-55 checksum if mixed case), not the zero address; checksummed. */
export function checkAddressField(body: Record<string, unknown>, errors: FieldErrors): Address | undefined {
  const address = body.address;
  if (address === undefined || address === null || (typeof address === 'string' && address.trim() === '')) {
    errors.address = ['The address field is required.'];
  } else if (typeof address !== 'string' || !isValidAddress(address) || address.toLowerCase() === zeroAddress) {
    errors.address = ['The address field must be a valid address.'];
  } else return getAddress(address);
  return undefined;
}

const CREATE_FIELDS = [
  'amount',
  'token',
  'address',
  'fee_level',
  'max_fee_per_gas',
  'max_priority_fee_per_gas',
  'data',
  'function',
  'args',
];

/**
 * `fee_level`, or `max_fee_per_gas` with `max_priority_fee_per_gas` (decimal strings or exact
 * JSON numbers, native currency per gas unit, 18 places); undefined when none is given.
 * Errors go to `errors`. Shared by create and the replacement routes.
 */
export function parseFeeChoice(body: Record<string, unknown>, errors: FieldErrors): FeeChoice | undefined {
  const explicit = body.max_fee_per_gas !== undefined || body.max_priority_fee_per_gas !== undefined;
  if (body.fee_level !== undefined && body.fee_level !== null) {
    if (typeof body.fee_level !== 'string' || !FEE_LEVELS.includes(body.fee_level as FeeLevel))
      errors.fee_level = ['The selected fee_level is invalid.'];
    else if (explicit) errors.fee_level = ['The fee_level field is prohibited when max_fee_per_gas is present.'];
    else return { level: body.fee_level as FeeLevel };
    return undefined;
  }
  if (!explicit) return undefined;
  const maxFee = checkDecimalField(body, 'max_fee_per_gas', 18, errors, { required: true });
  const tip = checkDecimalField(body, 'max_priority_fee_per_gas', 18, errors, { required: true, allowZero: true });
  if (maxFee === null || tip === null) return undefined;
  if (tip > maxFee) {
    errors.max_priority_fee_per_gas = ['The max_priority_fee_per_gas field must be less than or equal to max_fee_per_gas.'];
    return undefined;
  }
  return { maxFeePerGas: maxFee, maxPriorityFeePerGas: tip };
}

const ARGS_TOO_LARGE = 'The args field must not encode to more than 64 kilobytes.';

/** The calldata of a contract call: `data` as given, or `function` encoded with `args`. */
function parseCallData(body: Record<string, unknown>, errors: FieldErrors): Hex | undefined {
  const { data, function: signature, args } = body;
  if (data !== undefined && data !== null) {
    if (signature !== undefined) errors.data = ['The data field is prohibited when function is present.'];
    else if (typeof data !== 'string' || calldataProblem(data) === 'format')
      errors.data = ['The data field must be a 0x-prefixed hex string.'];
    else if (calldataProblem(data) === 'size') errors.data = ['The data field must not be greater than 64 kilobytes.'];
    else return data.toLowerCase() as Hex;
    return undefined;
  }
  if (signature === undefined || signature === null || signature === '') {
    errors.function = ['The function field is required when args is present.'];
    return undefined;
  }
  const fn = typeof signature === 'string' ? parseFunction(signature) : null;
  if (!fn) {
    errors.function = ['The function field must be a valid function signature.'];
    return undefined;
  }
  if (args !== undefined && args !== null && !Array.isArray(args)) {
    errors.args = ['The args field must be an array.'];
    return undefined;
  }
  const list = (args as unknown[] | undefined | null) ?? [];
  if (4 + encodedSizeFloor(list) > MAX_CALLDATA_BYTES) {
    errors.args = [ARGS_TOO_LARGE];
    return undefined;
  }
  const encoded = encodeCall(fn, list);
  if (encoded === null) errors.args = ["The args field must match the function's parameters."];
  else if (calldataProblem(encoded) === 'size') errors.args = [ARGS_TOO_LARGE];
  else return encoded;
  return undefined;
}
