/**
 * The order a start reads a home in (docs/PERFORMANCE.md, "The session list first"): the first
 * batch the reader emits lists every session and nothing else of substance; the checkpoints
 * follow (newest first), before any incident, lane status or session byte; a cached start draws
 * the checkpoints the cache answers with the list (no read), then what the cache remembers of
 * the sessions. Also the two helpers that keep that
 * first batch cheap: `relativeInside` (same answers as `path.relative`) and `scanBackward`, which
 * does not open a file it has nothing to search in. And the second reader of a big start: a start
 * read partly on a worker thread (or whose worker fails) ends with exactly the model of a start
 * read on one thread, and leaves a cache from which the next start reads nothing.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs, { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { generateHome, type DemoManifest } from '../src/demo/generate.js';
import type { IncidentRecord, ReaderEvent } from '../src/model/types.js';
import { SharedMap } from '../src/model/shared-map.js';
import { readIncidentFields } from '../src/readers/incident-file.js';
import { initialModelState, reduceEvents, type ModelState } from '../src/model/reducer.js';
import { CACHE_WRITER, HomeReader, type HomeReaderOptions } from '../src/readers/home-reader.js';
import type { WatchFactory } from '../src/readers/watch-backend.js';
import { readInWorker, type ReadJob, type ReadJobInput } from '../src/readers/read-pool.js';
import { CLAIMED_BY_MAIN, CLAIMED_BY_WORKER, claimForMain } from '../src/readers/read-claims.js';
import { createReadCounter } from '../src/readers/read-counter.js';
import { relativeInside } from '../src/readers/rel-path.js';
import { scanBackward } from '../src/readers/tailer.js';
import { SessionCache, sessionCacheFile } from '../src/readers/session-cache.js';
import { createLiveStore } from '../src/app/live-store.js';
import { BUNDLE_PART, type IncidentBundle } from '../src/readers/dir-listings.js';
import { processStartIdentity } from '../src/readers/process-probe.js';
import { waitFor } from './support/wait-for.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

async function demoHome(t: { after: (fn: () => void) => void }): Promise<{ base: string; manifest: DemoManifest }> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-start-order-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const manifest = await generateHome(path.join(base, 'home'), { now: NOW, host: 'test-host', livePid: 4_000_000, livePidStart: null, deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
  return { base, manifest };
}

/** A demo home with more sessions (8 roots of 6 lanes), for a start split between two threads. */
async function demoHomeScaled(t: { after: (fn: () => void) => void }): Promise<{ base: string; manifest: DemoManifest }> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-start-order-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const manifest = await generateHome(path.join(base, 'home'), { now: NOW, host: 'test-host', livePid: 4_000_000, livePidStart: null, deadPid: 4_000_001, repoDir: path.join(base, 'repo'), scale: { roots: 8, lanesPerRoot: 6, sessionBytes: 20_000 } });
  return { base, manifest };
}

/** Starts a reader once (no watching) and returns the batches it emitted, in order. */
async function batchesOf(home: string, cacheDir: string | null, more: Partial<HomeReaderOptions> = {}): Promise<ReaderEvent[][]> {
  const batches: ReaderEvent[][] = [];
  const reader = new HomeReader({ home, emit: (events) => batches.push(events), watch: false, now: () => NOW, host: 'test-host', cacheDir, ...more });
  await reader.start();
  await reader.stop();
  return batches;
}

const sessionFiles = (m: DemoManifest) => m.sessions.flatMap((s) => (s.file ? [s.file] : [])).sort();
const firstIndex = (batches: ReaderEvent[][], pred: (e: ReaderEvent) => boolean) => batches.findIndex((b) => b.some(pred));

test('a start lists every session in its first batch, then the checkpoints newest first, before anything else is read', async (t) => {
  const { manifest } = await demoHome(t);
  // Distinct checkpoint ages, so newest-first is a definite order.
  const checkpoints = manifest.sessions.flatMap((s) => (s.checkpoint ? [s.checkpoint] : []));
  assert.ok(checkpoints.length >= 3, 'the demo home has checkpoints');
  checkpoints.forEach((file, i) => utimesSync(file, new Date(NOW - i * 60_000), new Date(NOW - i * 60_000)));
  const batches = await batchesOf(manifest.home, null);

  const first = batches[0]!;
  const listed = first.flatMap((e) => (e.type === 'session-file' ? [e.facts.file] : [])).sort();
  assert.deepEqual(listed, sessionFiles(manifest), 'every session file is in the first batch');
  for (const e of first) assert.ok(!['checkpoint', 'incident', 'lane-status', 'receipt', 'journal'].includes(e.type), `nothing read yet in the first batch: ${e.type}`);
  // Listed from the path only: no session file's bytes have been read (no header yet).
  for (const e of first) if (e.type === 'session-file') assert.equal(e.facts.header, null, `${path.basename(e.facts.file)} listed before it is read`);

  const order = batches.flat().flatMap((e) => (e.type === 'checkpoint' ? [e.record.file] : []));
  assert.deepEqual(order.slice(0, checkpoints.length), checkpoints, 'checkpoints come newest first');
  const cp = firstIndex(batches, (e) => e.type === 'checkpoint');
  const incident = firstIndex(batches, (e) => e.type === 'incident');
  const read = firstIndex(batches, (e) => e.type === 'session-file' && e.facts.header !== null);
  assert.ok(cp > 0, 'checkpoints after the list');
  assert.ok(incident > cp, `incidents (batch ${incident}) after the checkpoints (batch ${cp})`);
  assert.ok(read > cp, `session tails (batch ${read}) after the checkpoints (batch ${cp})`);
});

test('a start reads checkpoints before the list while checkpointsBeforeList says yes (newest first, in the first batch); once it says no the list is drawn and the rest follow', async (t) => {
  const { manifest } = await demoHome(t);
  const checkpoints = manifest.sessions.flatMap((s) => (s.checkpoint ? [s.checkpoint] : []));
  assert.ok(checkpoints.length >= 4, 'the demo home has checkpoints');
  checkpoints.forEach((file, i) => utimesSync(file, new Date(NOW - i * 60_000), new Date(NOW - i * 60_000)));
  const checkpointsIn = (batch: ReaderEvent[]) => batch.flatMap((e) => (e.type === 'checkpoint' ? [e.record.file] : []));
  const listedIn = (batch: ReaderEvent[]) => batch.flatMap((e) => (e.type === 'session-file' ? [e.facts.file] : [])).sort();
  const nothingElse = (batch: ReaderEvent[]) => {
    for (const e of batch) assert.ok(!['incident', 'lane-status', 'receipt', 'journal', 'state-log'].includes(e.type), `nothing else read in the first batch: ${e.type}`);
    for (const e of batch) if (e.type === 'session-file') assert.equal(e.facts.header, null, `${path.basename(e.facts.file)} listed from its path`);
  };

  const all = await batchesOf(manifest.home, null, { checkpointsBeforeList: () => true });
  assert.deepEqual(listedIn(all[0]!), sessionFiles(manifest), 'every session file is in the first batch');
  assert.deepEqual(checkpointsIn(all[0]!), checkpoints, 'and every checkpoint, newest first');
  nothingElse(all[0]!);
  assert.equal(firstIndex(all.slice(1), (e) => e.type === 'checkpoint'), -1, 'no checkpoint is read again');

  // Asked before the walk of loop-dash/, then before each checkpoint: yes three times.
  let asked = 0;
  const two = await batchesOf(manifest.home, null, { checkpointsBeforeList: () => ++asked <= 3 });
  assert.deepEqual(listedIn(two[0]!), sessionFiles(manifest), 'every session file is in the first batch');
  assert.deepEqual(checkpointsIn(two[0]!), checkpoints.slice(0, 2), 'with the two newest checkpoints');
  nothingElse(two[0]!);
  assert.deepEqual(checkpointsIn(two[1]!), checkpoints.slice(2), 'the rest in the next batch, newest first');
  assert.ok(!two[1]!.some((e) => e.type === 'incident'), 'before the rest of the home is read');
});

test('a cached start draws the checkpoints the cache answers with the list (a stat each, no read); the sessions as the cache remembers them come with the rest of the home, not in a batch of their own', async (t) => {
  const { base, manifest } = await demoHome(t);
  const cacheDir = path.join(base, 'cache');
  const checkpoints = manifest.sessions.flatMap((s) => (s.checkpoint ? [s.checkpoint] : []));
  assert.ok(checkpoints.length >= 3, 'the demo home has checkpoints');
  // Whole-second mtimes, so the one rewritten below gets its exact mtime back.
  checkpoints.forEach((file, i) => utimesSync(file, (NOW - i * 60_000) / 1000, (NOW - i * 60_000) / 1000));
  const cold = await batchesOf(manifest.home, cacheDir);
  // Rewritten behind the cache's back, same size, mtime and inode: the warm start shows what the
  // cache remembers of it, so it did not read the file.
  const target = checkpoints[0]!;
  const text = readFileSync(target, 'utf8');
  assert.ok(text.includes('"thinking": "medium"'), 'the checkpoint names its thinking level');
  writeFileSync(target, text.replace('"thinking": "medium"', '"thinking": "MEDIUM"'));
  utimesSync(target, NOW / 1000, NOW / 1000);
  const warm = await batchesOf(manifest.home, cacheDir);

  const first = warm[0]!;
  const listed = first.flatMap((e) => (e.type === 'session-file' ? [e.facts.file] : [])).sort();
  assert.deepEqual(listed, sessionFiles(manifest), 'every session file is in the first batch');
  for (const e of first) if (e.type === 'session-file') assert.equal(e.facts.header, null, `${path.basename(e.facts.file)} listed from its path`);
  const drawn = first.flatMap((e) => (e.type === 'checkpoint' ? [e.record] : []));
  assert.deepEqual(drawn.map((r) => r.file).sort(), [...checkpoints].sort(), 'every checkpoint is in the first batch');
  for (const e of first) assert.ok(!['incident', 'lane-status', 'receipt', 'journal', 'state-log'].includes(e.type), `nothing else read in the first batch: ${e.type}`);
  const remembered = drawn.find((r) => r.file === target);
  assert.equal(remembered?.checkpoint.thinking, 'medium', 'the checkpoint as the cache remembers it (not read)');

  const last = (batches: ReaderEvent[][]) => {
    const m = new Map<string, unknown>();
    for (const e of batches.flat()) if (e.type === 'session-file') m.set(e.facts.file, e.facts.name);
    return m;
  };
  assert.deepEqual(last(warm), last(cold), 'the same names after a warm start as after a cold one');
  // The next batch is the whole home's: the sessions as the cache remembers them come with the
  // rest (the checkpoints already drawn, a frame of the names alone would be drawn for nothing).
  const named = firstIndex(warm, (e) => e.type === 'session-file' && e.facts.name !== null);
  assert.equal(named, 1, `cached names in the batch after the list (batch ${named})`);
  assert.ok(warm[named]!.some((e) => e.type === 'session-file' && e.facts.header !== null), 'the cache brings what was read last time');
  assert.ok(manifest.incidents.length > 0 && warm[named]!.some((e) => e.type === 'incident'), 'with the incidents: no batch of the cached sessions alone');
});

test('a cached start reads a checkpoint changed since the cache was written after the list, and draws it then', async (t) => {
  const { base, manifest } = await demoHome(t);
  const cacheDir = path.join(base, 'cache');
  const checkpoints = manifest.sessions.flatMap((s) => (s.checkpoint ? [s.checkpoint] : []));
  assert.ok(checkpoints.length >= 2, 'the demo home has checkpoints');
  await batchesOf(manifest.home, cacheDir);
  // Rewritten with another size: the cache does not answer it.
  const changed = checkpoints[1]!;
  writeFileSync(changed, JSON.stringify({ ...(JSON.parse(readFileSync(changed, 'utf8')) as object), thinking: 'xhigh' }));
  const warm = await batchesOf(manifest.home, cacheDir);
  const inFirst = warm[0]!.flatMap((e) => (e.type === 'checkpoint' ? [e.record.file] : []));
  assert.deepEqual(inFirst.sort(), checkpoints.filter((f) => f !== changed).sort(), 'the ones the cache answers come with the list');
  const second = warm[1]!.flatMap((e) => (e.type === 'checkpoint' ? [[e.record.file, e.record.checkpoint.thinking]] : []));
  assert.deepEqual(second, [[changed, 'xhigh']], 'the changed one in the next batch, as it is now');
  assert.ok(!warm[1]!.some((e) => e.type === 'incident'), 'drawn before the rest of the home is read');
});

test('relativeInside answers as path.relative does, for paths inside the directory', () => {
  const segment = fc.constantFrom('a', 'b', 'sessions', '.', '..', '', '.hidden', '.cache', '..x', 'x.tmp', '--w--');
  const pathOf = (abs: boolean) => fc.array(segment, { maxLength: 6 }).map((parts) => (abs ? '/' : '') + parts.join('/'));
  fc.assert(
    fc.property(pathOf(true), fc.boolean(), pathOf(true), fc.boolean(), (dir, dirSlash, file, fileSlash) => {
      const d = dir + (dirSlash ? '/' : '');
      const f = file + (fileSlash ? '/' : '');
      const rel = path.relative(path.resolve(d), path.resolve(f));
      const want = rel.startsWith('..') || path.isAbsolute(rel) ? null : rel;
      assert.equal(relativeInside(d, f), want, `${d} ${f}`);
    }),
    { numRuns: 3000 },
  );
  assert.equal(relativeInside('/h', '/h/sessions/x.jsonl'), 'sessions/x.jsonl');
  assert.equal(relativeInside('/r/.cache/h', '/r/.cache/h/sessions/x.jsonl'), 'sessions/x.jsonl');
  assert.equal(relativeInside('/r/.cache/h', '/r/.cache/h/sessions/../../y'), null);
  assert.equal(relativeInside('/h', '/hx/sessions'), null);
  assert.equal(relativeInside('/h', '/h'), '');
});

test('scanBackward does not open a file when there is nothing to search (a start scans 0 bytes before the window)', async () => {
  const missing = path.join(os.tmpdir(), `loop-dash-no-such-file-${process.pid}.jsonl`);
  const none = await scanBackward(missing, { from: 5_000, to: 100, maxBytes: 0, needles: ['"x"'] });
  assert.deepEqual(none, { found: {}, bytesScanned: 0, resumeAt: 5_000 }, 'a 0-byte budget: untouched, no error');
  const empty = await scanBackward(missing, { from: 100, to: 100, needles: ['"x"'] });
  assert.deepEqual(empty, { found: {}, bytesScanned: 0, resumeAt: 100 }, 'an empty range: untouched, all of it searched');
  const opened = await scanBackward(missing, { from: 5_000, to: 100, maxBytes: 10, needles: ['"x"'] });
  assert.ok(opened.error, 'with bytes to search it does open the file (and reports that it cannot)');
});

/** The model after one start (no watching), as plain sorted data; `version` left out. */
async function modelAfterStart(home: string, opts: Partial<HomeReaderOptions> = {}): Promise<Record<string, unknown>> {
  let state: ModelState = initialModelState();
  const reader = new HomeReader({ home, emit: (events) => (state = reduceEvents(state, events)), watch: false, now: () => NOW, host: 'test-host', ...opts });
  await reader.start();
  await reader.stop();
  const plain: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(state)) {
    if (k === 'version') continue;
    // The model's maps are native maps or versions sharing entries (SharedMap): compared by entries.
    plain[k] = v instanceof Map || v instanceof SharedMap ? [...v.entries()].sort(([a], [b]) => String(a).localeCompare(String(b))) : v;
  }
  return plain;
}

/**
 * Runs `run` with `fs[name]` counting the paths it is called with (ES module named imports of it
 * follow: syncBuiltinESMExports), and gives back what `run` gave and those paths.
 */
async function pathsGivenTo<T>(name: 'statSync' | 'openSync' | 'readdirSync' | 'readFileSync', run: () => Promise<T>): Promise<{ value: T; paths: Set<string> }> {
  const paths = new Set<string>();
  const mutable = fs as unknown as Record<string, (...args: unknown[]) => unknown>;
  const original = mutable[name]!;
  mutable[name] = (file: unknown, ...rest: unknown[]) => (paths.add(String(file)), original(file, ...rest));
  syncBuiltinESMExports();
  try {
    return { value: await run(), paths };
  } finally {
    mutable[name] = original;
    syncBuiltinESMExports();
  }
}

/** The files opened or read whole (`openSync`, `readFileSync`) while `run` runs. */
async function readsDuring<T>(run: () => Promise<T>): Promise<{ value: T; paths: Set<string> }> {
  const opened = await pathsGivenTo('openSync', () => pathsGivenTo('readFileSync', run));
  return { value: opened.value.value, paths: new Set([...opened.paths, ...opened.value.paths]) };
}

/** What the cache in `cacheDir` now remembers of `file` (all of it loaded), or undefined. */
async function cachedEntry<T>(cacheDir: string, home: string, file: string): Promise<T | undefined> {
  const cache = await SessionCache.open<T>(cacheDir, home, CACHE_WRITER);
  await cache.loadRest();
  return cache.get(file);
}

test('a start read partly on a worker thread ends with exactly the model of a start read on one thread; the cache it leaves answers the next start', async (t) => {
  const { base, manifest } = await demoHome(t);
  const one = await modelAfterStart(manifest.home, { workerMinFiles: Infinity });
  const given: ReadJobInput[] = [];
  const answered: number[] = [];
  const addedClaims: (SharedArrayBuffer | undefined)[] = [];
  const spy = (input: ReadJobInput): ReadJob => {
    const items = [...input.items];
    given.push({ ...input, items });
    const job = readInWorker(input);
    return {
      stop: job.stop,
      add: (more, last, claims) => (items.push(...more), addedClaims.push(claims), job.add(more, last, claims)),
      result: job.result.then((r) => (answered.push(r?.length ?? -1), r)),
    };
  };
  const cacheDir = path.join(base, 'cache');
  // What this thread opened, or read in one call (a small file whose walk stat says its size).
  const { value: { value: two, paths: openedHere }, paths: readWhole } = await pathsGivenTo('readFileSync', () => pathsGivenTo('openSync', () => modelAfterStart(manifest.home, { workerMinFiles: 0, readJob: spy, cacheDir })));
  const opened = new Set([...openedHere, ...readWhole]);
  assert.equal(given.length, 1, 'the worker was started');
  assert.equal(given[0]!.more, true, 'before the walk of the rest, so more was handed to it after');
  const sessionsGiven = given[0]!.items.filter(([k]) => k === 'session').length;
  assert.ok(sessionsGiven > 0 && given[0]!.items.some(([k]) => k === 'incident'), `it was given sessions (${sessionsGiven}) and incidents`);
  assert.deepEqual(answered, [given[0]!.items.length], 'and answered every item');
  assert.deepEqual(two, one, 'the same model either way');
  // The session files were shared: each taken by one thread, and read on this one only if it took it.
  const claims = new Int32Array(given[0]!.claims!);
  assert.equal(claims.length, sessionsGiven, 'every session file the cache does not answer is shared (the small files follow with slots of their own)');
  claims.forEach((c, i) => {
    const file = given[0]!.items[i]![1];
    assert.ok(c === CLAIMED_BY_WORKER || c === CLAIMED_BY_MAIN, `${file}: taken by one thread (${c})`);
    if (c === CLAIMED_BY_MAIN) assert.ok(opened.has(file), `${file}: taken here, read here`);
  });
  // And the small files handed over after the walk: each taken by one thread too.
  assert.equal(addedClaims.length, 1);
  const smallClaims = new Int32Array(addedClaims[0]!);
  const smallGiven = given[0]!.items.slice(sessionsGiven);
  assert.equal(smallClaims.length, smallGiven.length, 'a slot per small file');
  smallClaims.forEach((c, i) => {
    assert.ok(c === CLAIMED_BY_WORKER || c === CLAIMED_BY_MAIN, `${smallGiven[i]![1]}: taken by one thread (${c})`);
    if (c === CLAIMED_BY_MAIN) assert.ok(opened.has(smallGiven[i]![1]), `${smallGiven[i]![1]}: taken here, read here`);
    else assert.ok(!opened.has(smallGiven[i]![1]), `${smallGiven[i]![1]}: the worker's, not read here`);
  });

  // The entries the worker made were kept: a warm start reads no session byte and shows the same.
  const counter = createReadCounter();
  const warm = await modelAfterStart(manifest.home, { workerMinFiles: Infinity, cacheDir, counter });
  assert.equal(counter.bytesRead, 0, 'a warm start after it reads no session data');
  assert.deepEqual(warm, one);

  // With every session answered by the cache the worker is not started before the walk of the
  // rest; if it is wanted after it (here: any number of files), it is given everything at once.
  given.length = 0;
  answered.length = 0;
  const late = await modelAfterStart(manifest.home, { workerMinFiles: 0, readJob: spy, cacheDir });
  assert.equal(given.length, 1, 'the worker was started');
  assert.equal(given[0]!.more, false, 'after the walk, with nothing to follow');
  assert.equal(given[0]!.items.filter(([k]) => k === 'session').length, 0, 'no session: the cache answers them');
  assert.deepEqual(answered, [given[0]!.items.length]);
  assert.deepEqual(late, one);
});

test('a start whose files are really split between the two threads (the worker held until it has taken some): the same model, maps in the same order as on one thread, each file read once where it was taken', async (t) => {
  const { manifest } = await demoHomeScaled(t);
  // Some session files with a line in error: the worker leaves those to this thread, whose
  // warnings then reach the model (and the warnings list) in its reading order.
  const sessionFiles = manifest.sessions.filter((s) => s.file !== null).map((s) => s.file!);
  sessionFiles.forEach((f, i) => {
    if (i % 3 !== 0) return;
    const st = statSync(f);
    fs.appendFileSync(f, 'this is not json\n');
    utimesSync(f, st.atime, st.mtime);
  });
  const rawModel = async (opts: Partial<HomeReaderOptions>) => {
    let state: ModelState = initialModelState();
    const reader = new HomeReader({ home: manifest.home, emit: (events) => (state = reduceEvents(state, events)), watch: false, now: () => NOW, host: 'test-host', cacheDir: null, ...opts });
    await reader.start();
    await reader.stop();
    return state;
  };
  const one = await rawModel({ workerMinFiles: Infinity });
  let given: ReadJobInput | null = null;
  const tick = new Int32Array(new SharedArrayBuffer(4));
  const held = (input: ReadJobInput): ReadJob => {
    given = input;
    const job = readInWorker(input);
    // This thread waits (at most 10 s) until the worker has taken a third of the sessions.
    const claims = new Int32Array(input.claims!);
    const until = Date.now() + 10_000;
    while (claims.filter((c) => c === CLAIMED_BY_WORKER).length < claims.length / 3 && Date.now() < until) Atomics.wait(tick, 0, 0, 1);
    return job;
  };
  const { value: two, paths: opened } = await pathsGivenTo('openSync', () => rawModel({ workerMinFiles: 0, readJob: held }));
  const claims = new Int32Array(given!.claims!);
  const byWorker = claims.filter((c) => c === CLAIMED_BY_WORKER).length;
  assert.ok(byWorker >= claims.length / 3 && claims.includes(CLAIMED_BY_MAIN), `split: ${byWorker} of ${claims.length} sessions taken by the worker`);
  const keysOf = (m: ModelState) => Object.fromEntries(Object.entries(m).filter(([, v]) => v instanceof Map || v instanceof SharedMap).map(([k, v]) => [k, [...(v as ReadonlyMap<unknown, unknown>).keys()]]));
  assert.deepEqual(keysOf(two), keysOf(one), 'every map of the model in the order a start on one thread gives');
  assert.ok(two.warnings.size >= 3, `warnings to order (${two.warnings.size})`);
  for (const k of Object.keys(one) as (keyof ModelState)[]) {
    if (k === 'version') continue;
    const a = one[k];
    const b = two[k];
    if (a instanceof Map || a instanceof SharedMap) assert.deepEqual([...(b as ReadonlyMap<unknown, unknown>).entries()], [...a.entries()], `${k}: the same entries`);
    else assert.deepEqual(b, a, k);
  }
  // A session taken here was read here.
  claims.forEach((c, i) => {
    const file = given!.items[i]![1];
    assert.ok(c === CLAIMED_BY_WORKER || c === CLAIMED_BY_MAIN, `${file}: taken by one thread`);
    if (c === CLAIMED_BY_MAIN) assert.ok(opened.has(file), `${file}: taken here, read here`);
  });
});

test('a worker started after the walk (few sessions unanswered, many small files): sessions and small files share one buffer of slots, each taken by one thread, the same model', async (t) => {
  const { base, manifest } = await demoHomeScaled(t);
  const cacheDir = path.join(base, 'cache-late');
  await modelAfterStart(manifest.home, { cacheDir });
  // Files the cache does not know: copies of sessions and incidents under new names (a uuid of their own).
  const fresh = (file: string, i: number) => {
    const copy = path.join(path.dirname(file), path.basename(file).replace(/[0-9a-f]{8}-[0-9a-f]{4}/, `${String(i).padStart(8, '0')}-ffff`));
    assert.notEqual(copy, file);
    fs.copyFileSync(file, copy);
    return copy;
  };
  const newSessions = manifest.sessions.filter((s) => s.file !== null).slice(0, 4).map((s, i) => fresh(s.file!, i));
  manifest.incidents.slice(0, 6).forEach((inc, i) => fresh(inc.file, 100 + i));
  const copyOf = (name: string) => {
    const dir = path.join(base, name);
    fs.cpSync(cacheDir, dir, { recursive: true });
    return dir;
  };
  const one = await modelAfterStart(manifest.home, { workerMinFiles: Infinity, cacheDir: copyOf('cache-one') });
  let given: ReadJobInput | null = null;
  const spy = (input: ReadJobInput): ReadJob => ((given = input), readInWorker(input));
  // Fewer unanswered sessions than the threshold: no worker before the walk; with the small files, enough after it.
  const two = await modelAfterStart(manifest.home, { workerMinFiles: newSessions.length + 1, readJob: spy, cacheDir: copyOf('cache-two') });
  assert.ok(given, 'the worker was started');
  const input = given as ReadJobInput;
  assert.equal(input.more, false, 'after the walk, with everything at once');
  const kinds = input.items.map(([k]) => k);
  assert.deepEqual(kinds.slice(0, newSessions.length), newSessions.map(() => 'session'), 'the unanswered sessions first');
  assert.ok(kinds.slice(newSessions.length).length >= 6 && !kinds.slice(newSessions.length).includes('session'), 'then the small files');
  const claims = new Int32Array(input.claims!);
  assert.equal(claims.length, input.items.length, 'a slot per item, sessions and small files alike');
  claims.forEach((c, i) => assert.ok(c === CLAIMED_BY_WORKER || c === CLAIMED_BY_MAIN, `${input.items[i]![1]}: taken by one thread (${c})`));
  assert.deepEqual(two, one, 'the same model either way');
});

test('the worker and this thread share the session files slot by slot: the worker takes them from the oldest up to the first one taken here, and answers those it did not read with no entry', async (t) => {
  const { manifest } = await demoHome(t);
  const sessions = manifest.sessions.filter((s) => s.file !== null).map((s) => s.file!);
  assert.ok(sessions.length >= 6, `enough sessions (${sessions.length})`);
  const buffer = new SharedArrayBuffer(4 * (sessions.length + 1));
  const claims = new Int32Array(buffer);
  // This thread has taken the newest half before the worker starts, as a start does from the newest down.
  const half = Math.ceil(sessions.length / 2);
  for (let i = sessions.length - 1; i >= half; i--) assert.equal(claimForMain(claims, i), true, `slot ${i} is free`);
  const job = readInWorker({ home: manifest.home, items: [...sessions.map((f) => ['session', f] as ['session', string]), ['incident', manifest.incidents[0]!.file]], scanMaxBytes: Infinity, incompleteGraceMs: 2_000, claims: buffer });
  const results = await job.result;
  assert.ok(results, 'the worker answered');
  assert.equal(results.length, sessions.length + 1, 'one result per item');
  assert.deepEqual([...claims], [...sessions.map((_, i) => (i < half ? CLAIMED_BY_WORKER : CLAIMED_BY_MAIN)), CLAIMED_BY_WORKER], 'it took the oldest half, up to the first slot taken here, and its other item');
  results.slice(0, sessions.length).forEach((r, i) => {
    assert.ok('entry' in r);
    if (i >= half) assert.equal(r.entry, null, `slot ${i}: not read there`);
  });
  assert.ok(results.slice(0, half).some((r) => 'entry' in r && r.entry !== null), 'the ones it took come back as cache entries');
  assert.ok(!('entry' in results[sessions.length]!), 'its own item (an incident) read too');
  assert.equal(claimForMain(claims, 0), false, 'a slot taken stays taken');
  await job.exited;
});

test('the cache drops what it remembered of files removed while the dashboard was closed (at the first save after the start\'s walk), and keeps the rest', async (t) => {
  const { base, manifest } = await demoHome(t);
  const cacheDir = path.join(base, 'cache-prune');
  await modelAfterStart(manifest.home, { cacheDir });
  const sessions = manifest.sessions.filter((s) => s.file !== null).map((s) => s.file!);
  const incidents = manifest.incidents.map((i) => i.file);
  assert.ok(sessions.length >= 2 && incidents.length >= 2);
  const remembered = async (f: string) => (await cachedEntry(cacheDir, manifest.home, f)) !== undefined;
  const some = [sessions[0]!, sessions[1]!, incidents[0]!, incidents[1]!];
  assert.ok((await Promise.all(some.map(remembered))).every(Boolean), 'the first start remembered them');
  rmSync(sessions[0]!);
  rmSync(incidents[0]!);
  await modelAfterStart(manifest.home, { cacheDir });
  assert.equal(await remembered(sessions[0]!), false, 'the removed session file is forgotten');
  assert.equal(await remembered(incidents[0]!), false, 'the removed incident is forgotten');
  assert.ok((await remembered(sessions[1]!)) && (await remembered(incidents[1]!)), 'the others are kept');
});

test('a worker that fails (or cannot start): the start reads everything itself, with the same result', async (t) => {
  const { manifest } = await demoHome(t);
  const one = await modelAfterStart(manifest.home, { workerMinFiles: Infinity });
  let asked = 0;
  const failing = (): ReadJob => {
    asked++;
    return { result: Promise.resolve(null), add: () => undefined, stop: () => undefined };
  };
  const two = await modelAfterStart(manifest.home, { workerMinFiles: 0, readJob: failing });
  assert.equal(asked, 1);
  assert.deepEqual(two, one);
});

test('a probe that sees the same as the last one sends nothing (an idle dashboard wakes once per probe); a change is sent', async (t) => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-probe-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const sleeper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  t.after(() => sleeper.kill('SIGKILL'));
  const pid = sleeper.pid!;
  await waitFor(() => processStartIdentity(pid), 'the sleeper is running');
  const home = path.join(base, 'home');
  const now = Date.now();
  await generateHome(home, { now, host: os.hostname(), livePid: pid, livePidStart: processStartIdentity(pid), deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
  const probes: { at: number; status: string }[] = [];
  const reader = new HomeReader({
    home,
    emit: (events) => {
      for (const e of events) if (e.type === 'probe' && e.probe.pid === pid) probes.push({ at: Date.now(), status: e.probe.status });
    },
    probeMs: 40,
    batchMs: 10,
  });
  t.after(() => reader.stop());
  await reader.start();
  assert.deepEqual(probes.map((p) => p.status), ['alive'], 'one probe when its checkpoint was read');
  // Thirty probe intervals with the process unchanged: nothing sent.
  const quietFrom = Date.now();
  await waitFor(() => Date.now() - quietFrom >= 1_200, 'thirty probe intervals', 5_000, 50);
  assert.equal(probes.length, 1, `no probe sent while nothing changed (${probes.length - 1} sent)`);
  sleeper.kill('SIGKILL');
  const gone = await waitFor(() => probes.find((p) => p.status === 'gone'), 'the gone probe', 5_000);
  assert.ok(gone.at >= quietFrom);
});

test('a start reports done only once its worker thread is gone (the thread\'s exit is start-up work, not the idle dashboard\'s); an exit that never comes holds it at most 1 s', async (t) => {
  const { manifest } = await demoHome(t);
  // The worker's answers come at once; its exit only when released.
  let release: () => void = () => undefined;
  const exited = new Promise<void>((resolve) => (release = resolve));
  let answeredAt = 0;
  const slowExit = (input: ReadJobInput): ReadJob => {
    const job = readInWorker(input);
    return { stop: job.stop, add: job.add, result: job.result.then((r) => ((answeredAt = batches.length), r)), exited };
  };
  const batches: ReaderEvent[][] = [];
  const doneIn = (list: ReaderEvent[][]) => list.some((b) => b.some((e) => e.type === 'progress' && e.done));
  const reader = new HomeReader({ home: manifest.home, emit: (events) => batches.push(events), watch: false, now: () => NOW, host: 'test-host', cacheDir: null, workerMinFiles: 0, readJob: slowExit });
  let finished = false;
  const started = reader.start().then(() => (finished = true));
  await waitFor(() => answeredAt > 0, () => 'the worker\'s answers');
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  assert.equal(doneIn(batches), false, 'no done while the worker thread is still there');
  assert.equal(finished, false);
  release();
  await started;
  assert.ok(doneIn(batches), 'done once it is gone');
  await reader.stop();

  // An exit that never comes: the start still reports done, after the 1 s bound.
  const never = (input: ReadJobInput): ReadJob => ({ ...readInWorker(input), exited: new Promise(() => undefined) });
  const later: ReaderEvent[][] = [];
  const again = new HomeReader({ home: manifest.home, emit: (events) => later.push(events), watch: false, now: () => NOW, host: 'test-host', cacheDir: null, workerMinFiles: 0, readJob: never });
  const t0 = performance.now();
  await again.start();
  const took = performance.now() - t0;
  assert.ok(doneIn(later), 'done all the same');
  assert.ok(took >= 1_000, `waited for the bound (${took.toFixed(0)} ms)`);
  await again.stop();
});

test('after the list a start waits for its afterList promise (the dashboard loading Ink), then goes on; a promise that never settles holds it at most 1 s', async (t) => {
  const { manifest } = await demoHome(t);
  const batches: ReaderEvent[][] = [];
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const reader = new HomeReader({ home: manifest.home, emit: (events) => batches.push(events), watch: false, now: () => NOW, host: 'test-host', cacheDir: null });
  let done = false;
  const started = reader.start({ afterList: gate }).then(() => (done = true));
  await waitFor(() => batches.length >= 1, () => `the list (${batches.length} batches)`);
  // Several turns of the event loop: nothing beyond the list while the gate is shut.
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  assert.equal(batches.length, 1, 'only the list before the gate opens');
  assert.equal(done, false);
  release();
  await started;
  assert.ok(batches.some((b) => b.some((e) => e.type === 'checkpoint')), 'the checkpoints after it');
  await reader.stop();

  // A gate that never opens: the start still completes, after the 1 s bound.
  const again = new HomeReader({ home: manifest.home, emit: () => undefined, watch: false, now: () => NOW, host: 'test-host', cacheDir: null });
  const t0 = performance.now();
  await again.start({ afterList: new Promise(() => undefined) });
  const took = performance.now() - t0;
  assert.ok(took >= 1_000, `waited for the bound (${took.toFixed(0)} ms)`);
  await again.stop();
});

test('after the list a start calls listShown and waits for what it returns (the live store: the list published), then goes on', async (t) => {
  const { manifest } = await demoHome(t);
  const batches: ReaderEvent[][] = [];
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let calledAfter: number | null = null;
  const reader = new HomeReader({ home: manifest.home, emit: (events) => batches.push(events), watch: false, now: () => NOW, host: 'test-host', cacheDir: null });
  let done = false;
  const started = reader
    .start({
      listShown: () => {
        calledAfter = batches.length;
        return gate;
      },
    })
    .then(() => (done = true));
  try {
    await waitFor(() => calledAfter !== null, () => `listShown called (${batches.length} batches)`);
    assert.equal(calledAfter, 1, 'called once the list is emitted');
    assert.ok(batches[0]!.some((e) => e.type === 'progress' && e.total > 0 && e.read === 0), 'that batch is the list');
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    assert.equal(batches.length, 1, 'only the list until it resolves');
    assert.equal(done, false);
  } finally {
    release();
    await started;
  }
  assert.ok(batches.some((b) => b.some((e) => e.type === 'checkpoint')), 'the checkpoints after it');
  await reader.stop();
});

test('the session cache is written once what it remembers has been quiet for cacheQuietMs after a change — not minutes later in an idle stretch — and the timer does not wake for it while nothing changed', async (t) => {
  const { base, manifest } = await demoHome(t);
  const cacheDir = path.join(base, 'cache-quiet');
  const cacheFile = sessionCacheFile(cacheDir, manifest.home);
  const abs = manifest.sessions.find((s) => s.file !== null)!.file!;
  const reader = new HomeReader({ home: manifest.home, emit: () => undefined, now: () => NOW, host: 'test-host', cacheDir, cacheQuietMs: 300 });
  t.after(() => reader.stop());
  await reader.start();
  await reader.background();
  const savedAt = () => statSync(cacheFile).mtimeMs;
  const first = savedAt();
  const cachedSize = async () => (await cachedEntry<{ size?: number }>(cacheDir, manifest.home, abs))?.size;
  // An append: read at once, then written down ~300 ms after the last change.
  const line = readFileSync(abs, 'utf8').split('\n').filter(Boolean).at(-1)! + '\n';
  writeFileSync(abs, line, { flag: 'a' });
  const size = statSync(abs).size;
  await waitFor(() => savedAt() !== first, 'the cache written after the append went quiet', 5_000);
  await waitFor(() => reader.settled(), 'the read and its re-check', 5_000);
  assert.equal(await cachedSize(), size, 'the written cache holds the appended size');
  // A second burst after that write is written down as soon (its first change must give the save
  // a due time at once, not wait for another background job to wake the timer: up to 5 s later).
  const second = savedAt();
  writeFileSync(abs, line, { flag: 'a' });
  const size2 = statSync(abs).size;
  await waitFor(() => savedAt() !== second, 'the cache written after the second append went quiet', 2_000);
  await waitFor(() => reader.settled(), 'the read and its re-check', 5_000);
  assert.equal(await cachedSize(), size2, 'the second write holds the second size');
  // Nothing changed since: the save job has nothing due (the background timer sleeps for the probes alone).
  assert.equal((reader as unknown as { cacheSaveDueAt(last: number): number | null }).cacheSaveDueAt(performance.now()), null, 'no save due while nothing changed');
});

test('a start\'s background work (the first cache write, the search before the tails) waits for its beforeBackground promise: the live store opens it once the start is published', async (t) => {
  const { base, manifest } = await demoHome(t);
  const cacheDir = path.join(base, 'cache');
  const cacheFile = sessionCacheFile(cacheDir, manifest.home);
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const reader = new HomeReader({ home: manifest.home, emit: () => undefined, now: () => NOW, host: 'test-host', cacheDir });
  // Opened first: stop waits for the background work, which waits for the gate (an assertion failing before it opens).
  t.after(async () => {
    release();
    await reader.stop();
  });
  await reader.start({ beforeBackground: gate });
  // Read, but not yet written down: the cache does not appear while the gate is shut.
  await assert.rejects(waitFor(() => existsSync(cacheFile), 'the cache file', 500), /timed out/, 'no cache write before the gate opens');
  release();
  await reader.background();
  assert.ok(existsSync(cacheFile), 'written once it opens');

  // Through the live store: its start resolves once the start is published, and the readers'
  // background work follows without anyone opening a gate.
  const store = createLiveStore([manifest.home], { now: () => NOW, host: 'test-host', cacheDir: path.join(base, 'cache-store') });
  t.after(() => store.stop());
  await store.start();
  assert.equal(store.getState().progress.get(path.resolve(manifest.home))?.done, true, 'published when start resolves');
  await store.background();
  assert.ok(existsSync(sessionCacheFile(path.join(base, 'cache-store'), manifest.home)), 'the store\'s readers wrote their cache');
});

/**
 * A home in a temp directory (removed after the test) with an empty incidents/request/, a writer of
 * incident files' text, a cache directory, and a clock a minute ahead: directories just made are
 * recorded only once RACY_DIR_MS old.
 */
function incidentHome(t: TestContext, name: string) {
  const base = mkdtempSync(path.join(os.tmpdir(), `loop-dash-${name}-`));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const home = path.join(base, 'home');
  const dir = path.join(home, 'incidents', 'request');
  mkdirSync(dir, { recursive: true });
  const body = (session: string, attempt = 1) => JSON.stringify({ v: 1, session, class: 'loop-request-wall-clock-ceiling', at: '2026-11-30T11:00:00.000Z', home, cwd: '/work/a', attempt });
  return { home, dir, body, cacheDir: path.join(base, 'cache'), now: () => Date.now() + 60_000 };
}

/** A watch backend that reports nothing: only what a test hints is read. */
const quietWatch: WatchFactory = () => ({ mode: 'native', addDir() {}, removeDir() {}, dirs: () => [], has: () => false, close() {} });

test('a watching start makes its incident directories\' bundles once its beforeBackground promise opens, not before (made before, they held up the big home\'s cold populated frame by ~20 ms), even when stopped then; the next start takes them whole', async (t) => {
  const { home, dir, body, cacheDir, now } = incidentHome(t, 'bundle-later');
  const files = ['a', 'b', 'c'].map((n) => path.join(dir, `s-${n}.json`));
  files.forEach((f, i) => writeFileSync(f, body(`s${i}`)));
  let done = false;
  const reader = new HomeReader({ home, emit: (events) => events.forEach((e) => e.type === 'progress' && e.done && (done = true)), watch: true, watchFactory: quietWatch, now, host: 'test-host', cacheDir });
  const entry = (key: string) => (reader as unknown as { cache: SessionCache<{ k: string; bundle?: IncidentBundle }> }).cache.get(key);
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  // Opened first: stop waits for the background work, which waits for the gate (an assertion failing before it opens).
  t.after(async () => {
    release();
    await reader.stop();
  });
  await reader.start({ beforeBackground: gate });
  assert.ok(done, 'the start is done (and sent)');
  await assert.rejects(waitFor(() => entry(dir + path.sep)?.bundle !== undefined, 'a bundle', 300), /timed out/, 'no bundle while the gate is shut');
  for (const f of files) assert.equal(entry(f)?.k, 'small', `${path.basename(f)} has its own entry meanwhile`);
  // Stopped as soon as the gate opens (a quit right after the populated frame): the bundle is
  // made all the same, and written.
  release();
  await reader.stop();
  const written = await cachedEntry<{ bundle?: IncidentBundle }>(cacheDir, home, dir + path.sep);
  assert.deepEqual([...(written?.bundle?.names ?? [])].sort(), files.map((f) => path.basename(f)), 'bundled once it opens, though stopped then');
  for (const f of files) assert.equal(await cachedEntry(cacheDir, home, f), undefined, `${path.basename(f)}'s own entry dropped`);

  // The next start takes the directory whole: not listed, no file in it opened, every incident shown.
  const shown: IncidentRecord[] = [];
  const warm = new HomeReader({ home, emit: (events) => events.forEach((e) => e.type === 'incident' && shown.push(e.record)), watch: false, now, host: 'test-host', cacheDir });
  const read = await readsDuring(() => pathsGivenTo('readdirSync', () => warm.start()));
  await warm.stop();
  assert.ok(!read.value.paths.has(dir), 'the next start does not list it');
  for (const f of files) assert.ok(!read.paths.has(f), `nor opens ${path.basename(f)}`);
  assert.deepEqual(shown.map((r) => [r.file, r.session]).sort(), files.map((f, i) => [f, `s${i}`]), 'and shows each incident from the bundle');
});

test('an incident\'s record keeps no raw fields, cold or warm, nor does the cache; opened, its fields are read from the file as it says them now, in their order', async (t) => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-incident-cache-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const home = path.join(base, 'home');
  const dir = path.join(home, 'incidents');
  mkdirSync(dir, { recursive: true });
  const at = '2026-11-30T11:00:00.000Z';
  const shapes: Record<string, Record<string, unknown>> = {
    // As loop-pi writes them, another order, a time as a number, integer-like keys, an unknown class.
    usual: { v: 1, session: 's-usual', class: 'loop-continuation-chain-exhausted', at, home, cwd: '/work/a' },
    reordered: { class: 'loop-provider-retry-exhausted', cwd: '/work/b', v: 2, at, session: 's-re', attempt: 3 },
    numericAt: { v: 1, session: 's-num', class: 'loop-inactivity-timeout', at: Date.parse(at), home },
    otherHome: { v: 1, session: 's-other', class: 'loop-inactivity-timeout', at, home: '/elsewhere', '2': 'two', '10': 'ten' },
    noV: { session: 's-nov', class: 'made-up-class', at, home, detail: { nested: [1, 2] }, weird: 42 },
  };
  // Whole seconds, so a rewrite can put the very same stat back (below).
  const mtime = Math.floor(NOW / 1000) - 60;
  for (const [name, body] of Object.entries(shapes)) {
    writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(body));
    utimesSync(path.join(dir, `${name}.json`), mtime, mtime);
  }
  const cacheDir = path.join(base, 'cache');
  const recordsOf = (batches: ReaderEvent[][]) => new Map(batches.flat().flatMap((e) => (e.type === 'incident' ? [[path.basename(e.record.file, '.json'), e.record] as const] : [])));
  const cold = recordsOf(await batchesOf(home, cacheDir));
  assert.equal(cold.size, Object.keys(shapes).length);
  for (const [name, r] of cold) assert.equal(r.raw, undefined, `${name}: no raw fields in the record`);
  assert.match(cold.get('noV')!.summary, /weird=42/, 'an unknown class\'s other fields are in its summary, made as the file is read');
  for (const name of Object.keys(shapes)) {
    const entry = await cachedEntry<{ record: Record<string, unknown> }>(cacheDir, home, path.join(dir, `${name}.json`));
    assert.ok(entry, `${name} is cached`);
    assert.equal('raw' in entry.record, false, `${name}: cached without raw fields`);
  }
  const warm = recordsOf(await batchesOf(home, cacheDir));
  for (const [name, r] of warm) assert.deepEqual(r, cold.get(name), `${name}: a warm start has the cold start's record`);

  // Opened: the file's fields, as JSON.parse gives them (integer-like keys first), as written.
  for (const [name, body] of Object.entries(shapes)) {
    const opened = await readIncidentFields(path.join(dir, `${name}.json`));
    assert.equal(opened.state === 'read' ? JSON.stringify(opened.fields) : opened.state, JSON.stringify(JSON.parse(JSON.stringify(body))), `${name}: read as written`);
  }
  // Rewritten in place with its stat put back: a warm start trusts the cache for the record, and
  // opening it shows what the file says now.
  const file = path.join(dir, 'usual.json');
  writeFileSync(file, readFileSync(file, 'utf8').replace('/work/', '/wark/'));
  utimesSync(file, mtime, mtime);
  assert.deepEqual(recordsOf(await batchesOf(home, cacheDir)).get('usual'), cold.get('usual'));
  const now = await readIncidentFields(file);
  assert.ok(now.state === 'read' && now.fields.cwd === '/wark/a', JSON.stringify(now));
});

test('a warm start takes an incident directory unchanged since the cache recorded it whole from its bundle (not listed, no file in it stat\'ed or read), with the records a cold start reads; after a file renamed over one or created, that file is read and the others answered by the old bundle; one rewritten in place while closed is seen by the first sweep, and one rewritten while the dashboard runs takes the trust from its bundle', async (t) => {
  const { home, dir: request, body, cacheDir, now } = incidentHome(t, 'incident-dirs');
  const top = path.dirname(request);
  for (let i = 0; i < 6; i++) writeFileSync(path.join(top, `s${i}-top.json`), body(`s${i}`, 1));
  // More than one part of records (BUNDLE_PART files each).
  for (let i = 0; i < BUNDLE_PART + 20; i++) writeFileSync(path.join(request, `s${i}-req.json`), body(`s${i}`, 1));
  const incidentFiles = (dir: string) => readdirSync(dir).filter((n) => n.endsWith('.json')).map((n) => path.join(dir, n));
  type Seen = { emitted: IncidentRecord[]; statted: Set<string>; listed: Set<string>; opened: Set<string> };
  /** A start (then stop): the incidents it emitted in order, and the paths statSync, readdirSync and openSync were asked for meanwhile. */
  const startOnce = async (more: Partial<HomeReaderOptions> = {}): Promise<Seen> => {
    const emitted: IncidentRecord[] = [];
    const reader = new HomeReader({ home, emit: (events) => events.forEach((e) => e.type === 'incident' && emitted.push(e.record)), watch: false, now, host: 'test-host', cacheDir, ...more });
    try {
      const read = await readsDuring(() => pathsGivenTo('readdirSync', () => pathsGivenTo('statSync', () => reader.start())));
      return { emitted, statted: read.value.value.paths, listed: read.value.paths, opened: read.paths };
    } finally {
      await reader.stop();
    }
  };
  const attempts = (s: Seen) => new Map(s.emitted.map((e) => [e.file, e.attempt]));
  const bundleOf = async (dir: string) => (await cachedEntry<{ k: string; ino: number; ctimeMs: number; bundle?: IncidentBundle }>(cacheDir, home, dir + path.sep))!;
  const all = [...incidentFiles(top), ...incidentFiles(request)];

  const cold = await startOnce();
  assert.deepEqual(cold.emitted.map((e) => e.file).sort(), [...all].sort(), 'a cold start reads every incident');
  for (const f of all) assert.ok(cold.statted.has(f) && cold.opened.has(f), `a cold start stats and reads ${path.basename(f)}`);
  for (const dir of [top, request]) {
    const entry = await bundleOf(dir);
    assert.deepEqual({ k: entry.k, ino: entry.ino, ctimeMs: entry.ctimeMs }, { k: 'dir', ino: statSync(dir).ino, ctimeMs: statSync(dir).ctimeMs }, `${path.relative(home, dir)} recorded`);
    assert.deepEqual([...entry.bundle!.names].sort(), incidentFiles(dir).map((f) => path.basename(f)).sort(), `${path.relative(home, dir)}: its bundle names every incident in it`);
    assert.deepEqual(entry.bundle!.dirs, dir === top ? ['request'] : [], 'and its subdirectories');
    for (const f of incidentFiles(dir)) assert.equal(await cachedEntry(cacheDir, home, f), undefined, `${path.basename(f)} has no entry of its own`);
  }
  assert.equal((await bundleOf(request)).bundle!.parts.length, 2, 'request/ in two parts of records');

  const warm = await startOnce();
  assert.deepEqual(
    [...warm.emitted].sort((a, b) => a.file.localeCompare(b.file)),
    [...cold.emitted].sort((a, b) => a.file.localeCompare(b.file)),
    'a warm start shows the records a cold start read',
  );
  for (const f of all) assert.ok(!warm.statted.has(f) && !warm.opened.has(f), `a warm start neither stats nor reads ${path.basename(f)}`);
  assert.ok(!warm.listed.has(top) && !warm.listed.has(request), 'nor lists their directories');
  assert.ok(warm.statted.has(top) && warm.statted.has(request), 'whose own stat it takes');

  // A file renamed over one in request/ (its ctime changes): every file there is stat'ed, the new
  // content is read and shown, the others are answered by the old bundle; the other directory is
  // still taken whole.
  const replaced = path.join(request, 's2-req.json');
  writeFileSync(replaced + '.tmp', body('s2', 7));
  renameSync(replaced + '.tmp', replaced);
  const renamed = await startOnce();
  for (const f of incidentFiles(request)) assert.ok(renamed.statted.has(f), `${path.basename(f)} stat'ed after the rename`);
  assert.deepEqual([...renamed.opened].filter((f) => f.startsWith(top)), [replaced], 'only the renamed file is read');
  for (const f of incidentFiles(top)) assert.ok(!renamed.statted.has(f), `${path.basename(f)} still taken from its bundle`);
  assert.equal(attempts(renamed).get(replaced), 7, 'the renamed file\'s new record');
  assert.equal(attempts(renamed).size, all.length, 'every incident shown');
  const again = await startOnce();
  assert.ok(incidentFiles(request).every((f) => !again.statted.has(f) && !again.opened.has(f)), 'request/ is bundled again');
  assert.equal(attempts(again).get(replaced), 7);
  // A file created there: seen by the listing (read, stat'ed).
  const created = path.join(top, 's9-top.json');
  writeFileSync(created, body('s9', 1));
  const withNew = await startOnce();
  assert.equal(attempts(withNew).get(created), 1, 'the new file is read');
  assert.deepEqual([...withNew.opened].filter((f) => f.startsWith(top)), [created], 'and only it');

  // Rewritten in place while the dashboard was closed (incident files are not, SPEC §3.2): the
  // start shows the bundle's record, and its first backstop sweep (at once with a fixed interval)
  // stats every file and reads the new content.
  await startOnce(); // bundles top/ as it is now (the new file changed its ctime)
  const inPlace = path.join(top, 's3-top.json');
  writeFileSync(inPlace, body('s3', 12345));
  const swept = await startOnce({ watch: true, reconcileMs: 60_000 });
  assert.deepEqual(swept.emitted.filter((e) => e.file === inPlace).map((e) => e.attempt), [1, 12345], 'the bundle\'s record first, then the sweep\'s read');
  // The sweep's read took the trust from top/'s bundle: the next start stats top/'s files, reads
  // that one alone, and bundles top/ again; the one after takes it whole.
  const next = await startOnce();
  assert.ok(next.statted.has(inPlace), 'the next start stats the file read by the sweep');
  assert.deepEqual([...next.opened].filter((f) => f.startsWith(top)), [inPlace], 'and reads it alone');
  assert.deepEqual(next.emitted.filter((e) => e.file === inPlace).map((e) => e.attempt), [12345], 'and shows what it now says');
  const after = await startOnce();
  assert.ok(!after.statted.has(inPlace) && !after.opened.has(inPlace), 'taken from the bundle again after that');
  assert.deepEqual(after.emitted.filter((e) => e.file === inPlace).map((e) => e.attempt), [12345]);

  // Rewritten in place while the dashboard runs (same size: only its mtime tells): read then, and
  // the next start does not take its directory whole.
  const live = path.join(request, 's4-req.json');
  const liveSeen: IncidentRecord[] = [];
  const running = new HomeReader({ home, emit: (events) => events.forEach((e) => e.type === 'incident' && liveSeen.push(e.record)), watch: true, now, host: 'test-host', cacheDir });
  try {
    await running.start();
    writeFileSync(live, body('s4', 8));
    await waitFor(() => liveSeen.some((r) => r.file === live && r.attempt === 8), 'the rewrite is read', 10_000);
  } finally {
    await running.stop();
  }
  const afterLive = await startOnce();
  assert.ok(afterLive.statted.has(live), 'the next start stats request/\'s files');
  assert.deepEqual([...afterLive.opened].filter((f) => f.startsWith(top)), [live], 'and reads that file alone (read while it ran, without a walk stat, it was not cached); the others are the old bundle\'s');
  assert.equal(attempts(afterLive).get(live), 8, 'what it now says');
  assert.equal(attempts(afterLive).size, all.length + 1);
});

test('an incident directory holding a file without a clean read has no bundle: its clean files are cached each on their own (those of an old bundle too), and the bad one is read and reported at every start', async (t) => {
  const { home, dir, body, cacheDir, now } = incidentHome(t, 'incident-unbundled');
  const good = Array.from({ length: 4 }, (_, i) => path.join(dir, `s${i}-req.json`));
  for (const f of good) writeFileSync(f, body(path.basename(f).slice(0, 2)));
  const startOnce = async () => {
    const incidents: string[] = [];
    const warned = new Set<string>();
    const reader = new HomeReader({ home, emit: (events) => events.forEach((e) => (e.type === 'incident' ? incidents.push(e.record.file) : e.type === 'warnings' && e.warnings.length > 0 && warned.add(e.file))), watch: false, now, host: 'test-host', cacheDir });
    try {
      const { paths: opened } = await readsDuring(() => reader.start());
      return { incidents: incidents.sort(), warned, opened: [...opened].filter((f) => f.startsWith(dir)).sort() };
    } finally {
      await reader.stop();
    }
  };
  await startOnce();
  const entry = await cachedEntry<{ bundle?: unknown }>(cacheDir, home, dir + path.sep);
  assert.ok(entry?.bundle, 'clean: bundled');
  // A file that is not JSON joins them (the directory changes).
  const bad = path.join(dir, 's9-req.json');
  writeFileSync(bad, '{ not json');
  utimesSync(bad, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
  for (let round = 1; round <= 3; round++) {
    const s = await startOnce();
    assert.deepEqual(s.incidents, [...good].sort(), `start ${round}: the clean incidents shown`);
    assert.ok(s.warned.has(bad), `start ${round}: the bad file reported`);
    assert.deepEqual(s.opened, [bad], `start ${round}: only the bad file is read`);
    assert.equal((await cachedEntry<{ bundle?: unknown }>(cacheDir, home, dir + path.sep))?.bundle, undefined, `start ${round}: no bundle`);
    for (const f of good) assert.equal((await cachedEntry<{ k: string }>(cacheDir, home, f))?.k, 'small', `start ${round}: ${path.basename(f)} cached on its own`);
  }
  // Made clean again: bundled again.
  writeFileSync(bad, body('s9'));
  await startOnce();
  assert.ok((await cachedEntry<{ bundle?: unknown }>(cacheDir, home, dir + path.sep))?.bundle, 'clean again: bundled');
  const last = await startOnce();
  assert.deepEqual(last.opened, [], 'and nothing read');
  assert.deepEqual(last.incidents, [...good, bad].sort());
});

test('an incident of a bundled directory replaced by one that does not parse is reported at every later start, never shown with its old record; one rewritten while a start runs (after the walk) is shown as rewritten by the next start, whether its directory was taken whole or walked', async (t) => {
  const { home, dir, body, cacheDir, now } = incidentHome(t, 'incident-stale');
  for (const n of ['a', 'b', 'c']) writeFileSync(path.join(dir, `s-${n}.json`), body(n, 1));
  const x = path.join(dir, 's-a.json');
  /** A start: what it shows of x (its attempt, or its warning). `during` runs at each stage. */
  const start = async (more: Partial<HomeReaderOptions> = {}, during?: (stage: string, reader: HomeReader) => void) => {
    let shown: unknown;
    let warned: string | null = null;
    const reader: HomeReader = new HomeReader({
      home,
      emit: (events) => events.forEach((e) => (e.type === 'incident' && e.record.file === x ? (shown = e.record.attempt) : e.type === 'warnings' && e.file === x && (warned = e.warnings[0]?.message ?? null))),
      watch: false,
      now,
      host: 'test-host',
      cacheDir,
      ...more,
      onStage: (stage) => during?.(stage, reader),
    });
    try {
      await reader.start();
    } finally {
      await reader.stop();
    }
    return { shown, warned };
  };
  await start();
  // Replaced (a rename: the directory changes) by text that does not parse.
  writeFileSync(x + '.tmp', '{ not json');
  renameSync(x + '.tmp', x);
  for (let round = 1; round <= 3; round++) {
    const s = await start();
    assert.equal(s.shown, undefined, `start ${round}: no record shown for it`);
    assert.match(s.warned ?? '', /invalid JSON/, `start ${round}: its problem reported`);
  }
  const swept = await start({ watch: true, reconcileMs: 60_000 });
  assert.equal(swept.shown, undefined, 'nor after a sweep');
  assert.equal((await start()).shown, undefined, 'nor at the start after that');

  // Rewritten in place while a start runs, after its walk (a watcher's read; none here but this
  // one), in a fresh home each time: its directory taken whole, or walked (changed since).
  for (const changed of [false, true]) {
    rmSync(home, { recursive: true, force: true });
    rmSync(cacheDir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const n of ['a', 'b', 'c']) writeFileSync(path.join(dir, `s-${n}.json`), body(n, 1));
    await start();
    if (changed) writeFileSync(path.join(dir, 's-new.json'), body('new', 1));
    const during = await start({ watch: true, watchFactory: quietWatch }, (stage, reader) => {
      if (stage !== 'tails') return;
      writeFileSync(x, body('a', 2)); // in place, the same size
      reader.hint(x);
    });
    const how = changed ? 'walked' : 'taken';
    assert.equal(during.shown, 2, `${how}: the start shows the rewrite`);
    assert.equal((await start()).shown, 2, `${how}: so does the next start`);
    assert.equal((await start()).shown, 2, `${how}: and the one after`);
  }
});

test('a bundle damaged in the cache (a part of records that does not deserialise) costs its directory a read afresh, never a start: every incident is shown, and the next start bundles it again', async (t) => {
  const { home, dir, body, cacheDir, now } = incidentHome(t, 'incident-damaged');
  const files = Array.from({ length: BUNDLE_PART + 5 }, (_, i) => path.join(dir, `s${i}-req.json`));
  files.forEach((f, i) => writeFileSync(f, body(`s${i}`, i)));
  const startOnce = async () => {
    const shown = new Map<string, unknown>();
    const reader = new HomeReader({ home, emit: (events) => events.forEach((e) => e.type === 'incident' && shown.set(e.record.file, e.record.attempt)), watch: false, now, host: 'test-host', cacheDir });
    try {
      const { paths } = await readsDuring(() => reader.start());
      return { shown, read: [...paths].filter((f) => f.startsWith(dir)) };
    } finally {
      await reader.stop();
    }
  };
  const cold = await startOnce();
  assert.equal(cold.shown.size, files.length);
  // The second part's bytes overwritten on disk, as a damaged cache would hold them.
  const cache = await SessionCache.open<{ k: string; bundle?: IncidentBundle }>(cacheDir, home, CACHE_WRITER);
  await cache.loadRest();
  const entry = cache.get(dir + path.sep)!;
  assert.equal(entry.bundle?.parts.length, 2, 'bundled in two parts');
  const broken = Buffer.from(entry.bundle!.parts[1]!);
  broken.fill(0xff, 2);
  cache.set(dir + path.sep, { ...entry, bundle: { ...entry.bundle!, parts: [entry.bundle!.parts[0]!, broken] } });
  await cache.save();
  const damaged = await startOnce();
  assert.deepEqual(damaged.shown, cold.shown, 'every incident shown, with its record');
  assert.equal(damaged.read.length, files.length, 'its directory read afresh');
  const next = await startOnce();
  assert.deepEqual(next.shown, cold.shown);
  assert.equal(next.read.length, 0, 'the next start reads none of them (each cached on its own)');
  const after = await startOnce();
  assert.equal(after.read.length, 0);
  assert.equal((await cachedEntry<{ bundle?: IncidentBundle }>(cacheDir, home, dir + path.sep))?.bundle?.parts.length, 2, 'and bundled again');
});

/**
 * A demo home and its cache directory, with a clock an hour ahead: the home was just written, and
 * a directory is recorded only once its last change is RACY_DIR_MS old — so, however long the test
 * takes, its directories are; the same time at every start gives the same model.
 */
async function recordableHome(t: { after: (fn: () => void) => void }): Promise<{ base: string; home: string; cacheDir: string; later: () => number }> {
  const { base, manifest } = await demoHome(t);
  const at = Date.now() + 3_600_000;
  return { base, home: manifest.home, cacheDir: path.join(base, 'cache'), later: () => at };
}

test('a warm start takes the listing of each directory under sessions/, tmp/async-subagent-runs/ and loop-wait/ unchanged since the cache recorded it instead of reading it, with the model of a start without a cache; an entry created, removed or renamed over is seen; a directory changed too recently, or holding a symbolic link, is read again at the next start', async (t) => {
  const { home, cacheDir, later } = await recordableHome(t);
  const listedRoots = ['sessions', path.join('tmp', 'async-subagent-runs'), 'loop-wait'].map((r) => path.join(home, r));
  const listed = (paths: Set<string>) => new Set([...paths].filter((p) => listedRoots.some((r) => p === r || p.startsWith(r + path.sep))));
  /** A start with the cache: its model, and the directories under the listed roots it read. */
  const start = async (now: () => number = later) => {
    const { value, paths } = await pathsGivenTo('readdirSync', () => modelAfterStart(home, { cacheDir, now }));
    return { model: value, read: listed(paths), all: paths };
  };
  const uncached = () => modelAfterStart(home, { now: later });
  const sorted = (s: Set<string>) => [...s].sort();

  const cold = await start();
  for (const dir of ['sessions', 'tmp/async-subagent-runs/0ef1fa8b', 'loop-wait']) assert.ok(cold.read.has(path.join(home, dir)), `a cold start reads ${dir}`);
  const cacheFile = sessionCacheFile(cacheDir, home);
  const written = statSync(cacheFile).mtimeMs;
  const warm = await start();
  assert.deepEqual(sorted(warm.read), [], 'a warm start reads none of them');
  assert.equal(statSync(cacheFile).mtimeMs, written, 'and, nothing having changed, does not write the cache');
  // Polling forced (a network file system, whose client may cache a directory's ctime): every
  // directory is read, and every incident stat'ed.
  const polled = await pathsGivenTo('statSync', () => pathsGivenTo('readdirSync', () => modelAfterStart(home, { cacheDir, now: later, polling: true })));
  assert.deepEqual(sorted(listed(polled.value.paths)), sorted(cold.read), 'polling: every directory is read');
  const incident = readdirSync(path.join(home, 'incidents', 'request')).map((n) => path.join(home, 'incidents', 'request', n))[0]!;
  assert.ok(polled.paths.has(incident), 'and the incidents stat\'ed');
  assert.deepEqual(polled.value.value, cold.model, 'with the same model');
  assert.ok(warm.all.has(path.join(home, 'loop-dash', 'checkpoints')), 'and still reads loop-dash/');
  assert.ok(!warm.all.has(path.join(home, 'incidents', 'request')), 'but not incidents/request/, taken from its bundle');
  assert.deepEqual(warm.model, cold.model, 'with the same model');

  // A session file created, a lane's run directory removed, a lane status rewritten by rename:
  // only the three directories they changed are read, and the model is the one a start without a
  // cache builds.
  const rootDir = path.join(home, 'sessions', readdirSync(path.join(home, 'sessions')).find((n) => n.includes('night-run'))!);
  const someSession = readdirSync(rootDir).find((n) => n.endsWith('.jsonl'))!;
  writeFileSync(path.join(rootDir, '2026-11-30T11-59-00-000Z_0c0ffee0-0000-4000-8000-000000000001.jsonl'), readFileSync(path.join(rootDir, someSession)));
  const runs = path.join(home, 'tmp', 'async-subagent-runs');
  rmSync(path.join(runs, '02f445a0'), { recursive: true });
  const runDir = path.join(runs, '0ef1fa8b');
  const status = JSON.parse(readFileSync(path.join(runDir, 'status.json'), 'utf8')) as { state: string; endedAt?: number };
  assert.notEqual(status.state, 'failed');
  writeFileSync(path.join(runDir, 'status.json.tmp'), JSON.stringify({ ...status, state: 'failed', endedAt: NOW }));
  renameSync(path.join(runDir, 'status.json.tmp'), path.join(runDir, 'status.json'));
  // A new lane directory with a session in it, under a root's directory of lanes.
  const repoRoot = path.join(home, 'sessions', readdirSync(path.join(home, 'sessions')).find((n) => n.endsWith('-repo--'))!);
  const lanes = path.join(repoRoot, readdirSync(repoRoot, { withFileTypes: true }).find((e) => e.isDirectory())!.name);
  const someLane = path.join(lanes, readdirSync(lanes)[0]!);
  const newLane = path.join(lanes, 'c0ffee01');
  mkdirSync(newLane);
  writeFileSync(path.join(newLane, '2026-11-30T11-58-00-000Z_0c0ffee0-0000-4000-8000-000000000002.jsonl'), readFileSync(path.join(someLane, readdirSync(someLane).find((n) => n.endsWith('.jsonl'))!)));
  const changed = await start();
  assert.deepEqual(sorted(changed.read), [rootDir, runDir, runs, lanes, newLane].sort(), 'only the changed directories (and the new one) are read');
  const fresh = await uncached();
  assert.deepEqual(changed.model, fresh, 'the model of a start without a cache');
  assert.notDeepEqual(fresh, cold.model, 'which differs from the first one');
  assert.deepEqual(sorted((await start()).read), [], 'and they are recorded again');

  // A directory changed within RACY_DIR_MS of the start is read, and read again at the next start.
  writeFileSync(path.join(rootDir, 'notes.txt'), 'not a session');
  const racy = await start(() => Date.now());
  assert.ok(racy.read.has(rootDir), 'read after its change');
  assert.ok((await start()).read.has(rootDir), 'not recorded: read again by the next start');
  assert.ok(!(await start()).read.has(rootDir), 'recorded by that one');

  // A symbolic link in a directory: read at every start (the link is followed by a stat each walk).
  symlinkSync(path.join(runDir, 'status.json'), path.join(runDir, 'linked.json'));
  let savedAt = 0;
  for (let i = 1; i <= 2; i++) {
    const linked = await start();
    assert.deepEqual(sorted(linked.read), [runDir], `start ${i} after the link reads its directory`);
    assert.deepEqual(linked.model, await uncached(), 'with the model of a start without a cache');
    if (i === 2) assert.equal(statSync(cacheFile).mtimeMs, savedAt, 'the same tree again: the cache is not written for it');
    savedAt = statSync(cacheFile).mtimeMs;
  }
});

test('a start sends no warnings for files that have none (nothing was shown to clear); a file\'s warnings are sent, and cleared once it is fixed', async (t) => {
  const { base, manifest } = await demoHome(t);
  const bad = path.join(manifest.home, 'tmp', 'async-subagent-runs', 'zzbad', 'status.json');
  mkdirSync(path.dirname(bad));
  writeFileSync(bad, '{"runId":');
  const batches = await batchesOf(manifest.home, path.join(base, 'cache'));
  const warnings = batches.flat().filter((e): e is Extract<ReaderEvent, { type: 'warnings' }> => e.type === 'warnings');
  assert.deepEqual(warnings.filter((e) => e.warnings.length === 0).map((e) => e.file), [], 'no empty list sent');
  assert.ok(warnings.some((e) => e.file === bad && e.warnings.length > 0), 'the bad lane status\'s warning is sent');
  // Fixed while watched: an empty list clears it.
  let state: ModelState = initialModelState();
  const reader = new HomeReader({ home: manifest.home, emit: (events) => (state = reduceEvents(state, events)), watch: true, now: () => NOW, host: 'test-host' });
  t.after(() => reader.stop());
  await reader.start();
  await waitFor(() => (state.warnings.get(bad)?.length ?? 0) > 0, 'the bad lane status\'s warning', 5_000);
  writeFileSync(bad + '.tmp', JSON.stringify({ runId: 'zzbad', sessionId: null, state: 'complete', startedAt: NOW - 60_000, endedAt: NOW }));
  renameSync(bad + '.tmp', bad);
  await waitFor(() => !state.warnings.has(bad), 'its warning cleared once fixed', 5_000);
});

test('a lane status\'s and a checkpoint\'s session paths under the home are cached relative to it, and a warm start shows every record exactly as a start without a cache reads it', async (t) => {
  // Directories recorded, so a start with nothing changed writes no cache.
  const { base, home, cacheDir, later: now } = await recordableHome(t);
  const run = path.join(home, 'tmp', 'async-subagent-runs', '0ef1fa8b', 'status.json');
  const status = JSON.parse(readFileSync(run, 'utf8')) as { sessionId: string; sessionFile: string; steps: { sessionFile: string | null }[] };
  // Paths under the home, one outside it and one that only begins like it: only the first are shortened.
  const outside = path.join(base, 'elsewhere', 'x.jsonl');
  const lookalike = `${home}-other/y.jsonl`;
  // 52 steps: paths 2 + 48 on have no bit of their own and are cached as they are.
  const under = (i: number) => ({ ...status.steps[0]!, sessionFile: path.join(home, 'sessions', `lane-${i}.jsonl`) });
  status.steps = [{ ...status.steps[0]!, sessionFile: outside }, { ...status.steps[0]!, sessionFile: lookalike }, ...Array.from({ length: 50 }, (_, i) => under(i))];
  writeFileSync(run, JSON.stringify(status));
  const cold = await modelAfterStart(home, { cacheDir, now });
  const entry = await cachedEntry<{ homeOmitted?: number; record: typeof status }>(cacheDir, home, run);
  assert.ok(status.sessionId.startsWith(home + path.sep) && status.sessionFile.startsWith(home + path.sep));
  assert.equal(entry?.record.sessionId, path.relative(home, status.sessionId), 'sessionId cached relative to the home');
  assert.equal(entry?.record.sessionFile, path.relative(home, status.sessionFile), 'sessionFile too');
  assert.deepEqual(entry?.record.steps.slice(0, 2).map((s) => s.sessionFile), [outside, lookalike], 'a path outside the home is cached as it is');
  assert.equal(entry?.record.steps[2]?.sessionFile, path.join('sessions', 'lane-0.jsonl'), 'a step\'s path under the home relative to it');
  assert.equal(entry?.record.steps[47]?.sessionFile, path.join('sessions', 'lane-45.jsonl'), 'up to the 48th step');
  assert.equal(entry?.record.steps[48]?.sessionFile, path.join(home, 'sessions', 'lane-46.jsonl'), 'the 49th step\'s path is cached as it is');
  const checkpoint = readdirSync(path.join(home, 'loop-dash', 'checkpoints')).map((n) => path.join(home, 'loop-dash', 'checkpoints', n))[0]!;
  const cp = await cachedEntry<{ homeOmitted?: number; record: { checkpoint: { sessionFile: string } } }>(cacheDir, home, checkpoint);
  assert.equal(cp?.homeOmitted, 1, 'a checkpoint\'s sessionFile is cached relative to the home');
  assert.ok(!cp.record.checkpoint.sessionFile.startsWith(path.sep));
  const warm = await modelAfterStart(home, { cacheDir, now });
  assert.deepEqual(warm, cold, 'a warm start has the model of the cold one');
  assert.deepEqual(warm, await modelAfterStart(home, { now }), 'and of a start without a cache');
  // A new incident makes the next start write the cache again, with the records it took up (the
  // paths put back) compacted anew: still relative, and the start after reads them as written.
  const cacheFile = sessionCacheFile(cacheDir, home);
  const written = statSync(cacheFile).mtimeMs;
  await modelAfterStart(home, { cacheDir, now });
  assert.equal(statSync(cacheFile).mtimeMs, written, 'a start with nothing changed writes no cache');
  writeFileSync(path.join(home, 'incidents', 'zz-new.json'), JSON.stringify({ v: 1, session: 's-new', class: 'loop-arm-refused', at: '2026-11-30T11:00:00.000Z', cwd: '/w', reason: 'r' }));
  await modelAfterStart(home, { cacheDir, now });
  assert.notEqual(statSync(cacheFile).mtimeMs, written, 'the cache was written again');
  assert.equal((await cachedEntry<{ record: typeof status }>(cacheDir, home, run))?.record.sessionId, path.relative(home, status.sessionId), 'still relative');
  assert.deepEqual(await modelAfterStart(home, { cacheDir, now }), await modelAfterStart(home, { now }), 'the start after shows the records as written');
});

test('a warm start takes an unchanged state log\'s events from the cache without opening it, with the same model as a read; an appended one is read again', async (t) => {
  const { base, manifest } = await demoHome(t);
  const logs: string[] = [];
  const find = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) find(full);
      else if (/^state-.*\.jsonl$/.test(e.name)) logs.push(full);
    }
  };
  find(manifest.repoDir);
  assert.ok(logs.length >= 2, `the demo has state logs (${logs.length})`);
  const cacheDir = path.join(base, 'cache-logs');
  /** A start's model, and the state logs it opened (fs.openSync counted; small-jsonl.ts imports it by name). */
  const start = async (more: Partial<HomeReaderOptions> = {}) => {
    const { value: model, paths } = await pathsGivenTo('openSync', () => modelAfterStart(manifest.home, more));
    return { model, opened: logs.filter((f) => paths.has(f)) };
  };
  const uncached = await start();
  // The logs of the roots whose continuation names a report (not every demo root's).
  const followed = uncached.opened;
  assert.ok(followed.length >= 2, `a start without a cache reads the state logs (${followed.length} of ${logs.length})`);
  const cold = await start({ cacheDir });
  assert.deepEqual(cold.model, uncached.model);
  const warm = await start({ cacheDir });
  assert.deepEqual(warm.opened, [], 'a warm start opens no unchanged state log');
  assert.deepEqual(warm.model, uncached.model, 'and has the model a read gives');

  // An event appended to one: that log is read again (in full), the others still come from the cache.
  const grown = followed[0]!;
  writeFileSync(grown, JSON.stringify({ v: 1, seq: 999, ts: '2026-11-30T11:59:00Z', ev: 'heartbeat', by: 'root', at: '2026-11-30T11:59:00Z' }) + '\n', { flag: 'a' });
  const after = await start({ cacheDir });
  assert.deepEqual(after.opened, [grown], 'only the appended log is opened');
  assert.deepEqual(after.model, (await start()).model, 'the model a read gives, with the appended event');
  const again = await start({ cacheDir });
  assert.deepEqual(again.opened, [], 'and remembered again');

  // An entry an older build saved, without the bytes before its offset: read afresh, not adopted.
  const cache = await SessionCache.open<Record<string, unknown>>(cacheDir, manifest.home, CACHE_WRITER);
  await cache.loadRest();
  const old = cache.get(grown);
  assert.equal(typeof old?.tail, 'string', 'the entry keeps the bytes before its offset');
  const { tail: _dropped, ...withoutTail } = old!;
  cache.set(grown, withoutTail);
  await cache.save();
  cache.close();
  const older = await start({ cacheDir });
  assert.deepEqual(older.opened, [grown], 'the entry without them is read afresh');
  assert.deepEqual(older.model, after.model);
  const renewed = await start({ cacheDir });
  assert.deepEqual(renewed.opened, [], 'and remembered again, with them');
});

