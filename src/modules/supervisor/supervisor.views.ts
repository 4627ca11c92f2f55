import type { EndpointHealth } from '../../chain/endpoints.js';
import type { NetworkRow } from '../../db/types.js';

/**
 * A network's health: its endpoints (origins only), the best head of those that are `ok` (null
 * when none is), and that head against the watcher's cursor. `rpc_ok`: at least one endpoint is ok.
 * `traces_pending`: blocks recorded whose call traces no endpoint could give yet (read again later).
 */
export function networkHealthView(n: NetworkRow, endpoints: readonly EndpointHealth[], synced: number | null, tracesPending: number) {
  const ok = endpoints.filter((e) => e.ok && e.head_block !== null);
  const head = ok.length > 0 ? Math.max(...ok.map((e) => e.head_block!)) : null;
  return {
    id: n.id,
    name: n.name,
    chain_id: n.chain_id,
    rpc_ok: endpoints.some((e) => e.ok),
    head_block: head,
    synced_block: synced,
    lag_blocks: head !== null && synced !== null ? Math.max(0, head - synced) : null,
    traces_pending: tracesPending,
    endpoints: endpoints.map((e) => ({ ...e })),
  };
}
