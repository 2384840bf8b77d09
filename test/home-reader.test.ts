import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLiveStore } from '../src/app/live-store.js';
import { HomeReader, REMOVED_NOTICES } from '../src/readers/home-reader.js';
import { buildSnapshot } from '../src/model/snapshot.js';
import { assistantEntry, customEntry, tempHome, writeRootSession } from './support/mini-home.js';
import { waitFor } from './support/wait-for.js';
import { utcStamp } from '../src/contract/paths.js';

const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);

for (const polling of [false, true]) {
  const mode = polling ? 'polling' : 'native';

  test(`[${mode}] a live store follows appends, new sessions, checkpoints and removals`, async () => {
    const home = tempHome();
    const file = writeRootSession(home, {
      id: 'root-1',
      cwd: '/work/api',
      at: T0,
      lines: [customEntry('loop-continuation-state', { armed: true, launch: null, nudgeCount: 0 }, T0 + 1000)],
    });
    const store = createLiveStore([home], { polling, reconcileMs: 500, batchMs: 20 });
    try {
      await store.start();
      const facts = () => store.getState().sessionFiles.get(file);
      assert.equal(facts()?.continuation?.armed, true);
      assert.equal(store.getState().progress.get(home)?.done, true);

      // Two appends 20 ms apart, then silence: both must be seen (a watcher may coalesce or drop the second change).
      appendFileSync(file, customEntry('session_info_ignored', {}, T0 + 2000));
      appendFileSync(file, assistantEntry(T0 + 3000, { stopReason: 'error', errorMessage: '429 rate limited' }));
      await waitFor(() => facts()?.lastAssistant?.stopReason === 'error', 'the second append to be read', 4000);
      assert.equal(facts()?.lastAssistant?.errorMessage, '429 rate limited');

      // A line written in two halves: one record, no warning in between.
      const line = customEntry('loop-continuation-state', { armed: false, launch: null, nudgeCount: 1 }, T0 + 4000);
      appendFileSync(file, line.slice(0, 30));
      await waitFor(() => facts()?.incompleteSince !== null, 'the partial line to be noticed', 4000);
      assert.equal(store.getState().warnings.get(file)?.length ?? 0, 0);
      appendFileSync(file, line.slice(30));
      await waitFor(() => facts()?.continuation?.armed === false, 'the completed line', 4000);
      assert.equal(facts()?.incompleteSince, null);

      // A new session appears; a checkpoint appears; the old session is removed.
      const file2 = writeRootSession(home, { id: 'root-2', cwd: '/work/docs', at: T0 + 5000 });
      await waitFor(() => store.getState().sessionFiles.has(file2), 'the new session file', 4000);
      const cpDir = path.join(home, 'loop-dash', 'checkpoints');
      mkdirSync(cpDir, { recursive: true });
      const cp = {
        v: 1, session: 'root-2', sessionFile: file2, role: 'root', parentSession: null, cwd: '/work/docs',
        pid: process.pid, pidStart: null, host: os.hostname(), model: 'p/m', thinking: null, limits: null,
        state: 'requesting', request: { turn: 1, startedAt: T0, lastModelEventAt: T0 + 60_000, lastTransportEventAt: null, modelEvents: 3, keepalives: 0 },
        episode: null, recovery: null, lastStop: null, held: null, ownerAbort: null, updatedAt: T0 + 60_000,
      };
      writeFileSync(path.join(cpDir, '.root-2.json.tmp'), JSON.stringify(cp));
      renameSync(path.join(cpDir, '.root-2.json.tmp'), path.join(cpDir, 'root-2.json'));
      await waitFor(() => store.getState().checkpoints.size === 1, 'the checkpoint', 4000);
      const snap = buildSnapshot(store.getState(), T0 + 120_000, { host: os.hostname() });
      const root2 = snap.roots.find((r) => r.session === 'root-2');
      assert.equal(root2?.state, 'requesting');
      // inactivity = last model event + 15 min
      assert.equal(root2?.clocks.inactivity?.at, T0 + 60_000 + 15 * 60_000);

      rmSync(file);
      await waitFor(() => !store.getState().sessionFiles.has(file), 'the removal to be seen', 4000);
    } finally {
      await store.stop();
    }
  });
}

test('a home that does not exist yet is reported, then picked up when it appears', async () => {
  const base = path.dirname(tempHome());
  const home = path.join(base, 'later-home');
  const store = createLiveStore([home], { reconcileMs: 200, batchMs: 20 });
  try {
    await store.start();
    const w = [...store.getState().warnings.values()].flat();
    assert.ok(w.some((x) => x.message.includes(`waiting for ${home}`)), 'a waiting message names the home');
    const file = writeRootSession(home, { id: 'late-1', cwd: '/w/late', at: T0 });
    await waitFor(() => store.getState().sessionFiles.has(file), 'the late home to be read', 5000);
    await waitFor(() => ![...store.getState().warnings.values()].flat().some((x) => x.message.includes('waiting for')), 'the waiting message to clear', 5000);
  } finally {
    await store.stop();
  }
});

test('settings.json that goes away and comes back unchanged (the same file moved out and in) is read again', async () => {
  const home = tempHome();
  writeRootSession(home, { id: 'root-s', cwd: '/work/s', at: T0 });
  const settings = path.join(home, 'settings.json');
  writeFileSync(settings, JSON.stringify({ loopPi: { requestCeiling: { inactivityMs: 600_000 } } }));
  const aside = path.join(path.dirname(home), `settings-aside-${process.pid}.json`);
  // Sweeps alone (polling): the return of a file with the stat it had before is what must be seen.
  const store = createLiveStore([home], { polling: true, reconcileMs: 100, batchMs: 10 });
  const inactivity = () => (store.getState().settings.get(home)?.settings as { loopPi?: { requestCeiling?: { inactivityMs?: number } } } | null | undefined)?.loopPi?.requestCeiling?.inactivityMs ?? null;
  try {
    await store.start();
    assert.equal(inactivity(), 600_000);
    renameSync(settings, aside);
    await waitFor(() => inactivity() === null, 'the settings to be seen gone', 5000);
    renameSync(aside, settings);
    await waitFor(() => inactivity() === 600_000, 'the same settings file, back, to be read again', 5000);
  } finally {
    await store.stop();
    rmSync(aside, { force: true });
  }
});

test('removed session files are said to be removed; only the last REMOVED_NOTICES keep their notice', async () => {
  const home = tempHome();
  const files = Array.from({ length: REMOVED_NOTICES + 5 }, (_, i) => writeRootSession(home, { id: `gone-${i}`, cwd: `/work/g${i}`, at: T0 + i }));
  const store = createLiveStore([home], { reconcileMs: 100, batchMs: 10 });
  const notices = () => [...store.getState().warnings.entries()].filter(([, ws]) => ws.some((w) => w.message.startsWith('removed: the session file is gone'))).map(([f]) => f);
  try {
    await store.start();
    for (const f of files) rmSync(f);
    await waitFor(() => store.getState().sessionFiles.size === 0 && notices().length === REMOVED_NOTICES, () => `the removals said: ${notices().length} notices`, 5000);
    // The kept notices are those of files the reader saw go last; none for a file it still reads.
    assert.ok(notices().every((f) => files.includes(f)));
    const back = files[0]!;
    writeRootSession(home, { id: 'gone-0', cwd: '/work/g0', at: T0 });
    await waitFor(() => store.getState().sessionFiles.has(back), 'the file back', 5000);
    assert.ok(!notices().includes(back), 'a file read again has no removal notice');
  } finally {
    await store.stop();
  }
});

test('an incident file that stays empty past its grace gets a warning naming it (a cut-off one already did)', async () => {
  const home = tempHome();
  writeRootSession(home, { id: 'root-e', cwd: '/work/e', at: T0 });
  const dir = path.join(home, 'incidents', 'root');
  mkdirSync(dir, { recursive: true });
  const empty = path.join(dir, 'empty.json');
  writeFileSync(empty, '');
  const old = new Date(Date.now() - 60_000);
  utimesSync(empty, old, old);
  const store = createLiveStore([home], { reconcileMs: 100, batchMs: 10 });
  try {
    await store.start();
    await waitFor(() => store.getState().warnings.get(empty)?.[0]?.message.startsWith('incident file is empty'), () => `a warning for the empty incident: ${JSON.stringify(store.getState().warnings.get(empty))}`, 5000);
    writeFileSync(empty, JSON.stringify({ v: 1, session: 'root-e', class: 'loop-arm-refused', at: new Date(T0).toISOString() }));
    await waitFor(() => (store.getState().warnings.get(empty) ?? []).length === 0 && store.getState().incidents.has(empty), 'the warning cleared once it is written', 5000);
  } finally {
    await store.stop();
  }
});

test('a settings.json that is a symlink (a dotfiles repository) is read once, not again at every sweep', async () => {
  const home = tempHome();
  writeRootSession(home, { id: 'root-l', cwd: '/work/l', at: T0 });
  const real = path.join(path.dirname(home), `settings-real-${process.pid}.json`);
  writeFileSync(real, JSON.stringify({ loopPi: { requestCeiling: { inactivityMs: 600_000 } } }));
  symlinkSync(real, path.join(home, 'settings.json'));
  const settingsRead: number[] = [];
  const reader = new HomeReader({ home, emit: (events) => events.forEach((e) => e.type === 'settings' && settingsRead.push((e.settings.settings as { loopPi?: { requestCeiling?: { inactivityMs?: number } } } | null)?.loopPi?.requestCeiling?.inactivityMs ?? 0)), polling: true, reconcileMs: 50, batchMs: 10 });
  try {
    await reader.start();
    assert.deepEqual(settingsRead, [600_000]);
    const start = reader.stats().sweeps;
    await waitFor(() => reader.stats().sweeps >= start + 5, 'five sweeps', 5000);
    assert.deepEqual(settingsRead, [600_000], 'read once, not at every sweep');
  } finally {
    await reader.stop();
    rmSync(real, { force: true });
  }
});

test('a relative launch.report is the root\'s: its state log is read from the root\'s cwd, whatever directory the dashboard runs in', async () => {
  const home = tempHome();
  const repo = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-relrepo-'));
  mkdirSync(path.join(repo, 'codex'), { recursive: true });
  const runId = 'run-7';
  writeFileSync(
    path.join(repo, 'codex', 'state-rel-loop1.jsonl'),
    JSON.stringify({ v: 1, seq: 1, ts: '2026-11-30T12:00:05Z', ev: 'dispatch', by: 'root', lane: 'L7', task: 'the relative task', agent: 'worker', run: runId, base: 'main' }) + '\n',
  );
  const rootFile = writeRootSession(home, {
    id: 'root-rel',
    cwd: repo,
    at: T0,
    lines: [customEntry('loop-continuation-state', { armed: true, launch: { report: 'codex/report-rel-loop1.md', loop: 1, launchTs: T0 }, nudgeCount: 0 }, T0 + 1000)],
  });
  const laneDir = path.join(rootFile.slice(0, -'.jsonl'.length), runId);
  mkdirSync(laneDir, { recursive: true });
  writeFileSync(path.join(laneDir, `${utcStamp(T0 + 2000)}_lane-rel.jsonl`), JSON.stringify({ type: 'session', version: 3, id: 'lane-rel', timestamp: new Date(T0 + 2000).toISOString(), cwd: repo }) + '\n');
  // The dashboard's own working directory holds a decoy at the same relative path.
  const elsewhere = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-elsewhere-'));
  mkdirSync(path.join(elsewhere, 'codex'), { recursive: true });
  writeFileSync(path.join(elsewhere, 'codex', 'state-rel-loop1.jsonl'), JSON.stringify({ v: 1, seq: 1, ts: '2026-11-30T12:00:05Z', ev: 'dispatch', by: 'root', lane: 'DECOY', task: 'decoy', run: runId, base: 'main' }) + '\n');
  const cwd = process.cwd();
  process.chdir(elsewhere);
  const store = createLiveStore([home], { polling: true, reconcileMs: 500, batchMs: 20 });
  try {
    await store.start();
    const lane = () => buildSnapshot(store.getState(), T0 + 10_000, { host: os.hostname() }).roots.find((r) => r.session === 'root-rel')?.lanes.find((l) => l.session === 'lane-rel');
    await waitFor(() => lane()?.lane !== undefined && lane()?.lane !== null, 'the lane named from the state log', 4000);
    assert.equal(lane()?.lane, 'L7');
    assert.equal(lane()?.task, 'the relative task');
  } finally {
    process.chdir(cwd);
    await store.stop();
    for (const d of [home, repo, elsewhere]) rmSync(d, { recursive: true, force: true });
  }
});
