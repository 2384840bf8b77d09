#!/usr/bin/env node
// Bundles the compiled CLI (dist/src/cli/main.js and everything it imports, node_modules included)
// into one ESM file beside it, so a start parses one file instead of resolving and loading ~400
// modules: the dashboard's first frame comes ~0.3 s sooner. bin/loop-dash.js runs the bundle when
// it is present and newer than main.js, else main.js. Kept in dist/src/cli/ so the
// `import.meta.url`-relative paths there (package.json, the extension entry) stay the same.
import { statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'dist', 'src', 'cli', 'main.js');
const outfile = path.join(root, 'dist', 'src', 'cli', 'main.bundle.mjs');

let esbuild;
try {
  esbuild = await import('esbuild');
} catch {
  console.error('bundle: esbuild is not installed; bin/loop-dash.js will run the unbundled dist/src/cli/main.js');
  process.exit(0);
}

/** Ink loads react-devtools-core only under DEV=true; it is not installed: a stub stands in. */
const stubDevtools = {
  name: 'stub-react-devtools-core',
  setup(build) {
    build.onResolve({ filter: /^react-devtools-core$/ }, () => ({ path: 'react-devtools-core', namespace: 'stub' }));
    build.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({ contents: 'export default { initialize() {}, connectToDevTools() {} };', loader: 'js' }));
  },
};

try {
  statSync(entry);
} catch {
  console.error(`bundle: ${entry} is missing; run tsc first`);
  process.exit(1);
}

await esbuild.build({
  entryPoints: [entry],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // CommonJS dependencies (react, …) call require() for Node built-ins.
  banner: { js: "import { createRequire as __ldCreateRequire } from 'node:module'; const require = __ldCreateRequire(import.meta.url);" },
  plugins: [stubDevtools],
  define: { 'process.env.NODE_ENV': '"production"' },
  legalComments: 'none',
  // Whitespace and syntax only: names stay readable in a stack trace.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  logLevel: 'warning',
});
