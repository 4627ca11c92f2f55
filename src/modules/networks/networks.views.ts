import type { NetworkRow } from '../../db/types.js';
import { redactUrl } from '../../lib/redact.js';

/** A network as the API shows it: the RPC URL as its origin only (its path or query may hold an API key). */
export function networkView(n: NetworkRow) {
  return {
    id: n.id,
    name: n.name,
    rpc_url: redactUrl(n.rpc_url),
    chain_id: n.chain_id,
    currency_symbol: n.currency_symbol,
    block_explorer: n.block_explorer,
  };
}
