#!/usr/bin/env node
// Lists every function, method, accessor, constructor and arrow function in src/** longer than
// MAX_LINES lines, counted from the line of its signature to the line of its closing brace, and
// exits 1 if there is any (STYLE.md: functions stay around 60 lines). Left out: tests, the
// migrations (one long schema description each), route files (route tables) and src/config.ts.
// Usage: node scripts/function-lengths.mjs [max-lines]
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const MAX_LINES = Number(process.argv[2] ?? 60);
const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');

function excluded(path) {
  return (
    path.endsWith('.test.ts') ||
    path.endsWith('.d.ts') ||
    path.endsWith('.routes.ts') ||
    path === 'src/config.ts' ||
    path.startsWith('src/db/migrations/')
  );
}

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(full);
    else if (entry.name.endsWith('.ts') && !excluded(relative(root, full).split('\\').join('/'))) yield full;
  }
}

function isFunctionLike(node) {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

/** A readable name: the declaration's own, or the variable, property or call it is given to. */
function nameOf(node, sf) {
  if (node.name) return node.name.getText(sf);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText(sf);
  if (ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText(sf).slice(0, 40)})`;
  return '(anonymous)';
}

const long = [];
for (const file of sourceFiles(src)) {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const visit = (node) => {
    // Overload signatures and abstract methods have no body: nothing to measure.
    if (isFunctionLike(node) && node.body) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.end).line;
      const lines = last - first + 1;
      if (lines > MAX_LINES) long.push({ where: `${relative(root, file)}:${first + 1}`, name: nameOf(node, sf), lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

long.sort((a, b) => b.lines - a.lines);
for (const f of long) console.log(`${String(f.lines).padStart(4)} lines  ${f.where}  ${f.name}`);
if (long.length > 0) {
  console.error(`check:functions: ${long.length} function(s) over ${MAX_LINES} lines`);
  process.exit(1);
}
console.log(`check:functions: no function over ${MAX_LINES} lines`);
