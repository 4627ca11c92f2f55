/**
 * EIP-1559 fees, contract calls and the L1 data fee on outgoing transactions.
 *
 * - `tx_kind`: how the transaction was signed, `legacy` (type 0, `gas_price`) or `eip1559`
 *   (type 2, `max_fee_per_gas` + `max_priority_fee_per_gas`). Rows written before this
 *   migration, and receipts, are `legacy`.
 * - `max_fee_per_gas`, `max_priority_fee_per_gas`: wei per gas unit, base units like every
 *   amount (null for legacy rows). For an EIP-1559 row `gas_price` holds the max fee too, so
 *   readers that only know `gas_price` see the most a unit of gas can cost.
 * - `data`: the calldata of a `contract` transaction (0x hex, at most 64 KiB of bytes), null
 *   for plain and ERC-20 transfers (their call is implied by the token).
 * - `l1_fee`: the OP-stack L1 data fee (wei) the fee reservation included, 0 elsewhere.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema
    .alterTable('transactions')
    .addColumn('tx_kind', 'varchar(16)', (c) => c.notNull().defaultTo('legacy'))
    .execute();
  await db.schema.alterTable('transactions').addColumn('max_fee_per_gas', d.amountType).execute();
  await db.schema.alterTable('transactions').addColumn('max_priority_fee_per_gas', d.amountType).execute();
  await db.schema.alterTable('transactions').addColumn('data', 'text').execute();
  await db.schema
    .alterTable('transactions')
    .addColumn('l1_fee', d.amountType, (c) => c.notNull().defaultTo('0'))
    .execute();
}
