/**
 * Internal payments (docs/charges.md, "Internal transfers"): `charge_payments.internal`, 1 for money
 * that reached the deposit address through a contract (an internal call, read from the node's
 * call traces; src/chain/traces.ts), 0 for a direct transfer or an ERC-20 log. Such a row's
 * `log_index` is -1 less the call's position (from 1) in its transaction's call tree (-1 is a direct
 * native transfer, 0 and up an ERC-20 log), so one transaction may pay a charge both ways.
 *
 * Additive (docs/operating.md, "Upgrades"): a column with a default. A previous version still
 * running during a rolling restart inserts direct payments only, which the default marks right.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, _d: SqlDialect): Promise<void> {
  await db.schema
    .alterTable('charge_payments')
    .addColumn('internal', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
