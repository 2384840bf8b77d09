/**
 * What one append costs the dashboard's model and frame, by the number of sessions in the home:
 * the home read once (`loadHomeOnce`), then, per append, a session file's new facts through the
 * reducer, the snapshot (with the row cache, as the dashboard keeps it), the table's rows, the next
 * wake-up and the screen of a 200 × 60 terminal — what every reader batch costs the main thread
 * between the read and the frame. Then the same per lane status rewritten and per state log event
 * (`laneStatus`, `stateLog`: total ms per change). Run by `bench/run.mjs` (section `scale`) in a fresh node per home;
 * prints one JSON line: per-append milliseconds by stage, medians of 5 rounds of 1 000 appends.
 *
 *   node bench/model-scale.mjs <home> [dist/src]
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const home = process.argv[2];
const dist = path.resolve(process.argv[3] ?? path.join(here, '..', 'dist', 'src'));
const { loadHomeOnce } = await import(path.join(dist, 'readers', 'home-reader.js'));
const { reduceEvents, initialModelState } = await import(path.join(dist, 'model', 'reducer.js'));
const { createSnapshotCache } = await import(path.join(dist, 'model', 'snapshot.js'));
const { frameSnapshot } = await import(path.join(dist, 'views', 'first-frame.js'));
const viewState = await import(path.join(dist, 'views', 'view-state.js'));
const { initialViewState } = viewState;
// As the dashboard takes them: the frame's row list (a build before it had the array alone).
const visibleRows = viewState.visibleRowList ?? viewState.visibleRows;
const nextChangeModule = await import(path.join(dist, 'views', 'next-change.js'));
// As the dashboard calls it: with its memo of the last frame's rows (a build before it had none).
const nextFrameChange = nextChangeModule.createNextFrameChange?.() ?? nextChangeModule.nextFrameChange;
const { buildScreen } = await import(path.join(dist, 'views', 'screen.js'));

const host = os.hostname();
let state = reduceEvents(initialModelState(), await loadHomeOnce(home, { host }));
const cache = createSnapshotCache();
const view = initialViewState();
// 100 lanes, as the live section appends to 100 files; each append a new size (a new facts object).
const targets = [...state.sessionFiles.values()].filter((f) => f.role === 'lane').slice(0, 100);
let now = Date.now();
let n = 0;
const STAGES = ['reduce', 'snapshot', 'rows', 'nextChange', 'screen'];

// Besides appends: a lane status rewritten (a running lane's status.json at its turns and tools)
// and a state log's new event (a root's loop: dispatches, returns, heartbeats).
const statuses = [...state.laneStatuses.values()].slice(0, 100);
const logs = [...state.stateLogs.entries()].filter(([, events]) => events.length > 0).slice(0, 100);
const CHANGES = {
  append: () => {
    const was = targets[n % targets.length];
    return { type: 'session-file', facts: { ...state.sessionFiles.get(was.file), size: was.size + n + 1 } };
  },
  laneStatus: () => {
    const was = statuses[n % statuses.length];
    return { type: 'lane-status', status: { ...(state.laneStatuses.get(was.file) ?? was), lastActivityAt: now - 1_000 + n } };
  },
  stateLog: () => {
    const [file, events] = logs[n % logs.length];
    const last = events.at(-1);
    return { type: 'state-log', file, events: [{ ...last, line: last.line + n + 1, seq: n, ev: 'heartbeat', raw: { ...last.raw, ev: 'heartbeat', seq: n } }], reset: false };
  },
};

function round(appends, change = CHANGES.append) {
  const sum = Object.fromEntries(STAGES.map((s) => [s, 0]));
  for (let i = 0; i < appends; i++, n++) {
    const event = change();
    const t0 = performance.now();
    state = reduceEvents(state, [event]);
    const t1 = performance.now();
    // ~14 batches a second at 100 appends/s: `now` moves on by ~70 ms a batch.
    const snapshot = frameSnapshot(state, (now += 70), host, cache, []);
    const t2 = performance.now();
    const rows = visibleRows(view, snapshot.roots);
    const t3 = performance.now();
    nextFrameChange({ snapshot, rows, view, now: snapshot.now });
    const t4 = performance.now();
    buildScreen({ snapshot, model: state, view, rows, width: 200, height: 60, readOnly: false, noColor: false, audits: null });
    const t5 = performance.now();
    sum.reduce += t1 - t0;
    sum.snapshot += t2 - t1;
    sum.rows += t3 - t2;
    sum.nextChange += t4 - t3;
    sum.screen += t5 - t4;
  }
  return Object.fromEntries(STAGES.map((s) => [s, sum[s] / appends]));
}

round(1000); // warm-up: compiled code, caches filled
const rounds = Array.from({ length: 5 }, () => round(1000));
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const out = { sessions: state.sessionFiles.size, checkpoints: state.checkpoints.size, incidents: state.incidents.size };
for (const s of STAGES) out[s] = med(rounds.map((r) => r[s]));
out.total = med(rounds.map((r) => STAGES.reduce((a, s) => a + r[s], 0)));
// The other kinds of change, fewer of them (a build from scratch of every row each was ~90 ms on
// the wide home before they were patched): the total per change, medians of 5 rounds.
for (const [kind, change] of [['laneStatus', CHANGES.laneStatus], ['stateLog', CHANGES.stateLog]]) {
  if ((kind === 'laneStatus' ? statuses : logs).length === 0) continue;
  round(50, change);
  const rs = Array.from({ length: 5 }, () => round(200, change));
  out[kind] = med(rs.map((r) => STAGES.reduce((a, s) => a + r[s], 0)));
}
console.log(JSON.stringify(out));
