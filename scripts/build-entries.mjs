/**
 * Bundles the service's entry points (src/server.ts, src/cli.ts) into build/server.mjs and
 * build/cli.mjs with esbuild: the same source as one module each, the npm packages left as
 * imports. The tests and the simulation start the service and the CLI from these bundles: a
 * process started through tsx's loader spends about two seconds of CPU loading the service's
 * ~400 modules one by one, and the suites start hundreds of processes.
 */
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export async function buildEntries() {
  await build({
    entryPoints: { server: join(root, 'src', 'server.ts'), cli: join(root, 'src', 'cli.ts') },
    outdir: join(root, 'build'),
    outExtension: { '.js': '.mjs' },
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    keepNames: true,
    logLevel: 'warning',
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildEntries();
  process.stdout.write(`entry points built into ${join(root, 'build')}\n`);
}
