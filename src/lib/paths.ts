/**
 * The package's root folder (the one holding package.json), found from this module's own
 * location by walking up. The same code runs from src/ (tsx) and bundled into build/ (esbuild),
 * so a path written relative to the module would be right in one and wrong in the other.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function packageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export const PACKAGE_ROOT: string = packageRoot(dirname(fileURLToPath(import.meta.url)));
