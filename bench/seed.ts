/** Rows for the benches, made in one SQL statement each (a recursive CTE on SQLite, generate_series on PostgreSQL). */
import { sql, type Kysely } from 'kysely';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { openStore } from '../src/runtime.js';
import type { Store } from '../src/db/index.js';
import type { ServiceProcess } from './process.js';

/**
 * `rows` confirmed transfers of one wallet, seq 1..rows; every 4th row of `tokenEvery4th`
 * (symbol TUSD), the others of `tokenId` (ETH). Then ANALYZE.
 */
export async function seedTransactions(
  db: Kysely<any>,
  driver: 'sqlite' | 'postgres',
  o: { walletId: number; tokenId: number; tokenEvery4th: number; rows: number; nowMs: number },
): Promise<void> {
  // Row x: seq x; every 4th row TUSD (symbol_seq x/4), the others ETH (symbol_seq x - x/4).
  const columns = sql`(wallet_id, token_id, type, status, amount, fee_reserved, from_address, to_address, tx_hash, log_index,
    block_number, block_hash, block_timestamp, nonce, gas, gas_price, gas_used, cumulative_gas_used, receipt_status,
    raw_tx, input, info, error, broadcast_at, confirmed_at, failed_at, created_at, updated_at, seq, symbol_key, symbol_seq)`;
  // Literals, not parameters: PostgreSQL types a parameter in a SELECT list as text.
  const [wid, tid, eid, at] = [sql.lit(o.walletId), sql.lit(o.tokenEvery4th), sql.lit(o.tokenId), sql.lit(o.nowMs)];
  const select = (x: string, hash: string, div: string) => sql`SELECT ${wid}, CASE WHEN ${sql.raw(x)} % 4 = 0 THEN ${tid} ELSE ${eid} END,
    'transfer', 'confirmed', '1000000000000000000', '21000000000000', '0x000000000000000000000000000000000000bEEF',
    '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720', ${sql.raw(hash)}, -1, ${sql.raw(x)}, ${sql.raw(hash)}, ${at}, ${sql.raw(x)},
    '21000', '1000000000', '21000', '21000', 1, NULL, NULL, NULL, NULL, ${at}, ${at}, NULL, ${at}, ${at}, ${sql.raw(x)},
    CASE WHEN ${sql.raw(x)} % 4 = 0 THEN 'TUSD' ELSE 'ETH' END,
    CASE WHEN ${sql.raw(x)} % 4 = 0 THEN ${sql.raw(div)} ELSE ${sql.raw(x)} - ${sql.raw(div)} END`;
  if (driver === 'postgres') {
    await sql`INSERT INTO transactions ${columns}
      ${select('x', `'0x' || lpad(to_hex(x), 64, '0')`, 'x / 4')}
      FROM generate_series(1, ${sql.lit(o.rows)}) AS g(x)`.execute(db);
    await sql`ANALYZE transactions`.execute(db);
  } else {
    await sql`INSERT INTO transactions ${columns}
      WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${sql.lit(o.rows)})
      ${select('x', `printf('0x%064x', x)`, 'x / 4')}
      FROM c`.execute(db);
    await sql`ANALYZE`.execute(db);
  }
}

/** A connection of this process to a running service's database (the benches' seeds and contrast queries). */
export function openServiceStore(service: ServiceProcess): Promise<Store> {
  const config = loadConfig({
    NODE_ENV: 'production',
    APP_KEY: service.appKey,
    DATA_DIR: service.database.dataDir,
    DEVNET: 'off',
    ...(service.database.databaseUrl ? { DATABASE_URL: service.database.databaseUrl } : {}),
  });
  return openStore(config, createLogger('warn'));
}

/**
 * `rows` transfers in a wallet of a running service (made through its API, with its native
 * token), written through a connection of this process: every 4th row of a TUSD token added
 * here. Returns the seconds the insert took.
 */
export async function seedServiceWallet(service: ServiceProcess, walletId: number, rows: number): Promise<number> {
  const store = await openServiceStore(service);
  try {
    const now = Date.now();
    const eth = await store.db
      .selectFrom('wallet_tokens')
      .select('id')
      .where('wallet_id', '=', walletId)
      .where('is_native', '=', 1)
      .executeTakeFirstOrThrow();
    const tusd = await store.db
      .insertInto('wallet_tokens')
      .values({
        wallet_id: walletId,
        name: 'TUSD',
        symbol: 'TUSD',
        decimals: 6,
        contract: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
        is_native: 0,
        is_active: 1,
        is_testnet: 1,
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const t0 = Date.now();
    await seedTransactions(store.db, store.driver, { walletId, tokenId: eth.id, tokenEvery4th: tusd.id, rows, nowMs: now });
    return (Date.now() - t0) / 1000;
  } finally {
    await store.destroy();
  }
}
