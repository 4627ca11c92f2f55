/** Migrations, in code (no file-system scanning), run at start and by `cli migrate`. */
import { Migrator, type Migration, type MigrationResultSet } from 'kysely';
import type { Store } from './index.js';
import * as m001 from './migrations/001_initial.js';
import * as m002 from './migrations/002_transactions.js';
import * as m003 from './migrations/003_api_keys_events.js';
import * as m004 from './migrations/004_webhook_operations.js';
import * as m005 from './migrations/005_transaction_fees.js';
import * as m006 from './migrations/006_transaction_finality.js';
import * as m007 from './migrations/007_charge_payments.js';
import * as m008 from './migrations/008_rate_limits_unlogged.js';
import * as m009 from './migrations/009_read_cache_notify.js';
import * as m010 from './migrations/010_wallet_nonces.js';
import * as m011 from './migrations/011_reconciliation.js';
import * as m012 from './migrations/012_balance_blocks.js';
import * as m015 from './migrations/015_network_endpoints.js';
import * as m016 from './migrations/016_internal_payments.js';
import * as m017 from './migrations/017_network_presets.js';
import * as m018 from './migrations/018_spending_policies.js';
import * as m019 from './migrations/019_approvals.js';
import * as m020 from './migrations/020_refunds.js';
import * as m021 from './migrations/021_payouts.js';
import * as m022 from './migrations/022_charge_deposit_lookup.js';
import * as m023 from './migrations/023_transaction_item_json.js';
import * as m024 from './migrations/024_stuck_reason.js';
import * as m026 from './migrations/026_late_money.js';
import * as m027 from './migrations/027_pending_traces.js';
import * as m028 from './migrations/028_payout_reservations.js';
import * as m029 from './migrations/029_token_calls.js';
import * as m030 from './migrations/030_screened_payments.js';
import * as m031 from './migrations/031_secret_flags.js';
import * as m032 from './migrations/032_network_sweeper.js';
import * as m033 from './migrations/033_keyless_deposits.js';
import * as m034 from './migrations/034_payout_batches.js';
import * as m035 from './migrations/035_deposit_addresses.js';
import * as m036 from './migrations/036_rates.js';
import * as m037 from './migrations/037_price_charges.js';
import * as m038 from './migrations/038_checkpoint_rollback.js';
import * as m039 from './migrations/039_held_by.js';

/** Migrates to the latest schema, or up to `target` (a migration's name; tests of a migration start before it). */
export async function migrateToLatest(store: Store, target?: string): Promise<MigrationResultSet> {
  const d = store.dialect;
  const migrations: Record<string, Migration> = {
    '001_initial': { up: (db) => m001.up(db, d) },
    '002_transactions': { up: (db) => m002.up(db, d) },
    '003_api_keys_events': { up: (db) => m003.up(db, d) },
    '004_webhook_operations': { up: (db) => m004.up(db, d) },
    '005_transaction_fees': { up: (db) => m005.up(db, d) },
    '006_transaction_finality': { up: (db) => m006.up(db, d) },
    '007_charge_payments': { up: (db) => m007.up(db, d) },
    '008_rate_limits_unlogged': { up: (db) => m008.up(db, d) },
    '009_read_cache_notify': { up: (db) => m009.up(db, d) },
    '010_wallet_nonces': { up: (db) => m010.up(db, d) },
    '011_reconciliation': { up: (db) => m011.up(db, d) },
    '012_balance_blocks': { up: (db) => m012.up(db, d) },
    '015_network_endpoints': { up: (db) => m015.up(db, d) },
    '016_internal_payments': { up: (db) => m016.up(db, d) },
    '017_network_presets': { up: (db) => m017.up(db, d) },
    '018_spending_policies': { up: (db) => m018.up(db, d) },
    '019_approvals': { up: (db) => m019.up(db, d) },
    '020_refunds': { up: (db) => m020.up(db, d) },
    '021_payouts': { up: (db) => m021.up(db, d) },
    '022_charge_deposit_lookup': { up: (db) => m022.up(db, d) },
    '023_transaction_item_json': { up: (db) => m023.up(db, d) },
    '024_stuck_reason': { up: (db) => m024.up(db, d) },
    '026_late_money': { up: (db) => m026.up(db, d) },
    '027_pending_traces': { up: (db) => m027.up(db, d) },
    '028_payout_reservations': { up: (db) => m028.up(db, d) },
    '029_token_calls': { up: (db) => m029.up(db, d) },
    '030_screened_payments': { up: (db) => m030.up(db, d) },
    '031_secret_flags': { up: (db) => m031.up(db, d) },
    '032_network_sweeper': { up: (db) => m032.up(db, d) },
    '033_keyless_deposits': { up: (db) => m033.up(db, d) },
    '034_payout_batches': { up: (db) => m034.up(db, d) },
    '035_deposit_addresses': { up: (db) => m035.up(db, d) },
    '036_rates': { up: (db) => m036.up(db, d) },
    '037_price_charges': { up: (db) => m037.up(db, d) },
    '038_checkpoint_rollback': { up: (db) => m038.up(db, d) },
    '039_held_by': { up: (db) => m039.up(db, d) },
  };
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'kysely_migration',
    migrationLockTableName: 'kysely_migration_lock',
  });
  const result = target === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(target);
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`Migration ${failed} failed`, { cause: result.error });
  }
  return result;
}
