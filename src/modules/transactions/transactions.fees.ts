/** The cap on fees a caller names (docs/money-out.md, "Fee caps"): creates and speed-ups alike. */
import { feeCap, type FeeMarket } from '../../chain/fees.js';
import { fieldError } from '../../errors.js';

/** 422 on `max_fee_per_gas` when it is above the cap of the current market (`feeCap`). */
export function requireWithinCap(maxFeePerGas: bigint, market: FeeMarket): void {
  if (maxFeePerGas > feeCap(market)) throw fieldError('max_fee_per_gas', 'The max_fee_per_gas field is above the allowed cap.');
}
