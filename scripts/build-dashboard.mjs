/**
 * Builds the dashboard (dashboard/src, Preact + openapi-fetch, TypeScript) into
 * dashboard/dist/app.js and app.css with esbuild: one script and one stylesheet, served by the
 * service from its own origin (src/modules/dashboard). Runs before `npm start` (prestart) and
 * before the tests (vitest's global setup); a build takes well under a second.
 */
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'dashboard');

export async function buildDashboard() {
  await build({
    entryPoints: { app: join(root, 'src', 'main.tsx') },
    outdir: join(root, 'dist'),
    bundle: true,
    format: 'esm',
    target: 'es2020',
    minify: true,
    sourcemap: false,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    logLevel: 'warning',
    legalComments: 'none',
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildDashboard();
  process.stdout.write(`dashboard built into ${join(root, 'dist')}\n`);
}
