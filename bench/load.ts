/** autocannon in its own process against one or more servers, with their CPU and memory from /proc. */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { profileSignal } from './process.js';

export interface LoadResult {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Mean bytes per answer read by the client (headers and body). */
  bytesPerRequest: number;
  /** CPU time of the server process(es) per request, µs: steadier than req/s on a shared machine. */
  cpuUsPerRequest: number;
  peakRssMiB: number;
}

export interface Target {
  url: string;
  pid: number;
  cpuMs(): number;
  peakRssMiB(): number;
  /** A service process (profiled with BENCH_NODE_OPTIONS; a bare one is not). */
  service?: boolean;
}

export interface LoadOptions {
  connections: number;
  durationS: number;
  warmupS: number;
  headers?: Record<string, string>;
}

const autocannonBin = join(dirname(createRequire(import.meta.url).resolve('autocannon/package.json')), 'autocannon.js');

interface Cannon {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  bytes: number;
  non2xx: number;
  errors: number;
}

function autocannon(url: string, seconds: number, conns: number, headers: Record<string, string>): Promise<Cannon> {
  const args = [autocannonBin, '-c', String(conns), '-d', String(seconds), '-j', '-n'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}=${v}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- execFile's err is an Error; @types/node's ExecException is an Omit<> of ErrnoException, which hides that from the rule
      if (err) return reject(err);
      const r = JSON.parse(stdout) as {
        requests: { average: number; total: number };
        throughput: { total: number };
        latency: { p50: number; p99: number };
        non2xx: number;
        errors: number;
      };
      resolve({
        rps: r.requests.average,
        p50Ms: r.latency.p50,
        p99Ms: r.latency.p99,
        requests: r.requests.total,
        bytes: r.throughput.total,
        non2xx: r.non2xx,
        errors: r.errors,
      });
    });
  });
}

/** autocannon against every target at once (the connections split between them), after a warm-up. */
export async function measure(targets: Target[], o: LoadOptions): Promise<LoadResult> {
  const headers = o.headers ?? {};
  const conns = Math.max(1, Math.floor(o.connections / targets.length));
  if (o.warmupS > 0) await Promise.all(targets.map((t) => autocannon(t.url, o.warmupS, conns, headers)));
  const cpu0 = targets.map((t) => t.cpuMs());
  await profileSignal(targets.filter((t) => t.service));
  const runs = await Promise.all(targets.map((t) => autocannon(t.url, o.durationS, conns, headers)));
  const cpuMs = targets.reduce((s, t, i) => s + t.cpuMs() - cpu0[i]!, 0);
  await profileSignal(targets.filter((t) => t.service));
  for (const r of runs) if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx answers and ${r.errors} errors`);
  const requests = runs.reduce((s, r) => s + r.requests, 0);
  return {
    rps: runs.reduce((s, r) => s + r.rps, 0),
    p50Ms: Math.max(...runs.map((r) => r.p50Ms)),
    p99Ms: Math.max(...runs.map((r) => r.p99Ms)),
    requests,
    bytesPerRequest: runs.reduce((s, r) => s + r.bytes, 0) / requests,
    cpuUsPerRequest: (cpuMs * 1000) / requests,
    peakRssMiB: Math.max(...targets.map((t) => t.peakRssMiB())),
  };
}

/** A service process as a load target. */
export function serviceTarget(s: { base: string; pid: number; cpuMs(): number; peakRssMiB(): number }, path: string): Target {
  return { url: `${s.base}${path}`, pid: s.pid, cpuMs: () => s.cpuMs(), peakRssMiB: () => s.peakRssMiB(), service: true };
}
