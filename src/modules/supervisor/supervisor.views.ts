import type { NetworkRow } from '../../db/types.js';

/** A network's health: its node's head (null when the node did not answer) against the watcher's cursor. */
export function networkHealthView(n: NetworkRow, head: number | null, synced: number | null) {
  return {
    id: n.id,
    name: n.name,
    chain_id: n.chain_id,
    rpc_ok: head !== null,
    head_block: head,
    synced_block: synced,
    lag_blocks: head !== null && synced !== null ? Math.max(0, head - synced) : null,
  };
}
