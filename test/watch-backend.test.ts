/**
 * FallbackBackend (src/readers/watch-backend.ts): past the inotify limit, the native watches the
 * kernel gave are kept and only the refused directories — and the files directly in them — are
 * polled. The native backend underneath is the real one; a wrapper refuses a watch once `limit`
 * are held, as the kernel does with ENOSPC (reliability-c.test.ts runs the same against a real
 * kernel limit).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FallbackBackend, PollingBackend, REBALANCE_MS, type FileStamp, type WatchFactory } from '../src/readers/watch-backend.js';
import { limitedFactory, refusingFactory, type Made } from './support/fault-watch.js';
import { waitFor } from './support/wait-for.js';

/** Directories `d<i>` under `root` with `sizes[i]` session files each (`s<j>.jsonl`). */
function dirsWithFiles(root: string, sizes: number[]): { dirs: string[]; filesOf: string[][] } {
  const dirs = sizes.map((_, i) => path.join(root, `d${i}`));
  const filesOf = dirs.map((d, i) => {
    fs.mkdirSync(d);
    return Array.from({ length: sizes[i]! }, (_, j) => {
      const f = path.join(d, `s${j}.jsonl`);
      fs.writeFileSync(f, '{}\n');
      return f;
    });
  });
  return { dirs, filesOf };
}

function stampOf(file: string): FileStamp {
  const st = fs.statSync(file);
  return { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
}

/**
 * A temp root with directories of `sizes` files, the files known as the reader would know them,
 * and a FallbackBackend over them whose native watches are refused past `limit` (or by `factory`);
 * closed and removed when the test ends.
 */
function fixture(t: TestContext, sizes: number[], opts: { limit?: number; factory?: WatchFactory; pollMs?: number; now?: () => number } = {}) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ld-fallback-'));
  const { dirs, filesOf } = dirsWithFiles(root, sizes);
  const known = new Map<string, FileStamp>(filesOf.flat().map((f) => [f, stampOf(f)]));
  const limit = { n: opts.limit ?? 3, refused: 0 };
  const made: Made = { polling: [], pollers: [] };
  const hints: string[] = [];
  const degraded: string[] = [];
  const recovered: number[] = [];
  const backend = new FallbackBackend(
    opts.factory ?? limitedFactory(limit, made),
    { changed: (f) => hints.push(f), failed: () => assert.fail('the fallback handles refusals itself') },
    { polling: false, pollMs: opts.pollMs ?? 100, files: () => known.entries(), ...(opts.now ? { now: opts.now } : {}) },
    (err) => degraded.push(err.code ?? ''),
    () => recovered.push(degraded.length),
  );
  t.after(() => {
    backend.close();
    fs.rmSync(root, { recursive: true, force: true });
  });
  return { root, dirs, filesOf, known, limit, made, hints, degraded, recovered, backend };
}

test('FallbackBackend: past the limit the refused directories alone are polled, with only their files; native hints go on; a watch given back is used again', async (t) => {
  const { root, dirs, filesOf, limit, made, hints, degraded, backend } = fixture(t, [1, 1, 1, 1, 1]);
  const files = filesOf.flat();
  for (const d of dirs) backend.addDir(d);
  assert.deepEqual(degraded, ['ENOSPC'], 'told of the first refusal, once');
  assert.equal(limit.refused, 1, 'after a refusal, new directories go to the sweep without asking the kernel again');
  assert.equal(backend.polledDirs(), 2);
  assert.equal(backend.mode, 'native');
  assert.deepEqual(backend.dirs().sort(), [...dirs].sort());
  for (const d of dirs) assert.ok(backend.has(d), d);
  assert.equal(made.polling.length, 1, 'one polling sweep');
  // The sweep is given the files of the polled directories only, not every file known.
  assert.deepEqual([...made.polling[0]!.files()].map(([f]) => f), [files[3], files[4]]);

  // An append in a natively watched directory and one in a polled directory are both hinted.
  fs.appendFileSync(files[0]!, '{"a":1}\n');
  fs.appendFileSync(files[4]!, '{"b":1}\n');
  await waitFor(() => hints.includes(files[0]!) && hints.includes(files[4]!), () => `hints for both appends (got ${JSON.stringify(hints)})`, 5_000);

  // A native watch given back: the next new directory is watched natively again.
  backend.removeDir(dirs[1]!);
  const d5 = path.join(root, 'd5');
  fs.mkdirSync(d5);
  backend.addDir(d5);
  assert.equal(backend.polledDirs(), 2, 'd5 took the freed native watch');
  assert.ok(backend.has(d5) && !backend.has(dirs[1]!));
  // A polled directory removed leaves the sweep.
  backend.removeDir(dirs[4]!);
  assert.equal(backend.polledDirs(), 1);
  assert.deepEqual([...made.polling[0]!.files()].map(([f]) => f), [files[3]]);
  backend.close();
  assert.deepEqual(backend.dirs(), [], 'closed: no watch and no sweep left');
});

test('FallbackBackend: with every watch refused from the start (EMFILE: no inotify descriptor) the whole home is polled, and still followed', async (t) => {
  const { root, dirs, filesOf, hints, degraded, backend } = fixture(t, [1], { factory: refusingFactory('EMFILE', { closed: true, count: 0 }) });
  const f = filesOf[0]![0]!;
  backend.addDir(root);
  backend.addDir(dirs[0]!);
  assert.deepEqual(degraded, ['EMFILE']);
  assert.equal(backend.polledDirs(), 2);
  fs.appendFileSync(f, '{"a":1}\n');
  await waitFor(() => hints.includes(f), 'the append, seen by the sweep', 5_000);
});

test('FallbackBackend.rebalance: the watches go to the directories with the most files, and nothing changed in a directory while it moves is missed', async (t) => {
  // d0–d2: a file each, watched first; d3: 12 files and d4: one, both past the limit of 3. No
  // sweep in this test (60 s): what is hinted comes from the trade's last look.
  const { dirs, filesOf, made, hints, backend } = fixture(t, [1, 1, 1, 12, 1], { pollMs: 60_000 });
  for (const d of dirs) backend.addDir(d);
  assert.equal(backend.polledDirs(), 2);
  const dense = dirs[3]!;
  assert.ok(!backend.dirs().slice(0, 3).includes(dense), 'the dense directory came last and is polled');
  // Changed while polled and before any sweep: an append and a new file.
  fs.appendFileSync(filesOf[3]![5]!, '{"a":1}\n');
  const created = path.join(dense, 'new.jsonl');
  fs.writeFileSync(created, '{}\n');
  assert.equal(backend.rebalance(), 1, 'one trade: d3 for a directory of one file');
  assert.equal(backend.polledDirs(), 2);
  const polled = [...made.polling[0]!.files()].map(([f]) => path.dirname(f)).sort();
  assert.ok(!polled.includes(dense), 'd3 is watched now, its 12 files no longer stat’ed every sweep');
  assert.equal(polled.length, 2, 'two one-file directories polled');
  assert.deepEqual(hints.sort(), [filesOf[3]![5]!, created].sort(), 'the append and the new file made while it moved are hinted');
  assert.equal(backend.rebalance(), 0, 'balanced: nothing more to trade');
  // The watch works: an append in d3 is hinted by the kernel (no sweep runs).
  hints.length = 0;
  fs.appendFileSync(filesOf[3]![0]!, '{"b":1}\n');
  await waitFor(() => hints.includes(filesOf[3]![0]!), 'the native hint for d3', 5_000);
});

test('FallbackBackend.rebalance: a polled directory changed in the last 10 minutes takes the watch of one unchanged since, never of one with more files', async (t) => {
  const now = Date.parse('2026-12-07T08:00:00Z');
  const minutesAgo = (m: number) => now - m * 60_000;
  // Lanes: a directory and a session each. d0–d2 watched (limit 3), d3 and d4 polled.
  const { dirs, filesOf, known, made, backend } = fixture(t, [1, 1, 1, 1, 1], { pollMs: 60_000, now: () => now });
  const files = filesOf.flat();
  // d1 holds a second, old file: it is no lane to give away for a lane of one file.
  const extra = path.join(dirs[1]!, 'old.jsonl');
  fs.writeFileSync(extra, '{}\n');
  // What the reader last read: d0, d1 and d3 unchanged for hours, d2 and d4 just now.
  const mtimes = [minutesAgo(300), minutesAgo(200), minutesAgo(1), minutesAgo(400), minutesAgo(2)];
  files.forEach((f, i) => known.set(f, { ...stampOf(f), mtimeMs: mtimes[i]! }));
  known.set(extra, { ...stampOf(extra), mtimeMs: minutesAgo(100) });
  for (const d of dirs) backend.addDir(d);
  const watched = () => dirs.filter((d) => backend.has(d) && !made.pollers[0]!.has(d));
  assert.deepEqual(watched(), dirs.slice(0, 3));
  assert.equal(backend.rebalance(), 1, 'd4 (changed 2 minutes ago) takes the watch of d0 (unchanged for 5 hours)');
  assert.deepEqual(watched(), [dirs[1], dirs[2], dirs[4]]);
  assert.equal(backend.rebalance(), 0, 'd3, the one left polled, is unchanged for hours: nothing to gain');
  // d3 changes now, but the only watched directory unchanged for 10 minutes (d1) has two files
  // to d3's one: the sweep would grow.
  known.set(files[3]!, { ...known.get(files[3]!)!, mtimeMs: minutesAgo(0) });
  assert.equal(backend.rebalance(), 0, 'd1 is not given away for a directory with fewer files');
  assert.deepEqual(watched(), [dirs[1], dirs[2], dirs[4]]);
  // d1's extra file removed: now d3 takes its watch.
  known.delete(extra);
  assert.equal(backend.rebalance(), 1);
  assert.deepEqual(watched(), [dirs[2], dirs[3], dirs[4]]);
});

test('FallbackBackend.rebalance: a trade whose directory went away meanwhile leaves the freed watch to the next directory', async (t) => {
  const { root, dirs, limit, made, backend } = fixture(t, [1, 1, 1, 12], { pollMs: 60_000 });
  for (const d of dirs) backend.addDir(d);
  assert.ok(made.pollers[0]!.has(dirs[3]!));
  // Gone before its trade: no watch can be set on it (ENOENT), and the kernel refused nothing.
  fs.rmSync(dirs[3]!, { recursive: true });
  assert.equal(backend.rebalance(), 0);
  const refusedBefore = limit.refused;
  const d4 = path.join(root, 'd4');
  fs.mkdirSync(d4);
  backend.addDir(d4);
  assert.ok(backend.has(d4) && !made.pollers[0]!.has(d4), 'the next directory takes the watch the trade freed');
  assert.equal(limit.refused, refusedBefore, 'without asking the kernel in vain');
});

test('FallbackBackend.rebalance: watches the kernel gives again (the limit raised) go to the polled directories, the most files first; once none is polled, onRecovered is told, and a refusal after that degrades again', async (t) => {
  // d0–d2 watched; d3 (3 files) and d4 (2) polled past the limit of 3 — too few files for a
  // trade by density, and all changed recently. No sweep (60 s).
  const { root, dirs, filesOf, limit, made, hints, degraded, recovered, backend } = fixture(t, [1, 1, 1, 3, 2], { pollMs: 60_000 });
  for (const d of dirs) backend.addDir(d);
  assert.equal(backend.polledDirs(), 2);
  assert.equal(backend.rebalance(), 0, 'no watch to be had: nothing moves');
  assert.equal(limit.refused, 2, 'the first refusal, and one more a rebalance while the kernel has none');
  limit.n = 4;
  assert.equal(backend.rebalance(), 1, 'one more watch: the directory with the most files takes it');
  assert.equal(backend.polledDirs(), 1);
  assert.ok(!made.pollers[0]!.has(dirs[3]!) && made.pollers[0]!.has(dirs[4]!), 'd3 (3 files) took the watch, d4 (2) is still polled');
  assert.deepEqual(recovered, [], 'still a directory polled');
  // d3 is watched natively now: its append is hinted by the kernel (no sweep runs).
  fs.appendFileSync(filesOf[3]![2]!, '{"a":1}\n');
  await waitFor(() => hints.includes(filesOf[3]![2]!), 'the native hint for d3', 5_000);
  limit.n = 10;
  assert.equal(backend.rebalance(), 1);
  assert.equal(backend.polledDirs(), 0);
  assert.deepEqual(recovered, [1], 'told once, after the one degradation');
  assert.equal(backend.rebalance(), 0, 'nothing polled: nothing to do');
  fs.appendFileSync(filesOf[4]![1]!, '{"b":1}\n');
  await waitFor(() => hints.includes(filesOf[4]![1]!), 'the native hint for d4', 5_000);
  // Full again: the next directory is refused, and the degradation told again.
  limit.n = 5;
  const d5 = path.join(root, 'd5');
  fs.mkdirSync(d5);
  backend.addDir(d5);
  assert.equal(backend.polledDirs(), 1);
  assert.deepEqual(degraded, ['ENOSPC', 'ENOSPC']);
});

test('FallbackBackend: the last polled directory removed → the rebalance REBALANCE_MS later finds nothing polled and tells onRecovered', async (t) => {
  const { dirs, limit, recovered, backend } = fixture(t, [1, 1, 1, 1], { pollMs: 60_000 });
  for (const d of dirs) backend.addDir(d);
  assert.equal(backend.polledDirs(), 1);
  // The rebalance after the refusal has run (its fill asked the kernel in vain): the next is a minute away.
  await waitFor(() => limit.refused === 2, 'the first rebalance', REBALANCE_MS + 3_000);
  assert.deepEqual(recovered, []);
  backend.removeDir(dirs[3]!);
  assert.equal(backend.polledDirs(), 0);
  assert.deepEqual(recovered, [], 'not at once');
  await waitFor(() => recovered.length === 1, 'onRecovered', REBALANCE_MS + 3_000);
});

test('FallbackBackend.rebalance: at most 500 directories take a watch again in one rebalance (the event loop is not held for all of them); the next rebalance goes on', async (t) => {
  const { dirs, limit, recovered, backend } = fixture(t, Array.from({ length: 603 }, () => 1), { pollMs: 60_000 });
  for (const d of dirs) backend.addDir(d);
  assert.equal(backend.polledDirs(), 600);
  limit.n = 10_000;
  assert.equal(backend.rebalance(), 500);
  assert.equal(backend.polledDirs(), 100);
  assert.deepEqual(recovered, []);
  assert.equal(backend.rebalance(), 100);
  assert.equal(backend.polledDirs(), 0);
  assert.deepEqual(recovered, [1]);
});

test('PollingBackend: past quietPerSweep the quiet entries take turns — each looked at once every `turns` sweeps — while the changed ones are looked at every sweep; a rename into a directory in use is seen at the next sweep; the pace is told', async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ld-quiet-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  // The clock two hours ahead: everything written now is quiet, except what is dated later.
  const now = () => Date.now() + 2 * 3_600_000;
  const later = new Date(Date.now() + 3 * 3_600_000);
  const { dirs, filesOf } = dirsWithFiles(root, [40, 1, 5]);
  const liveDir = dirs[2]!;
  const hotFile = filesOf[1]![0]!;
  fs.utimesSync(hotFile, later, later); // a file changed recently
  fs.utimesSync(liveDir, later, later); // a directory in use (its files quiet)
  const known = new Map<string, FileStamp>(filesOf.flat().map((f) => [f, stampOf(f)]));
  const hints: string[] = [];
  const paces: number[] = [];
  /** An append dated `ms` past `later` (changed now, by the test's clock). */
  const appendLater = (file: string, text: string, ms: number) => {
    fs.appendFileSync(file, text);
    fs.utimesSync(file, later, new Date(later.getTime() + ms));
  };
  /** One sweep, its hints alone in `hints`. */
  const freshSweep = async () => {
    hints.length = 0;
    await backend.sweepNow();
  };
  const backend = new PollingBackend(
    { changed: (f) => hints.push(f), failed: () => assert.fail('polling never fails a watch'), paced: (ms) => paces.push(ms) },
    // The timer far away: the test runs each sweep itself.
    { polling: true, pollMs: 3_600_000, files: () => known.entries(), now, quietPerSweep: 10 },
  );
  t.after(() => backend.close());
  for (const d of dirs) backend.addDir(d);
  const dirStats = backend.stats;
  assert.equal(dirStats, 3, 'a directory added is stat\'ed once');

  // The first sweep looks at everything: 3 directories, 46 files.
  await backend.sweepNow();
  assert.equal(backend.stats - dirStats, 49);
  // Quiet: 2 directories (the live one is not) and 45 files (the hot one is not) → turns of ⌈47 ÷ 10⌉ = 5.
  assert.deepEqual(paces, [5 * 3_600_000]);
  assert.equal(backend.quietEveryMs, 5 * 3_600_000);
  assert.equal(hints.length, 0, 'nothing changed');

  // Any 5 sweeps in a row: the 2 changed entries 5 times each, every quiet one exactly once.
  const perSweep: number[] = [];
  for (let i = 0; i < 5; i++) {
    const before = backend.stats;
    await backend.sweepNow();
    perSweep.push(backend.stats - before);
  }
  assert.equal(perSweep.reduce((a, b) => a + b, 0), 5 * 2 + 47, `stats per sweep ${perSweep.join(', ')}`);
  assert.ok(Math.max(...perSweep) <= 2 + Math.ceil(47 / 5) + 1, `spread over the sweeps: ${perSweep.join(', ')}`);

  // An append to the hot file: seen at the next sweep.
  fs.appendFileSync(hotFile, '{"a":1}\n');
  await backend.sweepNow();
  assert.equal(hints.join(), hotFile);

  // An atomic rewrite of a quiet file in the directory in use: the directory changed, so its files
  // are looked at in the same sweep. Each of its 5 files in turn, one a sweep: on its turn for one
  // of them only.
  for (const rewritten of filesOf[2]!) {
    fs.writeFileSync(`${rewritten}.tmp`, '{"b":1}\n');
    fs.renameSync(`${rewritten}.tmp`, rewritten);
    fs.utimesSync(liveDir, later, later); // still in use by the test's clock
    hints.length = 0;
    await backend.sweepNow();
    assert.ok(hints.includes(rewritten), `the rename of ${path.basename(rewritten)} is seen at the next sweep (hints ${JSON.stringify(hints)})`);
  }

  // A file created after the start, in the directory in use: hinted as a new name, and from then on
  // looked at every sweep — not only once the reader's list is taken again (every 5 sweeps here).
  while (backend.sweepCount % 5 !== 1) await backend.sweepNow();
  const created = path.join(liveDir, 'new.jsonl');
  fs.writeFileSync(created, '{}\n');
  fs.utimesSync(created, later, later); // new: changed now, by the test's clock
  fs.utimesSync(liveDir, later, later);
  await freshSweep();
  assert.ok(hints.includes(created), 'the new name is hinted');
  appendLater(created, '{"d":1}\n', 1_000);
  await freshSweep();
  assert.equal(backend.sweepCount % 5, 3, 'a sweep between two takes of the reader\'s list');
  assert.ok(hints.includes(created), `the append to the new file is seen at the next sweep (hints ${JSON.stringify(hints)})`);

  // A directory added after the start (a new lane's, or one a rebalance took a watch from): its
  // files are met at once, not at the next take of the reader's list.
  while (backend.sweepCount % 5 !== 1) await backend.sweepNow();
  const added = path.join(root, 'added');
  fs.mkdirSync(added);
  const addedFile = path.join(added, 's.jsonl');
  fs.writeFileSync(addedFile, '{}\n');
  fs.utimesSync(addedFile, later, later);
  known.set(addedFile, stampOf(addedFile));
  backend.addDir(added);
  appendLater(addedFile, '{"e":1}\n', 2_000);
  await freshSweep();
  assert.equal(backend.sweepCount % 5, 2, 'a sweep between two takes of the reader\'s list');
  assert.ok(hints.includes(addedFile), `the append in the added directory is seen at the next sweep (hints ${JSON.stringify(hints)})`);

  // An append to a quiet file in the quiet directory: seen on its turn, within 5 sweeps.
  const quietFile = filesOf[0]![17]!;
  hints.length = 0;
  fs.appendFileSync(quietFile, '{"c":1}\n');
  let sweeps = 0;
  while (!hints.includes(quietFile) && sweeps < 5) {
    await backend.sweepNow();
    sweeps++;
  }
  assert.ok(hints.includes(quietFile), 'the quiet file\'s append is seen within its turns');
  t.diagnostic(`the quiet append seen after ${sweeps} sweep(s); stats per sweep ${perSweep.join(', ')}`);
});

test('PollingBackend: with no more quiet entries than quietPerSweep, every entry is looked at every sweep and no pace is told', async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ld-quiet-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const now = () => Date.now() + 2 * 3_600_000;
  const { dirs, filesOf } = dirsWithFiles(root, [9]);
  const known = new Map<string, FileStamp>(filesOf.flat().map((f) => [f, stampOf(f)]));
  const paces: number[] = [];
  const backend = new PollingBackend(
    { changed: () => undefined, failed: () => assert.fail('polling never fails a watch'), paced: (ms) => paces.push(ms) },
    { polling: true, pollMs: 3_600_000, files: () => known.entries(), now, quietPerSweep: 10 },
  );
  t.after(() => backend.close());
  backend.addDir(dirs[0]!);
  for (let i = 0; i < 3; i++) {
    const before = backend.stats;
    await backend.sweepNow();
    assert.equal(backend.stats - before, 10, `sweep ${i + 1}: the directory and its 9 files`);
  }
  assert.deepEqual(paces, []);
  assert.equal(backend.quietEveryMs, 3_600_000);
});
