/**
 * `npm run sim -- --seed N --seconds S [--db sqlite|postgres] [--endpoints N] [--faults
 * kill,reorg,rpc,receiver,behind,refuse,glitch,no-trace] [--quiesce S]`: one seeded fault
 * simulation (docs/simulation.md). Prints a summary; exits 1 on any violation, 2 on a usage error
 * or a run that could not finish. Several endpoints (default 3) get every fault kind by default;
 * one endpoint the kinds of the runs before several (kill, reorg, rpc, receiver).
 */
import { DEFAULT_ENDPOINTS, FAULT_KINDS, ONE_ENDPOINT_FAULT_KINDS, runSim, type FaultKind } from './run.js';
import { summary } from './summary.js';
// @ts-expect-error: a plain ESM build script, no declaration file
import { buildEntries } from '../scripts/build-entries.mjs';

const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

function parseArgs(argv: string[]): {
  seed: number;
  seconds: number;
  postgresUrl: string | null;
  faults: Set<FaultKind>;
  endpoints: number;
  quiesceS: number;
} {
  const args = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) throw new Error(`unexpected argument "${a}"`);
    const [k, inline] = a.slice(2).split('=', 2);
    args.set(k!, inline ?? argv[++i] ?? '');
  }
  for (const k of args.keys())
    if (!['seed', 'seconds', 'db', 'faults', 'quiesce', 'endpoints'].includes(k)) throw new Error(`unknown option --${k}`);
  const int = (k: string, d: number) => {
    const v = Number(args.get(k) ?? d);
    if (!Number.isInteger(v) || v < 0) throw new Error(`--${k} must be a whole number`);
    return v;
  };
  const db = args.get('db') ?? 'sqlite';
  if (db !== 'sqlite' && db !== 'postgres') throw new Error('--db must be sqlite or postgres');
  const endpoints = int('endpoints', DEFAULT_ENDPOINTS);
  if (endpoints < 1 || endpoints > 9) throw new Error('--endpoints must be 1 to 9');
  const faults = (args.get('faults') ?? (endpoints > 1 ? FAULT_KINDS : ONE_ENDPOINT_FAULT_KINDS).join(','))
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean);
  for (const f of faults)
    if (!(FAULT_KINDS as readonly string[]).includes(f)) throw new Error(`--faults: unknown fault "${f}" (${FAULT_KINDS.join(', ')})`);
  // One endpoint without the trace API, and no other to ask, is a network without traces (not a fault).
  if (faults.includes('no-trace') && endpoints < 2) throw new Error('--faults no-trace needs --endpoints 2 or more');
  return {
    seed: int('seed', Math.floor(Math.random() * 1_000_000)),
    seconds: int('seconds', 60),
    postgresUrl: db === 'postgres' ? (process.env.DATABASE_URL ?? DEFAULT_PG_URL) : null,
    faults: new Set(faults as FaultKind[]),
    endpoints,
    quiesceS: int('quiesce', 240),
  };
}

async function main(): Promise<void> {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`sim: ${(e as Error).message}\n`);
    process.exit(2);
  }
  // The service runs from its bundle (sim/service.ts), built from this checkout's source.
  await (buildEntries as () => Promise<void>)();
  const r = await runSim({ ...opts, log: (l) => process.stdout.write(`${new Date().toISOString()} ${l}\n`) });
  process.stdout.write(`${summary(r)}\n`);
  process.exit(r.violations.length > 0 ? 1 : 0);
}

main().catch((e) => {
  process.stderr.write(`sim: the run could not finish: ${(e as Error).stack ?? e}\n`);
  process.exit(2);
});
