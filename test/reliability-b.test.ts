/**
 * RELIABILITY.md group B — truncation, replacement, deletion — on both watcher backends. Real
 * temp homes, a real writer process, the live store; B10 reads as the user `nobody` in a child
 * process (root reads through `chmod 000`, so the reading side must not be root).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { reduceEvents, initialModelState } from '../src/model/reducer.js';
import { HomeReader } from '../src/readers/home-reader.js';
import os from 'node:os';
import type { ModelState } from '../src/model/reducer.js';
import { buildSnapshot } from '../src/model/snapshot.js';
import { lineText } from '../src/views/line.js';
import { buildScreen } from '../src/views/screen.js';
import { initialViewState, visibleRows } from '../src/views/view-state.js';
import { runChildStore } from './support/fault-child.js';
import {
  BACKENDS,
  checkpointPath,
  checkpointText,
  errorsOf,
  faultHome,
  inotifyWatches,
  latencyBound,
  newSession,
  openFds,
  removeHome,
  sessionPath,
  shown,
  soakSeconds,
  startProbe,
  T0,
  wake,
  warningsOf,
} from './support/fault-home.js';
import { holdingFactory } from './support/fault-watch.js';
import { runWriter, startWriter, type WriterStep } from './support/fault-writer.js';
import { waitFor } from './support/wait-for.js';
import { sessionHeader } from './support/mini-home.js';

const CASE = { timeout: 60_000 };
const sizeOf = (file: string) => fs.statSync(file).size;
const messages = (ws: readonly { message: string }[]) => ws.map((w) => w.message).join(' | ');

for (const backend of BACKENDS) {
  const tag = `[${backend.name}]`;
  const base = { polling: backend.polling, reconcileMs: 60_000 };

  test(`B1 ${tag}: a session log truncated to 0 and re-written (copytruncate) → a "truncated" notice, read again from 0, new lines shown, offset never past EOF`, CASE, async () => {
    const home = faultHome();
    const file = newSession(home, 'b1', [wake('B1 old 1'), wake('B1 old 2'), wake('B1 old 3')]);
    const p = await startProbe(home, base);
    try {
      let truncatedSeen = false;
      p.always('after the notice, the size read never exceeds the file', (s) => {
        if (!warningsOf(s, file).some((w) => w.message.startsWith('truncated'))) return null;
        truncatedSeen = true;
        const read = s.sessionFiles.get(file)?.size ?? 0;
        const actual = sizeOf(file);
        return read > actual ? `read ${read} > size ${actual}` : null;
      });
      p.always('never old and new records together', (s) => {
        const x = shown(s, file);
        return x.some((r) => r.includes('old')) && x.some((r) => r.includes('new')) ? x.join(',') : null;
      });
      await runWriter([{ op: 'truncate', file, size: 0 }]);
      await p.until((s) => warningsOf(s, file).some((w) => w.message === 'truncated: the file was truncated; read again from the start'), 'the truncated notice', latencyBound(backend) + 5_000);
      assert.deepEqual(shown(p.state(), file), [], 'nothing of the old content is shown');
      await runWriter([{ op: 'append', file, text: sessionHeader('b1', '/work/b1', T0 + 1) }, { op: 'append', file, text: wake('B1 new 1') }, { op: 'sleep', ms: 30 }, { op: 'append', file, text: wake('B1 new 2') }]);
      await p.until((s) => shown(s, file).join() === 'B1 new 1,B1 new 2', 'the new lines', 10_000);
      assert.equal(p.state().sessionFiles.get(file)?.size, sizeOf(file));
      assert.equal(p.state().sessionFiles.get(file)?.header?.timestamp, T0 + 1);
      assert.ok(truncatedSeen);
      assert.deepEqual(p.violations(), []);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`B2 ${tag}: truncated and regrown past the old offset before the next check → detected by the head fingerprint as "rewritten", read again from 0`, CASE, async () => {
    const home = faultHome();
    const file = newSession(home, 'b2', [wake('B2 old')]);
    // The next check is made to come after the rewrite: hints are held while the writer works.
    const gate = { closed: false, count: 0 };
    const hold = holdingFactory(gate);
    const p = await startProbe(home, { ...base, watchFactory: hold.factory });
    try {
      const oldSize = sizeOf(file);
      const fresh = sessionHeader('b2-other', '/work/b2', T0 + 7) + wake('B2 new 1') + wake('B2 new 2');
      assert.ok(Buffer.byteLength(fresh) > oldSize);
      gate.closed = true;
      await runWriter([{ op: 'write', file, text: fresh }]);
      hold.release();
      await p.until((s) => shown(s, file).join() === 'B2 new 1,B2 new 2', 'the rewritten content', latencyBound(backend) + 5_000);
      const s = p.state();
      assert.ok(warningsOf(s, file).some((w) => w.message === 'rewritten: the file was rewritten; read again from the start'), messages(warningsOf(s, file)));
      assert.equal(s.sessionFiles.get(file)?.header?.id, 'b2-other');
      assert.equal(s.sessionFiles.get(file)?.size, sizeOf(file));
      assert.ok(backend.polling || gate.count > 0, 'hints were held during the rewrite');
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`B3 ${tag}: a session file replaced by "mv new old" → treated as a new file, old and new content never mixed`, CASE, async () => {
    const home = faultHome();
    const file = newSession(home, 'b3', [named3('B3 old name'), wake('B3 old 1'), wake('B3 old 2')]);
    const p = await startProbe(home, base);
    try {
      p.always('never a mix', (s) => {
        const x = shown(s, file);
        return x.some((r) => r.includes('old')) && x.some((r) => r.includes('new')) ? x.join(',') : null;
      });
      const other = path.join(path.dirname(home), 'b3-new.jsonl');
      fs.writeFileSync(other, sessionHeader('b3-new', '/work/b3', T0 + 9) + wake('B3 new 1'));
      await runWriter([{ op: 'rename', from: other, to: file }]);
      await p.until((s) => shown(s, file).join() === 'B3 new 1', 'the new file', latencyBound(backend) + 5_000);
      const s = p.state();
      assert.ok(warningsOf(s, file).some((w) => w.message.startsWith('replaced')), messages(warningsOf(s, file)));
      assert.equal(s.sessionFiles.get(file)?.header?.id, 'b3-new');
      assert.equal(s.sessionFiles.get(file)?.name, null, 'nothing of the old file carried over');
      await runWriter([{ op: 'append', file, text: wake('B3 new 2') }]);
      await p.until((x) => shown(x, file).join() === 'B3 new 1,B3 new 2', 'the new file followed', 10_000);
      assert.deepEqual(p.violations(), []);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`B4 ${tag}: a session file deleted while followed → removed, no crash, its watch and per-file state released (counts back to baseline)`, CASE, async () => {
    const home = faultHome();
    const stays = newSession(home, 'b4-stays', [wake('B4 stays')]);
    // A second reader on the same home, for its per-file bookkeeping (the store hides its readers).
    let state = initialModelState();
    const reader = new HomeReader({ home, emit: (e) => (state = reduceEvents(state, e)), polling: backend.polling, reconcileMs: 60_000 });
    await reader.start();
    const p = await startProbe(home, base);
    try {
      // The per-file bookkeeping, not the count of sweeps (the new directory below asks for one).
      const bookkeeping = () => {
        const { sweeps: _sweeps, ...rest } = reader.stats();
        return rest;
      };
      const before = { stats: bookkeeping(), fds: openFds(), watches: inotifyWatches() };
      const gone = sessionPath(home, 'b4-gone', '/work/b4-elsewhere');
      await runWriter([{ op: 'mkdir', dir: path.dirname(gone) }, { op: 'append', file: gone, text: sessionHeader('b4-gone', '/w', T0) + wake('B4 gone') }, { op: 'close' }]);
      await waitFor(() => shown(p.state(), gone).length === 1 && state.sessionFiles.has(gone), 'the new session', latencyBound(backend) + 5_000);
      assert.equal(reader.stats().files, before.stats.files + 1);
      // One more watched directory (libuv shares one inotify watch per directory within a process).
      if (!backend.polling) assert.equal(inotifyWatches(), before.watches + 1, 'one more watched directory');
      await runWriter([{ op: 'unlink', file: gone }]);
      await waitFor(() => !p.state().sessionFiles.has(gone) && !state.sessionFiles.has(gone), 'the removal', latencyBound(backend) + 5_000);
      // Shown as removed: one notice for the gone file (at most REMOVED_NOTICES are kept: home-reader.test.ts).
      await waitFor(() => p.state().warnings.get(gone)?.[0]?.message.startsWith('removed: the session file is gone'), 'the removal notice', 5_000);
      assert.equal(p.state().warnings.get(gone)?.length, 1);
      assert.equal(reader.stats().readers, before.stats.readers);
      await runWriter([{ op: 'unlink', file: path.dirname(gone) }]);
      // Back to baseline but for that notice, the one per-file thing kept.
      const baseline = { ...before.stats, perFile: before.stats.perFile + 1 };
      const settled = () => JSON.stringify(bookkeeping()) === JSON.stringify(baseline) && openFds() === before.fds && inotifyWatches() === before.watches;
      await waitFor(settled, () => `the counts back to baseline: ${JSON.stringify({ stats: bookkeeping(), fds: openFds(), watches: inotifyWatches(), before })}`, 10_000);
      assert.deepEqual({ stats: bookkeeping(), fds: openFds(), watches: inotifyWatches() }, { ...before, stats: baseline });
      assert.deepEqual(shown(p.state(), stays), ['B4 stays']);
    } finally {
      await reader.stop();
      await p.stop();
      removeHome(home);
    }
  });

  test(`B5 ${tag}: the sessions directory removed, then recreated with files → picked up within the reconcile interval, the watcher not stuck`, CASE, async () => {
    const home = faultHome();
    const old = newSession(home, 'b5-old', [wake('B5 old')]);
    const reconcileMs = 1_500;
    const p = await startProbe(home, { polling: backend.polling, reconcileMs });
    try {
      await runWriter([{ op: 'unlink', file: path.join(home, 'sessions') }]);
      await p.until((s) => !s.sessionFiles.has(old), 'the old session removed', reconcileMs + 5_000);
      const fresh = sessionPath(home, 'b5-new', '/work/b5-new');
      const seen = p.until((s) => shown(s, fresh).join() === 'B5 new', 'the new session', reconcileMs + 5_000);
      const marks = await runWriter([{ op: 'mkdir', dir: path.dirname(fresh) }, { op: 'append', file: fresh, text: sessionHeader('b5-new', '/w', T0) + wake('B5 new') }, { op: 'mark', name: 'created' }]);
      const latency = (await seen) - marks.get('created')!;
      assert.ok(latency <= reconcileMs + 250, `picked up ${latency} ms after it was created (bound: reconcile ${reconcileMs} ms + 250 ms)`);
      // Not stuck: an append to the new file is seen at watcher speed, not at the next sweep.
      const append = p.until((s) => shown(s, fresh).join() === 'B5 new,B5 more', 'an append to the new file', 10_000);
      const m2 = await runWriter([{ op: 'append', file: fresh, text: wake('B5 more') }, { op: 'mark', name: 'appended' }]);
      const l2 = (await append) - m2.get('appended')!;
      assert.ok(l2 <= latencyBound(backend), `append seen after ${l2} ms (bound ${latencyBound(backend)} ms)`);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`B6 ${tag}: a checkpoint rewritten atomically 100 times a second → always a complete version, never a parse error, final value within ${latencyBound(backend)} ms, fd and watch counts stable`, CASE, async (t) => {
    const home = faultHome();
    const cpFile = checkpointPath(home, 'b6');
    // Version n has turn = modelEvents = lastModelEventAt = n: a torn or mixed version cannot pass.
    const template = checkpointText('b6', { state: 'requesting', request: { turn: '#N#', startedAt: T0, lastModelEventAt: '#N#', lastTransportEventAt: null, modelEvents: '#N#', keepalives: 0 } }).replaceAll('"#N#"', '#N#');
    const version = (n: number) => template.replaceAll('#N#', String(n));
    fs.writeFileSync(cpFile, version(0));
    const p = await startProbe(home, base);
    const seconds = soakSeconds(3);
    const count = seconds * 100;
    try {
      let last = -1;
      p.always('a complete version, never going back', (s) => {
        const cp = s.checkpoints.get(cpFile)?.checkpoint;
        if (!cp) return 'the checkpoint disappeared';
        const n = cp.request?.turn ?? -2;
        if (cp.request?.modelEvents !== n || cp.request.lastModelEventAt !== n) return `torn version ${JSON.stringify(cp.request)}`;
        if (n < last) return `went back from ${last} to ${n}`;
        last = n;
        return null;
      });
      p.always('no warning', (s) => (warningsOf(s, cpFile).length ? messages(warningsOf(s, cpFile)) : null));
      const final = p.until((s) => s.checkpoints.get(cpFile)?.checkpoint.request?.turn === count, 'the final version', seconds * 1000 + 10_000);
      const writer = startWriter([{ op: 'mark', name: 'go' }, { op: 'atomic-loop', file: cpFile, text: template, count, everyMs: 10 }, { op: 'mark', name: 'last' }, { op: 'sleep', ms: 200 }]);
      // Sampled while the writer runs (its own pipes are open throughout, so they do not count).
      await writer.mark('go');
      const fds: number[] = [];
      const watches: number[] = [];
      const sampler = setInterval(() => {
        fds.push(openFds());
        watches.push(inotifyWatches());
      }, 50);
      const lastAt = await writer.mark('last');
      clearInterval(sampler); // before the writer exits and closes its pipes
      const latency = (await final) - lastAt;
      await writer.done();
      t.diagnostic(`B6 ${backend.name}: ${count} rewrites in ${seconds} s; final value ${latency} ms after the last; ${p.notifications()} notifications; fds ${Math.min(...fds)}..${Math.max(...fds)}, watches ${Math.min(...watches)}..${Math.max(...watches)}`);
      assert.deepEqual(p.violations(), []);
      assert.ok(latency <= latencyBound(backend), `final value shown ${latency} ms after the last write (bound ${latencyBound(backend)} ms)`);
      // At most one file open at a time for reading: no fd per rewrite, no leak.
      assert.ok(Math.max(...fds) - Math.min(...fds) <= 1, `fds ${Math.min(...fds)}..${Math.max(...fds)}`);
      assert.equal(Math.max(...watches), Math.min(...watches), 'watch count stable');
      assert.equal(fs.readdirSync(path.dirname(cpFile)).length, 1, 'no temp left');
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`B7 ${tag}: a checkpoint written non-atomically (truncate, 50 ms gap, write) → last good value kept, no error; an error only once it stays bad past the 2 s grace`, CASE, async () => {
    const home = faultHome();
    const cpFile = checkpointPath(home, 'b7');
    fs.writeFileSync(cpFile, checkpointText('b7', { updatedAt: T0 + 1 }));
    const p = await startProbe(home, base);
    try {
      p.always('the checkpoint is never lost', (s) => (s.checkpoints.has(cpFile) ? null : 'gone'));
      let phase = 'rewrites';
      p.always('no error during the rewrites', (s) => (phase === 'rewrites' && warningsOf(s, cpFile).length ? messages(warningsOf(s, cpFile)) : null));
      for (let i = 2; i <= 4; i++) {
        await runWriter([{ op: 'truncate', file: cpFile, size: 0 }, { op: 'sleep', ms: 50 }, { op: 'write', file: cpFile, text: checkpointText('b7', { updatedAt: T0 + i }) }]);
        await p.until((s) => s.checkpoints.get(cpFile)?.checkpoint.updatedAt === T0 + i, `version ${i}`, latencyBound(backend) + 5_000);
      }
      assert.deepEqual(p.violations(), []);
      // Now the writer dies after the truncate: bad for longer than the grace → an error, old value kept.
      phase = 'left empty';
      const marks = await runWriter([{ op: 'truncate', file: cpFile, size: 0 }, { op: 'mark', name: 'emptied' }]);
      const errorAt = await p.until((s) => errorsOf(s, cpFile).length > 0, 'the error after the grace', 10_000);
      assert.ok(errorAt - marks.get('emptied')! >= 1_900, `error shown ${errorAt - marks.get('emptied')!} ms after the truncate (grace 2 s)`);
      assert.equal(p.state().checkpoints.get(cpFile)?.checkpoint.updatedAt, T0 + 4, 'the last good value is kept');
      assert.match(errorsOf(p.state(), cpFile)[0]!.message, /empty or incomplete/);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`B8 ${tag}: writers' temp files (*.tmp*, dot files) appear and vanish → never shown as sessions, checkpoints or incidents, never errors`, CASE, async () => {
    const home = faultHome();
    const real = newSession(home, 'b8', [wake('B8 real')]);
    const sdir = path.dirname(real);
    const cdir = path.dirname(checkpointPath(home, 'x'));
    const idir = path.join(home, 'incidents', 'request');
    fs.mkdirSync(idir, { recursive: true });
    const p = await startProbe(home, base);
    try {
      const isTemp = (f: string) => /(^|\/)\.|\.tmp/.test(path.relative(home, f));
      p.always('no temp file is an item', (s) => [...s.sessionFiles.keys(), ...s.checkpoints.keys(), ...s.incidents.keys()].find(isTemp) ?? null);
      p.always('no warning anywhere', (s) => (s.warnings.size ? [...s.warnings.keys()].join(', ') : null));
      const temps = [
        path.join(sdir, `.${path.basename(real)}.swp`),
        path.join(sdir, `${path.basename(real, '.jsonl')}-2.jsonl.tmp`),
        path.join(sdir, '.hidden_x.jsonl'),
        path.join(sdir, '2026-11-30T12-00-00-000Z_t.jsonl.tmp-123-abc'),
        path.join(cdir, '.b8.json.tmp-1-2'),
        path.join(cdir, 'b8.json.tmp'),
        path.join(idir, '.partial.json'),
        path.join(idir, 'x.json.tmp9'),
      ];
      const steps: WriterStep[] = temps.flatMap((f): WriterStep[] => [{ op: 'append' as const, file: f, text: '{"half":' }, { op: 'sleep' as const, ms: 5 }]);
      steps.push({ op: 'close' });
      steps.push(...temps.map((f) => ({ op: 'unlink' as const, file: f })));
      steps.push({ op: 'append', file: real, text: wake('B8 after') });
      await runWriter(steps);
      await p.until((s) => shown(s, real).join() === 'B8 real,B8 after', 'the real file still followed', 10_000);
      // Let a sweep pass over the (now gone) temp names too.
      await runWriter(temps.slice(0, 4).map((f) => ({ op: 'append' as const, file: f, text: 'x' })));
      await p.until((s) => s.sessionFiles.size === 1, 'one session', latencyBound(backend) + 2_000);
      assert.deepEqual(p.violations(), []);
      assert.equal(p.state().sessionFiles.size, 1);
      assert.equal(p.state().checkpoints.size, 0);
      assert.equal(p.state().incidents.size, 0);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`B9 ${tag}: an incident created by rename and another written 1 byte per 10 ms → each parsed once, when complete; one notification each`, CASE, async () => {
    const home = faultHome();
    const idir = path.join(home, 'incidents', 'request');
    fs.mkdirSync(idir, { recursive: true });
    const p = await startProbe(home, base);
    try {
      const renamed = path.join(idir, 'b9-a_2026-11-30T12-00-00-000Z-inactivity-1.json');
      const dripped = path.join(idir, 'b9-b_2026-11-30T12-00-01-000Z-absolute-2.json');
      const body = (session: string, limit: string) =>
        JSON.stringify({ v: 1, session, class: `loop-request-${limit}-ceiling`, at: new Date(T0).toISOString(), attempt: 1, limit, reason: `no model event for 15 min (${session} padding to make it long enough to outlast the grace period by far)` }, null, 1) + '\n';
      const seen = new Map<string, unknown[]>();
      p.always('incidents only when complete', (s) => {
        for (const f of [renamed, dripped]) {
          const r = s.incidents.get(f);
          if (!r) continue;
          const list = seen.get(f) ?? [];
          if (list.at(-1) !== r) seen.set(f, [...list, r]);
          // The reason is read with the rest of the file (the summary says it; raw fields are not kept).
          if (r.session === null || r.limit === null || !r.summary.includes('reason: no model event')) return `incomplete ${JSON.stringify(r)}`;
        }
        return null;
      });
      p.always('never an error', (s) => (warningsOf(s, renamed).length || warningsOf(s, dripped).length ? 'warning shown' : null));
      const text = body('b9-b', 'absolute');
      assert.ok(text.length * 10 > 2_500, 'the drip outlasts the 2 s grace');
      const tmp = path.join(idir, '.b9-a.json.tmp');
      fs.writeFileSync(tmp, body('b9-a', 'inactivity'));
      await runWriter([{ op: 'rename', from: tmp, to: renamed }, { op: 'drip', file: dripped, text, everyMs: 10 }]);
      await p.until((s) => s.incidents.has(renamed) && s.incidents.has(dripped), 'both incidents', latencyBound(backend) + 5_000);
      // Watch a while longer: a later sweep or event must not notify again.
      await runWriter([{ op: 'append', file: path.join(idir, 'unrelated.txt'), text: 'x' }, { op: 'sleep', ms: backend.polling ? 1_500 : 300 }]);
      assert.deepEqual(p.violations(), []);
      assert.equal(seen.get(renamed)?.length, 1, 'one notification for the renamed incident');
      assert.equal(seen.get(dripped)?.length, 1, 'one notification for the dripped incident');
      assert.equal(p.state().incidents.get(dripped)?.limit, 'absolute');
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`B10 ${tag}: chmod 000 on a session file and on a directory, then restored → per-item EACCES shown, everything else working, recovered (read as the user nobody)`, CASE, async () => {
    const home = faultHome();
    const locked = newSession(home, 'b10-locked', [wake('B10 locked 1')]);
    const inDir = newSession(home, 'b10-indir', [wake('B10 indir 1')], '/work/b10-dir');
    const free = newSession(home, 'b10-free', [wake('B10 free 1')]);
    const dir = path.dirname(inDir);
    fs.chmodSync(path.dirname(home), 0o755);
    const child = await runChildStore({ homes: [home], polling: backend.polling, reconcileMs: 1_000, focus: [locked, inDir, free, dir] }, { uid: 65534, gid: 65534 });
    try {
      await child.until((s) => s.progressDone && s.sessions === 3, 'the child (as nobody) to read the home');
      fs.chmodSync(locked, 0o000);
      fs.chmodSync(dir, 0o000);
      await runWriter([{ op: 'append', file: locked, text: wake('B10 locked 2') }, { op: 'append', file: free, text: wake('B10 free 2') }]);
      const s = await child.until(
        (x) => x.focus[locked]!.warnings.some((w) => /EACCES/.test(w)) && x.focus[inDir]!.warnings.some((w) => /EACCES/.test(w)) && x.focus[dir]!.warnings.some((w) => /EACCES/.test(w)),
        'EACCES on the file, the directory and the file inside it',
        10_000,
      );
      assert.ok(s.focus[locked]!.warnings.some((w) => w.startsWith('cannot read: EACCES')), s.focus[locked]!.warnings.join(' | '));
      assert.ok(s.focus[dir]!.warnings.includes('cannot read directory (EACCES)'), s.focus[dir]!.warnings.join(' | '));
      assert.equal(s.sessions, 3, 'an unreadable session is not dropped');
      await child.until((x) => x.focus[free]!.history.join() === 'B10 free 1,B10 free 2', 'everything else keeps working', 10_000);
      assert.deepEqual(child.latest()!.focus[free]!.warnings, []);
      fs.chmodSync(locked, 0o644);
      fs.chmodSync(dir, 0o755);
      await runWriter([{ op: 'append', file: inDir, text: wake('B10 indir 2') }]);
      await child.until(
        (x) => x.focus[locked]!.history.join() === 'B10 locked 1,B10 locked 2' && x.focus[inDir]!.history.join() === 'B10 indir 1,B10 indir 2' && [locked, inDir, dir].every((f) => x.focus[f]!.warnings.length === 0),
        'recovery after chmod back',
        10_000,
      );
    } finally {
      await child.stop();
      fs.chmodSync(dir, 0o755);
      removeHome(home);
    }
  });

  test(`B11 ${tag}: symlink loops inside the home → no endless walk, each reported once, the rest followed`, CASE, async () => {
    const home = faultHome();
    const file = newSession(home, 'b11', [wake('B11 1')]);
    const sdir = path.dirname(file);
    fs.symlinkSync('..', path.join(sdir, 'up-loop'));
    fs.symlinkSync(path.join(home, 'sessions'), path.join(home, 'sessions', '--loop-back--'));
    const a = path.join(sdir, '2026-11-30T12-00-00-000Z_la.jsonl');
    const b = path.join(sdir, '2026-11-30T12-00-00-000Z_lb.jsonl');
    fs.symlinkSync(b, a);
    fs.symlinkSync(a, b);
    const p = await startProbe(home, { polling: backend.polling, reconcileMs: 200 });
    try {
      const links = [path.join(sdir, 'up-loop'), path.join(home, 'sessions', '--loop-back--'), a, b];
      await p.until((s) => links.every((l) => s.warnings.has(l)), 'every link reported', 5_000);
      const first = links.map((l) => p.state().warnings.get(l));
      for (const [i, l] of links.entries()) {
        assert.equal(first[i]!.length, 1, `${l}: ${messages(first[i]!)}`);
        assert.match(first[i]![0]!.message, i < 2 ? /symlinked directory not followed/ : /broken or looping symlink/);
      }
      // Several sweeps later: the very same reports (not re-reported), and appends still followed.
      await runWriter([{ op: 'append', file, text: wake('B11 2') }, { op: 'sleep', ms: 700 }]);
      await p.until((s) => shown(s, file).join() === 'B11 1,B11 2', 'the append', 5_000);
      links.forEach((l, i) => assert.equal(p.state().warnings.get(l), first[i], `${l} reported once`));
      assert.equal(p.state().sessionFiles.size, 1);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });

  test(`B12 ${tag}: home missing at start, created later, removed at runtime, created again → "waiting for <path>", recovers without restart`, CASE, async () => {
    const home = faultHome(false);
    const reconcileMs = 500;
    const p = await startProbe(home, { polling: backend.polling, reconcileMs });
    const waiting = (s: ReturnType<typeof p.state>) => warningsOf(s, home).find((w) => w.message.startsWith(`waiting for ${home}`));
    try {
      assert.equal(waiting(p.state())?.message, `waiting for ${home} (it does not exist yet)`);
      assert.equal(waiting(p.state())?.severity, 'warning');
      const file = sessionPath(home, 'b12');
      await runWriter([{ op: 'mkdir', dir: path.dirname(file) }, { op: 'append', file, text: sessionHeader('b12', '/w', T0) + wake('B12 1') }]);
      await p.until((s) => shown(s, file).join() === 'B12 1' && !waiting(s), 'the home picked up', reconcileMs + 5_000);
      await runWriter([{ op: 'append', file, text: wake('B12 2') }]);
      await p.until((s) => shown(s, file).join() === 'B12 1,B12 2', 'the session followed', 5_000);
      await runWriter([{ op: 'unlink', file: home }]);
      await p.until((s) => waiting(s)?.message === `waiting for ${home} (it was removed)` && s.sessionFiles.size === 0, 'the removal noticed', reconcileMs + 5_000);
      // The main screen says so, not only the warnings behind `i`.
      assert.match(screenText(p.state(), home), new RegExp(`^  waiting for ${home.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(it was removed\\); it is read as soon as it exists$`, 'm'));
      await runWriter([{ op: 'mkdir', dir: path.dirname(file) }, { op: 'append', file, text: sessionHeader('b12', '/w', T0) + wake('B12 again') }]);
      await p.until((s) => shown(s, file).join() === 'B12 again' && !waiting(s), 'the recreated home picked up', reconcileMs + 5_000);
      await runWriter([{ op: 'append', file, text: wake('B12 again 2') }]);
      await p.until((s) => shown(s, file).join() === 'B12 again,B12 again 2', 'and followed at watcher speed', latencyBound(backend) + 1_000);
    } finally {
      await p.stop();
      removeHome(home);
    }
  });
}

function named3(name: string): string {
  return JSON.stringify({ type: 'session_info', id: 'n', parentId: null, timestamp: new Date(T0).toISOString(), name }) + '\n';
}

/** The dashboard's screen for a model state, as text (200 × 30, no colour). */
function screenText(state: ModelState, home: string): string {
  const snapshot = buildSnapshot(state, Date.now(), { host: os.hostname() });
  assert.deepEqual(snapshot.homes, [home]);
  const view = initialViewState();
  const screen = buildScreen({ snapshot, model: state, view, rows: visibleRows(view, snapshot.roots), width: 200, height: 30, readOnly: true, noColor: true });
  return screen.lines.map((l) => lineText(l.line)).join('\n');
}
