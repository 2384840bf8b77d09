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

const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
const NOW = T0 + 3_600_000;

function laneFile(rootFile: string, runId: string, id: string, at: number): string {
  const dir = path.join(rootFile.slice(0, -'.jsonl'.length), runId);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${utcStamp(at)}_${id}.jsonl`);
  fs.writeFileSync(file, JSON.stringify({ type: 'session', version: 3, id, timestamp: new Date(at).toISOString(), cwd: '/work/runs' }) + '\n');
  return file;
}

test('a multi-step run: each lane is named (and its model given) by the step that wrote it; a failed run with no checkpoint has ended, with its error', async () => {
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
    for (const l of lanes) {
      assert.equal(l.state, 'ended', l.session);
      assert.match(l.why, /pi-subagents says the run is failed: boom: the builder gave up/);
      assert.equal(l.lastError, 'boom: the builder gave up');
    }

    // A run still going says nothing of the state: the lanes stay as their files show them.
    fs.writeFileSync(statusFile, JSON.stringify({ runId: 'run-1', sessionId: 'root-steps', state: 'running', startedAt: T0, steps: [] }));
    const running = await loadSnapshot([home], NOW);
    for (const l of running.roots.find((r) => r.session === 'root-steps')!.lanes) assert.equal(l.state, 'unknown', l.session);
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

test('a session file whose mtime and entries lie past now: no negative age, its activity taken once it is due', async () => {
  const home = tempHome();
  try {
    const file = writeRootSession(home, { id: 'root-future', cwd: '/work/future', at: T0, lines: [customEntry('session_info_other', {}, T0 + 60_000)] });
    const future = NOW + 2 * 3_600_000;
    fs.utimesSync(file, future / 1000, future / 1000);
    const snap = await loadSnapshot([home], NOW);
    const root = snap.roots.find((r) => r.session === 'root-future')!;
    assert.equal(root.lastActivityAt, T0 + 60_000, 'the last entry, not the mtime two hours ahead');
    assert.ok(root.lastActivityAt! <= NOW);
    // Once the mtime is due it counts.
    const later = await loadSnapshot([home], future + 1000);
    assert.equal(later.roots.find((r) => r.session === 'root-future')!.lastActivityAt, future);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});
