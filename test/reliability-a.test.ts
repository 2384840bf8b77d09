/**
 * RELIABILITY.md group A — appends and line assembly — on both watcher backends (native
 * directory watches, forced polling). Real temp homes, a real writer process, the live store.
 * Latency bounds are measured from the writer's own timestamp after its write to the store
 * notification at which the condition first held. Forced polling may first wait one poll
 * interval, so its bound is interval + the case's bound (as C1 states for the degraded mode).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import fc from 'fast-check';
import { homePaths } from '../src/contract/paths.js';
import { initialModelState, reduceEvents } from '../src/model/reducer.js';
import { buildSnapshot } from '../src/model/snapshot.js';
import { HomeReader } from '../src/readers/home-reader.js';
import { createReadCounter } from '../src/readers/read-counter.js';
import { SessionFileReader } from '../src/readers/session-file.js';
import { lineText } from '../src/views/line.js';
import { buildScreen } from '../src/views/screen.js';
import { displayWidth } from '../src/views/text.js';
import { initialViewState, visibleRows } from '../src/views/view-state.js';
import { runChildStore } from './support/fault-child.js';
import {
  BACKENDS,
  errorsOf,
  faultHome,
  latencyBound,
  named,
  newSession,
  removeHome,
  sessionPath,
  shown,
  startProbe,
  summarise,
  T0,
  wake,
  warningsOf,
  watchLoop,
} from './support/fault-home.js';
import { runWriter, startWriter, type WriterStep } from './support/fault-writer.js';
import { sessionHeader } from './support/mini-home.js';
import { waitFor } from './support/wait-for.js';

/** Latency cases must not be rescued by the backstop sweep. */
const NO_SWEEP = 60_000;
const CASE = { timeout: 60_000 };

const sizeOf = (file: string) => fs.statSync(file).size;

/**
 * A5's writes during a start-up: 40 rounds, 15 ms apart, of an append to each of `hot`, with one
 * of `late` created every 8th round (in a directory of its own, made then, with `mkdir`); what
 * each file must show once they are read.
 */
function startUpWrites(hot: readonly string[], late: readonly string[], label: string, { mkdir }: { mkdir: boolean }): { expected: Map<string, string[]>; steps: WriterStep[] } {
  const expected = new Map<string, string[]>();
  const steps: WriterStep[] = [{ op: 'mark', name: 'begin' }];
  for (let round = 0; round < 40; round++) {
    for (const [k, f] of hot.entries()) {
      const text = `${label} ${k}.${round}`;
      expected.set(f, [...(expected.get(f) ?? []), text]);
      steps.push({ op: 'append', file: f, text: wake(text) });
    }
    if (round % 8 === 4) {
      const f = late[(round - 4) / 8]!;
      if (mkdir) steps.push({ op: 'mkdir', dir: path.dirname(f) });
      steps.push({ op: 'append', file: f, text: sessionHeader(path.basename(f), '/w', T0) + wake(`${label} late`) });
      expected.set(f, [`${label} late`]);
    }
    steps.push({ op: 'sleep', ms: 15 });
  }
  steps.push({ op: 'mark', name: 'end' });
  return { expected, steps };
}

for (const backend of BACKENDS) {
  const tag = `[${backend.name}]`;
  const base = { polling: backend.polling, reconcileMs: NO_SWEEP };

  test(`A1 ${tag}: a JSON line written in two halves 200 ms apart → no parse error ever, one record after the second half, bytes read == file size`, CASE, async () => {
    const home = faultHome();
    const file = newSession(home, 'a1');
    const counter = createReadCounter();
    const p = await startProbe(home, { ...base, counter });
    try {
      p.always('no error shown', (s) => (errorsOf(s, file).length ? errorsOf(s, file)[0]!.message : null));
      p.always('nothing shown twice', (s) => (shown(s, file).length > 1 ? shown(s, file).join(',') : null));
      const line = wake('A1 whole line');
      const half = Math.floor(line.length / 2);
      const one = p.until((s) => shown(s, file).length === 1, 'the record', 10_000);
      const marks = await runWriter([
        { op: 'append', file, text: line.slice(0, half) },
        { op: 'mark', name: 'first' },
        { op: 'sleep', ms: 200 },
        { op: 'mark', name: 'second-start' },
        { op: 'append', file, text: line.slice(half) },
        { op: 'mark', name: 'second' },
      ]);
      const at = await one;
      assert.ok(at >= marks.get('second-start')!, 'the record was not shown before its second half was written');
      assert.deepEqual(shown(p.state(), file), ['A1 whole line']);
      await p.until((s) => s.sessionFiles.get(file)?.size === sizeOf(file), 'the size to catch up');
      assert.equal(counter.bytesRead, sizeOf(file), 'every byte read exactly once');
      assert.deepEqual(p.violations(), []);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`A2 ${tag}: a line split inside a 4-byte UTF-8 character → text intact, no U+FFFD`, CASE, async () => {
    const home = faultHome();
    const file = newSession(home, 'a2');
    const p = await startProbe(home, base);
    try {
      const bytes = Buffer.from(named('emoji 😀 here'), 'utf8');
      const cut = bytes.indexOf(Buffer.from('😀', 'utf8')) + 2; // two of its four bytes
      const done = p.until((s) => s.sessionFiles.get(file)?.name != null, 'the name', 10_000);
      await runWriter([
        { op: 'append', file, hex: bytes.subarray(0, cut).toString('hex') },
        { op: 'sleep', ms: 150 },
        { op: 'append', file, hex: bytes.subarray(cut).toString('hex') },
      ]);
      await done;
      const facts = p.state().sessionFiles.get(file)!;
      assert.equal(facts.name, 'emoji 😀 here');
      assert.ok(!JSON.stringify(facts).includes('\uFFFD'));
      assert.deepEqual(warningsOf(p.state(), file), []);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`A3 ${tag}: two appends 20 ms apart, then silence → both records visible within ${latencyBound(backend)} ms`, CASE, async () => {
    const home = faultHome();
    const file = newSession(home, 'a3');
    const p = await startProbe(home, base);
    try {
      const both = p.until((s) => shown(s, file).join(',') === 'A3 one,A3 two', 'both records', 10_000);
      const marks = await runWriter([
        { op: 'append', file, text: wake('A3 one') },
        { op: 'sleep', ms: 20 },
        { op: 'append', file, text: wake('A3 two') },
        { op: 'mark', name: 'second' },
      ]);
      const latency = (await both) - marks.get('second')!;
      assert.ok(latency <= latencyBound(backend), `both records visible ${latency} ms after the second write (bound ${latencyBound(backend)} ms)`);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`A4 ${tag}: 1,000 appends in 100 ms, then silence → all counted within ${latencyBound(backend)} ms, none twice`, CASE, async (t) => {
    const home = faultHome();
    const file = newSession(home, 'a4');
    const counter = createReadCounter();
    const p = await startProbe(home, { ...base, counter });
    try {
      const lines = Array.from({ length: 1000 }, (_, i) => wake(`A4 ${i}`, T0 + 1000 + i));
      const size = sizeOf(file) + Buffer.byteLength(lines.join(''));
      p.always('history in order, no duplicate', (s) => {
        const seq = shown(s, file).map((x) => Number(x.slice(3)));
        return seq.every((n, i) => i === 0 || n === seq[i - 1]! + 1) ? null : seq.join(',');
      });
      const all = p.until((s) => {
        const f = s.sessionFiles.get(file);
        return f && f.size === size && f.lastEntryAt === T0 + 1000 + 999 && f.incompleteSince === null;
      }, 'all 1,000 records', 15_000);
      const marks = await runWriter([{ op: 'mark', name: 'first' }, { op: 'burst', file, lines, overMs: 100 }, { op: 'mark', name: 'last' }]);
      const latency = (await all) - marks.get('last')!;
      const burst = marks.get('last')! - marks.get('first')!;
      t.diagnostic(`A4 ${backend.name}: 1,000 appends in ${burst} ms; all counted ${latency} ms after the last write`);
      assert.ok(burst <= 150, `the burst took ${burst} ms`);
      assert.ok(latency <= latencyBound(backend), `all records counted ${latency} ms after the last write (bound ${latencyBound(backend)} ms)`);
      // Counted once each: every byte was read exactly once, and the newest 50 shown are 950..999.
      assert.equal(counter.bytesRead, size);
      assert.deepEqual(shown(p.state(), file), lines.slice(950).map((_, i) => `A4 ${950 + i}`));
      assert.deepEqual(warningsOf(p.state(), file), []);
      assert.deepEqual(p.violations(), []);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`A5 ${tag}: appends and new sessions while the app is starting → nothing lost`, CASE, async () => {
    const home = faultHome();
    // Enough sessions that start-up takes a while; the writer appends to 20 of them throughout.
    const files = Array.from({ length: 300 }, (_, i) => newSession(home, `a5-${i}`));
    const hot = files.slice(0, 20);
    const late = Array.from({ length: 5 }, (_, i) => sessionPath(home, `a5-late-${i}`));
    const { expected, steps } = startUpWrites(hot, late, 'A5', { mkdir: true });
    const counter = createReadCounter();
    const writer = startWriter(steps);
    await writer.mark('begin');
    const startedAt = Date.now();
    const p = await startProbe(home, { ...base, counter });
    const readyAt = Date.now();
    try {
      const endAt = await writer.mark('end');
      assert.ok(startedAt < endAt && readyAt > (await writer.mark('begin')), 'the writes overlapped the start-up');
      await p.until((s) => [...expected].every(([f, want]) => shown(s, f).join('|') === want.join('|')), 'every record written during start-up', 15_000);
      const total = [...files, ...late].reduce((n, f) => n + sizeOf(f), 0);
      await p.until((s) => [...files, ...late].every((f) => s.sessionFiles.get(f)?.size === sizeOf(f)), 'every size');
      assert.equal(counter.bytesRead, total, 'every byte read once: nothing lost, nothing twice');
      assert.equal(p.state().sessionFiles.size, files.length + late.length);
    } finally {
      await writer.done();
      await p.stop();
      removeHome(home);
    }
  });

  // A5 above runs with a fixed sweep interval (`reconcileMs`), which sweeps the whole home once at
  // the end of start-up, and its late sessions come in new directories, each of which asks for a
  // sweep by design: either would rescue an event the watches lost. The dashboard runs with the
  // adaptive sweep, which does not sweep at the end of start-up (each directory is watched before
  // it is listed). This is A5 with the dashboard's settings, the full walk an hour away and no new
  // directory: every record must arrive with no sweep and no re-check of recent files run. Warm:
  // the same after a first start wrote the session cache, every byte appended since read once.
  // On two threads: the session files shared with the start's worker thread (read-claims.ts), as a
  // cold start of a home of 1 000 files or more shares them.
  for (const { warm, workerMinFiles, label } of [
    { warm: false, workerMinFiles: undefined, label: '' },
    { warm: true, workerMinFiles: undefined, label: ', a warm start' },
    { warm: false, workerMinFiles: 100, label: ', a cold start on two threads' },
  ]) {
    test(`A5 ${tag}, the dashboard's settings${label}: appends and new sessions while the app is starting → nothing lost, with no sweep or re-check run`, CASE, async () => {
      const home = faultHome();
      const files = Array.from({ length: 300 }, (_, i) => newSession(home, `a5d-${i}`));
      const hot = files.slice(0, 20);
      // New sessions beside listed ones that nothing else writes beside (no other event tells of
      // their directories).
      const late = Array.from({ length: 5 }, (_, i) => sessionPath(home, `a5d-late-${i}`, `/work/a5d-${200 + i}`));
      const { expected, steps } = startUpWrites(hot, late, 'A5d', { mkdir: false });
      // And two written the moment the session list is out (the `listed` stage): sessions/ walked,
      // the rest of the start to come. Only a watch set before their directory was listed tells of them.
      const atListed = [sessionPath(home, 'a5d-listed-0', '/work/a5d-100'), sessionPath(home, 'a5d-listed-1', '/work/a5d-101')];
      for (const f of atListed) expected.set(f, ['A5d at listed']);
      const stages: string[] = [];
      const onStage = (stage: string) => {
        stages.push(stage);
        if (stage !== 'listed') return;
        for (const f of atListed) fs.writeFileSync(f, sessionHeader(path.basename(f), '/w', T0) + wake('A5d at listed'));
      };
      // Warm: a first start has written the session cache, so this one reads only what was
      // appended since (each session file's cache entry is checked against the walk's stat).
      const cacheDir = warm ? fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-a5-cache-')) : null;
      const cachedSizes = new Map<string, number>();
      if (cacheDir) {
        const first = new HomeReader({ home, emit: () => undefined, polling: backend.polling, sweepMs: 3_600_000, cacheDir });
        await first.start();
        await first.background();
        await first.stop();
        for (const f of files) cachedSizes.set(f, sizeOf(f));
      }
      const counter = createReadCounter();
      let state = initialModelState();
      const reader = new HomeReader({ home, emit: (events) => (state = reduceEvents(state, events)), polling: backend.polling, sweepMs: 3_600_000, counter, onStage, cacheDir, workerMinFiles });
      const writer = startWriter(steps);
      try {
        const begin = await writer.mark('begin');
        const startedAt = Date.now();
        await reader.start();
        const readyAt = Date.now();
        const endAt = await writer.mark('end');
        assert.ok(startedAt < endAt && readyAt > begin, 'the writes overlapped the start-up');
        const all = [...files, ...late, ...atListed];
        const backstops = await waitFor(
          () => {
            const done = [...expected].every(([f, want]) => shown(state, f).join('|') === want.join('|')) && all.every((f) => state.sessionFiles.get(f)?.size === sizeOf(f));
            const { rechecks, sweeps } = reader.stats();
            return done ? { rechecks, sweeps } : null;
          },
          () => `every record written during start-up; ${summarise(state)}`,
          15_000,
          5,
        );
        assert.deepEqual(backstops, { rechecks: 0, sweeps: 0 }, 'every record arrived by a watch (or a poll), before any sweep or re-check of recent files ran');
        assert.equal(counter.bytesRead, all.reduce((n, f) => n + sizeOf(f) - (cachedSizes.get(f) ?? 0), 0), `every byte ${warm ? 'appended since the first start ' : ''}read once: nothing lost, nothing twice`);
        assert.equal(state.sessionFiles.size, all.length);
        assert.equal(stages.includes('worker'), workerMinFiles !== undefined, `the start's worker thread ran exactly when asked for (stages: ${stages.join(', ')})`);
      } finally {
        await writer.done();
        await reader.stop();
        removeHome(home);
        if (cacheDir) fs.rmSync(cacheDir, { recursive: true, force: true });
      }
    });
  }

  test(`A6 ${tag}: writer killed mid-line, no newline past the grace period → "last line incomplete since hh:mm:ss" (a warning), nothing dropped`, CASE, async () => {
    const home = faultHome();
    const file = newSession(home, 'a6', [wake('A6 before')]);
    const graceMs = 400;
    const p = await startProbe(home, { ...base, incompleteGraceMs: graceMs });
    try {
      const offset = sizeOf(file);
      const torn = wake('A6 torn').slice(0, 25);
      const writer = startWriter([{ op: 'append', file, text: torn }, { op: 'mark', name: 'torn' }, { op: 'hang' }]);
      const tornAt = await writer.mark('torn');
      writer.child.kill('SIGKILL');
      assert.equal((await writer.done()).signal, 'SIGKILL');
      const flaggedAt = await p.until((s) => warningsOf(s, file).some((w) => w.message.startsWith('last line incomplete')), 'the incomplete-line warning', 10_000);
      const facts = p.state().sessionFiles.get(file)!;
      assert.ok(facts.incompleteSince !== null && facts.incompleteSince >= tornAt - 5);
      assert.ok(flaggedAt - facts.incompleteSince >= graceMs - 20, `flagged ${flaggedAt - facts.incompleteSince} ms after it was first seen incomplete (grace ${graceMs} ms)`);
      const w = warningsOf(p.state(), file).find((x) => x.message.startsWith('last line incomplete'))!;
      const d = new Date(facts.incompleteSince);
      const hhmmss = [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
      assert.equal(w.message, `last line incomplete since ${hhmmss} (${torn.length} bytes at offset ${offset} without a newline)`);
      assert.equal(w.severity, 'warning');
      assert.equal(w.offset, offset);
      assert.deepEqual(errorsOf(p.state(), file), [], 'a warning, not an error');
      assert.deepEqual(shown(p.state(), file), ['A6 before'], 'the complete lines are all still shown');
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`A7 ${tag}: the writer restarts and appends a whole line right after the torn fragment → the merged line reported once with file and offset; later lines parse`, CASE, async () => {
    const home = faultHome();
    const file = newSession(home, 'a7', [wake('A7 before')]);
    const p = await startProbe(home, { ...base, incompleteGraceMs: 300 });
    try {
      const offset = sizeOf(file);
      const killed = startWriter([{ op: 'append', file, text: wake('A7 torn').slice(0, 20) }, { op: 'mark', name: 'torn' }, { op: 'hang' }]);
      await killed.mark('torn');
      killed.child.kill('SIGKILL');
      await killed.done();
      await p.until((s) => warningsOf(s, file).some((w) => w.message.startsWith('last line incomplete')), 'the torn line flagged', 10_000);
      await runWriter([{ op: 'append', file, text: wake('A7 after 1') }, { op: 'sleep', ms: 50 }, { op: 'append', file, text: wake('A7 after 2') }]);
      // The restarted writer's first line is glued to the fragment: that merged line is the bad one.
      await p.until((s) => shown(s, file).length === 2, 'the later lines', 10_000);
      assert.deepEqual(shown(p.state(), file), ['A7 before', 'A7 after 2']);
      const ws = warningsOf(p.state(), file);
      assert.equal(ws.length, 1, ws.map((w) => w.message).join(' | '));
      assert.equal(ws[0]!.file, file);
      assert.equal(ws[0]!.offset, offset);
      assert.equal(ws[0]!.severity, 'error');
      assert.match(ws[0]!.message, new RegExp(`invalid JSON.*line at offset ${offset}`));
      // Reported once: more appends do not repeat it.
      await runWriter([{ op: 'append', file, text: wake('A7 after 3') }]);
      await p.until((s) => shown(s, file).length === 3, 'one more line', 10_000);
      assert.equal(warningsOf(p.state(), file).length, 1);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`A8 ${tag}: empty lines, CRLF endings and a BOM at file start → stripped, no error records`, CASE, async () => {
    const home = faultHome();
    const early = sessionPath(home, 'a8-early');
    fs.mkdirSync(path.dirname(early), { recursive: true });
    const crlf = (s: string) => s.replace(/\n$/, '\r\n');
    fs.writeFileSync(early, '\uFEFF' + crlf(sessionHeader('a8-early', '/w', T0)) + '\n\r\n' + crlf(wake('A8 early')) + '\n\n');
    const p = await startProbe(home, base);
    try {
      const late = sessionPath(home, 'a8-late');
      await runWriter([
        { op: 'mkdir', dir: path.dirname(late) },
        { op: 'append', file: late, text: '\uFEFF' + crlf(sessionHeader('a8-late', '/w', T0)) },
        { op: 'append', file: late, text: '\r\n\n' + crlf(wake('A8 one')) + '\n' },
        { op: 'sleep', ms: 30 },
        { op: 'append', file: late, text: crlf(wake('A8 two')) + '\r\n' },
        { op: 'append', file: early, text: '\n' + crlf(wake('A8 early 2')) },
      ]);
      await p.until((s) => shown(s, late).length === 2 && shown(s, early).length === 2, 'both files', 10_000);
      for (const f of [early, late]) assert.deepEqual(warningsOf(p.state(), f), [], path.basename(f));
      assert.equal(p.state().sessionFiles.get(late)!.header?.id, 'a8-late');
      assert.equal(p.state().sessionFiles.get(early)!.header?.id, 'a8-early');
      assert.deepEqual(shown(p.state(), early), ['A8 early', 'A8 early 2']);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`A9 ${tag}: a 5 MB line, then a normal line → "line too long (N bytes) at offset X", the next line read, the file still followed`, CASE, async () => {
    const home = faultHome();
    const file = newSession(home, 'a9');
    const p = await startProbe(home, base);
    try {
      const offset = sizeOf(file);
      const long = wake('x'.repeat(5 * 1024 * 1024));
      await runWriter([{ op: 'append', file, text: long }, { op: 'append', file, text: wake('A9 after') }]);
      await p.until((s) => shown(s, file).includes('A9 after'), 'the line after the long one', 15_000);
      const ws = warningsOf(p.state(), file);
      assert.equal(ws.length, 1);
      assert.equal(ws[0]!.message, `line too long (${Buffer.byteLength(long) - 1} bytes) at offset ${offset}; skipped`);
      assert.equal(ws[0]!.offset, offset);
      await runWriter([{ op: 'append', file, text: wake('A9 later') }]);
      await p.until((s) => shown(s, file).join(',') === 'A9 after,A9 later', 'a later append', 10_000);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`A9 ${tag}: a 200 MB line → skipped and reported; peak RSS rises by less than 2× the 4 MiB line cap`, CASE, async (t) => {
    const home = faultHome();
    const file = newSession(home, 'a9-huge');
    fs.chmodSync(path.dirname(home), 0o755);
    const child = await runChildStore({ homes: [home], polling: backend.polling, reconcileMs: NO_SWEEP, focus: [file] });
    try {
      await child.until((s) => s.progressDone, 'the child store to start');
      // Warm up on ordinary lines (heap and buffers at their working size), then reset the peak
      // so it measures the huge line only.
      await runWriter([{ op: 'append', file, text: Array.from({ length: 5000 }, (_, i) => wake(`warm ${i}`)).join('') }]);
      await child.until((x) => x.focus[file]?.history.at(-1) === 'warm 4999', 'the warm-up lines', 15_000);
      const before = await child.command('reset-peak');
      const huge = 200 * 1024 * 1024;
      await runWriter([{ op: 'append', file, text: '{"type":"custom_message","customType":"loop-wake","details":null,"content":"' }, { op: 'fill', file, byte: 'y', count: huge }, { op: 'append', file, text: '"}\n' + wake('A9 after huge') }]);
      const s = await child.until((x) => x.focus[file]?.history.includes('A9 after huge'), 'the line after the huge one', 30_000);
      const after = await child.command('stats');
      const rise = after.peakRss - before.rss;
      t.diagnostic(`A9 ${backend.name}: RSS before ${(before.rss / 2 ** 20).toFixed(1)} MiB, peak ${(after.peakRss / 2 ** 20).toFixed(1)} MiB, rise ${(rise / 2 ** 20).toFixed(1)} MiB`);
      assert.ok(s.focus[file]!.warnings.some((w) => /^line too long \(\d+ bytes\) at offset \d+; skipped$/.test(w)), s.focus[file]!.warnings.join(' | '));
      assert.ok(rise < 2 * 4 * 2 ** 20, `peak RSS rose by ${(rise / 2 ** 20).toFixed(1)} MiB (bound 8 MiB)`);
    } finally {
      await child.stop();
      removeHome(home);
    }
  });

  test(`A10 (P) ${tag}: 4 KB of random bytes and NULs appended → each bad line reported with its offset, reading continues, no crash`, CASE, async (t) => {
    const home = faultHome();
    const seed = Number(process.env.RELIABILITY_SEED ?? 0x5eed) + (backend.polling ? 1 : 0);
    t.diagnostic(`A10 seed ${seed}`);
    const blocks = fc.sample(
      fc.oneof(fc.uint8Array({ minLength: 4096, maxLength: 4096 }), fc.constant(new Uint8Array(4096)), fc.uint8Array({ minLength: 4096, maxLength: 4096, max: 2 })),
      { seed, numRuns: 20 },
    );
    const files = blocks.map((_, i) => newSession(home, `a10-${i}`));
    const p = await startProbe(home, base);
    try {
      const expected = new Map<string, number[]>();
      const steps: WriterStep[] = [];
      blocks.forEach((block, i) => {
        const file = files[i]!;
        const start = sizeOf(file);
        const buf = Buffer.from(block);
        // Every non-blank line of the garbage must be reported at its own offset.
        const offsets: number[] = [];
        let lineStart = 0;
        for (let j = 0; j <= buf.length; j++) {
          if (j === buf.length || buf[j] === 0x0a) {
            let text = buf.subarray(lineStart, j);
            if (text.length && text[text.length - 1] === 0x0d) text = text.subarray(0, -1);
            if (text.toString('utf8').trim() !== '') offsets.push(start + lineStart);
            lineStart = j + 1;
          }
        }
        expected.set(file, offsets);
        steps.push({ op: 'append', file, hex: buf.toString('hex') + '0a' }, { op: 'append', file, text: wake(`A10 after ${i}`) });
      });
      await runWriter(steps);
      await p.until((s) => files.every((f, i) => shown(s, f).join() === `A10 after ${i}`), 'the line after every garbage block', 15_000);
      for (const file of files) {
        const want = expected.get(file)!;
        const got = warningsOf(p.state(), file);
        const kept = want.slice(-50);
        assert.deepEqual(got.filter((w) => w.offset !== undefined).map((w) => w.offset), kept, path.basename(file));
        assert.ok(got.every((w) => w.offset === undefined || w.severity === 'error'));
        if (want.length > 50) assert.ok(got[0]!.message.startsWith(`${want.length - 50} earlier warnings`));
      }
      // And the files are still followed.
      await runWriter(files.map((file) => ({ op: 'append' as const, file, text: wake('A10 later') })));
      await p.until((s) => files.every((f) => shown(s, f).length === 2), 'a later append everywhere', 10_000);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`A11 ${tag}: valid JSON failing the schema → invalid count and zod path shown, last good state kept, extra fields accepted`, CASE, async () => {
    const home = faultHome();
    const cont = (data: unknown) => JSON.stringify({ type: 'custom', id: 'c', parentId: null, timestamp: new Date(T0).toISOString(), customType: 'loop-continuation-state', data }) + '\n';
    const file = newSession(home, 'a11', [cont({ armed: true, launch: null, nudgeCount: 1, futureField: { x: 1 } })]);
    const cpFile = path.join(homePaths(home).checkpoints, 'a11.json');
    const cp = (over: Record<string, unknown>) =>
      JSON.stringify({
        v: 1, session: 'a11', sessionFile: file, role: 'root', parentSession: null, cwd: '/work/a11', pid: 1, pidStart: null, host: 'elsewhere',
        model: 'p/m', thinking: null, limits: null, state: 'idle', request: null, episode: null, recovery: null, lastStop: null, held: null,
        ownerAbort: null, updatedAt: T0, ...over,
      });
    fs.mkdirSync(path.dirname(cpFile), { recursive: true });
    fs.writeFileSync(cpFile, cp({ extraField: 'kept' }));
    const p = await startProbe(home, base);
    try {
      const s0 = p.state();
      assert.equal(s0.sessionFiles.get(file)?.continuation?.armed, true, 'extra fields accepted in a session entry');
      assert.equal((s0.checkpoints.get(cpFile)?.checkpoint as Record<string, unknown>).extraField, 'kept', 'extra fields accepted in a checkpoint');
      await runWriter([
        { op: 'append', file, text: cont({ armed: 'yes', nudgeCount: 2 }) }, // wrong type
        { op: 'append', file, text: JSON.stringify({ type: 'custom', customType: 'loop-dash-control', data: { by: 'x' } }) + '\n' }, // missing field
        { op: 'append', file, text: named('A11 still reading') },
        // An unknown enum value, a wrong type and a missing required field, in one checkpoint.
        { op: 'atomic', file: cpFile, text: cp({ state: 'paused', pid: 'one', cwd: undefined, updatedAt: T0 + 5 }) },
      ]);
      await p.until((s) => s.sessionFiles.get(file)?.name === 'A11 still reading' && errorsOf(s, cpFile).length > 0, 'both files reported', 10_000);
      const s = p.state();
      const ws = errorsOf(s, file);
      assert.equal(ws.length, 2, 'the invalid count');
      assert.match(ws[0]!.message, /data\.armed: /);
      assert.match(ws[1]!.message, /data\.held: /);
      assert.ok(ws.every((w) => w.line !== null && w.offset !== undefined), 'located by line and offset');
      assert.equal(s.sessionFiles.get(file)?.continuation?.armed, true, 'the last good state is kept');
      assert.equal(s.sessionFiles.get(file)?.continuation?.nudgeCount, 1);
      const cpError = errorsOf(s, cpFile)[0]!.message;
      assert.match(cpError, /^schema: /);
      for (const field of ['state', 'pid', 'cwd']) assert.match(cpError, new RegExp(`(^schema: |; )${field}: `), cpError);
      assert.equal(s.checkpoints.get(cpFile)?.checkpoint.state, 'idle', 'the last good checkpoint is kept');
      assert.equal(s.checkpoints.get(cpFile)?.checkpoint.updatedAt, T0);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`A12 ${tag}: hostile JSON (__proto__, 1e6-deep nesting, 1e308 and 1e309, duplicate keys) → handled, no pollution, event loop never blocked > 50 ms`, CASE, async (t) => {
    const home = faultHome();
    const file = newSession(home, 'a12');
    const cpFile = path.join(homePaths(home).checkpoints, 'a12.json');
    fs.mkdirSync(path.dirname(cpFile), { recursive: true });
    const p = await startProbe(home, base);
    const delay = monitorEventLoopDelay({ resolution: 5 });
    let loop: ReturnType<typeof watchLoop> | null = null;
    try {
      const deep = '['.repeat(1_000_000) + ']'.repeat(1_000_000);
      const lines = [
        '{"type":"session_info","name":"proto","__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}\n',
        `{"type":"custom","customType":"x","data":${deep}}\n`,
        '{"type":"custom","customType":"loop-continuation-state","data":{"armed":true,"nudgeCount":1e308}}\n',
        '{"type":"custom","customType":"loop-wait-state","data":{"timers":[{"id":"t","at":1e309}]}}\n',
        '{"type":"session_info","name":"first","name":"A12 second"}\n',
      ];
      // The writer starts first (spawning a process blocks this loop; that is the test, not the reader).
      const writer = startWriter([
        { op: 'sleep', ms: 300 },
        { op: 'append', file, text: lines.join('') },
        { op: 'write', file: cpFile, text: `{"v":1,"x":${'['.repeat(100_000)}${']'.repeat(100_000)}}` },
      ]);
      delay.enable();
      loop = watchLoop();
      assert.equal((await writer.done()).code, 0);
      await p.until((s) => s.sessionFiles.get(file)?.name === 'A12 second' && errorsOf(s, cpFile).length > 0, 'the hostile lines read', 15_000);
      delay.disable();
      const seen = loop.stop();
      t.diagnostic(`A12 ${backend.name}: event loop blocked at most ${seen.maxBusyMs.toFixed(1)} ms by this process (longest wall-clock gap ${seen.maxGapMs.toFixed(1)} ms; monitorEventLoopDelay max ${(delay.max / 1e6).toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms)`);
      const s = p.state();
      assert.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched');
      assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
      assert.equal(s.sessionFiles.get(file)?.continuation?.nudgeCount, 1e308, '1e308 is a finite number');
      assert.equal(s.sessionFiles.get(file)?.waitState, null, '1e309 (Infinity) is rejected');
      const ws = errorsOf(s, file).map((w) => w.message);
      assert.ok(ws.some((m) => /nesting deeper than/.test(m)), ws.join(' | '));
      assert.ok(ws.some((m) => /timers\[0\]\.at/.test(m)), ws.join(' | '));
      assert.match(errorsOf(s, cpFile)[0]!.message, /nesting deeper than/);
      assert.ok(seen.maxBusyMs <= 50, `the event loop was blocked for ${seen.maxBusyMs.toFixed(1)} ms (bound 50 ms)`);
    } finally {
      delay.disable();
      loop?.stop();
      await p.stop();
      removeHome(home);
    }
  });

  test(`A13 ${tag}: ANSI/OSC escapes, BEL, CR and wide Unicode in log text → kept as data, rendered sanitised, rows exactly as wide as the terminal allows`, CASE, async () => {
    const home = faultHome();
    const hostile = 'evil\u001b[2J\u001b[H\u001b]0;pwned\u0007\u0007\r名前🙂\u001b[31mred\u009b1m';
    const file = newSession(home, 'a13');
    const p = await startProbe(home, base);
    try {
      await runWriter([
        { op: 'append', file, text: named(hostile) },
        { op: 'append', file, text: JSON.stringify({ type: 'message', id: 'm', parentId: null, timestamp: new Date(T0 + 2000).toISOString(), message: { role: 'assistant', content: [], stopReason: 'error', errorMessage: `429 ${hostile}`, timestamp: T0 + 2000 } }) + '\n' },
      ]);
      await p.until((s) => s.sessionFiles.get(file)?.name === hostile && s.sessionFiles.get(file)?.lastAssistant !== null, 'the hostile text read', 10_000);
      const snapshot = buildSnapshot(p.state(), T0 + 60_000, { host: os.hostname() });
      for (const width of [80, 41]) {
        const view = { ...initialViewState(), cursor: 'a13' };
        const screen = buildScreen({ snapshot, model: p.state(), view, rows: visibleRows(view, snapshot.roots), width, height: 24, readOnly: false, noColor: true });
        const text = screen.lines.map((l) => lineText(l.line));
        const all = text.join('\n');
        assert.ok(all.includes('evil'), all);
        assert.doesNotMatch(all, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/, 'no escape, BEL, CR or other control reaches the terminal');
        for (const line of text) assert.ok(displayWidth(line) <= width, `a row ${displayWidth(line)} cells wide at width ${width}: ${JSON.stringify(line)}`);
      }
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`A14 (P) ${tag}: random interleaving of appends, partial appends, reads and pauses across 20 files → the records shown are the complete lines written, in order`, CASE, async (t) => {
    // Two seeds per backend by default; RELIABILITY_SEED picks one, RELIABILITY_RUNS runs more.
    const runs = Number(process.env.RELIABILITY_RUNS ?? 2);
    const seeds = (process.env.RELIABILITY_SEED ? [Number(process.env.RELIABILITY_SEED)] : Array.from({ length: runs }, (_, i) => i + 1)).map((s) => s + (backend.polling ? 100 : 0));
    for (const seed of seeds) {
      const home = faultHome();
      const files = Array.from({ length: 20 }, (_, i) => newSession(home, `a14-${i}`));
      const p = await startProbe(home, base);
      try {
        const script = fc.sample(
          fc.array(fc.record({ file: fc.nat(19), kind: fc.constantFrom('append', 'partial', 'read', 'pause'), cut: fc.integer({ min: 1, max: 60 }), ms: fc.integer({ min: 0, max: 15 }) }), { minLength: 300, maxLength: 300 }),
          { seed, numRuns: 1 },
        )[0]!;
        const written = new Map<string, string[]>(files.map((f) => [f, []]));
        const open = new Map<string, string>(); // the rest of a partly written line
        const steps: WriterStep[] = [];
        let n = 0;
        for (const op of script) {
          const file = files[op.file]!;
          const rest = open.get(file);
          if (op.kind === 'read') steps.push({ op: 'sleep', ms: 40 });
          else if (op.kind === 'pause') steps.push({ op: 'sleep', ms: op.ms });
          else if (rest !== undefined) {
            // Finish the open line (in one or two writes).
            open.delete(file);
            const cut = op.kind === 'partial' ? Math.min(op.cut, rest.length - 1) : 0;
            if (cut > 0) steps.push({ op: 'append', file, text: rest.slice(0, cut) }, { op: 'sleep', ms: op.ms });
            steps.push({ op: 'append', file, text: rest.slice(cut) });
          } else if ((written.get(file)?.length ?? 0) < 45) {
            const text = `A14 ${seed}.${n++}`;
            written.get(file)!.push(text);
            const line = wake(text);
            if (op.kind === 'partial') {
              steps.push({ op: 'append', file, text: line.slice(0, op.cut) });
              open.set(file, line.slice(op.cut));
            } else steps.push({ op: 'append', file, text: line });
          }
        }
        for (const [file, rest] of open) steps.push({ op: 'append', file, text: rest });
        p.always('shown is a prefix of what was written', (s) => {
          for (const f of files) {
            const got = shown(s, f);
            const want = written.get(f)!;
            if (got.some((x, i) => x !== want[i])) return `${path.basename(f)}: ${got.join(',')}`;
          }
          return null;
        });
        p.always('no error', (s) => files.map((f) => errorsOf(s, f)).flat()[0]?.message ?? null);
        await runWriter(steps);
        await p.until((s) => files.every((f) => shown(s, f).join() === written.get(f)!.join()), `every line of seed ${seed}`, 15_000);
        assert.deepEqual(p.violations(), []);
        t.diagnostic(`A14 seed ${seed}: ${n} records over ${files.length} files`);
      } finally {
        await p.stop();
        removeHome(home);
      }
    }
  });
}

test('A10 (P) [reader]: any 4 KB of random bytes appended to a session → every bad line reported at its offset; the next line still read', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-a10-'));
  const home = path.join(dir, 'home');
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 4096 }), fc.integer({ min: 1, max: 4096 }), async (bytes, chunk) => {
      const file = newSession(home, `p${run++}`);
      const reader = new SessionFileReader(home, file, { now: () => T0, chunkBytes: chunk });
      await reader.update();
      const start = sizeOf(file);
      fs.appendFileSync(file, Buffer.concat([Buffer.from(bytes), Buffer.from('\n' + wake('after'))]));
      const u = await reader.update();
      assert.equal(u.error, null);
      assert.deepEqual(u.facts.history.map((h) => h.summary), ['after']);
      const offsets = u.warnings.map((w) => w.offset!);
      assert.ok(offsets.every((o) => o >= start && o < start + bytes.length), 'each warning lies inside the garbage');
      assert.equal(new Set(offsets).size, offsets.length, 'each line once');
    }),
    { numRuns: 200 },
  );
  fs.rmSync(dir, { recursive: true, force: true });
});
