#!/usr/bin/env node
// Adds the platform-specific optional packages that npm leaves out of package-lock.json when
// the registry it uses serves only this platform's binaries (npm/cli#4828, #8320): `npm ci`
// then refuses the lock file on a clean clone ("Missing: ... from lock file"). For each
// optional dependency of a locked package that has no entry, an entry is written with its
// version and the os/cpu/libc read from the package name, marked optional, so each platform
// skips the others' binaries. Where the registry has the package, its integrity is recorded
// too. Run after `npm install` changes the lock file: `node scripts/complete-lockfile.mjs`
// (or give another lock file's path as the argument). Entries are written in npm's own order
// (keys compared with the 'en' collator, as @npmcli/arborist does), so a later `npm install`
// leaves the file as it is.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const OS = ['android', 'darwin', 'freebsd', 'linux', 'openbsd', 'openharmony', 'win32', 'netbsd', 'sunos', 'aix'];
const CPU = {
  amd64: 'x64',
  x64: 'x64',
  arm64: 'arm64',
  arm: 'arm',
  ia32: 'ia32',
  loong64: 'loong64',
  ppc64: 'ppc64',
  riscv64: 'riscv64',
  s390x: 's390x',
  mips64el: 'mips64el',
};

function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((p) => OS.includes(p));
  const cpu = parts.map((p) => CPU[p]).find(Boolean);
  const libc =
    parts.includes('musl') || parts.includes('musleabihf')
      ? 'musl'
      : parts.includes('gnu') || parts.includes('gnueabihf')
        ? 'glibc'
        : undefined;
  return { os, cpu, libc };
}

function registryMeta(name, version) {
  try {
    const out = execFileSync('npm', ['view', `${name}@${version}`, '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const m = JSON.parse(out);
    return Array.isArray(m) ? m[m.length - 1] : m;
  } catch {
    return null;
  }
}

const file = process.argv[2] ? pathToFileURL(resolve(process.argv[2])) : new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const pkgs = lock.packages;
let added = 0;
for (const [path, entry] of Object.entries(pkgs)) {
  if (path === '' || !entry.optionalDependencies) continue;
  for (const [name, version] of Object.entries(entry.optionalDependencies)) {
    if (pkgs[`node_modules/${name}`] || pkgs[`${path}/node_modules/${name}`]) continue;
    const meta = registryMeta(name, version);
    const guess = platformOf(name);
    const os = meta?.os ?? (guess.os ? [guess.os] : undefined);
    const cpu = meta?.cpu ?? (guess.cpu ? [guess.cpu] : undefined);
    const libc = meta?.libc ?? (guess.libc ? [guess.libc] : undefined);
    if (!os && !cpu) {
      console.warn(`complete-lockfile: cannot tell the platform of ${name}; left out`);
      continue;
    }
    const next = { version: meta?.version ?? version };
    if (meta?.dist?.integrity) next.integrity = meta.dist.integrity;
    if (cpu) next.cpu = cpu;
    if (entry.dev) next.dev = true;
    if (libc) next.libc = libc;
    next.optional = true;
    if (os) next.os = os;
    pkgs[`node_modules/${name}`] = next;
    added++;
  }
}
// npm's order: the root entry ('') first, then every path by the 'en' collator (so
// `node_modules/@scope/x` sorts by letters, not by code unit as `<` would).
const npmOrder = new Intl.Collator('en').compare;
lock.packages = Object.fromEntries(Object.entries(pkgs).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : npmOrder(a, b))));
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: added ${added} platform packages`);
