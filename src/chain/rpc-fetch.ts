/**
 * The `fetchFn` every chain client's HTTP transport uses: undici's `request` over one keep-alive
 * agent, instead of the global `fetch`. Both are undici underneath, but `fetch` builds a WHATWG
 * Request, Response, Headers and a web ReadableStream for every JSON-RPC call; on transfer creation
 * (six node calls each) that was a large share of the process's busy time (BENCHMARKS.md, "Transfer
 * creation"). The answer is read whole, capped at `MAX_RPC_BODY_BYTES` (viem's own default cap,
 * which the transport's check can then skip).
 */
import { Agent, request } from 'undici';

/** The largest JSON-RPC answer read (viem's default `maxResponseBodySize`). */
export const MAX_RPC_BODY_BYTES = 10_485_760;

const agent = new Agent({ keepAliveTimeout: 10_000, connections: 64 });

/** The part of a fetch Response viem's HTTP client reads. */
class RpcResponse {
  readonly body = null;
  readonly statusText = '';
  constructor(
    readonly status: number,
    private readonly raw: Record<string, string | string[] | undefined>,
    private readonly content: string,
  ) {}

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  get headers(): { get(name: string): string | null } {
    const raw = this.raw;
    return {
      get(name: string) {
        const v = raw[name.toLowerCase()];
        return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
      },
    };
  }

  text(): Promise<string> {
    return Promise.resolve(this.content);
  }

  json(): Promise<unknown> {
    return Promise.resolve(JSON.parse(this.content));
  }
}

async function readCapped(body: AsyncIterable<Buffer>, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) throw new Error(`JSON-RPC answer larger than ${max} bytes`);
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8');
}

interface FetchInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal | null;
}

/** A `fetch` for viem's `http` transport (`fetchFn`): POST a JSON-RPC body, read the answer. */
export async function rpcFetch(url: string | URL, init: FetchInit = {}): Promise<RpcResponse> {
  const res = await request(url, {
    method: (init.method ?? 'POST') as 'POST',
    headers: init.headers,
    body: init.body,
    signal: init.signal ?? undefined,
    dispatcher: agent,
  });
  const content = await readCapped(res.body, MAX_RPC_BODY_BYTES).catch(async (err: unknown) => {
    res.body.destroy();
    throw err;
  });
  return new RpcResponse(res.statusCode, res.headers, content);
}
