/**
 * Gas for outgoing transfers. The service sends legacy (type 0, EIP-155) transactions: the gas
 * price is the node's `eth_gasPrice` (on an EIP-1559 chain that is the base fee plus the node's
 * suggested tip), so `gas_price` is exactly "the network's gas price" and the most the
 * transaction can ever cost in fees is `gas × gas_price`. That maximum is what a pending
 * transaction reserves of the native balance. The gas limit is `eth_estimateGas` from the
 * wallet's own address, unmodified (SPEC: "the gas limit is an estimate").
 */
import type { Address, Hex, PublicClient } from 'viem';

export interface GasQuote {
  /** Gas limit, in gas units. */
  gas: bigint;
  /** Wei per gas unit. */
  gasPrice: bigint;
}

export function estimateTransferGas(client: PublicClient, call: { from: Address; to: Address; value: bigint; data?: Hex }): Promise<bigint> {
  return client.estimateGas({ account: call.from, to: call.to, value: call.value, data: call.data });
}

export function currentGasPrice(client: PublicClient): Promise<bigint> {
  return client.getGasPrice();
}

/** The most a legacy transaction can pay in fees (wei): every unit of its gas limit at its price. */
export function maxFee(q: GasQuote): bigint {
  return q.gas * q.gasPrice;
}
