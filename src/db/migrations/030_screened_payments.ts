/**
 * Screened payments (docs/charges.md, "Screened payments"; src/modules/screening/screening.ts).
 *
 * - `charge_payments.screened`: 1 for a payment whose sender was on the SCREENING_FILE list when
 *   the chain follower recorded it. It is kept and listed (`screened: true`) but never counted
 *   toward the charge's `paid_amount` (charges.decide.ts).
 * - `charge_payments.screened_notified`: 1 once `charge.screened` was written for it (or found
 *   written before, below).
 * - `charge_screened_announcements`: the screened payments `charge.screened` was written for, by
 *   charge, transaction and the payment's place among that transaction's payments to the charge,
 *   as `charge_late_announcements` (026) does for `charge.delayed`: a reorg deletes the payment
 *   row (its flags with it), this row stays, so a payment removed and brought back is not
 *   announced twice.
 *
 * - `charge_payments_screened_idx`: the charge worker's look for screened payments to announce;
 *   partial (`screened = 1`), as almost no payment is screened.
 *
 * Additive (docs/operating.md, "Upgrades"): columns with a default and a new table. A previous
 * version still running during a rolling restart records payments unscreened (the default) and
 * never reads the new table.
 */
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema
    .alterTable('charge_payments')
    .addColumn('screened', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('charge_payments')
    .addColumn('screened_notified', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createIndex('charge_payments_screened_idx')
    .on('charge_payments')
    .columns(['network_id', 'screened_notified', 'confirmed'])
    .where(sql.ref('screened'), '=', sql.lit(1))
    .execute();
  await db.schema
    .createTable('charge_screened_announcements')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('charge_id', d.bigintType, (c) => c.notNull().references('charges.id').onDelete('cascade'))
    .addColumn('tx_hash', 'varchar(66)', (c) => c.notNull())
    .addColumn('ordinal', 'integer', (c) => c.notNull())
    .addColumn('created_at', d.bigintType, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('charge_screened_announcements_unique_idx')
    .unique()
    .on('charge_screened_announcements')
    .columns(['charge_id', 'tx_hash', 'ordinal'])
    .execute();
}
