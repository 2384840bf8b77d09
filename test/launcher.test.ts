/**
 * bin/loop-dash.js and the script bundle: V8's code cache is written by a start that had none,
 * used by the next, and ignored (then rewritten) when it names another build or is damaged;
 * LOOP_DASH_NO_CODE_CACHE turns it off. Each run's state is read from its timing marks' `start`.
 * A start from the script loads no ES module (bin/loop-dash.js is CommonJS; Node's ES module
 * loader costs ~15-20 ms of a start here: docs/PERFORMANCE.md).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { runsFromBundle } from '../src/app/launcher.js';
import { checkpointPath, checkpointText } from './support/fault-home.js';
import { startTmux, tmuxAvailable } from './support/tmux.js';
import { assistantEntry, tempHome, writeRootSession } from './support/mini-home.js';
import { waitFor } from './support/wait-for.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'loop-dash.js');
const SCRIPT = path.join(ROOT, 'dist', 'src', 'cli', 'main.script.cjs');

/** A scratch directory (the code cache's, marks) and a home of one root; `done` removes both. */
function scratch(): { dir: string; cacheDir: string; home: string; marks: (n: string) => string; done(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-launcher-'));
  const home = oneRootHome();
  return {
    dir,
    cacheDir: path.join(dir, 'cache'),
    home,
    marks: (n) => path.join(dir, `${n}.jsonl`),
    done: () => {
      rmSync(dir, { recursive: true, force: true });
      rmSync(path.dirname(home), { recursive: true, force: true });
    },
  };
}

/** A home of one root session with a valid checkpoint (every value answered by the fast path). */
function oneRootHome(): string {
  const home = tempHome();
  const t0 = Date.parse('2026-11-30T10:00:00Z');
  writeRootSession(home, { id: 'r1', cwd: '/work/r1', at: t0, lines: [assistantEntry(t0 + 500)] });
  writeFileSync(checkpointPath(home, 'r1'), checkpointText('r1'));
  return home;
}

/** The first mark `ev` in a timing file. */
function markOf(marksFile: string, ev: string): { ev: string; code?: unknown; zod?: unknown } | undefined {
  return readFileSync(marksFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { ev: string; code?: unknown; zod?: unknown })
    .find((m) => m.ev === ev);
}

/** The `code` field of the start mark in a timing file. */
function codeState(marksFile: string): unknown {
  const start = markOf(marksFile, 'start');
  assert.ok(start, `a start mark in ${marksFile}`);
  return start.code;
}

const commandPath = () => `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`;

function version(env: NodeJS.ProcessEnv, asCommand = false): string {
  const r = asCommand
    ? spawnSync(BIN, ['--version'], { env: { ...process.env, PATH: commandPath(), ...env }, encoding: 'utf8', timeout: 30_000 })
    : spawnSync(process.execPath, [BIN, '--version'], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

/**
 * A start of the live store (the exporter's): its reads done, the bin writes the code cache.
 * `asCommand`: the bin executed as the installed command is (its first lines exec node with its
 * flags), this process's node first on PATH; else `node bin/loop-dash.js`.
 */
async function serveOnce(home: string, env: NodeJS.ProcessEnv, cacheFile: string, asCommand = false): Promise<void> {
  const args = ['serve', '--home', home, '--listen', '127.0.0.1:0'];
  const child = asCommand
    ? spawn(BIN, args, { env: { ...process.env, PATH: commandPath(), ...env }, stdio: 'ignore' })
    : spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: 'ignore' });
  try {
    await waitFor(() => existsSync(cacheFile), `the code cache at ${cacheFile}`, 20_000, 20);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

test('the script bundle is built, and runs from it are told apart from the compiled modules', () => {
  assert.ok(statSync(SCRIPT).size > 0, 'npm run build writes dist/src/cli/main.script.cjs');
  assert.equal(runsFromBundle(`file://${SCRIPT}`), true);
  assert.equal(runsFromBundle('file:///x/dist/src/cli/main.bundle.mjs'), true);
  assert.equal(runsFromBundle('file:///x/dist/src/cli/chunk-AB12CD34.mjs'), true);
  assert.equal(runsFromBundle('file:///x/dist/src/readers/read-pool.js'), false);
});

test('the code cache: written by a start that had none, used by the next and after a build of the same code, ignored when it names another build or is damaged', async () => {
  const s = scratch();
  const { home } = s;
  try {
    const cacheFile = path.join(s.cacheDir, 'code', 'main.script.v8');
    const env = (marks: string): NodeJS.ProcessEnv => ({ LOOP_DASH_CACHE_DIR: s.cacheDir, LOOP_DASH_TIMING: marks });
    const expected = version({ LOOP_DASH_NO_BUNDLE: '1' });

    await serveOnce(home, env(s.marks('first')), cacheFile);
    assert.equal(codeState(s.marks('first')), 'none');
    // The script bundle keeps what the readers' fast path reads of zod (function names included):
    // a home of valid files is answered without zod.
    assert.equal(markOf(s.marks('first'), 'ready')?.zod, 0, 'no value of a valid home left to zod');

    assert.equal(version(env(s.marks('second'))), expected);
    assert.equal(codeState(s.marks('second')), 'used');

    // The same build written again (every `npm start`, `npm run demo` and `npm test` builds first):
    // a new mtime, the same text — the cache still serves.
    const built = statSync(SCRIPT);
    try {
      utimesSync(SCRIPT, built.atime, new Date(built.mtimeMs + 2_000));
      assert.equal(version(env(s.marks('rebuilt'))), expected);
      assert.equal(codeState(s.marks('rebuilt')), 'used');
    } finally {
      utimesSync(SCRIPT, built.atime, built.mtime);
    }

    assert.equal(version({ ...env(s.marks('off')), LOOP_DASH_NO_CODE_CACHE: '1' }), expected);
    assert.equal(codeState(s.marks('off')), 'off');

    // One byte of V8's data changed: the digest no longer matches; the script compiles as usual.
    const good = readFileSync(cacheFile);
    const damaged = Buffer.from(good);
    const at = damaged.length - 100;
    damaged.writeUInt8(damaged.readUInt8(at) ^ 0xff, at);
    writeFileSync(cacheFile, damaged);
    assert.equal(version(env(s.marks('damaged'))), expected);
    assert.equal(codeState(s.marks('damaged')), 'none');

    // A header naming another build of the bundle.
    const n = good.readUInt32LE(0);
    const head = JSON.parse(good.toString('utf8', 4, 4 + n)) as { bundle: string; sha1: string };
    const other = Buffer.from(JSON.stringify({ ...head, bundle: `1${head.bundle}` }), 'utf8');
    const len = Buffer.alloc(4);
    len.writeUInt32LE(other.length, 0);
    writeFileSync(cacheFile, Buffer.concat([len, other, good.subarray(4 + n)]));
    assert.equal(version(env(s.marks('stale'))), expected);
    assert.equal(codeState(s.marks('stale')), 'none');

    // The same build made by another checkout: V8 would give this one that checkout's file name
    // (in every stack trace), so it is not used either.
    assert.ok(head.bundle.endsWith(`:${SCRIPT}`), `the key names the script it was made for: ${head.bundle}`);
    const elsewhere = Buffer.from(JSON.stringify({ ...head, bundle: head.bundle.replace(`:${SCRIPT}`, ':/elsewhere/dist/src/cli/main.script.cjs') }), 'utf8');
    len.writeUInt32LE(elsewhere.length, 0);
    writeFileSync(cacheFile, Buffer.concat([len, elsewhere, good.subarray(4 + n)]));
    assert.equal(version(env(s.marks('elsewhere'))), expected);
    assert.equal(codeState(s.marks('elsewhere')), 'none');

    // Not a cache at all.
    writeFileSync(cacheFile, 'garbage');
    assert.equal(version(env(s.marks('garbage'))), expected);
    assert.equal(codeState(s.marks('garbage')), 'none');

    // The next start of the live store writes it again, and the one after uses it.
    rmSync(cacheFile);
    await serveOnce(home, env(s.marks('again')), cacheFile);
    assert.equal(version(env(s.marks('after'))), expected);
    assert.equal(codeState(s.marks('after')), 'used');
  } finally {
    s.done();
  }
});

test('run as a command, the bin execs node with its own flags (line 2), and each set of flags keeps a code cache of its own', async () => {
  // The flags the bin's second line gives node (V8 rejects a code cache made under other flags).
  const line2 = readFileSync(BIN, 'utf8').split('\n')[1] ?? '';
  const flags = /exec node (.*) "\$0" "\$@"$/.exec(line2)?.[1]?.split(' ') ?? [];
  assert.ok(flags.length > 0 && flags.every((f) => f.startsWith('--')), `node flags on the bin's second line: ${line2}`);
  // npm start / npm run demo give node the same flags (and so share the command's code cache).
  const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  for (const name of ['start', 'demo']) assert.ok(scripts[name]?.includes(`node ${flags.join(' ')} bin/loop-dash.js`), `npm ${name}: ${scripts[name]}`);
  const s = scratch();
  const { home } = s;
  try {
    // NODE_OPTIONS empty: the flags are the command line's alone (set below, another set).
    const env = (marks: string): NodeJS.ProcessEnv => ({ LOOP_DASH_CACHE_DIR: s.cacheDir, LOOP_DASH_TIMING: marks, NODE_OPTIONS: '' });
    const plain = path.join(s.cacheDir, 'code', 'main.script.v8');
    const keyed = path.join(s.cacheDir, 'code', `main.script.${createHash('sha1').update(flags.join('\0')).digest('hex').slice(0, 8)}.v8`);
    const expected = version({ LOOP_DASH_NO_BUNDLE: '1' });
    // Run as a command: node got those flags (the cache written is the one named by them).
    await serveOnce(home, env(s.marks('command')), keyed, true);
    assert.equal(codeState(s.marks('command')), 'none');
    assert.equal(existsSync(plain), false, 'no cache under the name of a run without flags');
    // Run with node: a cache of its own.
    await serveOnce(home, env(s.marks('node')), plain);
    assert.equal(codeState(s.marks('node')), 'none');
    // Alternating, each uses its own: none is rejected and written over by the other.
    for (const [i, asCommand] of [true, false, true, false].entries()) {
      assert.equal(version(env(s.marks(`alt${i}`)), asCommand), expected);
      assert.equal(codeState(s.marks(`alt${i}`)), 'used', `start ${i} (${asCommand ? 'as a command' : 'with node'})`);
    }
    // V8 flags in NODE_OPTIONS (not in execArgv) make another set too: not the command's cache,
    // which V8 would reject.
    assert.equal(version({ ...env(s.marks('options')), NODE_OPTIONS: '--max-old-space-size=300' }, true), expected);
    assert.equal(codeState(s.marks('options')), 'none');
    // The caches of the last three flagged sets are kept, the older ones removed at the next write.
    const codeDir = path.dirname(plain);
    const older = ['0000000a', '0000000b', '0000000c', '0000000d'].map((k, i) => {
      const file = path.join(codeDir, `main.script.${k}.v8`);
      writeFileSync(file, 'old');
      const at = new Date(Date.now() - (10 + i) * 60_000);
      utimesSync(file, at, at);
      return file;
    });
    rmSync(keyed);
    await serveOnce(home, env(s.marks('rewrite')), keyed, true);
    await waitFor(() => !existsSync(older[3]!), 'the oldest flagged cache removed', 10_000, 20);
    const flagged = readdirSync(codeDir).filter((n) => /^main\.script\.[0-9a-f]{8}\.v8$/.test(n)).sort();
    assert.deepEqual(flagged, [path.basename(older[0]!), path.basename(older[1]!), path.basename(keyed)].sort(), 'the newest three');
    assert.ok(existsSync(plain), 'the cache of no flags is not one of them');
  } finally {
    s.done();
  }
});

test('a start from the script bundle loads no ES module (Node loads its ES module loader only for an import), and no worker_threads when it starts no worker', async () => {
  const s = scratch();
  const { home } = s;
  try {
    // Preloaded into the start: at SIGTERM it writes the modules Node loaded.
    const probe = path.join(s.dir, 'esm-probe.cjs');
    const out = path.join(s.dir, 'esm.txt');
    writeFileSync(
      probe,
      `process.on('SIGTERM', () => { require('node:fs').writeFileSync(${JSON.stringify(out)}, process.moduleLoadList.join('\\n')); process.exit(0); });\n`,
    );
    const marks = s.marks('esm');
    // Without the code cache: a start that has none writes it after its reads, importing the atomic writer.
    const env = { ...process.env, LOOP_DASH_CACHE_DIR: s.cacheDir, LOOP_DASH_TIMING: marks, LOOP_DASH_BUNDLE: '1', LOOP_DASH_NO_CODE_CACHE: '1' };
    const child = spawn(process.execPath, ['-r', probe, BIN, 'serve', '--home', home, '--listen', '127.0.0.1:0'], { env, stdio: 'ignore' });
    const exited = new Promise((r) => child.once('exit', r));
    try {
      // waitFor retries while the marks file is missing or a line half written (markOf throws).
      await waitFor(() => markOf(marks, 'ready'), 'the start read the home', 20_000, 20);
      assert.equal(codeState(marks), 'off', 'it ran from the script bundle');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    const all = readFileSync(out, 'utf8').split('\n').filter(Boolean);
    const loaded = all.filter((m) => m.includes('/esm/'));
    assert.ok(loaded.length > 0, `the probe ran (${out})`);
    // A home this small gives no worker a share (none started: no `worker` stage), and the module
    // (~2–3 ms to load) is loaded only where a worker starts.
    assert.ok(markOf(marks, 'tails'), 'the start marked its stages');
    assert.equal(markOf(marks, 'worker'), undefined, 'no worker started');
    assert.deepEqual(
      all.filter((m) => /worker_threads|internal\/worker$/.test(m)),
      [],
      'worker_threads loaded by a start that runs no worker',
    );
    // What every Node process loads (utils, assert, loader); an import() or an ES module entry adds translators, module_job, …
    assert.deepEqual(
      loaded.filter((m) => /esm\/(translators|module_job|load|resolve)$/.test(m)),
      [],
      `ES module internals loaded: ${loaded.join(', ')}`,
    );
  } finally {
    s.done();
  }
});

test("a dashboard run from the script bundle builds no Intl.Segmenter and no RGI_Emoji regex: Ink's text libraries build them at first use (~21 and ~15 ms at every start before)", async () => {
  assert.ok(tmuxAvailable());
  const s = scratch();
  const { home } = s;
  try {
    // Preloaded: counts the segmenters and the RGI_Emoji regexes built (a proxy, so instanceof
    // RegExp still holds for every other regex), written at exit.
    const probe = path.join(s.dir, 'segmenter-probe.cjs');
    const out = path.join(s.dir, 'segmenters.json');
    writeFileSync(
      probe,
      `const built = { segmenters: 0, rgiEmoji: 0 };\n` +
        `const S = Intl.Segmenter; Intl.Segmenter = class extends S { constructor(...a) { built.segmenters++; super(...a); } };\n` +
        `globalThis.RegExp = new Proxy(RegExp, { construct(t, a, n) { if (String(a[0]).includes('RGI_Emoji')) built.rgiEmoji++; return Reflect.construct(t, a, n); } });\n` +
        `process.on('exit', () => require('node:fs').writeFileSync(process.env.SEGMENTER_PROBE_OUT, JSON.stringify(built)));\n`,
    );
    const count = () => (existsSync(out) ? (JSON.parse(readFileSync(out, 'utf8')) as { segmenters: number; rgiEmoji: number }) : null);
    // The probe sees each when it is built.
    const control = spawnSync(process.execPath, ['-r', probe, '-e', 'new Intl.Segmenter().segment("a"); new RegExp("^\\\\p{RGI_Emoji}$", "v").test("a")'], {
      env: { ...process.env, SEGMENTER_PROBE_OUT: out },
      timeout: 30_000,
    });
    assert.equal(control.status, 0, String(control.stderr));
    assert.deepEqual(count(), { segmenters: 1, rgiEmoji: 1 }, 'the probe counts what is built');
    rmSync(out);
    const marks = s.marks('segmenters');
    const tty = startTmux(`${process.execPath} -r ${probe} ${BIN} --home ${home}`, {
      columns: 120,
      rows: 30,
      env: { CI: '0', TERM: 'xterm-256color', LOOP_DASH_CACHE_DIR: s.cacheDir, LOOP_DASH_TIMING: marks, SEGMENTER_PROBE_OUT: out, XDG_STATE_HOME: path.join(s.dir, 'state') },
    });
    try {
      await tty.waitForText(/\br1\b/, 'the root listed');
      // The incidents view draws other text; still no segmenter.
      tty.keys('i');
      await tty.waitForText(/Incidents \(0\)/, 'the incidents view');
      tty.keys('Escape');
      await waitFor(() => (/Incidents \(/.test(tty.screen().join('\n')) ? null : true), 'the incidents view closed', 10_000, 20);
      tty.keys('q');
      await waitFor(count, () => `the dashboard quit and the probe wrote its count (exit status ${tty.exitStatus()}, screen:\n${tty.screen().join('\n')})`, 10_000, 20);
    } finally {
      tty.kill();
    }
    assert.ok(codeState(marks) !== null, 'it ran from the script bundle');
    assert.deepEqual(count(), { segmenters: 0, rgiEmoji: 0 }, 'built in the run');
  } finally {
    s.done();
  }
});

test('a build leaves the bundles as they are only when nothing they are made of is newer, and compiles afresh after an install (scripts/build-freshness.mjs)', async () => {
  type Freshness = { bundleUpToDate(o: { root: string; outputs: string[]; script: string }): boolean; compileAfresh(o: { root: string }): boolean };
  const { bundleUpToDate, compileAfresh } = (await import(new URL('../../scripts/build-freshness.mjs', import.meta.url).href)) as Freshness;
  const root = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-freshness-'));
  try {
    const at = (rel: string, seconds: number, text = 'x') => {
      const file = path.join(root, rel);
      mkdirSync(path.dirname(file), { recursive: true });
      if (!existsSync(file)) writeFileSync(file, text);
      utimesSync(file, seconds, seconds);
      return file;
    };
    const T = 1_700_000_000;
    const script = at('scripts/bundle.mjs', T);
    at('package.json', T);
    at('node_modules/.package-lock.json', T);
    at('dist/src/cli/main.js', T);
    at('dist/src/model/clocks.js', T);
    const outputs = [at('dist/src/cli/main.script.cjs', T + 10), at('dist/src/cli/main.bundle.mjs', T + 10)];
    const fresh = () => bundleUpToDate({ root, outputs, script });
    assert.equal(fresh(), true, 'every output newer than every input');
    // A source map or an output of its own newer than the outputs: not an input.
    at('dist/src/model/clocks.js.map', T + 20);
    at('dist/src/cli/read-worker.bundle.mjs', T + 20);
    assert.equal(fresh(), true);
    // A compiled module deep in dist/src rewritten by tsc.
    at('dist/src/model/clocks.js', T + 20);
    assert.equal(fresh(), false, 'a compiled source newer');
    at('dist/src/model/clocks.js', T);
    assert.equal(fresh(), true);
    for (const input of ['node_modules/.package-lock.json', 'package.json', 'scripts/bundle.mjs']) {
      at(input, T + 20);
      assert.equal(fresh(), false, `${input} newer`);
      at(input, T);
    }
    // As old as an output is not older: bundled again.
    at('dist/src/cli/main.js', T + 10);
    assert.equal(fresh(), false, 'an input as new as an output');
    at('dist/src/cli/main.js', T);
    rmSync(outputs[0]!);
    assert.equal(fresh(), false, 'an output missing');

    // The compile: from scratch only when the installed packages are newer than tsc's state.
    assert.equal(compileAfresh({ root }), false, 'no state yet: a first build compiles everything anyway');
    at('dist/.tsbuildinfo', T + 10);
    assert.equal(compileAfresh({ root }), false, 'packages older than the state');
    at('node_modules/.package-lock.json', T + 20);
    assert.equal(compileAfresh({ root }), true, 'packages installed since the last compile');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
