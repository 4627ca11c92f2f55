/** What a mined transaction really cost its sender, from its receipt. */
import type { TransactionReceipt } from 'viem';

/**
 * Gas used × effective gas price, plus the L1 data fee where the chain reports one on its
 * receipts (OP stack: `l1Fee`; a bigint with viem's OP-stack formatters, else the node's hex).
 */
export function receiptFee(r: TransactionReceipt): bigint {
  return r.gasUsed * r.effectiveGasPrice + l1DataFee(r);
}

function l1DataFee(r: TransactionReceipt): bigint {
  const raw = (r as { l1Fee?: unknown }).l1Fee;
  if (typeof raw === 'bigint') return raw;
  if (typeof raw === 'string' && /^0x[0-9a-fA-F]+$/.test(raw)) return BigInt(raw);
  return 0n;
}
