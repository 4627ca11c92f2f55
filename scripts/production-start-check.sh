#!/usr/bin/env bash
# The production install, as docs/operating.md gives it: `npm ci --omit=optional --omit=dev` in a
# copy of this tree prints no npm warning, fetches no anvil, and `NODE_ENV=production npm start`
# (which builds the dashboard first) serves the API document and the dashboard, with no devnet.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
dir="$(mktemp -d /tmp/prod-start.XXXXXX)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -- -"$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
git -C "$src" ls-files -z | (cd "$src" && xargs -0 tar cf -) | (cd "$dir" && tar xf -)
cd "$dir"
npm ci --omit=optional --omit=dev --no-audit --no-fund > install.log 2>&1 || { cat install.log; echo "FATAL: production install failed" >&2; exit 1; }
if grep -qi "npm warn" install.log; then cat install.log; echo "FATAL: the production install printed warnings" >&2; exit 1; fi
if [ -e node_modules/@foundry-rs ]; then echo "FATAL: the production install fetched @foundry-rs (anvil)" >&2; exit 1; fi
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
mkdir -p data
set -m
NODE_ENV=production APP_KEY="$(node -e "console.log(require('crypto').randomBytes(32).toString('base64'))")" \
  DATA_DIR="$dir/data" HOST=127.0.0.1 PORT="$port" npm start > start.log 2>&1 &
pid=$!
set +m
ok=""
for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$port/api/openapi.json" -o /dev/null 2>/dev/null; then ok=1; break; fi
  if ! kill -0 "$pid" 2>/dev/null; then break; fi
  sleep 0.5
done
if [ -z "$ok" ]; then cat start.log; echo "FATAL: NODE_ENV=production npm start did not serve /api/openapi.json" >&2; exit 1; fi
curl -fsS "http://127.0.0.1:$port/dashboard" -o /dev/null || { cat start.log; echo "FATAL: /dashboard not served" >&2; exit 1; }
js=$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/dashboard/assets/app.js")
if [ "$js" != "200" ]; then cat start.log; echo "FATAL: /dashboard/assets/app.js answered $js" >&2; exit 1; fi
echo "production install and start: ok ($(grep -c . install.log) lines of install output, no warning, no anvil; API document and dashboard served)"
