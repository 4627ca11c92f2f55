/** The run's summary: operations by kind, faults injected by kind, checks not run, violations. */
import type { SimResult } from './run.js';

export function summary(r: SimResult): string {
  const lines = [`== simulation seed ${r.seed} ==`, 'operations:'];
  for (const [k, v] of Object.entries(r.ops).sort()) lines.push(`  ${k}: ${v}`);
  lines.push('faults injected:');
  for (const [k, v] of Object.entries(r.faults)) lines.push(`  ${k}: ${v}`);
  if (Object.keys(r.serverErrors).length > 0) {
    lines.push('5xx answers seen by the workload (retried with the same key):');
    for (const [k, v] of Object.entries(r.serverErrors)) lines.push(`  ${k}: ${v}`);
  }
  for (const n of r.notRun) lines.push(`!!! NOT RUN: ${n}`);
  for (const n of r.notes) lines.push(`note: ${n}`);
  lines.push(`violations: ${r.violations.length}`);
  const byCheck = new Map<string, number>();
  for (const v of r.violations) byCheck.set(v.check, (byCheck.get(v.check) ?? 0) + 1);
  if (byCheck.size > 1) lines.push(`  by check: ${[...byCheck].map(([k, n]) => `${k} ${n}`).join(', ')}`);
  for (const v of r.violations) lines.push(`  [seed ${r.seed}] ${v.check}: ${v.object}: ${v.detail}`);
  lines.push(`service log: ${r.logPath}`);
  return lines.join('\n');
}
