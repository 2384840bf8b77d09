/**
 * The snapshot's row cache (SnapshotOptions.cache, docs/PERFORMANCE.md): a row whose inputs are
 * unchanged is re-timed instead of built again, as long as nothing but its countdowns and
 * checkpoint age can have changed. The promise: with or without the cache, the snapshot is the
 * same — for every `now`, in any order of ticks and model changes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import type { Checkpoint } from '../src/contract/checkpoint.js';
import { generateHome } from '../src/demo/generate.js';
import { initialModelState, reduceEvents, type ModelState } from '../src/model/reducer.js';
import { MinQueue } from '../src/model/min-queue.js';
import { buildSnapshot, createSnapshotCache, snapshotSteps } from '../src/model/snapshot.js';
import type { ReaderEvent, StateLogEvent } from '../src/model/types.js';
import { loadHomeOnce } from '../src/readers/home-reader.js';
import { stateLogPathFromReport } from '../src/contract/paths.js';
import { headerLines } from '../src/views/header-lines.js';
import { createNextFrameChange, nextFrameChange } from '../src/views/next-change.js';
import { SORT_MODES, treeRowList, treeRows } from '../src/views/session-rows.js';
import { initialViewState } from '../src/views/view-state.js';
import { checkpoint, cpEvent, facts, factsEvent, fileOf, HOME, HOST, NOW, requesting } from './views-fixtures.js';
import { prepareFrameSnapshot } from '../src/views/first-frame.js';

const MIN = 60_000;
const states = ['idle', 'requesting', 'tools', 'retry-wait', 'stopped', 'ended'] as const;

/** One session: its checkpoint's state and instants relative to NOW, its probe and wait timers, its place in the tree. */
const sessionArb = fc.record({
  state: fc.constantFrom(...states),
  otherHost: fc.boolean(),
  updatedAgo: fc.integer({ min: -5_000, max: 90_000 }),
  startedAgo: fc.integer({ min: 0, max: 80 * MIN }),
  lastEventAgo: fc.option(fc.integer({ min: 0, max: 20 * MIN }), { nil: null }),
  episode: fc.option(fc.record({ startedAgo: fc.integer({ min: 0, max: 25 * MIN }), attempts: fc.integer({ min: 0, max: 6 }), retryIn: fc.option(fc.integer({ min: -60_000, max: 120_000 }), { nil: null }) }), { nil: null }),
  recovery: fc.option(fc.record({ stoppedAgo: fc.integer({ min: 0, max: 10 * MIN }), resumes: fc.integer({ min: 0, max: 6 }), resumeIn: fc.option(fc.integer({ min: -60_000, max: 600_000 }), { nil: null }) }), { nil: null }),
  probe: fc.constantFrom('none', 'alive', 'gone', 'reused', 'unknown'),
  armed: fc.constantFrom(true, false, null),
  held: fc.boolean(),
  timers: fc.array(fc.option(fc.integer({ min: -30_000, max: 90_000 }), { nil: null }), { maxLength: 3 }),
  /** Its loop-wait watchers (a receipt step names one by id). */
  watchers: fc.subarray(['w1', 'w2']),
  hasCheckpoint: fc.integer({ min: 0, max: 9 }).map((n) => n > 0),
  /** A lane of the session at this index (when that one is a root), else a root. */
  laneOf: fc.option(fc.nat({ max: 7 }), { nil: null }),
  /** A loop launch report (a root's state log names its lanes; a lane whose root is gone follows its own). */
  report: fc.boolean(),
  size: fc.nat({ max: 1_000_000 }),
});
type SessionSpec = typeof sessionArb extends fc.Arbitrary<infer T> ? T : never;

const idOf = (i: number) => `${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`;
const reportOf = (i: number) => `/tmp/loop-dash-views-home/loops/report-${i}.md`;

/** Events that (re)write the sessions at the given indices; `all` gives the tree (roots vs lanes). */
function eventsFor(all: ReadonlyMap<number, SessionSpec>, indices: Iterable<number>): ReaderEvent[] {
  const events: ReaderEvent[] = [];
  const isRoot = (i: number) => all.has(i) && all.get(i)!.laneOf === null;
  for (const i of indices) {
    const s = all.get(i)!;
    const id = idOf(i);
    const pid = 5000 + i;
    const root = s.laneOf !== null && s.laneOf !== i && isRoot(s.laneOf) ? s.laneOf : null;
    events.push(
      factsEvent(
        facts(id, `s${i}`, {
          role: root === null ? 'root' : 'lane',
          rootFile: root === null ? null : fileOf(idOf(root)),
          runId: root === null ? null : `run-${i}`,
          size: s.size,
          continuation:
            // A lane may carry one too (its root gone, it is its own row and follows its log).
            s.armed === null ? null : { at: NOW - 30 * MIN, armed: s.armed, launch: s.report ? { report: reportOf(i), loop: null, launchTs: null } : null, nudgeCount: 0, raw: {} },
          waitState:
            s.timers.length || s.watchers.length
              ? {
                  at: NOW - MIN,
                  timers: s.timers.map((t, k) => ({ id: `t${k}`, at: t === null ? null : NOW + t, reason: null })),
                  watchers: s.watchers.map((id) => ({ id, label: null, pid: null, phase: 'running', command: 'gh run watch', deadline: NOW + 30 * MIN, intervalS: 30 })),
                  // Wakes held after an owner abort for some (a root then reads held while idle or stopped).
                  heldMessages: s.timers.length % 2 === 1 ? ['wake: held'] : null,
                }
              : null,
        }),
      ),
    );
    if (!s.hasCheckpoint) continue;
    const cp: Checkpoint = checkpoint(id, {
      state: s.state,
      role: root === null ? 'root' : 'lane',
      parentSession: root === null ? null : idOf(root),
      pid,
      host: s.otherHost ? 'elsewhere' : HOST,
      updatedAt: NOW - s.updatedAgo,
      request: { turn: 3, startedAt: NOW - s.startedAgo, lastModelEventAt: s.lastEventAgo === null ? null : NOW - s.lastEventAgo, lastTransportEventAt: null, modelEvents: 4, keepalives: 0 },
      episode: s.episode && { startedAt: NOW - s.episode.startedAgo, attempts: s.episode.attempts, lastError: 'overloaded', lastErrorClass: 'overloaded', nextRetryAt: s.episode.retryIn === null ? null : NOW + s.episode.retryIn },
      recovery: s.recovery && { stoppedAt: NOW - s.recovery.stoppedAgo, resumes: s.recovery.resumes, nextResumeAt: s.recovery.resumeIn === null ? null : NOW + s.recovery.resumeIn, reason: null },
      held: s.held ? { since: NOW - MIN, by: 'owner', heldTurnStarts: 0 } : null,
      // Some retries of a provider loop-pi's recovery does not cover: no episode deadline.
      limits: { inactivityMs: 15 * MIN, absoluteMs: 75 * MIN, episodeMs: 20 * MIN, episodeMaxAttempts: 5, episodeApplies: !s.episode || s.episode.attempts % 2 === 0 },
    });
    events.push(cpEvent(cp));
    if (s.probe !== 'none') {
      events.push({
        type: 'probe',
        probe: { pid, status: s.probe === 'reused' ? 'alive' : s.probe, start: s.probe === 'reused' ? '999' : s.probe === 'alive' ? '1000' : null, checkedAt: NOW },
      });
    }
  }
  return events;
}

/** Every root's state log: a dispatch per lane run (lane name, task, deadline). */
function stateLogEvents(all: ReadonlyMap<number, SessionSpec>): ReaderEvent[] {
  const out: ReaderEvent[] = [];
  for (const [i, s] of all) {
    if (s.laneOf !== null || !s.report) continue;
    const file = stateLogPathFromReport(reportOf(i));
    const lanes = [...all].filter(([j, l]) => l.laneOf === i && j !== i);
    const events = lanes.map(([j], n) => ({ file, line: n + 1, seq: n, at: NOW - MIN, ev: 'dispatch', by: null, raw: { run: `run-${j}`, lane: `lane-${j}`, task: `task ${j}`, deadline: new Date(NOW + j * MIN).toISOString() } }));
    out.push({ type: 'state-log', file, events, reset: true });
  }
  return out;
}

/** The model of a home holding every session of `all` (files, checkpoints, lane statuses, state logs). */
function modelOf(all: ReadonlyMap<number, SessionSpec>): ModelState {
  return reduceEvents(initialModelState(), [...eventsFor(all, all.keys()), ...stateLogEvents(all)]);
}

/** A step: time passes (whole, fractional or none), or sessions are rewritten, added or removed. */
const stepArb = fc.oneof(
  fc.record({ dt: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40_000 }), fc.double({ min: 0.001, max: 2_000, noNaN: true })) }),
  fc.record({ rewrite: fc.array(fc.tuple(fc.nat({ max: 7 }), sessionArb), { minLength: 1, maxLength: 3 }) }),
  fc.record({ remove: fc.nat({ max: 7 }) }),
  // An incident for a session (or none), or one removed; a probe that sees something new.
  fc.record({ incident: fc.nat({ max: 7 }), n: fc.nat({ max: 3 }), drop: fc.boolean() }),
  fc.record({ probe: fc.nat({ max: 7 }), status: fc.constantFrom('alive', 'gone', 'reused', 'unknown') }),
  // A lane status written or removed: the run of session `laneStatus` (lanes' runs are `run-<i>`;
  // a root's index names a run no session has), in one of two files (two files naming one run).
  fc.record({
    laneStatus: fc.nat({ max: 7 }),
    copy: fc.nat({ max: 1 }),
    state: fc.constantFrom('queued', 'running', 'complete', 'failed'),
    deadlineIn: fc.option(fc.integer({ min: -60_000, max: 600_000 }), { nil: null }),
    agent: fc.constantFrom('worker', 'reviewer', null),
    drop: fc.boolean(),
    // The parent session it names (a run no session has is a placeholder under it, if it is a root).
    parent: fc.option(fc.nat({ max: 7 }), { nil: null }),
  }),
  // A copy of the session at `copyOf` in a second home (a home copied and given beside it), its
  // files written `shift` ms after the original's, or the copy removed: one row, the copy written
  // last, and a warning for the other (joinParts).
  fc.record({ copyOf: fc.nat({ max: 7 }), shift: fc.integer({ min: -2_000, max: 2_000 }), drop: fc.boolean() }),
  // A watcher receipt written or removed, for watcher `id` of the session at `receipt`.
  fc.record({ receipt: fc.nat({ max: 7 }), id: fc.constantFrom('w1', 'w2', 'w3'), observations: fc.nat({ max: 9 }), phase: fc.constantFrom('running', 'done'), drop: fc.boolean() }),
  // A state log appended to or rewritten: the log of the session at `stateLog` (followed when that
  // is a root with a launch report), a dispatch for each of the lanes given (their run ids) with a
  // deadline, or a heartbeat; then a return for each of `returns`, and the loop's close. A dispatched
  // run no session names is a placeholder lane until it returns or the loop closes.
  fc.record({
    stateLog: fc.nat({ max: 7 }),
    runs: fc.array(fc.nat({ max: 7 }), { maxLength: 3 }),
    deadlineShift: fc.integer({ min: -5, max: 5 }),
    reset: fc.boolean(),
    returns: fc.array(fc.nat({ max: 7 }), { maxLength: 2 }),
    close: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  }),
);

/** The second home of the copy steps. */
const HOME2 = `${HOME}-copy`;

/** A copy step's events (see stepArb): the session's files and checkpoint in HOME2, or their removal. */
function copyEvents(all: ReadonlyMap<number, SessionSpec>, step: { copyOf: number; shift: number; drop: boolean }): ReaderEvent[] {
  const id = idOf(step.copyOf);
  const inCopy = (file: string) => HOME2 + file.slice(HOME.length);
  if (step.drop || !all.has(step.copyOf)) {
    return [
      { type: 'session-file-removed', file: inCopy(fileOf(id)) },
      { type: 'checkpoint-removed', file: inCopy(`${HOME}/loop-dash/checkpoints/${id}.json`) },
    ];
  }
  return eventsFor(all, [step.copyOf]).map((e): ReaderEvent => {
    if (e.type === 'session-file') return { ...e, facts: { ...e.facts, file: inCopy(e.facts.file), home: HOME2, mtimeMs: e.facts.mtimeMs + step.shift } };
    if (e.type === 'checkpoint') return { ...e, record: { ...e.record, file: inCopy(e.record.file), home: HOME2, mtimeMs: e.record.mtimeMs + step.shift } };
    return e;
  });
}

/** A receipt step's event (see stepArb). */
function receiptEvent(step: { receipt: number; id: string; observations: number; phase: string; drop: boolean }): ReaderEvent {
  const session = idOf(step.receipt);
  const file = `${HOME}/loop-wait/${session}/receipts/${step.id}.json`;
  if (step.drop) return { type: 'receipt-removed', file };
  return {
    type: 'receipt',
    receipt: { file, home: HOME, session, id: step.id, phase: step.phase, observations: step.observations, lastObservedAt: NOW - step.observations * 1000, deadline: NOW + 30 * MIN, result: null, pid: null, command: 'gh run watch', intervalS: 30, label: null, note: null },
  };
}

/** A state log step's event (see stepArb). */
function stateLogEvent(step: { stateLog: number; runs: number[]; deadlineShift: number; reset: boolean; returns?: number[]; close?: boolean }): ReaderEvent {
  const file = stateLogPathFromReport(reportOf(step.stateLog));
  const events: StateLogEvent[] = step.runs.length
    ? step.runs.map((j, n) => ({ file, line: 100 + n, seq: 100 + n, at: NOW, ev: 'dispatch', by: null, raw: { run: `run-${j}`, lane: `lane-${j}-${step.deadlineShift}`, task: `task ${j}`, deadline: new Date(NOW + (j + step.deadlineShift) * MIN).toISOString() } }))
    : [{ file, line: 100, seq: 100, at: NOW, ev: 'heartbeat', by: 'root', raw: { at: new Date(NOW).toISOString() } }];
  for (const j of step.returns ?? []) events.push({ file, line: 110 + events.length, seq: 110 + events.length, at: NOW, ev: 'return', by: 'dispatcher', raw: { run: `run-${j}`, lane: `lane-${j}`, status: 'complete' } });
  if (step.close) events.push({ file, line: 120, seq: 120, at: NOW, ev: 'close', by: 'root', raw: {} });
  return { type: 'state-log', file, events, reset: step.reset };
}

/** A lane status step's event (see stepArb). */
function laneStatusEvent(step: { laneStatus: number; copy: number; state: string; deadlineIn: number | null; agent: string | null; drop: boolean; parent?: number | null }): ReaderEvent {
  const file = `${HOME}/tmp/async-subagent-runs/run-${step.laneStatus}${step.copy ? '-b' : ''}/status.json`;
  if (step.drop) return { type: 'lane-status-removed', file };
  return {
    type: 'lane-status',
    status: {
      file,
      home: HOME,
      runId: `run-${step.laneStatus}`,
      sessionId: step.parent === undefined || step.parent === null ? null : idOf(step.parent),
      state: step.state,
      pid: null,
      startedAt: NOW - 10 * MIN,
      endedAt: null,
      lastActivityAt: NOW - MIN,
      deadlineAt: step.deadlineIn === null ? null : NOW + step.deadlineIn,
      timeoutMs: null,
      currentTool: null,
      currentToolStartedAt: null,
      sessionFile: null,
      steps: [{ agent: step.agent, model: null, status: step.state, sessionFile: null }],
      // A failed run's error (a lane without a checkpoint then reads ended, with it).
      error: step.state === 'failed' ? 'boom' : null,
    },
  };
}

test('property: with or without the row cache the snapshot is the same, at every tick and after every model change', () => {
  fc.assert(
    fc.property(fc.array(sessionArb, { minLength: 1, maxLength: 8 }), fc.array(stepArb, { minLength: 1, maxLength: 25 }), (specs, steps) => {
      const all = new Map(specs.map((s, i) => [i, s] as const));
      let state = modelOf(all);
      const cache = createSnapshotCache();
      let now = NOW;
      const same = (what: string) => {
        assert.deepEqual(buildSnapshot(state, now, { host: HOST, cache }), buildSnapshot(state, now, { host: HOST }), what);
        cacheIndexesHold(cache, what);
      };
      same('first build');
      for (const step of steps) {
        if ('dt' in step) now += step.dt;
        else if ('rewrite' in step) {
          // Mostly the same place in the tree (the cheap path), sometimes a move.
          for (const [i, spec] of step.rewrite) all.set(i, spec.size % 4 === 0 || !all.has(i) ? spec : { ...spec, laneOf: all.get(i)!.laneOf, report: all.get(i)!.report });
          state = reduceEvents(state, eventsFor(all, step.rewrite.map(([i]) => i)));
        } else if ('incident' in step) {
          const file = `${HOME}/incidents/${step.incident}-${step.n}.json`;
          state = reduceEvents(
            state,
            step.drop
              ? [{ type: 'incident-removed', file }]
              : [{ type: 'incident', record: { file, home: HOME, cls: 'timeout', known: true, session: idOf(step.incident), at: NOW - step.n * 1000, limit: 'inactivity', attempt: null, exhausted: false, movedAside: false, summary: 'timeout', raw: {} } }],
          );
        } else if ('probe' in step) {
          const pid = 5000 + step.probe;
          state = reduceEvents(state, [{ type: 'probe', probe: { pid, status: step.status === 'reused' ? 'alive' : step.status, start: step.status === 'reused' ? `r${now}` : step.status === 'alive' ? '1000' : null, checkedAt: now } }]);
        } else if ('laneStatus' in step) {
          state = reduceEvents(state, [laneStatusEvent(step)]);
        } else if ('stateLog' in step) {
          state = reduceEvents(state, [stateLogEvent(step)]);
        } else if ('receipt' in step) {
          state = reduceEvents(state, [receiptEvent(step)]);
        } else if ('copyOf' in step) {
          state = reduceEvents(state, copyEvents(all, step));
        } else if ('remove' in step && all.has(step.remove) && all.size > 1) {
          all.delete(step.remove);
          const id = idOf(step.remove);
          state = reduceEvents(state, [
            { type: 'session-file-removed', file: fileOf(id) },
            { type: 'checkpoint-removed', file: `${HOME}/loop-dash/checkpoints/${id}.json` },
          ]);
        }
        same(`after ${JSON.stringify(step).slice(0, 80)}`);
      }
    }),
    { numRuns: 400 },
  );
});

/**
 * The row cache's own indexes: its queue of edges holds every cached row with a finite window,
 * once, and no row the cache no longer holds (an entry that kept a replaced row would keep its
 * view alive); its index of roots places every row of the last snapshot under its root.
 */
function cacheIndexesHold(cache: ReturnType<typeof createSnapshotCache>, what: string): void {
  let held = 0;
  cache.edges.forEach((e, at) => {
    if (e.memo === null) return;
    held++;
    assert.equal(cache.rows.get(e.memo.key), e.memo, `${what}: an entry holds a row the cache no longer holds`);
    assert.equal(at, e.memo.stableUntil, `${what}: an entry's edge is its row's`);
  });
  let finite = 0;
  cache.rows.forEach((m) => {
    if (m.stableUntil === Infinity) return;
    finite++;
    assert.equal(m.edge?.memo, m, `${what}: a cached row with a finite window (${m.stableUntil}) has no entry`);
  });
  assert.equal(held, finite, `${what}: entries holding rows`);
  assert.ok(cache.edges.size <= 2 * cache.rows.size + 1024, `${what}: ${cache.edges.size} entries for ${cache.rows.size} rows`);
  // The index of roots, when it is the last snapshot's, places every row of it under its root.
  const index = cache.rootIndex;
  if (!index || index.of !== cache.last?.snapshot.roots) return;
  let rows = 0;
  for (const root of index.of) {
    const key = `${root.home}\0${root.session}`;
    assert.equal(index.rootOf.get(key), key, `${what}: root ${root.session} placed`);
    assert.equal(index.byKey.get(key), root, `${what}: root ${root.session} by its key`);
    for (const lane of root.lanes) assert.equal(index.rootOf.get(`${lane.home}\0${lane.session}`), key, `${what}: lane ${lane.session} placed under its root`);
    rows += 1 + root.lanes.length;
  }
  assert.equal(index.rootOf.size, rows, `${what}: the index places exactly the rows shown`);
}

/** Applies a step to the sessions and the model (shared by the properties below). */
function applyStep(all: Map<number, SessionSpec>, state: ModelState, now: number, step: typeof stepArb extends fc.Arbitrary<infer T> ? T : never): { state: ModelState; now: number } {
  if ('dt' in step) return { state, now: now + step.dt };
  if ('rewrite' in step) {
    for (const [i, spec] of step.rewrite) all.set(i, spec.size % 4 === 0 || !all.has(i) ? spec : { ...spec, laneOf: all.get(i)!.laneOf, report: all.get(i)!.report });
    return { state: reduceEvents(state, eventsFor(all, step.rewrite.map(([i]) => i))), now };
  }
  if ('incident' in step) {
    const file = `${HOME}/incidents/${step.incident}-${step.n}.json`;
    const ev: ReaderEvent = step.drop
      ? { type: 'incident-removed', file }
      : { type: 'incident', record: { file, home: HOME, cls: 'timeout', known: true, session: idOf(step.incident), at: NOW - step.n * 1000, limit: 'inactivity', attempt: null, exhausted: false, movedAside: false, summary: 'timeout', raw: {} } };
    return { state: reduceEvents(state, [ev]), now };
  }
  if ('probe' in step) {
    const pid = 5000 + step.probe;
    return { state: reduceEvents(state, [{ type: 'probe', probe: { pid, status: step.status === 'reused' ? 'alive' : step.status, start: step.status === 'reused' ? `r${now}` : step.status === 'alive' ? '1000' : null, checkedAt: now } }]), now };
  }
  if ('laneStatus' in step) return { state: reduceEvents(state, [laneStatusEvent(step)]), now };
  if ('stateLog' in step) return { state: reduceEvents(state, [stateLogEvent(step)]), now };
  if ('receipt' in step) return { state: reduceEvents(state, [receiptEvent(step)]), now };
  if ('copyOf' in step) return { state: reduceEvents(state, copyEvents(all, step)), now };
  if ('remove' in step && all.has(step.remove) && all.size > 1) {
    all.delete(step.remove);
    const id = idOf(step.remove);
    return {
      state: reduceEvents(state, [
        { type: 'session-file-removed', file: fileOf(id) },
        { type: 'checkpoint-removed', file: `${HOME}/loop-dash/checkpoints/${id}.json` },
      ]),
      now,
    };
  }
  return { state, now };
}

test('a lane status rewritten again and again (the patch derives the run index from the last one): cached equals built, also for a run two files name', () => {
  const [base] = fc.sample(sessionArb, { seed: 7, numRuns: 1 });
  const quiet = { ...base!, state: 'idle' as const, episode: null, recovery: null, timers: [], watchers: [], probe: 'none' as const, held: false, hasCheckpoint: true, otherHost: false, updatedAgo: 1_000, report: false, size: 1 };
  // Root 0, its lanes 1 and 2 (runs run-1 and run-2).
  const all = new Map<number, SessionSpec>([
    [0, { ...quiet, laneOf: null }],
    [1, { ...quiet, laneOf: 0 }],
    [2, { ...quiet, laneOf: 0 }],
  ]);
  let state = reduceEvents(initialModelState(), eventsFor(all, all.keys()));
  const cache = createSnapshotCache();
  let now = NOW;
  const write = (run: number, copy: number, deadlineIn: number) => {
    state = reduceEvents(state, [laneStatusEvent({ laneStatus: run, copy, state: 'running', deadlineIn, agent: 'worker', drop: false })]);
    now += 1_000;
    const cached = buildSnapshot(state, now, { host: HOST, cache });
    assert.deepEqual(cached, buildSnapshot(state, now, { host: HOST }), `run-${run} (file ${copy}) due in ${deadlineIn} ms`);
    return cached;
  };
  write(1, 0, 60_000);
  for (let k = 1; k <= 4; k++) {
    const snap = write(1, 0, 60_000 + k * 1_000);
    assert.equal(snap.roots[0]!.lanes.find((l) => l.session === idOf(1))!.deadline, NOW + 60_000 + k * 1_000, 'the lane shows the status just written');
  }
  // A second file naming run-2, then each of the two rewritten: the index's winner is the map's.
  write(2, 0, 10_000);
  write(2, 1, 20_000);
  for (let k = 1; k <= 3; k++) {
    write(2, 0, 10_000 + k);
    write(2, 1, 20_000 + k);
  }
});

test('a lane whose request starts while its root stays as it was: its countdown moves at the next ticks (cached equals built)', () => {
  // Root 0 and its lane 1, neither with a running clock; then the lane's request starts (the root's
  // row is not rebuilt: the same place in the tree) and time passes.
  const [base] = fc.sample(sessionArb, { seed: 7, numRuns: 1 });
  const quiet = { ...base!, state: 'idle' as const, episode: null, recovery: null, timers: [], probe: 'none' as const, held: false, hasCheckpoint: true, otherHost: false, updatedAgo: 1_000, report: false, size: 1 };
  const all = new Map<number, SessionSpec>([
    [0, { ...quiet, laneOf: null }],
    [1, { ...quiet, laneOf: 0 }],
  ]);
  let state = reduceEvents(initialModelState(), eventsFor(all, all.keys()));
  const cache = createSnapshotCache();
  let now = NOW;
  const same = (what: string) => assert.deepEqual(buildSnapshot(state, now, { host: HOST, cache }), buildSnapshot(state, now, { host: HOST }), what);
  same('first build');
  now += 1_000;
  same('a tick');
  all.set(1, { ...quiet, laneOf: 0, state: 'requesting', updatedAgo: 0, startedAgo: 0, lastEventAgo: 0, size: 2 });
  state = reduceEvents(state, eventsFor(all, [1]));
  same('the lane requesting');
  const lane = buildSnapshot(state, now, { host: HOST, cache }).roots[0]!.lanes[0]!;
  assert.ok(lane.clocks.inactivity && Number.isFinite(lane.clocks.inactivity.remainingMs), 'the lane has a running countdown');
  for (let k = 1; k <= 3; k++) {
    now += 1_000;
    same(`+${k} s`);
  }
});

test('property: the tree rows, the header counts and the next wake-up kept from the last frame equal those built afresh, after every tick and model change', () => {
  // How many checks the wake-up was past the next second (so the memo's own answers were compared).
  let slept = 0;
  fc.assert(
    fc.property(
      fc.array(sessionArb, { minLength: 1, maxLength: 8 }),
      fc.array(stepArb, { minLength: 1, maxLength: 25 }),
      fc.constantFrom(...SORT_MODES),
      fc.constantFrom('', 'requesting', 's1', 'zzz'),
      fc.array(fc.nat({ max: 7 }), { maxLength: 3 }),
      fc.integer({ min: 1_000, max: 3 * 3_600_000 }),
      (specs, steps, sort, filter, folded, back) => {
        const all = new Map(specs.map((s, i) => [i, s] as const));
        let state = modelOf(all);
        const cache = createSnapshotCache();
        // One set for the whole run, as the dashboard's view keeps it between frames: each frame's
        // rows are patched from the last frame's (the memo is keyed by the set's identity).
        const collapsed: ReadonlySet<string> = new Set(folded.map(idOf));
        const view = { ...initialViewState(), sort, filter, collapsed };
        // The dashboard's wake-up, looking again only at rows that are new since its last call.
        const wake = createNextFrameChange();
        let now = NOW;
        const check = (what: string) => {
          const cached = buildSnapshot(state, now, { host: HOST, cache });
          const kept = treeRows(cached.roots, { sort, filter, collapsed });
          const plain = buildSnapshot(state, now, { host: HOST });
          // A copy of the set: a different identity, so these rows are flattened afresh.
          const built = treeRows(plain.roots, { sort, filter, collapsed: new Set(collapsed) });
          assert.deepEqual(kept, built, `rows ${what}`);
          // The next frame patches from this one (the reference above took the memo's place): its
          // rows are the objects the next call's unchanged rows are, as in the dashboard, and the
          // list the frame takes (row-list.ts).
          const next = treeRowList(cached.roots, { sort, filter, collapsed });
          const wakeAt = wake({ snapshot: cached, rows: next, view, now });
          assert.equal(wakeAt, nextFrameChange({ snapshot: plain, rows: built, view, now }), `wake-up ${what}`);
          if (wakeAt > Math.floor(now / 1000) * 1000 + 1000) slept++;
          const header = (snapshot: typeof cached) => headerLines({ snapshot, sort, filter, filterEditing: false, readOnly: false });
          assert.deepEqual(header(cached), header(plain), `header ${what}`);
          return { cached, next };
        };
        let last = check('at the first build');
        for (const step of steps) {
          ({ state, now } = applyStep(all, state, now, step));
          last = check(`after ${JSON.stringify(step).slice(0, 80)}`);
        }
        // The clock set back (the dashboard's clock is the system's): the same rows, asked about an
        // earlier instant, get that instant's answer, not one kept from a later one.
        const earlier = now - back;
        assert.equal(wake({ snapshot: last.cached, rows: last.next, view, now: earlier }), nextFrameChange({ snapshot: last.cached, rows: last.next, view, now: earlier }), `wake-up ${back} ms back`);
      },
    ),
    { numRuns: 300 },
  );
  assert.ok(slept >= 100, `the wake-up was past the next second in ${slept} checks`);
});

test('the demo home over 30 minutes, tick by tick: cached equals built; rows that cannot change are re-timed, not built again', async () => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-snapcache-'));
  try {
    const now0 = Date.UTC(2026, 0, 15, 12, 0, 0);
    await generateHome(path.join(base, 'home'), { now: now0, host: HOST, livePid: 4_000_000, livePidStart: null, deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
    const state: ModelState = reduceEvents(initialModelState(), await loadHomeOnce(path.join(base, 'home'), { now: () => now0, host: HOST }));
    const cache = createSnapshotCache();
    for (let t = now0; t <= now0 + 30 * MIN; t += 1000) {
      assert.deepEqual(buildSnapshot(state, t, { host: HOST, cache }), buildSnapshot(state, t, { host: HOST }), `at +${(t - now0) / 1000} s`);
    }
    // Nothing changed in the model for 30 minutes: an ended session's row was built once.
    const snap = buildSnapshot(state, now0 + 30 * MIN, { host: HOST });
    const ended = [...snap.roots, ...snap.roots.flatMap((r) => r.lanes)].filter((v) => v.state === 'ended');
    assert.ok(ended.length > 0, 'the demo home has ended sessions');
    for (const v of ended) assert.equal(cache.rows.get(`${v.home}\0${v.session}`)?.builtAt, now0, `${v.name}: built at the start, re-timed since`);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test('the default order: the request nearest to being cut first, then rows waiting only for a retry or a resume, then the rest by name', async () => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-order-'));
  try {
    const now0 = Date.UTC(2026, 0, 15, 12, 0, 0);
    await generateHome(path.join(base, 'home'), { now: now0, host: HOST, livePid: process.pid, livePidStart: null, deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
    const state: ModelState = reduceEvents(initialModelState(), await loadHomeOnce(path.join(base, 'home'), { now: () => now0, host: HOST }));
    const roots = buildSnapshot(state, now0, { host: HOST }).roots;
    const limitAt = (v: (typeof roots)[number]): number | null => {
      const c = v.clocks;
      const d = c.firstToFire === 'inactivity' ? c.inactivity : c.firstToFire === 'absolute' ? c.absolute : c.firstToFire === 'episode' ? c.episode : null;
      return d ? d.at : null;
    };
    // A row's place: its first limit's instant — by the minute it falls in, rounded up, while its
    // request streams (its checkpoint written within 2 s of its last model event: the deadline
    // moves at every refresh) — and a root's, its own or its most urgent lane's.
    const placeOf = (v: (typeof roots)[number]): number | null => {
      const at = limitAt(v);
      const r = v.checkpoint?.request;
      const streams = at !== null && v.clocks.firstToFire === 'inactivity' && typeof r?.lastModelEventAt === 'number' && v.checkpoint!.updatedAt - r.lastModelEventAt <= 2_000;
      // …but never past its next limit.
      return streams ? Math.min(Math.ceil(at / 60_000) * 60_000, ...[v.clocks.absolute?.at, v.clocks.episode?.at].filter((x): x is number => typeof x === 'number')) : at;
    };
    const treePlace = (v: (typeof roots)[number]): number | null => {
      const all = [v, ...v.lanes].map(placeOf).filter((x): x is number => x !== null);
      return all.length ? Math.min(...all) : null;
    };
    const tier = (v: (typeof roots)[number]) => (treePlace(v) !== null ? 0 : v.clocks.nextRetry || v.clocks.nextResume ? 1 : 2);
    const tiers = roots.map(tier);
    assert.deepEqual(tiers, [...tiers].sort(), `limits, then retries/resumes, then the rest: ${roots.map((r) => `${r.name}:${tier(r)}`).join(' ')}`);
    const withLimits = roots.filter((v) => tier(v) === 0).map((v) => treePlace(v)!);
    assert.ok(withLimits.length >= 3, 'the demo has requests in flight');
    assert.deepEqual(withLimits, [...withLimits].sort((a, b) => a - b), 'the first limit to fire, soonest first');
    assert.ok(roots.some((v) => tier(v) === 0 && placeOf(v) !== limitAt(v)), 'the demo has a streaming request (placed by its minute)');
    // The retry-wait root waits for a retry due sooner than any cut, but its own limit (the
    // episode) is further off than the silent request's inactivity: the silent one is on top.
    const names = roots.map((v) => v.name);
    assert.ok(names.indexOf('docs-sweep') < names.indexOf('flaky-provider'), names.join(', '));
    assert.ok(roots.some((v) => tier(v) === 1), 'a recovering root waits for its resume');
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test('the default order holds still: requests streaming side by side keep their order by name through their refreshes; a root whose lane is nearest to its cut goes on top', () => {
  const MIN_ = 60_000;
  // Three roots streaming (each refresh moves its inactivity deadline), refreshed in turn for a
  // minute; a fourth stalled 10 min ago, its deadline standing still 5 min from now.
  const ids = ['a', 'b', 'c'].map((c) => `${c.repeat(8)}-0000-4000-8000-000000000000`);
  const stalled = 'dddddddd-0000-4000-8000-000000000000';
  const streamingCp = (id: string, at: number) => checkpoint(id, { state: 'requesting', updatedAt: at, request: { turn: 3, startedAt: NOW - 10 * MIN_, lastModelEventAt: at, lastTransportEventAt: at, modelEvents: 9, keepalives: 0 } });
  let state = reduceEvents(initialModelState(), [
    ...ids.map((id, i) => factsEvent(facts(id, `s-${'abc'[i]}`))),
    factsEvent(facts(stalled, 's-d')),
    cpEvent(checkpoint(stalled, { state: 'requesting', updatedAt: NOW, request: { turn: 3, startedAt: NOW - 20 * MIN_, lastModelEventAt: NOW - 10 * MIN_, lastTransportEventAt: NOW, modelEvents: 9, keepalives: 2 } })),
  ]);
  const orders = new Set<string>();
  // Each refresh at its own phase (c first, a last), as three pis write theirs.
  for (let t = 0; t < 60_000; t += 250) {
    const who = ids[2 - ((t / 250) % 3)]!;
    state = reduceEvents(state, [cpEvent(streamingCp(who, NOW + t))]);
    const roots = buildSnapshot(state, NOW + t, { host: HOST }).roots;
    if (roots.filter((r) => r.state === 'requesting').length === 4) orders.add(roots.map((r) => r.name).join(' '));
  }
  // The stalled one first (its cut is 5 min off, theirs 15), the streaming ones by name: one order
  // through the minute, save at the minute's turn, when one has moved into the next and the
  // others not yet (each refresh within a second).
  assert.ok(orders.has('s-d s-a s-b s-c'), [...orders].join(' | '));
  assert.ok(orders.size <= 3, `the order changed ${orders.size - 1} times in a minute: ${[...orders].join(' | ')}`);

  // A root running tools (nothing due) with a lane 1:55 from its cut, beside a root 5:00 from its:
  // the first goes on top, its lane under it.
  const root = 'eeeeeeee-0000-4000-8000-000000000000';
  const lane = 'ffffffff-0000-4000-8000-000000000000';
  const laneFile = `${fileOf(root).replace(/\.jsonl$/, '')}/run-ffff/${lane}.jsonl`;
  const tree = reduceEvents(initialModelState(), [
    factsEvent(facts(root, 'papa')),
    cpEvent(checkpoint(root, { state: 'tools', updatedAt: NOW })),
    factsEvent(facts(lane, 'worker', { role: 'lane', rootFile: fileOf(root), runId: 'run-ffff', file: laneFile, continuation: null })),
    cpEvent(requesting(lane, 115_000, { role: 'lane', parentSession: root, sessionFile: laneFile })),
    factsEvent(facts(stalled, 's-d')),
    cpEvent(requesting(stalled, 5 * MIN_)),
  ]);
  const shown = buildSnapshot(tree, NOW, { host: HOST }).roots;
  assert.deepEqual(shown.map((r) => [r.name, ...r.lanes.map((l) => l.name)].join('>')), ['papa>worker', 's-d']);

  // A streaming request (its inactivity deadline 14:10 away, placed by the minute: 15:00) whose
  // absolute limit comes at 14:25 goes before a stalled one due at 14:45: placed by its minute, but
  // never past its next limit.
  const soon = 'abababab-0000-4000-8000-000000000000';
  const last = NOW - 50_000;
  const near = reduceEvents(initialModelState(), [
    factsEvent(facts(soon, 'z-streaming')),
    cpEvent(checkpoint(soon, { state: 'requesting', updatedAt: last, request: { turn: 3, startedAt: NOW + 14 * MIN_ + 25_000 - 75 * MIN_, lastModelEventAt: last, lastTransportEventAt: last, modelEvents: 9, keepalives: 0 } })),
    factsEvent(facts(stalled, 'a-stalled')),
    cpEvent(checkpoint(stalled, { state: 'requesting', updatedAt: NOW, request: { turn: 3, startedAt: NOW - 20 * MIN_, lastModelEventAt: NOW - 15_000, lastTransportEventAt: NOW, modelEvents: 9, keepalives: 2 } })),
  ]);
  const nearRoots = buildSnapshot(near, NOW, { host: HOST }).roots;
  assert.deepEqual(nearRoots.map((r) => r.clocks.firstToFire), ['inactivity', 'inactivity']);
  assert.deepEqual(nearRoots.map((r) => r.name), ['z-streaming', 'a-stalled'], nearRoots.map((r) => `${r.name} ${r.clocks.inactivity?.remainingMs} ${r.clocks.absolute?.remainingMs}`).join('; '));
});

test('property: the row lists a dashboard takes, each patched from the last frame\'s, read as rows built afresh, and give the same wake-ups', () => {
  // Above, a reference build between two frames resets the rows' memo, so each frame's list is
  // built whole. Here the frames run first with nothing in between, as in the dashboard (each list
  // a patch of the last, sharing its unchanged chunks, and the wake-up's memo comparing the two),
  // and the references are built afterwards from the same model states (lists are immutable).
  let patched = 0;
  fc.assert(
    fc.property(
      fc.array(sessionArb, { minLength: 1, maxLength: 8 }),
      fc.array(stepArb, { minLength: 1, maxLength: 25 }),
      fc.constantFrom(...SORT_MODES),
      fc.constantFrom('', 'requesting', 's1'),
      // Quiet copies of the sessions (no clock running; the steps change the first copy's) up to
      // over 300 sessions, so a list has several chunks of 256 rows and a frame's shares those it
      // did not change with the last one's.
      fc.boolean(),
      (specs, steps, sort, filter, many) => {
        const all = withCopies(specs, many ? 300 : 1);
        let state = modelOf(all);
        const cache = createSnapshotCache();
        const collapsed: ReadonlySet<string> = new Set();
        const view = { ...initialViewState(), sort, filter, collapsed };
        const wake = createNextFrameChange();
        let now = NOW;
        const frames: { state: ModelState; now: number; rows: ReturnType<typeof treeRowList>; wakeAt: number }[] = [];
        // Only frames of several chunks can share one with the last.
        const frame = () => {
          const snapshot = buildSnapshot(state, now, { host: HOST, cache });
          const rows = treeRowList(snapshot.roots, { sort, filter, collapsed });
          const prev = frames.at(-1)?.rows;
          if (prev && rows !== prev && rows.shares(prev)) patched++;
          frames.push({ state, now, rows, wakeAt: wake({ snapshot, rows, view, now }) });
        };
        frame();
        for (const step of steps) {
          ({ state, now } = applyStep(all, state, now, step));
          frame();
        }
        for (const [k, f] of frames.entries()) {
          const plain = buildSnapshot(f.state, f.now, { host: HOST });
          const built = treeRows(plain.roots, { sort, filter, collapsed: new Set() });
          assert.deepEqual(f.rows.toArray(), built, `rows of frame ${k}`);
          assert.equal(f.wakeAt, nextFrameChange({ snapshot: plain, rows: built, view, now: f.now }), `wake-up of frame ${k}`);
        }
      },
    ),
    // 300 runs: the count swung 47–124 over twelve runs of 150 (its inputs are random).
    { numRuns: 300 },
  );
  assert.ok(patched >= 50, `a frame's list shared chunks with the last one's ${patched} times`);
});

/** `specs` and quiet copies of them, up to at least `n` sessions (the copies' lanes under the copies' roots). */
function withCopies(specs: readonly SessionSpec[], n: number): Map<number, SessionSpec> {
  const all = new Map<number, SessionSpec>();
  const copies = Math.ceil(n / specs.length);
  for (const [i, s] of specs.entries()) all.set(i, s);
  for (let k = 1; k < copies; k++) {
    for (const [i, s] of specs.entries()) {
      const quiet = { ...s, state: 'idle' as const, episode: null, recovery: null, timers: [], probe: 'none' as const, held: false, otherHost: false, report: false };
      all.set(i + 8 * k, { ...quiet, laneOf: s.laneOf === null ? null : s.laneOf + 8 * k });
    }
  }
  return all;
}

/** Runs a snapshot's preparation to its end (snapshotSteps), calling `between` at each of its yields; returns how many there were. */
function prepare(state: ModelState, now: number, cache: ReturnType<typeof createSnapshotCache>, between: (k: number) => void = () => undefined): number {
  const steps = snapshotSteps(state, now, { host: HOST, cache });
  let k = 0;
  while (!steps.next().done) between(++k);
  return k;
}

test('property: a snapshot prepared in steps, with frames of the state on screen built between them at later instants, is the one built afresh, and so is each of those frames; the frame that shows it only re-times it', () => {
  let yielded = 0;
  let between = 0;
  fc.assert(
    fc.property(
      fc.array(sessionArb, { minLength: 1, maxLength: 8 }),
      fc.array(stepArb, { minLength: 1, maxLength: 12 }),
      // A frame of the state on screen after every `every` steps (a tick, a key: as the dashboard's)…
      fc.integer({ min: 1, max: 4 }),
      // …each `dt` ms after the last (row windows pass meanwhile: a checkpoint goes stale).
      fc.integer({ min: 1, max: 40_000 }),
      (specs, steps, every, dt) => {
        // Over 64 rows (a step's), so a build from scratch yields.
        const all = withCopies(specs, 300);
        let state = modelOf(all);
        let now = NOW;
        const cache = createSnapshotCache();
        yielded += prepare(state, now, cache);
        assert.deepEqual(buildSnapshot(state, now, { host: HOST, cache }), buildSnapshot(state, now, { host: HOST }), 'the first build');
        for (const step of steps) {
          const shown = state;
          ({ state, now } = applyStep(all, state, now, step));
          let t = now;
          yielded += prepare(state, now, cache, (k) => {
            if (k % every !== 0) return;
            t += dt;
            between++;
            assert.deepEqual(buildSnapshot(shown, t, { host: HOST, cache }), buildSnapshot(shown, t, { host: HOST }), `a frame of the state on screen, +${t - now} ms into the preparation`);
          });
          const last = cache.last;
          assert.equal(last?.state, state, 'the cache holds the prepared state');
          t += dt;
          const frame = buildSnapshot(state, t, { host: HOST, cache });
          if (t < last!.stableUntil) assert.equal(cache.last, last, 'the frame re-timed the prepared snapshot');
          assert.deepEqual(frame, buildSnapshot(state, t, { host: HOST }), `after ${JSON.stringify(step).slice(0, 80)}, +${t - now} ms`);
          cacheIndexesHold(cache, `after ${JSON.stringify(step).slice(0, 80)}`);
          now = t;
        }
      },
    ),
    { numRuns: 100 },
  );
  // Each run's first preparation builds ~300 rows from scratch: 4 yields or more.
  assert.ok(yielded >= 400, `the preparations yielded ${yielded} times`);
  assert.ok(between >= 100, `frames of the state on screen were built during preparations ${between} times`);
});

test('every row rewritten at once (a warm start\'s cache facts): the patch gives up, the rows are built afresh — cached equals built, prepared in steps too', () => {
  const [base] = fc.sample(sessionArb, { seed: 11, numRuns: 1 });
  const all = withCopies([{ ...base!, laneOf: null }, { ...base!, laneOf: 0 }], 600);
  let state = modelOf(all);
  const cache = createSnapshotCache();
  const same = (what: string) => assert.deepEqual(buildSnapshot(state, NOW, { host: HOST, cache }), buildSnapshot(state, NOW, { host: HOST }), what);
  same('the first build');
  const grow = () => {
    for (const [i, s] of all) all.set(i, { ...s, size: s.size + 1 });
    state = reduceEvents(state, eventsFor(all, all.keys()));
  };
  grow();
  const generation = cache.generation;
  same('every row rewritten');
  assert.equal(cache.generation, generation + 1, 'built from scratch (a patch keeps the generation)');
  grow();
  const yields = prepare(state, NOW, cache);
  assert.ok(yields >= 600 / 64, `a build from scratch in steps (${yields} yields)`);
  same('every row rewritten, prepared in steps');
  // One row rewritten: a patch, in one go.
  all.set(9, { ...all.get(9)!, size: all.get(9)!.size + 1 });
  state = reduceEvents(state, eventsFor(all, [9]));
  assert.equal(prepare(state, NOW, cache), 0, 'a patch does not yield');
  same('one row rewritten, prepared');
});

/**
 * 600 live requests with fresh checkpoints, their rows prepared into a cache at NOW (each row's
 * window ends when its checkpoint goes stale), and the state an hour later, when every window has
 * passed, with one session file grown.
 */
function passedWindows() {
  const [base] = fc.sample(sessionArb, { seed: 11, numRuns: 1 });
  const spec: SessionSpec = { ...base!, state: 'requesting', otherHost: false, updatedAgo: 0, hasCheckpoint: true, laneOf: null, held: false, probe: 'none' };
  const all = new Map<number, SessionSpec>();
  for (let i = 0; i < 600; i++) all.set(i, spec);
  const shown = modelOf(all);
  const cache = createSnapshotCache();
  prepare(shown, NOW, cache);
  const later = NOW + 60 * MIN;
  all.set(9, { ...spec, size: spec.size + 1 });
  return { shown, cache, later, next: reduceEvents(shown, eventsFor(all, [9])) };
}

test('rows whose window passed count against the patch\'s bound: one row rewritten once every row\'s window has passed (a laptop woken from sleep) is a build from scratch, in steps — not 600 rows patched in one go', () => {
  const { cache, later, next: state } = passedWindows();
  let passed = 0;
  for (const m of cache.rows.values()) if (m.stableUntil <= later) passed++;
  assert.equal(passed, 600, 'every row\'s window has passed an hour later');
  const generation = cache.generation;
  const yields = prepare(state, later, cache);
  assert.ok(yields >= 600 / 64, `built from scratch in steps (${yields} yields)`);
  assert.equal(cache.generation, generation + 1, 'not a patch (a patch keeps the generation)');
  assert.deepEqual(buildSnapshot(state, later, { host: HOST, cache }), buildSnapshot(state, later, { host: HOST }));
});

test('property: the row cache\'s queue of edges gives its items smallest key first, pops and pushes interleaved, and keeps what a filter keeps', () => {
  fc.assert(
    fc.property(fc.array(fc.oneof(fc.integer({ min: -50, max: 50 }), fc.constant(null)), { maxLength: 200 }), fc.integer({ min: 0, max: 3 }), (ops, mod) => {
      const q = new MinQueue<{ id: number }>();
      const model: { id: number; key: number }[] = [];
      let id = 0;
      for (const op of ops) {
        if (op === null) {
          const got = q.pop();
          if (model.length === 0) {
            assert.equal(got, undefined);
            continue;
          }
          const least = Math.min(...model.map((e) => e.key));
          const at = model.findIndex((e) => e.id === got?.id);
          assert.ok(at >= 0 && model[at]!.key === least, `popped key ${model[at]?.key}, least ${least}`);
          model.splice(at, 1);
        } else {
          q.push({ id: ++id }, op);
          model.push({ id, key: op });
        }
        assert.equal(q.size, model.length);
        assert.equal(q.peekKey(), model.length > 0 ? Math.min(...model.map((e) => e.key)) : Infinity);
      }
      q.filter((item) => item.id % 4 !== mod);
      const kept = model.filter((e) => e.id % 4 !== mod).sort((a, b) => a.key - b.key);
      const out: number[] = [];
      for (let item = q.pop(); item; item = q.pop()) out.push(model.find((e) => e.id === item.id)!.key);
      assert.deepEqual(out, kept.map((e) => e.key));
    }),
    { numRuns: 300 },
  );
});

test('rows whose window passed, taken by a patch that then gave up: the frames of the state on screen built during the build in steps that follows still find them (cached equals built)', () => {
  const { shown, cache, later, next } = passedWindows();
  let frames = 0;
  const yields = prepare(next, later, cache, (k) => {
    if (k % 3 !== 0) return;
    frames++;
    const t = later + k * 1000;
    assert.deepEqual(buildSnapshot(shown, t, { host: HOST, cache }), buildSnapshot(shown, t, { host: HOST }), `a frame of the state on screen at step ${k}`);
  });
  assert.ok(yields >= 600 / 64 && frames >= 3, `built in steps (${yields} yields, ${frames} frames between)`);
  assert.deepEqual(buildSnapshot(next, later + 60_000, { host: HOST, cache }), buildSnapshot(next, later + 60_000, { host: HOST }));
});

test('prepareFrameSnapshot: a build from scratch gives the event loop a turn after its first slice, after each later one and before its result is written; the state on screen stays in the cache until it resolves', async () => {
  const [base] = fc.sample(sessionArb, { seed: 5, numRuns: 1 });
  const all = withCopies([{ ...base!, laneOf: null }, { ...base!, laneOf: 0 }], 600);
  const shown = modelOf(all);
  const cache = createSnapshotCache();
  buildSnapshot(shown, NOW, { host: HOST, cache });
  for (const [i, s] of all) all.set(i, { ...s, size: s.size + 1 });
  const next = reduceEvents(shown, eventsFor(all, all.keys()));
  let turns = 0;
  const onScreen: unknown[] = [];
  // No time for a slice: a turn at every step of the build.
  const worked = await prepareFrameSnapshot(next, NOW + 1_000, HOST, cache, {
    firstMs: 0,
    sliceMs: 0,
    between: async () => {
      turns++;
      onScreen.push(cache.last?.state);
    },
  });
  assert.ok(turns >= 600 / 64 + 1, `${turns} turns`);
  assert.ok(onScreen.every((s) => s === shown), 'at every turn, the last one too, the cache holds the state on screen');
  assert.equal(cache.last?.state, next, 'once it resolves, the prepared state');
  assert.ok(worked > 0, `the time it worked is told (${worked} ms)`);
  // A state already prepared costs no turn.
  let again = 0;
  await prepareFrameSnapshot(next, NOW + 2_000, HOST, cache, { between: async () => void again++ });
  assert.equal(again, 0, 'nothing to prepare: no turn');
});

test('placeholder lanes: two roots following one state log with a run open, and a heartbeat appended — patched, not built from scratch; a dispatch or return of a run with no session is a build from scratch; cached equals built', () => {
  const [base] = fc.sample(sessionArb, { seed: 7, numRuns: 1 });
  // Roots 0 and 1 follow one log (the same launch report: a restarted root), root 2 its own; 3 is a lane of 0.
  const root: SessionSpec = { ...base!, laneOf: null, report: true, armed: true, state: 'requesting', hasCheckpoint: true, probe: 'alive', otherHost: false, updatedAgo: 0 };
  const all = new Map<number, SessionSpec>([
    [0, root],
    [1, root],
    [2, root],
    [3, { ...root, laneOf: 0 }],
  ]);
  const shared = stateLogPathFromReport(reportOf(0));
  const sharedReport = (events: ReaderEvent[]) =>
    events.map((e) => (e.type === 'session-file' && e.facts.continuation?.launch && e.facts.sessionId === idOf(1) ? { ...e, facts: { ...e.facts, continuation: { ...e.facts.continuation, launch: { ...e.facts.continuation.launch, report: reportOf(0) } } } } : e));
  let state = reduceEvents(initialModelState(), sharedReport(eventsFor(all, all.keys())));
  const log = (events: StateLogEvent[], reset = false): ReaderEvent => ({ type: 'state-log', file: shared, events, reset });
  const ev = (line: number, e: string, raw: Record<string, unknown>): StateLogEvent => ({ file: shared, line, seq: line, at: NOW - MIN, ev: e, by: 'dispatcher', raw });
  state = reduceEvents(state, [log([ev(1, 'dispatch', { run: 'run-open', lane: 'L9', task: 't' }), ev(2, 'dispatch', { run: 'run-3', lane: 'L3' })], true)]);
  const cache = createSnapshotCache();
  const same = (what: string) => {
    const cached = buildSnapshot(state, NOW, { host: HOST, cache });
    assert.deepEqual(cached, buildSnapshot(state, NOW, { host: HOST }), what);
    return cached;
  };
  const first = same('the first build');
  const placeholders = first.roots.flatMap((r) => r.lanes.filter((l) => l.placeholder).map((l) => [r.session, l.session]));
  assert.deepEqual(placeholders, [[first.roots.find((r) => r.lanes.some((l) => l.placeholder))!.session, 'run:run-open']], 'one placeholder, under one of the two roots; run-3 has its session');
  let generation = cache.generation;
  state = reduceEvents(state, [log([ev(3, 'heartbeat', {})])]);
  same('a heartbeat');
  assert.equal(cache.generation, generation, 'patched: the root that does not hold the placeholder does not force a build');
  state = reduceEvents(state, [log([ev(4, 'return', { run: 'run-open', status: 'complete' })])]);
  generation = cache.generation;
  const returned = same('the run returned');
  assert.equal(cache.generation, generation + 1, 'built from scratch');
  assert.ok(!returned.roots.some((r) => r.lanes.some((l) => l.placeholder)), 'no placeholder once returned');
  // A status.json of the returned run still saying running (a run whose end it never wrote): no placeholder either.
  state = reduceEvents(state, [laneStatusEvent({ laneStatus: 0, copy: 0, state: 'running', deadlineIn: null, agent: 'worker', drop: false, parent: 0 })].map((e) => (e.type === 'lane-status' ? { ...e, status: { ...e.status, runId: 'run-open' } } : e)));
  assert.ok(!same('a running status of a returned run').roots.some((r) => r.lanes.some((l) => l.placeholder)));
  // A run no log dispatched, pi-subagents says running under root 2: a placeholder from its status; root 2 lost: unknown.
  state = reduceEvents(state, [laneStatusEvent({ laneStatus: 5, copy: 0, state: 'running', deadlineIn: 60_000, agent: 'reviewer', drop: false, parent: 2 })]);
  const withStatus = same('a status placeholder');
  const statusLane = withStatus.roots.find((r) => r.session === idOf(2))!.lanes.find((l) => l.placeholder === 'status')!;
  assert.equal(statusLane.session, 'run:run-5');
  assert.equal(statusLane.state, 'dispatched');
  all.set(2, { ...root, probe: 'gone' });
  state = reduceEvents(state, eventsFor(all, [2]));
  const lost = same('its root lost');
  assert.equal(lost.roots.find((r) => r.session === idOf(2))!.state, 'lost');
  const orphaned = lost.roots.find((r) => r.session === idOf(2))!.lanes.find((l) => l.placeholder === 'status')!;
  assert.equal(orphaned.state, 'unknown');
  assert.match(orphaned.why, /its root is lost: it may never start or return/);
  // Dispatched in the log now: the log's to show (open), under the root that follows the log.
  state = reduceEvents(state, [log([ev(5, 'dispatch', { run: 'run-5', lane: 'L5' })])]);
  const moved = same('the status run dispatched');
  assert.deepEqual(moved.roots.flatMap((r) => r.lanes.filter((l) => l.placeholder).map((l) => [l.session, l.placeholder, l.name])), [['run:run-5', 'dispatch', 'L5']]);
});

test('placeholder lanes: a run with a status.json that its root\'s log no longer dispatches — the log reset, or the root following another log — is its status.json\'s placeholder again (cached equals built)', () => {
  const [base] = fc.sample(sessionArb, { seed: 7, numRuns: 1 });
  const root: SessionSpec = { ...base!, laneOf: null, report: true, armed: true, state: 'requesting', hasCheckpoint: true, probe: 'alive', otherHost: false, updatedAgo: 0 };
  const all = new Map<number, SessionSpec>([
    [0, root],
    [2, { ...root, report: false }],
  ]);
  const file = stateLogPathFromReport(reportOf(0));
  const ev = (line: number, e: string, raw: Record<string, unknown>): StateLogEvent => ({ file, line, seq: line, at: NOW - MIN, ev: e, by: 'dispatcher', raw });
  const start = () =>
    reduceEvents(reduceEvents(initialModelState(), eventsFor(all, all.keys())), [
      { type: 'state-log', file, events: [ev(1, 'dispatch', { run: 'run-5', lane: 'L5' }), ev(2, 'return', { run: 'run-5', status: 'complete' })], reset: true },
      laneStatusEvent({ laneStatus: 5, copy: 0, state: 'running', deadlineIn: 60_000, agent: 'reviewer', drop: false, parent: 2 }),
    ]);
  const placeholders = (snap: ReturnType<typeof buildSnapshot>) => snap.roots.flatMap((r) => r.lanes.filter((l) => l.placeholder).map((l) => `${r.session}:${l.session}`));
  for (const change of ['the log reset', 'the root follows another log'] as const) {
    let state = start();
    const cache = createSnapshotCache();
    assert.deepEqual(placeholders(buildSnapshot(state, NOW, { host: HOST, cache })), [], `${change}: dispatched and returned, no placeholder`);
    state =
      change === 'the log reset'
        ? reduceEvents(state, [{ type: 'state-log', file, events: [ev(1, 'heartbeat', {})], reset: true }])
        : reduceEvents(
            state,
            eventsFor(all, [0]).map((e) => (e.type === 'session-file' && e.facts.continuation?.launch ? { ...e, facts: { ...e.facts, continuation: { ...e.facts.continuation, launch: { ...e.facts.continuation.launch, report: reportOf(9) } } } } : e)),
          );
    const cached = buildSnapshot(state, NOW, { host: HOST, cache });
    assert.deepEqual(cached, buildSnapshot(state, NOW, { host: HOST }), change);
    assert.deepEqual(placeholders(cached), [`${idOf(2)}:run:run-5`], change);
  }
});

test('placeholder lanes: a status.json rewritten for a run with no session that can give no placeholder (its run over, or its root not here) is patched, not built from scratch', () => {
  const [base] = fc.sample(sessionArb, { seed: 7, numRuns: 1 });
  const root: SessionSpec = { ...base!, laneOf: null, report: false, armed: true, state: 'requesting', hasCheckpoint: true, probe: 'alive', otherHost: false, updatedAgo: 0 };
  const all = new Map<number, SessionSpec>([[0, root]]);
  let state = reduceEvents(initialModelState(), eventsFor(all, all.keys()));
  const cache = createSnapshotCache();
  const same = () => assert.deepEqual(buildSnapshot(state, NOW, { host: HOST, cache }), buildSnapshot(state, NOW, { host: HOST }));
  same();
  const rewrite = (state0: ModelState, over: Partial<{ state: string; parent: number | null; deadlineIn: number }>) =>
    reduceEvents(state0, [laneStatusEvent({ laneStatus: 7, copy: 0, state: 'complete', deadlineIn: 60_000, agent: 'worker', drop: false, parent: null, ...over })]);
  for (const [what, over] of [
    ['over, under a root here', { state: 'complete', parent: 0 }],
    ['running, its root not here', { state: 'running', parent: 5 }],
    ['running, naming no root', { state: 'running', parent: null }],
  ] as const) {
    state = rewrite(state, over);
    const generation = cache.generation;
    same();
    assert.equal(cache.generation, generation, `${what}: patched`);
    state = rewrite(state, { ...over, deadlineIn: 120_000 });
    same();
    assert.equal(cache.generation, generation, `${what}, rewritten: patched`);
  }
  // Running under a root here: a placeholder, a build from scratch.
  state = rewrite(state, { state: 'running', parent: 0 });
  const generation = cache.generation;
  same();
  assert.equal(cache.generation, generation + 1);
});
