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
import { confirmText } from '../src/views/owner-actions.js';
import type { Key } from 'ink';
import { readKeypress } from '../src/views/keymap.js';
import { buildScreen } from '../src/views/screen.js';
import { treeRows } from '../src/views/session-rows.js';
import { cursorRowIndex, initialViewState, viewReducer, type KeyContext, type ViewState } from '../src/views/view-state.js';
import { spawnSync } from 'node:child_process';

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'loop-dash.js');

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
      // What pi-subagents last said of the run is in the reason.
      assert.match(l.why, /^no checkpoint: state inferred from the session file only; pi-subagents says the run is running$/);
    }
    fs.writeFileSync(statusFile, JSON.stringify({ runId: 'run-1', sessionId: 'root-steps', state: 'running', pid: 4242, currentTool: 'bash', startedAt: T0, steps: [] }));
    for (const l of (await loadSnapshot([home], NOW)).roots.find((r) => r.session === 'root-steps')!.lanes) {
      assert.match(l.why, /; pi-subagents says the run is running \(pid 4242, tool bash\)$/);
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

test('lanes with no session yet (SPEC §3.4): a dispatch with no return, or a run pi-subagents lists as going, is a placeholder lane — shown, named, refused for owner actions; a return, the loop\'s close or the lane\'s session file ends it', async () => {
  const home = tempHome();
  const repo = fs.mkdtempSync(path.join(path.dirname(home), 'repo-'));
  try {
    const report = 'codex/report-dash-loop1.md';
    const root = writeRootSession(home, {
      id: 'root-loop',
      cwd: repo,
      at: T0,
      lines: [customEntry('loop-continuation-state', { armed: true, launch: { report, loop: 1, launchTs: T0 }, nudgeCount: 0 }, T0 + 1000)],
    });
    const logFile = path.join(repo, 'codex', 'state-dash-loop1.jsonl');
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    let seq = 0;
    const ev = (at: number, e: string, raw: Record<string, unknown>) => JSON.stringify({ v: 1, seq: ++seq, ts: new Date(at).toISOString().replace('.000Z', 'Z'), ev: e, by: 'dispatcher', ...raw }) + '\n';
    fs.writeFileSync(
      logFile,
      ev(T0 + 60_000, 'open', {}) +
        ev(T0 + 120_000, 'dispatch', { lane: 'L1', task: 'fix the flaky test', agent: 'worker', run: 'run-a', base: 'abc', deadline: new Date(NOW + 600_000).toISOString(), model: 'openai/gpt-x' }) +
        ev(T0 + 130_000, 'dispatch', { lane: 'L2', task: 'done already', agent: 'worker', run: 'run-b', base: 'abc' }) +
        ev(T0 + 140_000, 'return', { lane: 'L2', run: 'run-b', status: 'complete' }) +
        ev(T0 + 150_000, 'dispatch', { lane: 'L3', task: 'has its session', agent: 'worker', run: 'run-c', base: 'abc' }),
    );
    laneFile(root, 'run-c', 'lane-c', T0 + 160_000);
    const statusOf = (runId: string, state: string) => {
      const file = path.join(home, 'tmp', 'async-subagent-runs', runId, 'status.json');
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, JSON.stringify({ runId, sessionId: root, state, pid: 4242, startedAt: T0 + 170_000, lastActivityAt: T0 + 180_000, steps: [{ agent: 'reviewer', model: 'anthropic/claude-y', status: state }] }));
    };
    statusOf('run-d', 'running');
    statusOf('run-e', 'complete');
    // The returned run's status.json still says running (its end never written): the log says it returned.
    statusOf('run-b', 'running');
    // A run whose root is not here (a leftover status.json): no row of its own.
    statusOf('run-g', 'running');
    const leftover = path.join(home, 'tmp', 'async-subagent-runs', 'run-g', 'status.json');
    fs.writeFileSync(leftover, fs.readFileSync(leftover, 'utf8').replace(JSON.stringify(root), JSON.stringify('/gone/2026-01-01T00-00-00-000Z_gone.jsonl')));

    const lanesOf = async (now = NOW) => (await loadSnapshot([home], now)).roots.find((r) => r.session === 'root-loop')!.lanes;
    let lanes = await lanesOf();
    const byKey = new Map(lanes.map((l) => [l.session, l]));
    assert.deepEqual([...byKey.keys()].sort(), ['lane-c', 'run:run-a', 'run:run-d'], 'the open run, the running one and the lane with its session; not the returned run (whatever its status.json says), the complete one, nor one whose root is not here');
    assert.ok(!(await loadSnapshot([home], NOW)).roots.some((r) => r.session.startsWith('run:')), 'no placeholder is a row of its own');
    const a = byKey.get('run:run-a')!;
    assert.equal(a.placeholder, 'dispatch');
    assert.equal(a.state, 'dispatched');
    assert.equal(a.name, 'L1');
    assert.equal(a.task, 'fix the flaky test');
    assert.equal(a.model, 'openai/gpt-x');
    assert.equal(a.deadline, NOW + 600_000);
    assert.equal(a.parent, 'root-loop');
    assert.match(a.why, /^dispatched 2026-11-30T12:02:00Z \(state log line 2, agent worker\), no return yet; no session file or checkpoint of run run-a found/);
    const d = byKey.get('run:run-d')!;
    assert.equal(d.placeholder, 'status');
    assert.equal(d.state, 'dispatched');
    assert.equal(d.name, 'reviewer');
    assert.equal(d.model, 'anthropic/claude-y');
    assert.match(d.why, /pi-subagents says the run is running \(pid 4242\)/);
    assert.equal(byKey.get('lane-c')!.placeholder, undefined);
    assert.equal(byKey.get('lane-c')!.lane, 'L3');
    // A lane's session that names itself nothing is named by its dispatch (not its cwd's basename, nor an agent's name many lanes share).
    assert.equal(byKey.get('lane-c')!.name, 'L3');

    // What the table, the detail pane and status --json say.
    assert.equal(sessionCells(a, NOW).state.text, 'dispatched');
    const text = detailLines(a, { now: NOW, width: 200, noColor: true, incidents: [], journal: undefined, acks: new Map(), activity: undefined, local: [] }).map(lineText).join('\n');
    assert.match(text, /no session yet \(run run-a\)/);
    assert.match(text, /no session file or checkpoint yet; dispatched 58m ago/);
    assert.match(text, /lane L1 · task fix the flaky test · run run-a · deadline/);
    const json = spawnSync(process.execPath, [BIN, 'status', '--json', '--now', new Date(NOW).toISOString(), '--home', home], { encoding: 'utf8' });
    assert.equal(json.status, 0, json.stderr);
    const jsonLanes = JSON.parse(json.stdout).roots.find((r: { session: string }) => r.session === 'root-loop').lanes as Record<string, unknown>[];
    assert.deepEqual(jsonLanes.filter((l) => l.placeholder).map((l) => [l.session, l.placeholder, l.state]).sort(), [['run:run-a', 'dispatch', 'dispatched'], ['run:run-d', 'status', 'dispatched']]);

    // Owner actions: refused, in the dashboard's dialog and on the command line, and nothing is written.
    for (const action of ['abort', 'disarm', 'arm'] as const) {
      const c = confirmText(action, a, NOW);
      assert.ok(c.refused, action);
      assert.match(c.title, /it has no session yet/);
      assert.match(c.effect, /no session file or checkpoint of it is there, so no extension can answer/);
    }
    // In the dashboard: x opens the dialog, which only says why; y sends nothing.
    const snap = await loadSnapshot([home], NOW);
    const tree = treeRows(snap.roots, { sort: 'first-limit', filter: '', collapsed: new Set() });
    const ctx: KeyContext = { roots: snap.roots, incidents: snap.incidents, now: NOW, tableRows: 40, detailLines: 0, detailRows: 0, incidentRows: 10, recordLines: 0 };
    const keyOf = (input: string) => readKeypress(input, {} as Key, { readOnly: false });
    for (const k of ['x', 'd', 'a']) {
      let s: ViewState = { ...initialViewState(), cursor: 'run:run-a' };
      s = viewReducer(s, { type: 'key', press: keyOf(k), ctx });
      assert.equal(s.confirm?.session, 'run:run-a', `${k} opens the dialog`);
      const dialog = buildScreen({ snapshot: snap, model: { journal: new Map(), acks: new Map() }, view: s, rows: tree, width: 160, height: 80, readOnly: false, noColor: true }).lines.map((l) => lineText(l.line));
      assert.ok(dialog.some((l) => l.includes('Cannot ')) && dialog.at(-1) === 'any key closes', dialog.slice(-6).join('\n'));
      s = viewReducer(s, { type: 'key', press: keyOf('y'), ctx });
      assert.equal(s.confirm, null);
      assert.equal(s.pending.length, 0, 'nothing is sent for a lane with no session');
    }
    const cli = spawnSync(process.execPath, [BIN, 'abort', 'run:run-a', '--yes', '--home', home], { encoding: 'utf8' });
    assert.equal(cli.status, 1, `refused, nothing sent (SPEC §6: 1 refused): ${cli.stdout + cli.stderr}`);
    assert.match(cli.stderr, /abort: L1: This lane has no session yet: its root's state log dispatched run run-a/);
    assert.equal(fs.existsSync(path.join(home, 'loop-dash', 'control')), false, 'no control request written');

    // The status table names it by `run:` and its run id (what the commands take).
    const table = spawnSync(process.execPath, [BIN, 'status', '--now', new Date(NOW).toISOString(), '--home', home], { encoding: 'utf8' });
    assert.match(table.stdout, /└? ?L1 .* dispatched .* run:run-a$/m, table.stdout);

    // The run returns; the running one gets its session file: neither is a placeholder any more.
    // A cursor on the running one's placeholder stays on that lane.
    fs.appendFileSync(logFile, ev(T0 + 200_000, 'return', { lane: 'L1', run: 'run-a', status: 'complete' }));
    laneFile(root, 'run-d', 'lane-d', T0 + 210_000);
    // A session that names itself keeps its name.
    const laneC = path.join(root.slice(0, -'.jsonl'.length), 'run-c', fs.readdirSync(path.join(root.slice(0, -'.jsonl'.length), 'run-c'))[0]!);
    fs.appendFileSync(laneC, JSON.stringify({ type: 'session_info', id: 'i1', parentId: null, timestamp: new Date(T0 + 205_000).toISOString(), name: 'flaky-test fixer' }) + '\n');
    const later = await loadSnapshot([home], NOW);
    lanes = later.roots.find((r) => r.session === 'root-loop')!.lanes;
    assert.deepEqual(lanes.map((l) => l.session).sort(), ['lane-c', 'lane-d']);
    assert.equal(lanes.find((l) => l.session === 'lane-c')!.name, 'flaky-test fixer');
    const rows = treeRows(later.roots, { sort: 'first-limit', filter: '', collapsed: new Set() });
    assert.equal(rows[cursorRowIndex('run:run-d', 0, rows)]!.id, 'lane-d');
    // A new dispatch, then the loop's close: a closed loop has no live lane.
    fs.appendFileSync(logFile, ev(T0 + 220_000, 'dispatch', { lane: 'L4', task: 'late', agent: 'worker', run: 'run-f', base: 'abc' }));
    assert.ok((await lanesOf()).some((l) => l.session === 'run:run-f'));
    fs.appendFileSync(logFile, ev(T0 + 230_000, 'close', {}));
    assert.deepEqual((await lanesOf()).map((l) => l.session).sort(), ['lane-c', 'lane-d']);
  } finally {
    fs.rmSync(path.dirname(home), { recursive: true, force: true });
  }
});
