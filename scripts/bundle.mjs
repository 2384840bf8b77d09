#!/usr/bin/env node
// Bundles the compiled CLI (dist/src/cli/main.js and everything it imports, node_modules included)
// into one ESM file beside it, so a start parses one file instead of resolving and loading ~400
// modules: the dashboard's first frame comes ~0.3 s sooner; and the same again as one CommonJS
// script (main.script.cjs, below), which bin/loop-dash.js compiles with V8's code cache. The bin
// runs a bundle when it is present and newer than main.js, else main.js. Kept in dist/src/cli/ so the
// `import.meta.url`-relative paths there (package.json, the extension entry) stay the same.
import { readdirSync, rmSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleUpToDate } from './build-freshness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'dist', 'src', 'cli', 'main.js');
const outfile = path.join(root, 'dist', 'src', 'cli', 'main.bundle.mjs');
const scriptOutfile = path.join(root, 'dist', 'src', 'cli', 'main.script.cjs');
// The bounds audit's worker thread (src/app/audit-worker.ts), bundled beside the CLI.
const workerEntry = path.join(root, 'dist', 'src', 'app', 'audit-worker.js');
const workerOutfile = path.join(root, 'dist', 'src', 'cli', 'audit-worker.bundle.mjs');
// Built beside the script (below) for the bin, and the start-up's second reader thread.
const cacheDirOutfile = path.join(path.dirname(outfile), 'cache-dir.cjs');
const yogaOutfile = path.join(path.dirname(outfile), 'yoga.cjs');
const readWorkerOutfile = path.join(path.dirname(outfile), 'read-worker.bundle.mjs');

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

/**
 * Yoga's WebAssembly loader takes a data: URL through `fetch` when `fetch` exists: that loads
 * Node's whole HTTP client (undici) at start (~30 ms) only to decode base64. Inside that one
 * module `fetch` is made undefined, so it decodes the bytes directly; everywhere else fetch is
 * untouched.
 */
const yogaWithoutFetch = {
  name: 'yoga-without-fetch',
  setup(build) {
    build.onLoad({ filter: /yoga-layout[\\/]dist[\\/]binaries[\\/]yoga-wasm-base64-esm\.js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      const opening = 'var loadYoga = (() => {';
      const at = source.indexOf(opening);
      // Unknown shape (another yoga version): leave it as it is.
      if (at < 0) return undefined;
      const after = at + opening.length;
      return { contents: `${source.slice(0, after)}\n  var fetch = undefined;${source.slice(after)}`, loader: 'js' };
    });
  },
};

/**
 * zod bundles every locale (~290 KB, 16 % of the bundle, parsed at every start) behind
 * `z.locales`, which loop-dash never uses: its messages are English, the default zod sets from
 * `locales/en.js` directly. The locale index is replaced by English alone.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build) {
    build.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, () => ({ contents: 'export { default as en } from "./en.js";', loader: 'js' }));
  },
};

/**
 * In the script bundle, `yoga-layout` (whose index awaits at its top level, which a script cannot)
 * is what bin/loop-dash.js loaded with `yoga-layout/load` (yoga.cjs, below) before Ink is first
 * imported (src/app/launcher.ts).
 */
const yogaFromLauncher = {
  name: 'yoga-from-launcher',
  setup(build) {
    build.onResolve({ filter: /^yoga-layout$/ }, () => ({ path: 'yoga-layout', namespace: 'launcher-yoga' }));
    build.onLoad({ filter: /.*/, namespace: 'launcher-yoga' }, () => ({
      contents: "const yoga = globalThis[Symbol.for('loop-dash.yoga')]; if (!yoga) throw new Error('loop-dash: yoga-layout was not loaded before Ink'); export default yoga;",
      loader: 'js',
    }));
  },
};

/**
 * Ink's reconciler awaits at its top level, only under DEV=true (React devtools, which are
 * stubbed here anyway, and Ink's package.json for them): in the script bundle those two are left
 * out, as a script cannot await at its top level. An Ink whose reconciler reads otherwise fails
 * the script's build (esbuild names the await), and bin/loop-dash.js then runs the ES module bundle.
 */
const inkWithoutTopLevelAwait = {
  name: 'ink-without-top-level-await',
  setup(build) {
    build.onLoad({ filter: /[\\/]ink[\\/]build[\\/]reconciler\.js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      const contents = source.replace("await import('./devtools.js');", 'void 0;').replace('? await loadPackageJson()', '? { name: undefined, version: undefined }');
      return { contents, loader: 'js' };
    });
  },
};

/**
 * Ink's text libraries build costly things when they load that the dashboard never uses: it draws
 * its frames itself (src/views/terminal-frame.ts), and Ink measures no text then. Each
 * `Intl.Segmenter` (string-width and wrap-ansi's older copy of it, slice-ansi, ansi-tokenize): the
 * process's first loads ICU's break rules, ~21 ms here; and string-width's `/^\p{RGI_Emoji}$/v`
 * (every RGI emoji sequence), ~15 ms to build as esbuild writes it for Node 20
 * (`new RegExp(…, "v")`). All on the main thread while a start reads the home. Each is built at
 * its first use instead: a module-level `const x = <that>;` whose every other mention in the file
 * is a call of the one method used (`x.segment(`, `x.test(`) becomes an object whose method
 * builds it once. Any other shape is left as it is.
 */
const LAZY_BUILDS = [
  { eager: /^const (\w+) = (new Intl\.Segmenter\([^;\n]*\));$/gm, method: 'segment' },
  { eager: /^const (\w+) = (\/[^\n]*\\p\{RGI_Emoji\}[^\n]*\/[a-z]*);$/gm, method: 'test' },
];

/** `source` with those values built when first used; the rest untouched. */
async function withLazyBuilds(source) {
  if (!source.includes('new Intl.Segmenter(') && !source.includes('\\p{RGI_Emoji}')) return source;
  // Mentions are counted in the code without its comments (a comment may name the value).
  const { code } = await esbuild.transform(source, { loader: 'js', minifyWhitespace: true, legalComments: 'none' });
  let out = source;
  for (const { eager, method } of LAZY_BUILDS) {
    out = out.replace(eager, (declaration, name, value) => {
      const mentions = code.match(new RegExp(`(?<![\\w$.])${name}(?![\\w$])(\\.${method}\\()?`, 'g')) ?? [];
      // The declaration itself, then only calls of the method.
      if (mentions.length < 2 || mentions.slice(1).some((m) => !m.endsWith(`.${method}(`))) return declaration;
      return `let ${name}Built; const ${name} = { ${method}: (arg) => (${name}Built ??= ${value}).${method}(arg) };`;
    });
  }
  return out;
}

/** A library's source as bundled. */
async function librarySource(file) {
  return await withLazyBuilds(await readFile(file, 'utf8'));
}

const lazyBuilds = {
  name: 'lazy-builds',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/].*\.(c|m)?js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      const lazy = await withLazyBuilds(source);
      // Unchanged: esbuild reads the file as it would without this plugin.
      return lazy === source ? undefined : { contents: lazy, loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

/**
 * In the script bundle, the libraries' local names are minified (per file: what they export keeps
 * its name), loop-dash's own code is not (its names stay readable in a stack trace). The script
 * and V8's code cache of it are read at every start: ~0.3 MB less of them to read. Not zod: the
 * readers' fast accept path reads its schemas' internals, a check function's name included
 * (src/readers/fast-accept.ts); minified, every checkpoint went to zod (test/launcher.test.ts).
 */
const minifiedLibraries = {
  name: 'minified-libraries',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/].*\.(c|m)?js$/ }, async (args) => {
      if (/[\\/]node_modules[\\/]zod[\\/]/.test(args.path)) return undefined;
      const { code } = await esbuild.transform(await librarySource(args.path), { loader: 'js', minifyIdentifiers: true, sourcefile: args.path });
      return { contents: code, loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

try {
  statSync(entry);
} catch {
  console.error(`bundle: ${entry} is missing; run tsc first`);
  process.exit(1);
}

// `npm start`, `npm run demo` and `npm test` build first; with nothing changed since the last
// bundle (scripts/build-freshness.mjs) the bundles stay as they are, ~3 s sooner — a bundle of
// the same code would have the same bytes anyway. `--force` bundles regardless.
if (!process.argv.includes('--force') && bundleUpToDate({ root, script: fileURLToPath(import.meta.url), outputs: [outfile, workerOutfile, scriptOutfile, cacheDirOutfile, yogaOutfile, readWorkerOutfile] })) {
  console.log('bundle: up to date (the compiled sources, this script and node_modules unchanged since the last bundle)');
  process.exit(0);
}

const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // CommonJS dependencies (react, …) call require() for Node built-ins.
  banner: { js: "import { createRequire as __ldCreateRequire } from 'node:module'; const require = __ldCreateRequire(import.meta.url);" },
  plugins: [stubDevtools, yogaWithoutFetch, zodEnglishOnly, lazyBuilds],
  define: { 'process.env.NODE_ENV': '"production"' },
  legalComments: 'none',
  // Whitespace and syntax only: names stay readable in a stack trace.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  logLevel: 'warning',
};
// Chunks of an earlier build (their names are content hashes) go first.
for (const name of readdirSync(path.dirname(outfile))) if (/^chunk-[A-Z0-9]+\.mjs(\.map)?$/.test(name)) rmSync(path.join(path.dirname(outfile), name));
// Split: what only some commands load (the exporter, the demo generator, Ink's devtools) goes to
// chunks beside the bundle, loaded by `import()` when used; the dashboard's start parses less.
await esbuild.build({ ...common, entryPoints: { 'main.bundle': entry }, outdir: path.dirname(outfile), splitting: true, outExtension: { '.js': '.mjs' }, chunkNames: 'chunk-[hash]' });
await esbuild.build({ ...common, entryPoints: [workerEntry], outfile: workerOutfile });
// The same CLI as one classic script for bin/loop-dash.js to compile with V8's code cache (ESM
// has no code cache on Node 20), yoga-layout left out (yogaFromLauncher); and what the bin loads
// besides, as CommonJS beside it — the cache directory, and yoga-layout's `load` entry (no
// top-level await; its 96 KB of base64 WebAssembly kept out of the script and so of V8's code
// cache, which would copy it): a start then loads no ES module at all. If the script cannot be
// built (a library that awaits at its top level), none is kept and the bin runs the ES module
// bundle.
// A yoga.bundle.mjs of an earlier build (yoga-layout was loaded on its own then) goes.
rmSync(path.join(path.dirname(outfile), 'yoga.bundle.mjs'), { force: true });
rmSync(path.join(path.dirname(outfile), 'yoga.bundle.mjs.map'), { force: true });
try {
  await esbuild.build({
    ...common,
    entryPoints: [entry],
    outfile: scriptOutfile,
    format: 'cjs',
    banner: {},
    plugins: [stubDevtools, zodEnglishOnly, yogaFromLauncher, inkWithoutTopLevelAwait, minifiedLibraries],
    define: { ...common.define, 'import.meta.url': '__ldImportMetaUrl' },
    // No import() in a script compiled by vm (it would need --experimental-vm-modules): require.
    supported: { 'dynamic-import': false },
    logLevel: 'silent',
  });
  await esbuild.build({ ...common, entryPoints: [path.join(root, 'dist', 'src', 'readers', 'cache-dir.js')], outfile: cacheDirOutfile, format: 'cjs', banner: {}, sourcemap: false });
  // Yoga's loader reads `import.meta.url` only to find a .wasm file, which its inline data needs not.
  await esbuild.build({ ...common, entryPoints: ['yoga-layout/load'], outfile: yogaOutfile, format: 'cjs', banner: {}, sourcemap: false, define: { ...common.define, 'import.meta.url': '""' } });
} catch (err) {
  for (const f of [scriptOutfile, `${scriptOutfile}.map`, cacheDirOutfile, yogaOutfile]) rmSync(f, { force: true });
  const why = err?.errors?.length ? err.errors.map((e) => `${e.location ? `${e.location.file}:${e.location.line}: ` : ''}${e.text}`).join('; ') : String(err?.message ?? err);
  console.error(`bundle: no script bundle (${why}); bin/loop-dash.js will run the ES module bundle`);
}
// The start-up's second reader thread (src/readers/read-worker.ts), beside the bundle.
await esbuild.build({ ...common, entryPoints: [path.join(root, 'dist', 'src', 'readers', 'read-worker.js')], outfile: readWorkerOutfile });
