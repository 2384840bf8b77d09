#!/bin/sh
':' //; exec node --max-semi-space-size=4 "$0" "$@"
// The two lines above are both shell and JavaScript. Run as a command (the `loop-dash` npm
// installs, `bin/loop-dash.js`), sh execs node with V8's young generation capped at 4 MB a
// semi-space: most of what a start of a big home allocates lives on, and with the default 16 MB
// V8 grows the young generation to 2 × 16 MB that the start touches page by page — ~5 000 more
// page faults at ~10 µs each on the machine measured (paired: a warm start of a big home −71 ms,
// a cold one −28 ms; ~20 MB less RSS; docs/PERFORMANCE.md "A smaller young generation"). Node
// itself skips the `#!` line and reads the second as a string and a comment:
// `node bin/loop-dash.js` runs the same without the flag, and `npm start` / `npm run demo` give
// node the flag themselves (package.json; test/launcher.test.ts keeps the two the same).
// Runs the compiled CLI (no TypeScript loader at start-up). In order of preference:
// - the script bundle (dist/src/cli/main.script.cjs, scripts/bundle.mjs), compiled with V8's code
//   cache of an earlier start, so the functions a start runs are not parsed and compiled again
//   (ES modules have no code cache on Node 20);
// - the one-file ES module bundle beside it (main.bundle.mjs);
// - the compiled modules (dist/src/cli/main.js).
// A bundle is used when it is at least as new as the compiled sources. LOOP_DASH_NO_BUNDLE=1
// forces the modules; LOOP_DASH_BUNDLE=1 a bundle (the benchmark, which builds it first, while
// others may be recompiling the modules); LOOP_DASH_NO_SCRIPT=1 the ES module bundle over the
// script; LOOP_DASH_NO_CODE_CACHE=1 the script without the code cache (neither read nor written).
// This file is CommonJS (bin/package.json): a start that runs the script loads no ES module at all
// (Node's ES module loader costs ~15-20 ms of a start here).
'use strict';
const { existsSync, readdirSync, readFileSync, rmSync, statSync } = require('node:fs');
const { createRequire } = require('node:module');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { setFlagsFromString } = require('node:v8');
const vm = require('node:vm');

const here = (rel) => path.join(__dirname, rel);
const main = here('../dist/src/cli/main.js');
const bundle = here('../dist/src/cli/main.bundle.mjs');
const script = here('../dist/src/cli/main.script.cjs');
// Built beside the script as CommonJS: defaultCacheDir (src/readers/cache-dir.ts) and
// yoga-layout's loader (`yoga-layout/load`), which the script leaves out (scripts/bundle.mjs).
const cacheDirModule = here('../dist/src/cli/cache-dir.cjs');
const yogaModule = here('../dist/src/cli/yoga.cjs');
if (!existsSync(main)) {
  process.stderr.write('loop-dash: not built yet — run `npm install && npm run build` in the loop-dash checkout.\n');
  process.exit(2);
}
const fresh = (file) => {
  try {
    return statSync(file).mtimeMs >= statSync(main).mtimeMs;
  } catch {
    return false;
  }
};
// React's development build records a performance measure and debug data for every render and
// never frees them (measured: +50 MB a minute with the dashboard open). Run the production build
// unless the environment asks otherwise. Set before the CLI (and so React) is imported.
process.env.NODE_ENV ??= 'production';

// `loop-dash incidents | head`: a reader that went away is not an error.
// A terminal that went away (its window closed, the ssh connection dropped, `tmux kill-session`):
// the process gets SIGHUP (the dashboard ends on it) and writes fail with EIO — a hangup, not a
// crash: on EIO the process is sent SIGHUP itself. Node resets the terminal's mode as it exits and
// aborts with a core dump if that fails, as it does on a terminal that is gone (node.cc
// ResetStdio lets only EPERM through), so a descriptor of a terminal that no longer takes a write
// is closed before: Node then leaves it alone.
let hungUp = false;
const onTerminalGone = () => {
  if (hungUp) return;
  hungUp = true;
  process.kill(process.pid, 'SIGHUP');
};
// (A hung-up terminal is no longer a tty to isatty(): a write of nothing tells, EIO.)
process.once('exit', () => {
  const { closeSync, writeSync } = require('node:fs');
  for (const fd of [0, 1, 2]) {
    try {
      writeSync(fd, '');
    } catch (err) {
      if (err.code === 'EIO') closeSync(fd);
    }
  }
});
const onStdioError = (err) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  if (err.code === 'EIO') return onTerminalGone();
  throw err;
};
process.stdout.on('error', onStdioError);
process.stderr.on('error', (err) => (err.code === 'EIO' || err.code === 'EPIPE' ? onTerminalGone() : onStdioError(err)));
// The start runs with a larger V8 interrupt budget, so TurboFan compiles only what stays hot
// (src/app/tiering.ts, which restores the default once the start's reads are done; its
// START_INTERRUPT_BUDGET). Set before anything else is loaded; one given on the command line is kept.
if (!process.execArgv.some((a) => a.startsWith('--interrupt-budget'))) setFlagsFromString('--interrupt-budget=1000000');

/**
 * Loads the script bundle with V8's code cache from `<cache dir>/code/main.script.v8`: a header
 * naming the bundle (a digest of its text and its path), Node and a digest of the data, then V8's data. V8
 * checks its own version, flags and the source's length, and rejects what does not match (the
 * script is then compiled as usual); the header keeps a cache of another build of the same
 * length from being used, the digest one damaged on disk (V8 does not check its data's
 * checksum). With no cache, or one not used, the start gives the bin its cue
 * (src/app/launcher.ts) and the code it compiled is written down for the next start, atomically
 * (src/extension/atomic-file.ts).
 */
function loadScript() {
  const { defaultCacheDir } = require(cacheDirModule);
  const { createHash } = require('node:crypto');
  // esbuild writes ASCII (other characters escaped): read as one byte a character, no decoding.
  const source = readFileSync(script, 'latin1');
  const digest = (data, encoding) => createHash('sha1').update(data, encoding).digest('hex');
  // The build by its content, not its file's mtime or inode: every `npm start`, `npm run demo`
  // and `npm test` builds again, and a build of the same code writes the same bytes, so its code
  // cache still serves (~0.75 ms to hash the 1.25 MB here; crypto is loaded for the data's
  // digest anyway).
  // And by its path: V8 takes a script's name from the cache it is given, so a cache another
  // checkout of the same build made would put that checkout's paths in this one's stack traces.
  const bundleKey = `${digest(source, 'latin1')}:${process.version}:${process.arch}:${script}`;
  const enabled = !process.env.LOOP_DASH_NO_CODE_CACHE;
  // V8 rejects a cache made under other V8 flags: each set of node flags (the command line's and
  // NODE_OPTIONS) keeps a cache of its own (started as a command, with the flag above, or as
  // `node bin/loop-dash.js`, without), or alternating between them would make every start compile
  // the script again. The caches of the last KEEP_FLAGGED sets with flags are kept (see below).
  const nodeOptions = process.env.NODE_OPTIONS ?? '';
  const nodeFlags = nodeOptions === '' ? process.execArgv : [...process.execArgv, `NODE_OPTIONS=${nodeOptions}`];
  const flags = nodeFlags.length === 0 ? '' : `.${digest(nodeFlags.join('\0')).slice(0, 8)}`;
  const codeDir = path.join(defaultCacheDir(), 'code');
  const cacheFile = path.join(codeDir, `main.script${flags}.v8`);
  let cachedData;
  if (enabled) {
    try {
      const buf = readFileSync(cacheFile);
      const n = buf.readUInt32LE(0);
      const head = JSON.parse(buf.toString('utf8', 4, 4 + n));
      const data = buf.subarray(4 + n);
      if (head.bundle === bundleKey && head.sha1 === digest(data)) cachedData = data;
    } catch {
      /* none yet, unreadable or damaged: compiled as usual */
    }
  }
  // The CommonJS wrapper, on the source's first line (line numbers in stack traces stay true).
  const compiled = new vm.Script(`(function (exports, require, module, __filename, __dirname, __ldImportMetaUrl) {${source}\n})`, { filename: script, cachedData });
  const state = !enabled ? 'off' : cachedData === undefined ? 'none' : compiled.cachedDataRejected ? 'rejected' : 'used';
  let written = false;
  globalThis[Symbol.for('loop-dash.launcher')] = {
    codeCache: state,
    async preloadInk() {
      const key = Symbol.for('loop-dash.yoga');
      globalThis[key] ??= await require(yogaModule).loadYoga();
    },
    startComplete() {
      if (state === 'off' || state === 'used' || written) return;
      written = true;
      // Made now, under the flags the script was compiled with; written after, atomically.
      const data = compiled.createCachedData();
      const head = Buffer.from(JSON.stringify({ bundle: bundleKey, sha1: digest(data) }), 'utf8');
      const len = Buffer.alloc(4);
      len.writeUInt32LE(head.length, 0);
      void import(pathToFileURL(here('../dist/src/extension/atomic-file.js')).href)
        .then(({ ensureDir, writeFileAtomicSync }) => {
          ensureDir(codeDir);
          writeFileAtomicSync(cacheFile, Buffer.concat([len, head, data]));
          forgetOldFlaggedCaches(codeDir);
        })
        .catch(() => undefined);
    },
  };
  const module = { exports: {} };
  compiled.runInThisContext()(module.exports, createRequire(script), module, script, path.dirname(script), pathToFileURL(script).href);
  return module.exports;
}

/** Code caches kept for sets of node flags (besides the one of no flags). */
const KEEP_FLAGGED = 3;

/**
 * Keeps the KEEP_FLAGGED most recently written code caches of a set of node flags and removes
 * the others: a flag that changes from run to run (an inspector's port) would otherwise add a
 * 1.2 MB file at every start.
 */
function forgetOldFlaggedCaches(codeDir) {
  const flagged = readdirSync(codeDir)
    .filter((name) => /^main\.script\.[0-9a-f]{8}\.v8$/.test(name))
    .map((name) => {
      try {
        return { file: path.join(codeDir, name), at: statSync(path.join(codeDir, name)).mtimeMs };
      } catch {
        return null;
      }
    })
    .filter((f) => f !== null)
    .sort((a, b) => b.at - a.at);
  for (const { file } of flagged.slice(KEEP_FLAGGED)) rmSync(file, { force: true });
}

const usable = (file) => !process.env.LOOP_DASH_NO_BUNDLE && (process.env.LOOP_DASH_BUNDLE ? existsSync(file) : fresh(file));
(async () => {
  const { run } = !process.env.LOOP_DASH_NO_SCRIPT && usable(script) && existsSync(cacheDirModule) && existsSync(yogaModule) ? loadScript() : await import(pathToFileURL(usable(bundle) ? bundle : main).href);
  process.exitCode = await run(process.argv);
})();
