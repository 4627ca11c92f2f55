import { Type } from '@sinclair/typebox';
import { EndpointSchema } from '../networks/networks.schemas.js';

const Nullable = <T extends ReturnType<typeof Type.Integer>>(t: T) => Type.Union([t, Type.Null()]);
const WorkerState = Type.Union([Type.Literal('running'), Type.Literal('stopped'), Type.Literal('disabled')]);

export const SupervisorSchema = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  version: Type.String(),
  uptime_s: Type.Integer(),
  database: Type.Object({ ok: Type.Boolean(), driver: Type.String(), latency_ms: Type.Number() }),
  networks: Type.Array(
    Type.Object({
      id: Type.Integer(),
      name: Type.String(),
      chain_id: Type.Integer(),
      rpc_ok: Type.Boolean(),
      head_block: Nullable(Type.Integer()),
      synced_block: Nullable(Type.Integer()),
      lag_blocks: Nullable(Type.Integer()),
      traces_pending: Type.Integer({
        description:
          'Blocks recorded while no endpoint could give their call traces: their internal payments and receipts are read again later, never taken as none.',
      }),
      endpoints: Type.Array(EndpointSchema),
    }),
  ),
  webhooks: Type.Object({
    pending: Type.Integer(),
    retrying: Type.Integer(),
    failed: Type.Integer(),
    delivered_last_hour: Type.Integer(),
  }),
  transactions: Type.Object({ pending: Type.Integer(), stuck: Type.Integer({ description: 'Pending longer than TX_STUCK_AFTER_S' }) }),
  workers: Type.Object({ watcher: WorkerState, deliveries: WorkerState, charges: WorkerState }),
});
