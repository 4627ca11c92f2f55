import { Type } from '@sinclair/typebox';
import { component } from '../../http/components.js';

const Nullable = <T extends ReturnType<typeof Type.Integer> | ReturnType<typeof Type.Number>>(t: T) => Type.Union([t, Type.Null()]);

/** One RPC endpoint's health as this process knows it (docs/operating.md, "Several RPC providers"). */
export const EndpointSchema = Type.Object({
  url: Type.String({ description: 'The origin only (scheme, host and port): a path or query may hold an API key.' }),
  ok: Type.Boolean({ description: 'Its last call or head read succeeded and it is not rested after a rate limit.' }),
  head_block: Nullable(Type.Integer()),
  lag_blocks: Nullable(
    Type.Integer({
      description:
        'Blocks behind the best head (of the endpoints that are up or were read in the last minute); over RPC_MAX_LAG_BLOCKS it serves no reads.',
    }),
  ),
  latency_ms: Nullable(Type.Number()),
  error: Type.Union([Type.String(), Type.Null()], {
    description:
      'Why it is not ok, or why its last call failed: "HTTP 503", "HTTP 429: rested 2 s", "JSON-RPC -32005 rate limited: rested 1 s", "timed out", "connection refused"… (never a URL); null when its last call succeeded.',
    examples: ['HTTP 429: rested 2 s'],
  }),
  traces: Type.Boolean({
    description:
      'It offers call traces (debug_traceBlockByHash): false when its last trace call was refused for the method (not asked again for a while, 1 s doubling to 10 min; meanwhile traces are asked of the other endpoints), true again once it answers one.',
  }),
});

export const NetworkSchema = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  rpc_url: Type.String(),
  rpc_endpoints: Type.Array(EndpointSchema),
  chain_id: Type.Integer(),
  currency_symbol: Type.String(),
  block_explorer: Type.String(),
  preset: Type.Union([Type.String(), Type.Null()], {
    description: 'The preset it was registered from (`network:add --preset`), or null. Its tokens can be added by symbol.',
    examples: ['ethereum'],
  }),
  sweeper: Type.Union([Type.String(), Type.Null()], {
    description:
      'The address of the Sweeper contract that keyless deposit addresses and batched sweeps and payouts use on this network, or null while none is deployed (`npm run cli -- network:deploy-sweeper`; the local devnet gets one at start; a preset names none).',
    examples: [null],
  }),
});

export const NetworkRef = component('Network', NetworkSchema);
