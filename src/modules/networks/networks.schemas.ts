import { Type } from '@sinclair/typebox';

export const NetworkSchema = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  rpc_url: Type.String(),
  chain_id: Type.Integer(),
  currency_symbol: Type.String(),
  block_explorer: Type.String(),
});
