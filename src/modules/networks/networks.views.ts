import type { EndpointHealth } from '../../chain/endpoints.js';
import type { NetworkRow } from '../../db/types.js';
import { redactUrl } from '../../lib/redact.js';

/**
 * A network as the API shows it: the RPC URL as its origin only (its path or query may hold an
 * API key), and every endpoint's health as this process knows it (`rpc_endpoints`, origins only).
 */
export function networkView(n: NetworkRow, endpoints: readonly EndpointHealth[]) {
  return {
    id: n.id,
    name: n.name,
    rpc_url: redactUrl(n.rpc_url),
    rpc_endpoints: endpoints.map((e) => ({ ...e })),
    chain_id: n.chain_id,
    currency_symbol: n.currency_symbol,
    block_explorer: n.block_explorer,
    preset: n.preset,
    sweeper: n.sweeper,
  };
}
