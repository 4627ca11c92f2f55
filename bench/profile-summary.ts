/**
 * Summarises a V8 CPU profile (`node --cpu-prof`): the functions with the most self time, as a
 * share of the busy time (idle, program and GC samples are counted apart), and the same grouped
 * by package (kysely, fastify, pino, better-sqlite3, node internals, this project).
 *
 *   npx tsx bench/profile-summary.ts <file.cpuprofile> [--last-s 11] [--top 25]
 *
 * `--last-s N` keeps only the samples of the profile's last N seconds: `bench/balance.ts` measures
 * the balance route last, so with `--db sqlite` the last ~12 s are the balance route alone.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  endTime: number;
}

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'last-s': { type: 'string' }, top: { type: 'string', default: '25' } },
});
if (positionals.length !== 1) throw new Error('usage: profile-summary.ts <file.cpuprofile> [--last-s N] [--top N]');
const profile = JSON.parse(readFileSync(positionals[0]!, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));

/** The package a script belongs to, for the grouped view. */
function groupOf(url: string, name: string): string {
  if (name === '(garbage collector)') return 'GC';
  if (url === '') return name.startsWith('(') ? name : 'native';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  if (url.startsWith('node:')) return 'node internals';
  if (url.includes('/src/')) return 'service (src/)';
  if (url.includes('/bench/')) return 'bench';
  return url;
}

// Sample timestamps: the profile's end minus the remaining deltas.
const times: number[] = [];
let t = profile.endTime;
for (let i = profile.samples.length - 1; i >= 0; i--) {
  times[i] = t;
  t -= profile.timeDeltas[i]!;
}
const fromUs = flags['last-s'] ? profile.endTime - Number(flags['last-s']) * 1e6 : -Infinity;

const selfUs = new Map<string, number>();
const groupUs = new Map<string, number>();
let busyUs = 0;
let idleUs = 0;
for (let i = 0; i < profile.samples.length; i++) {
  if (times[i]! < fromUs) continue;
  const dt = profile.timeDeltas[i + 1] ?? 0;
  const { functionName, url, lineNumber } = byId.get(profile.samples[i]!)!.callFrame;
  if (functionName === '(idle)') {
    idleUs += dt;
    continue;
  }
  busyUs += dt;
  const file = url.replace(/^.*node_modules\//, '').replace(/^.*\/(src|bench)\//, '$1/');
  const key = `${functionName || '(anonymous)'}  ${file}${url ? `:${lineNumber + 1}` : ''}`;
  selfUs.set(key, (selfUs.get(key) ?? 0) + dt);
  const g = groupOf(url, functionName);
  groupUs.set(g, (groupUs.get(g) ?? 0) + dt);
}

const pct = (us: number) => `${((100 * us) / busyUs).toFixed(1)}%`;
const top = Number(flags.top);
process.stdout.write(`busy ${(busyUs / 1e6).toFixed(2)} s, idle ${(idleUs / 1e6).toFixed(2)} s\n\n| Self time | Function |\n|---:|---|\n`);
for (const [k, us] of [...selfUs].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`| ${pct(us)} | \`${k}\` |\n`);
process.stdout.write('\n| Self time | Package |\n|---:|---|\n');
for (const [k, us] of [...groupUs].sort((a, b) => b[1] - a[1]).slice(0, 15)) process.stdout.write(`| ${pct(us)} | ${k} |\n`);
