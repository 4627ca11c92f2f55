/**
 * Several RPC endpoints per network (docs/operating.md, "Several RPC providers"): `networks.rpc_urls`, the
 * ordered list as a JSON array of strings, or NULL for a network with `rpc_url` alone.
 *
 * Additive (docs/operating.md, "Upgrades"): `rpc_url` stays and is always the list's first
 * element, so an instance of the previous version keeps working with the first endpoint. A
 * previous version that updates a network writes `rpc_url` and leaves `rpc_urls` as it was: a
 * list whose first element is not `rpc_url` is then ignored (src/chain/endpoints.ts,
 * `endpointUrls`), and the network runs on `rpc_url` alone until it is registered again.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, _d: SqlDialect): Promise<void> {
  await db.schema.alterTable('networks').addColumn('rpc_urls', 'text').execute();
}
