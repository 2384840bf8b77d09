// When `npm run build` may skip work: the bundler (scripts/bundle.mjs) and the compile (scripts/compile.mjs). Tested in test/launcher.test.ts.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * Whether every bundle in `outputs` is newer than everything the bundles are made of: the compiled
 * sources (`<root>/dist/src`'s .js files, which `tsc -b` leaves alone when nothing changed), the
 * bundling script (`script`), package.json and the installed packages (npm rewrites
 * node_modules/.package-lock.json at every install). A missing output: false.
 */
export function bundleUpToDate({ root, outputs, script }) {
  const mtime = (file) => statSync(file).mtimeMs;
  let oldestOutput = Infinity;
  try {
    for (const f of outputs) oldestOutput = Math.min(oldestOutput, mtime(f));
  } catch {
    return false;
  }
  let newestInput = -Infinity;
  for (const f of [script, path.join(root, 'package.json'), path.join(root, 'node_modules', '.package-lock.json')]) {
    try {
      newestInput = Math.max(newestInput, mtime(f));
    } catch {
      /* not there (packages installed otherwise than by npm): the others decide */
    }
  }
  const walk = (dir) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, d.name);
      if (d.isDirectory()) walk(full);
      else if (d.name.endsWith('.js')) newestInput = Math.max(newestInput, mtime(full));
    }
  };
  walk(path.join(root, 'dist', 'src'));
  return newestInput < oldestOutput;
}

/**
 * Whether `tsc -b` must compile from scratch: the installed packages (node_modules/.package-lock.json,
 * rewritten by npm at every install) are newer than its state (`<root>/dist/.tsbuildinfo`). `tsc -b`
 * decides it is up to date from the project's own files only, so a dependency's new types would
 * otherwise not be checked until a source changed. No state yet, or no such file: false (a first
 * build compiles everything anyway).
 */
export function compileAfresh({ root }) {
  try {
    return statSync(path.join(root, 'node_modules', '.package-lock.json')).mtimeMs > statSync(path.join(root, 'dist', '.tsbuildinfo')).mtimeMs;
  } catch {
    return false;
  }
}
