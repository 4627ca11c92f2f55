/**
 * A JSON-RPC proxy in front of anvil that makes it look like an OP-stack chain's receipts: every
 * receipt it passes on (eth_getTransactionReceipt, eth_getBlockReceipts; batches too) carries an
 * `l1Fee` (hex wei), as OP-stack nodes report the L1 data fee. (anvil charges no such fee, so a
 * reconciliation that counts it shows exactly that much as a difference.)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Call = { method?: string };
type Reply = { result?: unknown };

export class L1FeeProxy {
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(target: string, l1FeeWei: bigint): Promise<L1FeeProxy> {
    const fee = `0x${l1FeeWei.toString(16)}`;
    const server = createServer((req, res) => void handle(req, res, target, fee));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    return new L1FeeProxy(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

async function handle(req: IncomingMessage, res: ServerResponse, target: string, fee: string): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks).toString('utf8');
  try {
    const up = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await up.text();
    const calls = JSON.parse(body) as Call | Call[];
    const replies = JSON.parse(text) as Reply | Reply[];
    const patched =
      Array.isArray(calls) && Array.isArray(replies)
        ? replies.map((r, i) => patch(calls[i]!, r, fee))
        : patch(calls as Call, replies as Reply, fee);
    res.writeHead(up.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(patched));
  } catch {
    req.socket.destroy();
  }
}

function patch(call: Call, reply: Reply, fee: string): Reply {
  const withFee = (r: unknown) => (r && typeof r === 'object' ? { ...r, l1Fee: fee } : r);
  if (call.method === 'eth_getTransactionReceipt') return { ...reply, result: withFee(reply.result) };
  if (call.method === 'eth_getBlockReceipts' && Array.isArray(reply.result)) return { ...reply, result: reply.result.map(withFee) };
  return reply;
}
