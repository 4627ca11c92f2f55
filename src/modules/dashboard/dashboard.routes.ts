/**
 * The dashboard (docs/architecture.md, "The dashboard: its stack, and why"), public HTML outside
 * the authenticated scope: everything it shows comes through the public API with the login token
 * the page keeps in the tab's session storage.
 *
 * GET /dashboard                  the page (one <div> the script renders into)
 * GET /dashboard/assets/{file}    its built script and stylesheet (dashboard/dist, `npm run build:dashboard`)
 *
 * Strict CSP: only this origin's script and stylesheet files, requests to this origin only, no
 * inline code, no frames, no forms posting elsewhere.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../lib/paths.js';
import type { App } from '../../http/types.js';
import { pagePolicy } from '../checkout/checkout.assets.js';
import { Errors } from '../../errors.js';

const DIST = join(PACKAGE_ROOT, 'dashboard', 'dist');
/** The built files and their types (a Map: a name from the path such as `toString` is no asset). */
const ASSETS = new Map([
  ['app.js', 'text/javascript; charset=utf-8'],
  ['app.css', 'text/css; charset=utf-8'],
]);

/** Only this origin's files: no inline code at all. */
export const DASHBOARD_CSP = pagePolicy({ scripts: ["'self'"], styles: ["'self'"] });

const HEADERS = {
  'content-security-policy': DASHBOARD_CSP,
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>Wallet service dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/assets/app.css">
</head>
<body>
<div id="app"><p class="state boot">Loading the dashboard…</p></div>
<noscript>The dashboard needs JavaScript.</noscript>
<script type="module" src="/dashboard/assets/app.js"></script>
</body>
</html>
`;

/** A built asset, read once; null when the dashboard was not built. */
function asset(name: string): Buffer | null {
  try {
    return readFileSync(join(DIST, name));
  } catch {
    return null;
  }
}

export async function dashboardRoutes(app: App): Promise<void> {
  const built = new Map<string, Buffer | null>();
  // The service's root is where a person who typed its address meant to go: the dashboard.
  app.get('/', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/dashboard'));
  app.get('/dashboard', { schema: { hide: true } }, async (_req, reply) => {
    reply.headers({ ...HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    return reply.send(PAGE);
  });
  app.get('/dashboard/assets/:file', { schema: { hide: true } }, async (req, reply) => {
    const file = (req.params as { file: string }).file;
    const type = ASSETS.get(file);
    if (!type) throw Errors.routeNotFound();
    if (!built.has(file) || built.get(file) === null) built.set(file, asset(file));
    const body = built.get(file);
    if (!body) throw Errors.dashboardNotBuilt();
    reply.headers({ ...HEADERS, 'content-type': type, 'cache-control': 'no-cache' });
    return reply.send(body);
  });
}
