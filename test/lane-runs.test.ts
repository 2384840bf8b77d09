/**
 * What a home's files say beyond a session file and a checkpoint: pi-subagents' run status
 * (SPEC §3.3) for lanes without a checkpoint, loop-wait's held wakes (§3.1), and session files
 * whose times lie past `now`. Read through the one-shot loader, as `status` reads.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadSnapshot } from '../src/cli/load-snapshot.js';
import { customEntry, tempHome, writeRootSession } from './support/mini-home.js';
import { utcStamp } from '../src/contract/paths.js';
import { sessionCells } from '../src/views/cells.js';
import { detailLines } from '../src/views/detail-lines.js';
import { lineText } from '../src/views/line.js';

const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
const NOW = T0 + 3_600_000;

function laneFile(rootFile: string, runId: string, id: string, at: number): string {
  const dir = path.join(rootFile.slice(0, -'.jsonl'.length), runId);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${utcStamp(at)}_${id}.jsonl`);
  fs.writeFileSync(file, JSON.stringify({ type: 'session', version: 3, id, timestamp: new Date(at).toISOString(), cwd: '/work/runs' }) + '\n');
  return file;
}

test('a multi-step run: each lane is named (and its model given) by the step that wrote it; a failed run with no checkpoint has ended, its error the failed step\'s', async () => {
  const home = tempHome();
  try {
    const root = writeRootSession(home, { id: 'root-steps', cwd: '/work/runs', at: T0 });
    const scout = laneFile(root, 'run-1', 'lane-scout', T0 + 1000);
    const builder = laneFile(root, 'run-1', 'lane-builder', T0 + 2000);
    const statusFile = path.join(home, 'tmp', 'async-subagent-runs', 'run-1', 'status.json');
    fs.mkdirSync(path.dirname(statusFile), { recursive: true });
    fs.writeFileSync(
      statusFile,
      JSON.stringify({
        runId: 'run-1',
        sessionId: 'root-steps',
        state: 'failed',
        startedAt: T0,
        endedAt: T0 + 5000,
        error: 'boom: the builder gave up',
        steps: [
          { agent: 'scout', model: 'openai/gpt-a', status: 'complete', sessionFile: scout },
          { agent: 'builder', model: 'anthropic/claude-b', status: 'failed', sessionFile: builder },
        ],
      }),
    );
    const snap = await loadSnapshot([home], NOW);
    const lanes = snap.roots.find((r) => r.session === 'root-steps')!.lanes;
    const byId = new Map(lanes.map((l) => [l.session, l]));
    assert.equal(byId.get('lane-scout')?.name, 'scout');
    assert.equal(byId.get('lane-scout')?.model, 'openai/gpt-a');
    assert.equal(byId.get('lane-builder')?.name, 'builder');
    assert.equal(byId.get('lane-builder')?.model, 'anthropic/claude-b');
    for (const l of lanes) assert.equal(l.state, 'ended', l.session);
    // The run's error is the failed step's, not the one that completed.
    assert.match(byId.get('lane-builder')!.why, /pi-subagents says the run is failed: boom: the builder gave up$/);
    assert.equal(byId.get('lane-builder')!.lastError, 'boom: the builder gave up');
    assert.match(byId.get('lane-scout')!.why, /pi-subagents says the run is failed \(its step: complete\)$/);
    assert.equal(byId.get('lane-scout')!.lastError, null);

    // A run still going says nothing of the state, and its error is no lane's yet.
    fs.writeFileSync(statusFile, JSON.stringify({ runId: 'run-1', sessionId: 'root-steps', state: 'running', startedAt: T0, error: 'a transient note', steps: [] }));
    const running = await loadSnapshot([home], NOW);
    for (const l of running.roots.find((r) => r.session === 'root-steps')!.lanes) {
      assert.equal(l.state, 'unknown', l.session);
      assert.equal(l.lastError, null);
    }
    // Two steps, neither naming its file: no step is known to be either lane's, so each lane is
    // named by the first step's agent and takes the failed run's error (it may be either's).
    fs.writeFileSync(
      statusFile,
      JSON.stringify({ runId: 'run-1', sessionId: 'root-steps', state: 'failed', startedAt: T0, error: 'boom', steps: [{ agent: 'scout', status: 'complete', sessionFile: null }, { agent: 'builder', status: 'failed', sessionFile: null }] }),
    );
    for (const l of (await loadSnapshot([home], NOW)).roots.find((r) => r.session === 'root-steps')!.lanes) {
      assert.equal(l.name, 'scout');
      assert.match(l.why, /pi-subagents says the run is failed: boom$/);
      assert.equal(l.lastError, 'boom');
    }
    // One step (or none named) that failed: the run's error is the lane's.
    fs.writeFileSync(statusFile, JSON.stringify({ runId: 'run-1', sessionId: 'root-steps', state: 'failed', startedAt: T0, error: 'boom', steps: [] }));
    for (const l of (await loadSnapshot([home], NOW)).roots.find((r) => r.session === 'root-steps')!.lanes) {
      assert.match(l.why, /pi-subagents says the run is failed: boom$/);
      assert.equal(l.lastError, 'boom');
    }
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('loop-wait holding wakes after an owner abort (heldMessages) shows the root held, with how many', async () => {
  const home = tempHome();
  try {
    writeRootSession(home, {
      id: 'root-wakes',
      cwd: '/work/wakes',
      at: T0,
      lines: [customEntry('loop-wait-state', { timers: [{ id: 't1', at: NOW + 3_600_000, reason: 'CI' }], watchers: [], heldMessages: ['wake: CI done'] }, T0 + 1000)],
    });
    const snap = await loadSnapshot([home], NOW);
    const root = snap.roots.find((r) => r.session === 'root-wakes')!;
    assert.equal(root.state, 'held');
    assert.equal(root.held, true);
    assert.match(root.why, /loop-wait holds 1 wake \(after an owner abort\)/);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('a session file whose mtime lies past now: its age reads 0s, never negative, and the detail pane says how far ahead it is', async () => {
  const home = tempHome();
  try {
    const file = writeRootSession(home, { id: 'root-future', cwd: '/work/future', at: T0, lines: [customEntry('session_info_other', {}, T0 + 60_000)] });
    const future = NOW + 2 * 3_600_000;
    fs.utimesSync(file, future / 1000, future / 1000);
    const snap = await loadSnapshot([home], NOW);
    const root = snap.roots.find((r) => r.session === 'root-future')!;
    assert.equal(root.lastActivityAt, future, 'the data as it is');
    assert.equal(sessionCells(root, NOW).age.text, '~0s');
    const text = detailLines(root, { now: NOW, width: 200, noColor: true, incidents: [], journal: undefined, acks: new Map(), activity: undefined, local: [] }).map(lineText).join('\n');
    assert.match(text, /session file last active 2:00:00 ahead of this machine's clock/);
    // Once it is past, the age counts from it.
    assert.equal(sessionCells(root, future + 5_000).age.text, '~5s');
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});
