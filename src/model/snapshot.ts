/**
 * Selectors: turn the folded model into what the views and `status` show, for a given `now`.
 * Pure: same state and `now` give the same snapshot.
 */
import { sessionIdFromName } from '../readers/session-path.js';
import { compareNames, compareText } from './text-order.js';
import { changedKeys, MapDraft } from './shared-map.js';
import path from 'node:path';
import type { Checkpoint } from '../contract/checkpoint.js';
import { REFRESHED_STATES } from '../contract/checkpoint-states.js';
import { stateLogOfRoot } from '../contract/paths.js';
import { clockInputFromCheckpoint, computeClocks, type Clocks, type Deadline } from './clocks.js';
import { checkpointSkewMs, shiftCheckpoint } from './clock-skew.js';
import { effectiveLimits, limitsFromSettings, type EffectiveLimits, type HomeLimits } from './limits.js';
import { judgeLiveness, REMOTE_STALE_MS } from './liveness.js';
import type { ModelState } from './reducer.js';
import { deriveSessionState, type SessionState } from './session-state.js';
import { MinQueue } from './min-queue.js';
import type {
  CheckpointRecord,
  ProcessProbe,
  IncidentRecord,
  LaneRunStatus,
  LoopTimer,
  LoopWatcher,
  SessionFileFacts,
  SessionHistoryItem,
  StateLogEvent,
  WatcherReceipt,
  Warning,
} from './types.js';

/** A checkpoint of a request in flight is expected at least every 15 s; past this it is stale. */
export const CHECKPOINT_STALE_MS = 20_000;
/**
 * Any other checkpoint of a running session (idle, stopped) is expected at least every 60 s
 * (docs/CONTRACT.md; the extension writes every 30 s); past this it is stale (SPEC §2: data older
 * than its expected refresh is marked stale). An `ended` checkpoint is never rewritten.
 */
export const IDLE_CHECKPOINT_STALE_MS = 75_000;

/** How old a checkpoint in this state may be before it is stale; null: it is never refreshed. */
export function checkpointStaleAfter(state: Checkpoint['state']): number | null {
  return state === 'ended' ? null : REFRESHED_STATES.has(state) ? CHECKPOINT_STALE_MS : IDLE_CHECKPOINT_STALE_MS;
}

/** Liveness as judged for a checkpoint (see liveness.ts). */
export type LivenessStatus = 'alive' | 'gone' | 'pid-reused' | 'unknown' | 'remote-fresh' | 'remote-stale';

/** One row of the dashboard: a root or a lane, with every clock evaluated at `now`. */
export interface SessionView {
  /** Stable key: the session id. */
  session: string;
  home: string;
  name: string;
  cwd: string | null;
  model: string | null;
  role: 'root' | 'lane';
  /** From the root's last `loop-continuation-state`; null when unknown (and for lanes). */
  armed: boolean | null;
  held: boolean;
  state: SessionState;
  why: string;
  lastActivityAt: number | null;
  clocks: Clocks;
  /** Which limits applied and where they came from. */
  limits: EffectiveLimits;
  /**
   * Where the row came from. `checkpointUpdatedAt`: the checkpoint's own instant, so a row stays
   * the same object while only time passes; its age is {@link checkpointAgeMs}. `clockSkewMs`: how
   * far ahead of ours the checkpoint's clock ran; its times here (and `checkpoint`'s) are moved
   * back by it (clock-skew.ts), and an abort's target adds it back.
   */
  source: { checkpoint: boolean; checkpointUpdatedAt: number | null; stale: boolean; sessionFile: string | null; checkpointFile: string | null; clockSkewMs: number };
  liveness: { status: LivenessStatus; detail: string } | null;
  checkpoint: Checkpoint | null;
  timers: LoopTimer[];
  watchers: (LoopWatcher & { receipt: WatcherReceipt | null })[];
  incidents: number;
  lastError: string | null;
  history: SessionHistoryItem[];
  /** The state log of a root (located from `launch.report`), newest last. */
  stateLogFile: string | null;
  stateLog: readonly StateLogEvent[];
  /** Lane extras (null for roots). */
  runId: string | null;
  lane: string | null;
  task: string | null;
  deadline: number | null;
  laneStatus: LaneRunStatus | null;
  parent: string | null;
  lanes: SessionView[];
  /** Set on a row read from another machine's `loop-dash serve` (`--remote`): read-only here. */
  remote?: RemoteOrigin;
  /**
   * Set on a lane known only from its root's state log (`dispatch`: a dispatch with no return yet)
   * or its run's status.json (`status`): no session file or checkpoint of its run exists yet, so
   * there is nothing to act on (placeholderView). Its key is `run:<runId>`.
   */
  placeholder?: 'dispatch' | 'status';
  /** A placeholder from its root's state log: the `dispatch` it stands for. */
  dispatch?: StateLogEvent;
}

/**
 * Whether a status.json with no session of its run could give a placeholder (the build from
 * scratch decides): its run is not over and the parent it names is a root of its home here.
 */
function mayBePlaceholder(status: LaneRunStatus, joined: NonNullable<SnapshotCache['parts']>): boolean {
  if (RUN_OVER.has(status.state) || !status.sessionId) return false;
  const id = parentIdOf(status.sessionId, joined.rootIdByFile, joined.parts);
  const p = id ? joined.parts.get(id) : undefined;
  return p !== undefined && p.home === status.home && (p.facts?.role ?? p.checkpoint?.checkpoint.role ?? 'root') === 'root';
}

/**
 * The session id a lane's parent reference names — a root's file path (a lane's root file, a
 * checkpoint's or status.json's parent), a session id, or a path whose name carries the id — or
 * null when there is none.
 */
function parentIdOf(key: string | null, rootIdByFile: ReadonlyMap<string, string>, sessions: { has(id: string): boolean }): string | null {
  if (!key) return null;
  return rootIdByFile.get(key) ?? (sessions.has(key) ? key : sessionIdFromName(path.basename(key)));
}

/** What a placeholder lane stands for: its run's dispatch in a state log (`log`), or its status.json alone. */
interface PlacedRun {
  kind: 'dispatch' | 'status';
  log: string | null;
}

/** The session key of a placeholder lane (SessionView.placeholder). */
export const placeholderKey = (runId: string) => `run:${runId}`;

/** Where a remote row came from: owner actions stay on that machine. */
export interface RemoteOrigin {
  /** The `/api/status` URL it was fetched from. */
  url: string;
  /** The serving machine's host name (from the document), else the URL's host. */
  host: string;
  /** When this machine received the document (local clock). */
  fetchedAt: number;
}

/** One `--remote` feed as the header shows it. */
export interface RemoteFeedStatus {
  url: string;
  host: string;
  /** Last good document received (local clock), null before the first. */
  fetchedAt: number | null;
  /** The rows are older than the feed's expected refresh (or the last fetch failed). */
  stale: boolean;
  /** The last fetch's error, when it failed; the rows of the last good fetch are still shown. */
  error: string | null;
  roots: number;
  /** Remote rows not shown because the same session is read locally. */
  hidden: number;
  /** The remote clock minus ours, when it differs by more than can be explained by the fetch time. */
  skewMs: number | null;
}

/** What every view shows for one `now`. */
export interface Snapshot {
  now: number;
  homes: string[];
  roots: SessionView[];
  incidents: readonly IncidentRecord[];
  warnings: readonly Warning[];
  /**
   * Sessions read of those listed over every home; `listing`: some home's sessions are still being
   * listed; `searching`: session files still to be searched before their tails (the background search).
   */
  progress: { read: number; total: number; done: boolean; listing: boolean; searching: number };
  watchMode: ModelState['watchMode'];
  /** Limits per home after fallbacks, with notes on ignored settings. */
  homeLimits: Map<string, { limits: HomeLimits; notes: string[] }>;
  /** The `--remote` feeds (absent without `--remote`); their rows are in `roots`, marked `remote`. */
  remotes?: RemoteFeedStatus[];
}

export interface SnapshotOptions {
  /** This machine's host name (checkpoints from another host are judged by age). */
  host: string;
  /**
   * Rows kept between calls (the dashboard keeps one for its lifetime): a row whose inputs are
   * the same objects as last time, and whose state cannot have changed since it was built, is
   * re-timed (its countdowns and checkpoint age recomputed for `now`) instead of built again.
   * Without a cache every row is built; the result is the same either way.
   */
  cache?: SnapshotCache;
}

/** What {@link buildSnapshot} may keep between calls; see {@link SnapshotOptions.cache}. */
export interface SnapshotCache {
  readonly rows: Map<string, ViewMemo>;
  generation: number;
  /** The session/checkpoint join of the last call, for the same two maps. */
  parts: {
    sessionFiles: ModelState['sessionFiles'];
    checkpoints: ModelState['checkpoints'];
    parts: Map<string, SessionParts>;
    rootIdByFile: Map<string, string>;
    /** Session ids claimed by more than one session file or checkpoint (the join picks one). */
    duplicated: Set<string>;
    /** A warning for each copy the join did not pick (joinParts). */
    copies: readonly Warning[];
    /** The sessions of each run id, as rowInputs finds a row's lane status (made at the first lane status patch). */
    byRun?: Map<string, string[]>;
  } | null;
  /**
   * The last snapshot built from scratch: for the same model state it stays right, re-timed, for
   * any `now` in [builtAt, stableUntil) (the earliest edge of any row), so a tick that changes
   * nothing but countdowns neither joins, sorts nor attaches anything. What {@link buildSnapshot}
   * returns with this cache is always a re-time of `last.snapshot` as it stands after the call:
   * two results with one `last.snapshot` differ only in `now` and what is counted from it (remaining
   * times, checkpoint ages) — `loop-dash serve` tags its status document by it (serve-command.ts).
   */
  last: { state: ModelState; host: string; builtAt: number; stableUntil: number; snapshot: Snapshot } | null;
  /**
   * Which root (home and session) each row sits under, and each root by its key, for the roots
   * list `of`: made by each build from scratch (assembleSteps); a patch keeps every row under the
   * same root, so the index carries over to the patched list (`byKey` updated with the patched roots).
   */
  rootIndex: { of: readonly SessionView[]; rootOf: Map<string, string>; byKey: Map<string, SessionView> } | null;
  /**
   * The lane status index a patch derived for the map `of` from the last one (deriveLaneStatusIndex),
   * kept here, not in the module's memo of indexes built afresh: a snapshot built without this
   * cache then never sees a derived index (the row cache's property test compares the two).
   */
  laneIndex: { of: ReadonlyMap<string, LaneRunStatus>; index: LaneStatusIndex } | null;
  /**
   * The placeholder lanes of the last build from scratch (a patch keeps them as they are, or
   * gives up), by `${home}\0${runId}`: what each stands for. A patch of a state log checks its
   * open and dispatched runs against them (samePlaceholders).
   */
  placeholders: ReadonlyMap<string, PlacedRun>;
  /**
   * The rows of `rows` with a finite stable window, by its edge (`stableUntil`): a patch past the
   * last snapshot's window takes the rows whose window passed from its front, and the next edge
   * from its top, instead of walking every row twice — on the wide home's 12 013 rows those walks
   * were ~15–20 ms of every tick's frame while any countdown ran (measured 2026-12-07). An entry
   * whose memo is no longer the row's (built again, or pruned) is dropped when it comes to the front.
   */
  edges: MinQueue<RowEdge>;
  /** The latest instant any row in `rows` was built at (a `now` before it: the clock went back). */
  maxBuiltAt: number;
}

export function createSnapshotCache(): SnapshotCache {
  return { rows: new Map(), generation: 0, parts: null, last: null, rootIndex: null, laneIndex: null, placeholders: new Map(), edges: new MinQueue(), maxBuiltAt: -Infinity };
}

interface SessionParts {
  session: string;
  home: string;
  facts: SessionFileFacts | null;
  checkpoint: CheckpointRecord | null;
}

export function buildSnapshot(state: ModelState, now: number, opts: SnapshotOptions): Snapshot {
  const cache = opts.cache;
  const last = cache?.last;
  if (!cache) return assembleSnapshot(state, now, opts).snapshot;
  if (last && last.host === opts.host && last.builtAt <= now) {
    if (last.state === state && now < last.stableUntil) return retimeSnapshot(last.snapshot, now);
    const patched = patchSnapshot(cache, last, state, now, opts);
    if (patched) {
      cache.last = { state, host: opts.host, builtAt: now, stableUntil: patched.stableUntil, snapshot: patched.snapshot };
      return retimeSnapshot(patched.snapshot, now);
    }
  }
  const built = assembleSnapshot(state, now, opts);
  cache.last = { state, host: opts.host, builtAt: now, stableUntil: built.stableUntil, snapshot: built.snapshot };
  // Callers get a copy: the cached one must not change under them.
  return retimeSnapshot(built.snapshot, now);
}

/**
 * Brings `opts.cache` up to `state` ahead of the frame that shows it, yielding between runs of
 * rows so the caller can give the event loop a turn (views/first-frame.ts prepareFrameSnapshot):
 * a later {@link buildSnapshot} of `state` at any `now` from this one on then only re-times it
 * (or patches the rows whose window passed). A change a patch takes is patched without a yield;
 * a build from scratch (a start's list, a warm start's cache facts replacing every row's:
 * ~150–350 ms each on a home of 12 000 sessions) yields every {@link ROWS_PER_STEP} rows.
 */
export function* snapshotSteps(state: ModelState, now: number, opts: SnapshotOptions & { cache: SnapshotCache }): Generator<Step, void, void> {
  const cache = opts.cache;
  const last = cache.last;
  if (last && last.host === opts.host && last.builtAt <= now) {
    if (last.state === state) return;
    // A patch runs in one go: one that would rebuild more rows than STEPPED_PATCH_MAX is left to
    // the build in slices.
    const patched = patchSnapshot(cache, last, state, now, opts, STEPPED_PATCH_MAX);
    if (patched) {
      cache.last = { state, host: opts.host, builtAt: now, stableUntil: patched.stableUntil, snapshot: patched.snapshot };
      return;
    }
  }
  const built = yield* assembleSteps(state, now, opts, true);
  cache.last = { state, host: opts.host, builtAt: now, stableUntil: built.stableUntil, snapshot: built.snapshot };
}

/**
 * The sessions of each run id of the join: a row's lane status is its run's (rowInputs: the run
 * id its session file names, else its checkpoint's). Made once per join and kept by the patches
 * that carry the join over: a part changed in place keeps both run ids (SESSION_FILES_IN_PLACE,
 * CHECKPOINTS_IN_PLACE).
 */
function sessionsOfRuns(joined: NonNullable<SnapshotCache['parts']>): Map<string, string[]> {
  if (joined.byRun) return joined.byRun;
  const byRun = new Map<string, string[]>();
  joined.parts.forEach((p, session) => {
    const run = runIdOf(p);
    if (!run) return;
    const list = byRun.get(run);
    if (list) list.push(session);
    else byRun.set(run, [session]);
  });
  joined.byRun = byRun;
  return byRun;
}

/** The run id a row's lane status is found by. */
const runIdOf = (p: SessionParts): string | null => p.facts?.runId ?? p.checkpoint?.checkpoint.runId ?? null;

/** Calls `fn` with the old and the new value of each key whose value differs between two versions of a model map. */
function eachChange<V>(now: ReadonlyMap<string, V>, was: ReadonlyMap<string, V>, fn: (old: V | undefined, value: V | undefined) => void): void {
  const look = (key: string) => {
    const a = was.get(key);
    const b = now.get(key);
    if (a !== b) fn(a, b);
  };
  const keys = changedKeys(now, was);
  if (keys) return keys.forEach(look);
  // Not built on one another: every key of either.
  now.forEach((_, key) => look(key));
  was.forEach((_, key) => {
    if (!now.has(key)) look(key);
  });
}

/** How a value of one model map belongs to a session, when a new one has moved, and where it goes. */
interface InPlace<V> {
  sessionOf: (v: V) => string;
  moved: (old: V, v: V) => boolean;
  put: (p: SessionParts, v: V) => void;
}

// Module-level, not closures made per patch: a call site that sees a new function object on
// every patch keeps losing its optimised code (V8 re-compiled the patch a dozen times a minute).
const SESSION_FILES_IN_PLACE: InPlace<SessionFileFacts> = {
  sessionOf: (facts) => facts.sessionId,
  moved: (old, facts) =>
    old.sessionId !== facts.sessionId ||
    old.role !== facts.role ||
    old.rootFile !== facts.rootFile ||
    // A launch report that changes (the root follows another state log) is patched: patchSnapshot.
    old.runId !== facts.runId,
  put: (p, facts) => (p.facts = facts),
};

const CHECKPOINTS_IN_PLACE: InPlace<CheckpointRecord> = {
  sessionOf: (record) => record.session,
  moved: (old, record) =>
    old.session !== record.session ||
    old.checkpoint.role !== record.checkpoint.role ||
    old.checkpoint.parentSession !== record.checkpoint.parentSession ||
    old.checkpoint.pid !== record.checkpoint.pid ||
    // Its lane status is found by run id (sessionsOfRuns).
    old.checkpoint.runId !== record.checkpoint.runId,
  put: (p, record) => (p.checkpoint = record),
};

/** Each value of `now` that replaced one of `was` goes into its session's parts; false when one appeared or moved. */
function replaceInPlace<V>(now: ReadonlyMap<string, V>, was: ReadonlyMap<string, V>, how: InPlace<V>, duplicated: ReadonlySet<string>, partOf: (session: string) => SessionParts | null): boolean {
  if (now === was) return true;
  let inPlace = true;
  const look = (v: V | undefined, file: string) => {
    if (!inPlace) return;
    const old = was.get(file);
    if (old === v) return;
    // The caller has checked the sizes are the same: a key gone is a key added elsewhere.
    if (v === undefined || old === undefined || how.moved(old, v) || duplicated.has(how.sessionOf(v))) {
      inPlace = false;
      return;
    }
    const p = partOf(how.sessionOf(v));
    if (!p) {
      inPlace = false;
      return;
    }
    how.put(p, v);
  };
  // The two versions share their entries but a few (the reducer's maps): only those are looked at,
  // not every session of the home at every patch.
  const keys = changedKeys(now, was);
  if (keys) for (const file of keys) look(now.get(file), file);
  // Else each entry: forEach, not for…of over the entries (no [file, value] array per entry).
  // After a miss the rest is skipped (the caller builds anew).
  else now.forEach(look);
  return inPlace;
}

/** A patch that changes at least this many rows, and a quarter of all, is a full build instead. */
const FULL_BUILD_MIN = 256;
/**
 * The most rows {@link snapshotSteps} patches in one go (~15–20 ms on the start's interpreter):
 * the lane statuses of 2 000 lanes arriving at once on the wide home held the loop ~66 ms so.
 */
const STEPPED_PATCH_MAX = 512;

/**
 * The common live case in a fraction of a full build: some session files and checkpoints were
 * replaced (appends, checkpoint rewrites), incidents came or went, a probe saw something new, a
 * lane status, a watcher receipt or a state log changed — followed to the rows they touch (an
 * incident through its session's count, a probe through the checkpoints naming its pid, a lane
 * status through the sessions of its run, a receipt through its session, a state log through the
 * roots that follow it and their lanes). Only those
 * rows (and rows whose stable window has passed) are built; their roots get their lanes
 * re-attached and sorted, the roots are sorted again if a root row changed; every other row is the
 * last snapshot's. Anything else — a file or checkpoint that appears or goes, a session that moves
 * between roots, a duplicated session id, settings that changed — returns null: the caller builds
 * from scratch.
 */
function patchSnapshot(cache: SnapshotCache, last: NonNullable<SnapshotCache['last']>, state: ModelState, now: number, opts: SnapshotOptions, maxChanged = Infinity): { snapshot: Snapshot; stableUntil: number } | null {
  const before = last.state;
  const joined = cache.parts;
  if (!joined || joined.sessionFiles !== before.sessionFiles || joined.checkpoints !== before.checkpoints) return null;
  // The index of roots comes with every snapshot the cache holds (a build from scratch makes it,
  // a patch carries it over); without it, a build from scratch.
  const index = cache.rootIndex;
  if (index?.of !== last.snapshot.roots) return null;
  if (
    state.settings !== before.settings ||
    state.sessionFiles.size !== before.sessionFiles.size ||
    state.checkpoints.size !== before.checkpoints.size ||
    // A home that began being read is one of the snapshot's homes.
    state.progress.size !== before.progress.size
  ) {
    return null;
  }
  // Which sessions changed, and only in place (same session, same place in the tree).
  const changed = new Map<string, SessionParts>();
  // As many rows changed as a build from scratch is cheaper for (a warm start's cache facts
  // replacing every row's, the lane statuses of thousands of lanes arriving at once), or more than
  // the caller patches in one go: the patch gives up as soon as that is so. Its work per changed
  // row is ~3× a build's (the copies of parts and roots, the touches, a sort per root): on the
  // wide home's 12 013 rows such a patch took ~230 ms of a frame, and finding that every row
  // changed took ~87 ms before this bound.
  const limit = Math.min(maxChanged + 1, Math.max(FULL_BUILD_MIN, Math.ceil(joined.parts.size / 4)));
  let tooMany = false;
  /** The parts of `session` to change (a copy of the joined ones); null when it has none, or too many rows change. */
  const partOf = (session: string): SessionParts | null => {
    const had = changed.get(session);
    if (had) return had;
    const p = joined.parts.get(session);
    if (!p || tooMany) return null;
    const copy = { ...p };
    changed.set(session, copy);
    if (changed.size >= limit) {
      tooMany = true;
      return null;
    }
    return copy;
  };
  if (!replaceInPlace(state.sessionFiles, before.sessionFiles, SESSION_FILES_IN_PLACE, joined.duplicated, partOf)) return null;
  if (!replaceInPlace(state.checkpoints, before.checkpoints, CHECKPOINTS_IN_PLACE, joined.duplicated, partOf)) return null;
  // Incidents and probes reach rows through a count per session and a probe per pid.
  if (state.incidents !== before.incidents) {
    const was = incidentIndex(before.incidents).bySession;
    const is = incidentIndex(state.incidents).bySession;
    joined.parts.forEach((p, session) => {
      const key = incidentKey(p.home, session);
      if ((was.get(key) ?? 0) !== (is.get(key) ?? 0)) partOf(session);
    });
    if (tooMany) return null;
  }
  if (state.probes !== before.probes) {
    joined.parts.forEach((p, session) => {
      const pid = (changed.get(session) ?? p).checkpoint?.checkpoint.pid;
      if (pid && state.probes.get(pid) !== before.probes.get(pid)) partOf(session);
    });
    if (tooMany) return null;
  }
  // A lane status reaches the rows of the sessions of its run. Not a full build: a running lane's
  // status.json is rewritten at its turns and tools, and a build from scratch of the wide home's
  // 12 013 rows took ~90 ms a change (~10 ms on the big home's 1 213; measured 2026-12-05).
  if (state.laneStatuses !== before.laneStatuses) {
    const changes: [LaneRunStatus | undefined, LaneRunStatus | undefined][] = [];
    eachChange(state.laneStatuses, before.laneStatuses, (a, b) => changes.push([a, b]));
    const wasIndex = laneIndexFor(cache, before.laneStatuses);
    const isIndex = deriveLaneStatusIndex(wasIndex, changes) ?? laneStatusIndexOf(state.laneStatuses);
    cache.laneIndex = { of: state.laneStatuses, index: isIndex };
    const byRun = sessionsOfRuns(joined);
    // A run no session names whose status holds a placeholder lane or could make one (placeholderView,
    // mayBePlaceholder): a build from scratch. Its status.json is rewritten only until the lane's
    // session file appears, itself a build from scratch; any other such rewrite changes no row.
    let sessionless = false;
    /** The sessions of `run` are built again when the status they take (their run's in the index) changed. */
    const touchRun = (run: string) => {
      const was = wasIndex.byRun.get(run);
      const is = isIndex.byRun.get(run);
      if (was === is) return;
      const sessions = byRun.get(run);
      if (sessions) for (let i = 0; i < sessions.length; i++) partOf(sessions[i]!);
      // A run that holds a placeholder, or whose status could make one (not over, its root here).
      else if (cache.placeholders.has(`${(was ?? is)!.home}\0${run}`) || (is !== undefined && mayBePlaceholder(is, joined))) sessionless = true;
    };
    for (let i = 0; i < changes.length && !tooMany && !sessionless; i++) {
      const [a, b] = changes[i]!;
      if (a) touchRun(a.runId);
      if (b && b.runId !== a?.runId) touchRun(b.runId);
    }
    if (tooMany || sessionless) return null;
  }
  // A watcher receipt reaches the row of its session (when the session has a watcher of its id).
  if (state.receipts !== before.receipts) {
    eachChange(state.receipts, before.receipts, (a, b) => {
      if (a) partOf(a.session);
      if (b) partOf(b.session);
    });
    if (tooMany) return null;
  }
  // A state log reaches the roots that follow it (their launch report's log: attachStateLog) and
  // their lanes, which its dispatches name, task and give deadlines; so does a root's launch report
  // that changed (it follows another log: a warm start's roots get theirs when the cache's facts
  // replace the ones the list was drawn with). Not a full build either (the wide home: ~83 ms an
  // event, the big home ~9 ms; measured 2026-12-05).
  const reports = new Set<string>();
  changed.forEach((p, session) => {
    const was = joined.parts.get(session)?.facts;
    if (was && p.facts !== was && was.continuation?.launch?.report !== p.facts?.continuation?.launch?.report) reports.add(session);
  });
  if (reports.size > 0 || state.stateLogs !== before.stateLogs) {
    const roots = last.snapshot.roots;
    const byRun = sessionsOfRuns(joined);
    for (let i = 0; i < roots.length; i++) {
      const root = roots[i]!;
      const file = root.stateLogFile;
      const logChanged = file !== null && state.stateLogs.get(file) !== before.stateLogs.get(file);
      if (!logChanged && !reports.has(root.session)) continue;
      if (!partOf(root.session)) return null;
      // A placeholder is no session: it stays as it is unless its run was dispatched, returned or
      // closed (then a build from scratch), which is what the log's open runs tell.
      for (let j = 0; j < root.lanes.length; j++) if (!root.lanes[j]!.placeholder && !partOf(root.lanes[j]!.session)) return null;
      if (root.role === 'root' && !samePlaceholders(root, state, changed.get(root.session)!, byRun, cache.placeholders, laneIndexFor(cache, state.laneStatuses).byRun)) return null;
    }
  }
  if (tooMany) return null;
  // Rows whose state can have moved since they were built are built again too (none can while
  // `now` is inside the last snapshot's window: its edge is at most every row's own).
  const stale = new Set<string>();
  // The roots (home and root session) whose row or a lane's row changes: only those are looked at.
  const { rootOf, byKey } = index;
  const touched = new Set<string>();
  // A changed session the index does not place: every root is looked at.
  let touchAll = false;
  const touch = (key: string) => {
    const root = rootOf.get(key);
    if (root === undefined) touchAll = true;
    else touched.add(root);
  };
  // The rows taken from the front of the cache's edges: each is built again below, or (the patch
  // given up) put back, so a later patch finds it again.
  const popped: ViewMemo[] = [];
  const putBack = () => {
    for (let i = 0; i < popped.length; i++) if (isCurrent(cache, popped[i]!)) queueEdge(cache, popped[i]!);
  };
  if (now >= last.stableUntil) {
    // They are rows built again too: past the bound (a clock that jumped, a laptop woken from
    // sleep: every row's window passed) a build from scratch, or one in slices, is the cheaper.
    let rebuilt = changed.size;
    const isStale = (m: ViewMemo) => {
      // A row the index does not place is not shown (its session left the model): nothing to
      // patch; its memo goes, so its passed edge does not hold every later frame to a patch.
      if (!rootOf.has(m.key)) {
        dropRow(cache, m.key);
        return;
      }
      const session = m.view.session;
      if (!stale.has(session)) {
        stale.add(session);
        if (!changed.has(session)) rebuilt++;
      }
      touch(m.key);
    };
    if (now < cache.maxBuiltAt) {
      // The clock went back past rows' builds: every row is looked at.
      cache.rows.forEach((m) => {
        if (now >= m.stableUntil || now < m.builtAt) isStale(m);
      });
    } else {
      const edges = cache.edges;
      while (edges.peekKey() <= now) {
        const m = popEdge(cache);
        if (m === null) continue;
        popped.push(m);
        isStale(m);
      }
    }
    if (rebuilt >= limit) {
      putBack();
      return null;
    }
  }
  for (const [session, p] of changed) touch(`${p.home}\0${session}`);

  // The join is the cache's own (never handed out): updated in place for the new maps.
  const parts = joined.parts;
  for (const [session, p] of changed) parts.set(session, p);
  cache.parts = { ...joined, sessionFiles: state.sessionFiles, checkpoints: state.checkpoints };

  // The same settings and homes: the same limits per home as the last snapshot.
  const homeLimits = last.snapshot.homeLimits;
  const { bySession: incidentsBySession, sorted: incidents } = incidentIndex(state.incidents);
  const laneStatusByRun = laneIndexFor(cache, state.laneStatuses).byRun;
  const receiptsById = receiptIndex(state.receipts);
  // Rows are pruned only by a full build (which marks every row in use); a patch keeps the generation.
  const generation = cache.generation;
  const rebuild = (old: SessionView): SessionView => {
    const p = parts.get(old.session);
    if (!p) throw new Error(`snapshot patch: session ${old.session} has no parts`);
    const limits = (homeLimits.get(p.home) ?? DEFAULT_LIMITS).limits;
    const inputs = rowInputs(p, state, limits, incidentsBySession, laneStatusByRun, receiptsById, opts.host);
    const view = memoSessionView(cache, p, inputs, now, opts, generation).view;
    view.parent = old.parent;
    return view;
  };
  const dirty = (v: SessionView) => changed.has(v.session) || stale.has(v.session);

  let rootsMoved = false;
  const patchRoot = (root: SessionView): SessionView => {
    const rootDirty = dirty(root);
    const lanesDirty = root.lanes.some(dirty);
    if (!rootDirty && !lanesDirty) return root;
    if (rootDirty) rootsMoved = true;
    const r = rootDirty ? rebuild(root) : { ...root };
    // A lane that did not change is the last snapshot's object: its state log was attached when it
    // was built, from the same state log (a change there rebuilds the root and all its lanes) under
    // the same root (a move is a full build). Only rebuilt lanes get theirs, so nothing the cached
    // snapshot holds is written.
    const fresh: SessionView[] = [];
    r.lanes = root.lanes.map((lane) => {
      // A placeholder's state follows its root's (a lost or ended root returns nothing): made again with it.
      if (lane.placeholder) return rootDirty ? placeholderView(lane.home, lane.runId!, lane.dispatch ?? null, lane.laneStatus, (homeLimits.get(lane.home) ?? DEFAULT_LIMITS).limits, r, now) : lane;
      if (!dirty(lane)) return lane;
      const built = rebuild(lane);
      fresh.push(built);
      return built;
    });
    // Every row of the roots list, as the full build: a lane whose root is gone is its own row and
    // follows its own launch report's log, if it has one.
    attachStateLog(r, state, fresh);
    sortViews(r.lanes);
    // A root goes by its most urgent lane too (treeKey): a lane's change can move it.
    if (!rootsMoved && treeKey(r) !== treeKey(root)) rootsMoved = true;
    return r;
  };
  // The places of the roots to patch: the touched ones, found by the index and a scan of pointers
  // — not by reading every root, which took ~0.3 ms a patch in the dashboard on the wide home —
  // or all of them (a row the index does not place).
  const lastRoots = last.snapshot.roots;
  let at: number[] | null = touchAll ? null : [];
  for (const key of touched) {
    if (at === null) break;
    const root = byKey.get(key);
    const i = root === undefined ? -1 : lastRoots.indexOf(root);
    if (i < 0) at = null;
    else at.push(i);
  }
  at ??= lastRoots.map((_, i) => i);
  // The list copied, those roots patched in place. Not `map` over the roots: called here, it
  // allocated ~40 bytes per root beyond the new list (the wide home's 2 012 roots: 100 KB a patch
  // instead of 22 KB, measured 2026-12-04), garbage at each of the ~15 patches a second.
  const roots = lastRoots.slice();
  for (const i of at) {
    const root = lastRoots[i]!;
    roots[i] = patchRoot(root);
    // The index's roots are this list's from now on (keys unchanged: a patch keeps every row in place).
    if (roots[i] !== root) byKey.set(`${root.home}\0${root.session}`, roots[i]!);
  }
  // Rows that did not change keep the instant they were built at; order is by deadline instants,
  // so mixing instants is harmless, and every row is re-timed before anyone sees it.
  if (rootsMoved) sortViews(roots);

  putBack();
  // The earliest edge of any row kept (of every row shown, and of rows cached but not shown:
  // earlier than needed at worst, never later).
  const stableUntil = earliestEdge(cache);
  // The same rows under the same roots: the index holds for the patched list.
  cache.rootIndex = { of: roots, rootOf, byKey };
  const snapshot: Snapshot = {
    ...last.snapshot,
    now,
    roots,
    incidents,
    warnings: warningList(state.warnings, homeLimits, joined.copies),
    progress: progressOf(state),
    watchMode: state.watchMode,
    homeLimits,
  };
  // The roots a re-time may change: the last list's and the patched ones, in the same places
  // unless the roots were sorted again (then found by a walk when first re-timed).
  const moving = movingRoots.get(last.snapshot);
  if (moving !== undefined && !rootsMoved) movingRoots.set(snapshot, [...new Set([...moving, ...at])]);
  return { snapshot, stableUntil };
}

/**
 * Roots that no re-time changes: neither the root nor a lane has a running clock. A root object is
 * never changed once its snapshot is built (a patch or a re-time makes a new one, and rows are
 * handed out of the row cache as copies), so this holds for the object's life; the ~150 of ~200
 * roots without a request in flight then cost a lookup per frame instead of a walk of their lanes.
 */
const stillRoots = new WeakSet<SessionView>();

/**
 * Per snapshot a frame re-times (the cached one): the places in its roots list of the roots that
 * may not be still — a superset, pruned as they are found still. A frame then reads only those
 * root objects: a walk that read all of them (2 012 on a wide home) cost ~0.3 ms a frame in the
 * dashboard, whichever walk came first (measured 2026-12-04: the cost moved from the patch's walk
 * to the re-time's when the patch stopped reading every root).
 */
const movingRoots = new WeakMap<Snapshot, number[]>();

/**
 * Each re-timed copy a snapshot hands out → the row it was copied from (a row of the cached
 * snapshot, never changed once built). The copy differs from it in the running deadlines'
 * `remainingMs` alone (and, for a root, the lanes list), so what is derived from a row and not
 * from those (its cells but for the countdowns) can be kept per base row across frames.
 */
const retimeBases = new WeakMap<SessionView, SessionView>();

/** The row `v` is a re-timed copy of (see {@link retimeBases}), or `v` itself. */
export function retimeBase(v: SessionView): SessionView {
  return retimeBases.get(v) ?? v;
}

/**
 * `snap` at `now` (within its stable window): every row re-timed, lanes under their roots, the
 * same order (rows are ordered by deadline instants, which re-timing does not move).
 */
function retimeSnapshot(snap: Snapshot, now: number): Snapshot {
  let moving = movingRoots.get(snap);
  if (moving === undefined) {
    moving = [];
    for (let i = 0; i < snap.roots.length; i++) if (!stillRoots.has(snap.roots[i]!)) moving.push(i);
    movingRoots.set(snap, moving);
  }
  const roots = snap.roots.slice();
  // Only the roots that may move are looked at; one found still is dropped from the list.
  let kept = 0;
  for (const i of moving) {
    const root = roots[i]!;
    if (stillRoots.has(root)) continue;
    roots[i] = retimeRoot(root, now);
    if (!stillRoots.has(root)) moving[kept++] = i;
  }
  moving.length = kept;
  // The incident and warning lists are read-only (typed so): shared with the cached snapshot, not
  // copied — a copy of the big home's 5 000 incidents per frame was 40 KB of garbage per frame.
  return { ...snap, now, roots };
}

/**
 * A root and its lanes at `now`; the same root, marked still, when none of them has a running
 * clock. Also for the rows of a `--remote` feed, built once per fetched document
 * (remote/merge-remote.ts).
 */
export function retimeRoot(root: SessionView, now: number): SessionView {
  let lanes: SessionView[] | null = null;
  for (let i = 0; i < root.lanes.length; i++) {
    const was = root.lanes[i]!;
    const lane = retime(was, now);
    if (lane !== was) {
      retimeBases.set(lane, was);
      (lanes ??= root.lanes.slice())[i] = lane;
    }
  }
  const r = retime(root, now);
  if (r !== root) retimeBases.set(r, root);
  if (!lanes) {
    if (r === root) stillRoots.add(root);
    return r;
  }
  return r === root ? { ...root, lanes } : Object.assign(r, { lanes });
}

function assembleSnapshot(state: ModelState, now: number, opts: SnapshotOptions): { snapshot: Snapshot; stableUntil: number } {
  const steps = assembleSteps(state, now, opts, false);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Rows built between two of {@link assembleSteps}'s yields (~1–2 ms on the start's interpreter). */
const ROWS_PER_STEP = 64;

/**
 * What a step of {@link snapshotSteps} yields: nothing between runs of rows; COMMIT once all is
 * built, before the cache is written (a caller that gave turns gives one there too, so the last
 * run of rows and the frame that shows the result are not one block).
 */
export const COMMIT = 'commit';
export type Step = typeof COMMIT | undefined;

/**
 * A snapshot built from scratch. `stepped` (snapshotSteps): it yields after every
 * {@link ROWS_PER_STEP} rows so the caller can give the event loop a turn between them, and keeps
 * what goes into the cache (its rows' memos, the join, the memo's pruning) until it is done, so
 * a build of another state in between (a frame of the state on screen) sees the cache as it was.
 */
function* assembleSteps(state: ModelState, now: number, opts: SnapshotOptions, stepped: boolean): Generator<Step, { snapshot: Snapshot; stableUntil: number }, void> {
  const homeLimits = settingsLimits(state.settings);
  const limitsFor = (home: string) => {
    let l = homeLimits.get(home);
    if (!l) {
      l = DEFAULT_LIMITS;
      homeLimits.set(home, l);
    }
    return l.limits;
  };

  const cache = opts.cache;
  let joined = cache?.parts;
  if (!joined || joined.sessionFiles !== state.sessionFiles || joined.checkpoints !== state.checkpoints) {
    const { parts, duplicated, copies } = joinParts(state);
    // Roots by file, for attaching lanes.
    const rootIdByFile = new Map<string, string>();
    parts.forEach((p) => {
      if (p.facts && p.facts.role === 'root') rootIdByFile.set(p.facts.file, p.session);
    });
    joined = { sessionFiles: state.sessionFiles, checkpoints: state.checkpoints, parts, rootIdByFile, duplicated, copies };
  }
  const { parts, rootIdByFile } = joined;

  const { bySession: incidentsBySession, sorted: incidentsSorted } = incidentIndex(state.incidents);
  const laneStatusByRun = laneIndexFor(cache, state.laneStatuses).byRun;
  const receiptsById = receiptIndex(state.receipts);

  const views = new Map<string, SessionView>();
  const generation = cache ? ++cache.generation : 0;
  let stableUntil = Infinity;
  // The loops over every session go by forEach and index, not by iterators: a start builds this for
  // 1 213 sessions of the big home several times, interpreted (docs/PERFORMANCE.md, "Indexed loops
  // on the start's path").
  const list: SessionParts[] = [];
  parts.forEach((p) => list.push(p));
  // The rows in the order of `list` (and of `views`), for the loops below.
  const built: SessionView[] = new Array<SessionView>(list.length);
  // In steps, every row's memo (built or reused) is kept apart until the end (`written`): frames
  // of the state on screen built meanwhile see the cache's memos as they were, and the memos they
  // write are put back to this build's at the end — the patch that follows judges a row's window
  // by its memo, which must be the one the row came from.
  const written = cache && stepped ? new Map<string, ViewMemo>() : undefined;
  // Each row's key in the cache, for the index of roots below.
  const keyOfView = cache ? new Map<SessionView, string>() : null;
  for (let i = 0; i < list.length; i++) {
    const p = list[i]!;
    const inputs = rowInputs(p, state, limitsFor(p.home), incidentsBySession, laneStatusByRun, receiptsById, opts.host);
    let row: { view: SessionView; stableUntil: number };
    if (cache) {
      const memo = memoSessionView(cache, p, inputs, now, opts, generation, written);
      keyOfView?.set(memo.view, memo.key);
      row = memo;
    } else row = sessionView(p, inputs, now, opts);
    views.set(p.session, row.view);
    built[i] = row.view;
    if (row.stableUntil < stableUntil) stableUntil = row.stableUntil;
    if (stepped && (i + 1) % ROWS_PER_STEP === 0) yield;
  }

  // Attach lanes to roots: by the lane's root file, else the checkpoint's parentSession (id or path).
  const roots: SessionView[] = [];
  const orphans: SessionView[] = [];
  for (let i = 0; i < built.length; i++) {
    if (stepped && (i + 1) % ROWS_PER_STEP === 0) yield;
    const view = built[i]!;
    if (view.role === 'root') {
      roots.push(view);
      continue;
    }
    const p = list[i]!;
    const parentKey = p.facts?.rootFile ?? p.checkpoint?.checkpoint.parentSession ?? null;
    const parentId = parentIdOf(parentKey, rootIdByFile, views);
    const parent = parentId ? views.get(parentId) : undefined;
    if (parent && parent.role === 'root') {
      view.parent = parent.session;
      parent.lanes.push(view);
    } else orphans.push(view);
  }
  // A lane whose root we cannot see is still shown, as its own row.
  roots.push(...orphans);

  // Lanes with no session file or checkpoint yet (placeholderView): the open runs of each root's
  // state log, then the runs pi-subagents lists as not over that no dispatch names.
  const runsWithSessions = sessionsOfRuns(joined);
  const placed = new Map<string, PlacedRun>();
  // Every run a followed state log dispatched (`${home}\0${runId}`): such a run is the log's to
  // show (open) or not (returned, closed), never a placeholder of its status.json alone.
  const dispatched = new Set<string>();
  const placeholders: SessionView[] = [];
  for (let i = 0, rows = 0, n = roots.length; i < n; i++) {
    const root = roots[i]!;
    attachStateLog(root, state);
    if (root.role === 'root' && root.stateLogFile !== null) dispatchIndex(root.stateLog).forEach((_, run) => dispatched.add(`${root.home}\0${run}`));
    const more = dispatchPlaceholders(root, state, runsWithSessions, laneStatusByRun, limitsFor(root.home), placed, now);
    for (let j = 0; j < more.length; j++) {
      root.lanes.push(more[j]!);
      placeholders.push(more[j]!);
    }
    sortViews(root.lanes);
    rows += 1 + root.lanes.length;
    if (stepped && rows >= ROWS_PER_STEP) {
      rows = 0;
      yield;
    }
  }
  const resorted = new Set<SessionView>();
  laneStatusByRun.forEach((status, run) => {
    const key = `${status.home}\0${run}`;
    if (RUN_OVER.has(status.state) || runsWithSessions.has(run) || placed.has(key) || dispatched.has(key)) return;
    // Its root: the parent session status.json names (a file path or an id), in the same home. A
    // run whose root is not here is left out: a leftover status.json of a run long gone would
    // otherwise be a row of its own for good.
    const parentKey = status.sessionId;
    const parentId = parentIdOf(parentKey, rootIdByFile, views);
    const found = parentId ? views.get(parentId) : undefined;
    if (!found || found.role !== 'root' || found.home !== status.home) return;
    placed.set(key, { kind: 'status', log: null });
    const view = placeholderView(status.home, run, null, status, limitsFor(status.home), found, now);
    placeholders.push(view);
    found.lanes.push(view);
    resorted.add(found);
  });
  resorted.forEach((root) => sortViews(root.lanes));
  if (keyOfView) for (let i = 0; i < placeholders.length; i++) keyOfView.set(placeholders[i]!, `${placeholders[i]!.home}\0${placeholders[i]!.session}`);
  sortViews(roots);

  // Which root each row sits under (`${home}\0${session}` of a row → that of its root; a root's →
  // the root), for the patches that follow: built here, in steps and from the keys the rows were
  // memoised by, not by the first patch (a key made per row, in one go: ~37 ms of the first render
  // after the first frame on the wide home, 12-07).
  let rootIndex: SnapshotCache['rootIndex'] = null;
  if (keyOfView) {
    const rootOf = new Map<string, string>();
    const byKey = new Map<string, SessionView>();
    for (let i = 0, rows = 0; i < roots.length; i++) {
      const root = roots[i]!;
      const key = keyOfView.get(root)!;
      rootOf.set(key, key);
      byKey.set(key, root);
      for (let j = 0; j < root.lanes.length; j++) rootOf.set(keyOfView.get(root.lanes[j]!)!, key);
      rows += 1 + root.lanes.length;
      if (stepped && rows >= ROWS_PER_STEP) {
        rows = 0;
        yield;
      }
    }
    rootIndex = { of: roots, rootOf, byKey };
  }

  // All built: what is kept in the cache is written in one go, with no turn after it before the
  // caller takes the snapshot as the cache's last (snapshotSteps). The turn the caller may give
  // before that (COMMIT) is the last in which a frame of the state on screen can be built.
  if (stepped) yield COMMIT;
  if (cache) {
    written?.forEach((m) => keepRow(cache, m));
    cache.parts = joined;
    cache.placeholders = placed;
    cache.rootIndex = rootIndex;
    if (generation % 64 === 0) {
      const rows = cache.rows;
      rows.forEach((m, k) => {
        if (m.generation !== generation) dropRow(cache, k);
      });
    }
  }

  const incidents = incidentsSorted;
  const warnings = warningList(state.warnings, homeLimits, joined.copies);

  const homeSet = new Set(state.settings.keys());
  parts.forEach((p) => homeSet.add(p.home));
  // A home being read is one, also before its first session is found (or when it has none).
  state.progress.forEach((_, home) => homeSet.add(home));
  const homes = [...homeSet].sort();
  return { snapshot: { now, homes, roots, incidents, warnings, progress: progressOf(state), watchMode: state.watchMode, homeLimits }, stableUntil };
}

function progressOf(state: ModelState): Snapshot['progress'] {
  let read = 0;
  let total = 0;
  let done = true;
  let listing = false;
  let searching = 0;
  state.progress.forEach((pr) => {
    read += pr.read;
    total += pr.total;
    done &&= pr.done;
    listing ||= pr.listing;
    searching += pr.searching;
  });
  return { read, total, done, listing, searching };
}

/**
 * Join session files and checkpoints by session id (a fresh root may have only a checkpoint). A
 * session id is one session wherever it is read (as a remote row the same id is: merge-remote.ts):
 * one row. Two files claiming one id are a copy — of a session file in one home, or of a whole
 * home given beside its original — and the row is the copy written last; each other copy gets a
 * warning naming it and the one shown (`copies`). Across homes, a row's session file and
 * checkpoint come from one home, the one written last, where its owner actions go: until 12-08 each
 * was the newest of any home and the row's home was the first read, so an abort could go to a
 * copy nobody reads.
 */
function joinParts(state: ModelState): { parts: Map<string, SessionParts>; duplicated: Set<string>; copies: Warning[] } {
  const parts = new Map<string, SessionParts>();
  const duplicated = new Set<string>();
  // Ids read in more than one home, joined again home by home below (rare: none in one home).
  let acrossHomes: Set<string> | null = null;
  const seen = (p: SessionParts, home: string) => {
    duplicated.add(p.session);
    if (p.home !== home) (acrossHomes ??= new Set()).add(p.session);
  };
  // By forEach: the model's maps may be shared ones, whose iterators are generators (slow when run
  // interpreted, as for most of a start: docs/PERFORMANCE.md, "Indexed loops on the start's path").
  state.sessionFiles.forEach((facts) => {
    let p = parts.get(facts.sessionId);
    if (!p) parts.set(facts.sessionId, (p = { session: facts.sessionId, home: facts.home, facts: null, checkpoint: null }));
    else seen(p, facts.home);
    if (!p.facts || facts.mtimeMs > p.facts.mtimeMs) p.facts = facts;
  });
  state.checkpoints.forEach((record) => {
    let p = parts.get(record.session);
    if (!p) parts.set(record.session, (p = { session: record.session, home: record.home, facts: null, checkpoint: null }));
    else if (p.checkpoint || p.home !== record.home) seen(p, record.home);
    if (!p.checkpoint || record.checkpoint.updatedAt > p.checkpoint.checkpoint.updatedAt) p.checkpoint = record;
  });
  if (acrossHomes) joinAcrossHomes(state, acrossHomes, parts);
  const copies: Warning[] = [];
  if (duplicated.size > 0) {
    const warn = (file: string, id: string) => {
      const p = parts.get(id)!;
      const shown = p.facts?.file ?? p.checkpoint?.file;
      if (file === p.facts?.file || file === p.checkpoint?.file || !shown) return;
      const where = p.home !== homeOfFile(state, file) ? ` (home ${p.home})` : '';
      copies.push({ file, line: null, message: `a copy: session ${id} is also in ${shown}${where}, and its row shows that one, not this`, severity: 'warning' });
    };
    state.sessionFiles.forEach((f) => {
      if (duplicated.has(f.sessionId)) warn(f.file, f.sessionId);
    });
    state.checkpoints.forEach((r) => {
      if (duplicated.has(r.session)) warn(r.file, r.session);
    });
  }
  return { parts, duplicated, copies };
}

/** The files' home of a session file or checkpoint `file` (for a copy's warning). */
function homeOfFile(state: ModelState, file: string): string | null {
  return state.sessionFiles.get(file)?.home ?? state.checkpoints.get(file)?.home ?? null;
}

/**
 * Joins again each of `ids`, read in more than one home: the home whose session file or checkpoint
 * was written last (by its file's mtime), with that home's newest session file and its checkpoint.
 */
function joinAcrossHomes(state: ModelState, ids: ReadonlySet<string>, parts: Map<string, SessionParts>): void {
  // Per id, per home: what that home has of it.
  const byId = new Map<string, Map<string, SessionParts & { writtenAt: number }>>();
  const of = (id: string, home: string) => {
    let homes = byId.get(id);
    if (!homes) byId.set(id, (homes = new Map()));
    let p = homes.get(home);
    if (!p) homes.set(home, (p = { session: id, home, facts: null, checkpoint: null, writtenAt: -Infinity }));
    return p;
  };
  state.sessionFiles.forEach((facts) => {
    if (!ids.has(facts.sessionId)) return;
    const p = of(facts.sessionId, facts.home);
    if (!p.facts || facts.mtimeMs > p.facts.mtimeMs) p.facts = facts;
    p.writtenAt = Math.max(p.writtenAt, facts.mtimeMs);
  });
  state.checkpoints.forEach((record) => {
    if (!ids.has(record.session)) return;
    const p = of(record.session, record.home);
    if (!p.checkpoint || record.checkpoint.updatedAt > p.checkpoint.checkpoint.updatedAt) p.checkpoint = record;
    p.writtenAt = Math.max(p.writtenAt, record.mtimeMs);
  });
  byId.forEach((homes, id) => {
    let best: (SessionParts & { writtenAt: number }) | null = null;
    // Equal times (a copy that kept them): the home whose path sorts first, whatever order the
    // model's maps hold them in. Neither has a live process then (docs/CLOCKS.md).
    for (const p of homes.values()) {
      if (!best || p.writtenAt > best.writtenAt || (p.writtenAt === best.writtenAt && p.home < best.home)) best = p;
    }
    if (best) parts.set(id, { session: id, home: best.home, facts: best.facts, checkpoint: best.checkpoint });
  });
}

/** Everything a row is built from besides `now`; rows are reused only when each is the same object. */
interface RowInputs {
  facts: SessionFileFacts | null;
  checkpoint: CheckpointRecord | null;
  probe: ProcessProbe | null;
  limits: HomeLimits;
  incidents: number;
  laneStatus: LaneRunStatus | null;
  /** The receipt of each of the row's watchers, in their order (NO_RECEIPTS when it has none). */
  receipts: readonly (WatcherReceipt | null)[];
  host: string;
}

const NO_RECEIPTS: readonly (WatcherReceipt | null)[] = [];

function rowInputs(
  p: SessionParts,
  state: ModelState,
  limits: HomeLimits,
  incidentsBySession: Map<string, number>,
  laneStatusByRun: ReadonlyMap<string, LaneRunStatus>,
  receipts: Map<string, WatcherReceipt>,
  host: string,
): RowInputs {
  const cp = p.checkpoint?.checkpoint ?? null;
  const runId = runIdOf(p);
  const watchers = p.facts?.waitState?.watchers;
  return {
    facts: p.facts,
    checkpoint: p.checkpoint,
    probe: cp?.pid ? (state.probes.get(cp.pid) ?? null) : null,
    limits,
    incidents: incidentsBySession.get(incidentKey(p.home, p.session)) ?? 0,
    laneStatus: runId ? (laneStatusByRun.get(runId) ?? null) : null,
    receipts: watchers && watchers.length > 0 ? watchers.map((w) => receipts.get(`${p.session}\0${w.id}`) ?? null) : NO_RECEIPTS,
    host,
  };
}

const sameInputs = (a: RowInputs, b: RowInputs) =>
  a.facts === b.facts &&
  a.checkpoint === b.checkpoint &&
  a.probe === b.probe &&
  a.limits === b.limits &&
  a.incidents === b.incidents &&
  a.laneStatus === b.laneStatus &&
  sameReceipts(a.receipts, b.receipts) &&
  a.host === b.host;

function sameReceipts(a: RowInputs['receipts'], b: RowInputs['receipts']): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** One row as last built: from these inputs at `builtAt`, the same (re-timed) until `stableUntil`. */
interface ViewMemo {
  inputs: RowInputs;
  builtAt: number;
  stableUntil: number;
  view: SessionView;
  generation: number;
  /** Its key in the cache's rows. */
  key: string;
  /** Its entry in the cache's `edges` while it has one (one at most). */
  edge: RowEdge | null;
}

/**
 * An entry of the cache's `edges`: the memo while it is the cache's row, null once it is replaced
 * or dropped (the entry then goes when it comes to the front, holding nothing: an entry that held
 * the memo kept every row built since — the wide home's start rebuilds each of its 12 013 rows
 * several times — alive with its view).
 */
interface RowEdge {
  memo: ViewMemo | null;
}

/** Puts `m` in the cache's rows under its key, and its window's edge in the cache's queue. */
function keepRow(cache: SnapshotCache, m: ViewMemo): void {
  const had = cache.rows.get(m.key);
  if (had !== undefined && had !== m) unqueue(had);
  cache.rows.set(m.key, m);
  if (m.builtAt > cache.maxBuiltAt) cache.maxBuiltAt = m.builtAt;
  queueEdge(cache, m);
}

/** Drops the row of `key` from the cache. */
function dropRow(cache: SnapshotCache, key: string): void {
  const had = cache.rows.get(key);
  if (had === undefined) return;
  unqueue(had);
  cache.rows.delete(key);
}

function unqueue(m: ViewMemo): void {
  if (m.edge) m.edge.memo = null;
  m.edge = null;
}

function queueEdge(cache: SnapshotCache, m: ViewMemo): void {
  if (m.edge || m.stableUntil === Infinity) return;
  m.edge = { memo: m };
  cache.edges.push(m.edge, m.stableUntil);
  // Entries of rows replaced since stay until they come to the front: compacted when they
  // outnumber the rows (each rebuilt row with a far edge leaves one).
  if (cache.edges.size > 2 * cache.rows.size + 1024) cache.edges.filter((e) => e.memo !== null);
}

/** Takes the front entry out: its row, or null when the row was replaced or dropped since. */
function popEdge(cache: SnapshotCache): ViewMemo | null {
  const m = cache.edges.pop()?.memo ?? null;
  if (m !== null) m.edge = null;
  return m;
}

/** Whether `m` is still the row its key holds in the cache. */
const isCurrent = (cache: SnapshotCache, m: ViewMemo): boolean => cache.rows.get(m.key) === m;

/** The earliest edge of the cache's rows' windows (Infinity: none); drops the entries that hold no row. */
function earliestEdge(cache: SnapshotCache): number {
  const edges = cache.edges;
  while (edges.size > 0 && edges.peek()!.memo === null) edges.pop();
  return edges.peekKey();
}

/**
 * A row from the cache when its inputs are unchanged and `now` lies in [builtAt, stableUntil):
 * nothing but its countdowns and checkpoint age can differ there, and those are recomputed
 * exactly. A tick over a home of 1 000 sessions then builds only the rows whose state can move.
 * Views are handed out as copies, as the snapshot attaches lanes and state logs. `written`: where
 * a build in steps keeps the memo of every row it takes, built or reused, until it is done
 * (assembleSteps), instead of the cache's rows.
 */
function memoSessionView(
  cache: SnapshotCache,
  p: SessionParts,
  inputs: RowInputs,
  now: number,
  opts: SnapshotOptions,
  generation: number,
  written?: Map<string, ViewMemo>,
): { view: SessionView; stableUntil: number; key: string } {
  const key = `${p.home}\0${p.session}`;
  let m = cache.rows.get(key);
  if (m && sameInputs(m.inputs, inputs) && m.builtAt <= now && now < m.stableUntil) {
    m.generation = generation;
    written?.set(key, m);
    // A copy either way: the snapshot attaches lanes and state logs to it.
    const v = retime(m.view, now);
    return { view: v === m.view ? { ...v, lanes: [] } : Object.assign(v, { lanes: [] }), stableUntil: m.stableUntil, key };
  }
  const built = sessionView(p, inputs, now, opts);
  m = { inputs, builtAt: now, stableUntil: built.stableUntil, view: built.view, generation, key, edge: null };
  if (written) written.set(key, m);
  else keepRow(cache, m);
  return { view: { ...built.view, lanes: [] }, stableUntil: built.stableUntil, key };
}

/** How old the row's checkpoint is at `now` (negative for one stamped in the future); null without one. */
export function checkpointAgeMs(v: Pick<SessionView, 'source'>, now: number): number | null {
  return v.source.checkpointUpdatedAt === null ? null : now - v.source.checkpointUpdatedAt;
}

/** Whether `v` has a running deadline: the ones {@link retime} moves with `now`. */
export function hasRunningClock(v: SessionView): boolean {
  const c = v.clocks;
  return !!(c.inactivity || c.absolute || c.episode || c.nextRetry || c.nextResume);
}

/**
 * A request of this session is being retried (or retried for) with no recovery episode: its
 * provider is not one of `loopPi.retryRecovery.providerIds`, so nothing bounds the retries in time
 * (pi's `retry.maxRetries` alone counts them). When the episode would have a clock, as
 * `clockInputFromCheckpoint` gives it one: a busy checkpoint of a session not lost.
 */
export function retriesWithoutEpisode(v: SessionView): boolean {
  if (v.limits.episodeApplies !== false || v.state === 'lost') return false;
  const cp = v.checkpoint;
  // A remote row carries no checkpoint: pi's next retry pending (its served clocks) tells a retry.
  if (v.remote && !cp) return v.clocks.nextRetry !== null;
  return cp?.episode != null && REFRESHED_STATES.has(cp.state);
}

/**
 * `v` at `now`: its running deadlines with their remaining times. A row with no running clock
 * does not depend on `now` at all (within its stable window) and is returned as it is.
 */
function retime(v: SessionView, now: number): SessionView {
  if (!hasRunningClock(v)) return v;
  const c = v.clocks;
  return {
    ...v,
    clocks: {
      ...c,
      inactivity: at(c.inactivity, now),
      absolute: at(c.absolute, now),
      episode: at(c.episode, now),
      nextRetry: at(c.nextRetry, now),
      nextResume: at(c.nextResume, now),
    },
  };
}

const at = <D extends Deadline>(d: D | null, now: number): D | null => (d ? { ...d, remainingMs: d.at - now } : null);

/** The limits of a home without settings (one object, so rows built with it can be reused). */
const DEFAULT_LIMITS = limitsFromSettings(null);

/** Limits per home, derived once per version of the settings map. */
const settingsLimitsMemo = new WeakMap<ReadonlyMap<string, unknown>, Map<string, { limits: HomeLimits; notes: string[] }>>();
function settingsLimits(settings: ModelState['settings']): Map<string, { limits: HomeLimits; notes: string[] }> {
  let byHome = settingsLimitsMemo.get(settings);
  if (!byHome) {
    byHome = new Map();
    for (const [home, s] of settings) byHome.set(home, limitsFromSettings(s.settings));
    settingsLimitsMemo.set(settings, byHome);
  }
  // A copy: homes without settings are added per snapshot.
  return new Map(byHome);
}

/** pi-subagents' run states after which the run does nothing more (SPEC §3.3). */
const RUN_OVER: ReadonlySet<string> = new Set(['complete', 'failed', 'stopped', 'partial', 'rejected']);

/**
 * The step of a lane's run that wrote this session file: the one naming it, else the only one.
 * A multi-step run's lanes are told apart by it; with several steps and none naming the file,
 * none (its status and error are not this lane's to guess).
 */
function stepOf(status: LaneRunStatus, file: string | null): LaneRunStatus['steps'][number] | null {
  const steps = status.steps;
  if (file !== null) {
    // An absolute path names the file; a relative one is left alone (relative to what is not said).
    const named = steps.find((s) => s.sessionFile !== null && path.isAbsolute(s.sessionFile) && path.normalize(s.sessionFile) === file);
    if (named) return named;
  }
  return steps.length === 1 ? steps[0]! : null;
}

/**
 * One row at `now`, and until when nothing but its countdowns and checkpoint age can change
 * (`stableUntil`, exclusive; `now` itself when the row must be built again for any other `now`).
 */
function sessionView(p: SessionParts, inputs: RowInputs, now: number, opts: SnapshotOptions): { view: SessionView; stableUntil: number } {
  // A checkpoint from a clock ahead of ours is read in our time (clock-skew.ts): its times, age,
  // countdowns and another host's liveness all follow from the moved copy.
  const clockSkewMs = p.checkpoint ? checkpointSkewMs(p.checkpoint) : 0;
  const cp = p.checkpoint ? shiftCheckpoint(p.checkpoint.checkpoint, clockSkewMs) : null;
  const facts = p.facts;
  const role = facts?.role ?? cp?.role ?? 'root';
  const limits = effectiveLimits(inputs.limits, cp?.limits ?? null, cp?.model ?? null);

  const liveness = cp ? judgeLiveness(cp, inputs.probe, opts.host, now) : null;
  const armed = role === 'root' ? (facts?.continuation?.armed ?? null) : null;
  const heldByEntry = facts?.dashControl ? facts.dashControl.held : null;
  const waitState = facts?.waitState ?? null;
  const laneStatus = inputs.laneStatus;
  const step = laneStatus ? stepOf(laneStatus, facts?.file ?? cp?.sessionFile ?? null) : null;
  // The run's error is this lane's when its own step failed, or, with no step known to be this
  // lane's, when the run failed: a multi-step run's failure is not put on the steps that completed.
  const ownError = laneStatus?.error && (step ? step.status === 'failed' : laneStatus.state === 'failed') ? laneStatus.error : null;
  let derived = deriveSessionState(
    {
      checkpoint: cp,
      liveness: liveness?.status ?? 'unknown',
      armed,
      heldByEntry,
      waitState,
      dashControl: facts?.dashControl ?? null,
      role,
    },
    now,
  );
  // A lane with no checkpoint whose pi-subagents run is over (SPEC §3.3) has ended, as its run says.
  if (derived.state === 'unknown' && role === 'lane' && laneStatus && RUN_OVER.has(laneStatus.state)) {
    const own = step?.status && step.status !== laneStatus.state ? ` (its step: ${step.status})` : '';
    derived = { state: 'ended', why: `no checkpoint; pi-subagents says the run is ${laneStatus.state}${own}${ownError ? `: ${ownError}` : ''}` };
  } else if (derived.state === 'unknown' && role === 'lane' && laneStatus) {
    // A run still going: what pi-subagents last said of it (it is not the request's state).
    const tool = laneStatus.currentTool ? `, tool ${laneStatus.currentTool}` : '';
    derived = { state: 'unknown', why: `${derived.why}; pi-subagents says the run is ${laneStatus.state}${laneStatus.pid !== null ? ` (pid ${laneStatus.pid}${tool})` : tool ? ` (${tool.slice(2)})` : ''}` };
  }

  // A lost process cuts nothing and resumes nothing: its clocks are unknown, not running.
  const clocks = computeClocks(
    cp && derived.state !== 'lost'
      ? clockInputFromCheckpoint(cp, limits, { resumeExpected: derived.state === 'recovering' })
      : { limits, request: null, episode: null, recovery: null },
    now,
  );

  const checkpointAgeMs = p.checkpoint ? now - cp!.updatedAt : null;
  const staleAfter = cp ? checkpointStaleAfter(cp.state) : null;
  const stale = !!(staleAfter !== null && checkpointAgeMs !== null && checkpointAgeMs > staleAfter && derived.state !== 'lost');

  const runId = facts?.runId ?? cp?.runId ?? null;
  const cwd = facts?.header?.cwd ?? cp?.cwd ?? null;
  const name = facts?.name ?? cp?.agent ?? step?.agent ?? laneStatus?.steps[0]?.agent ?? (cwd ? path.basename(cwd) : null) ?? p.session.slice(0, 8);
  const model = cp?.model ?? (facts?.model ? (facts.model.provider ? `${facts.model.provider}/${facts.model.id}` : facts.model.id) : null) ?? step?.model ?? null;

  const timers = waitState?.timers ?? [];
  const watchers = (waitState?.watchers ?? []).map((w, i) => ({ ...w, receipt: inputs.receipts[i] ?? null }));

  const lastActivityAt = maxOf(cp?.request?.lastModelEventAt, cp?.request?.startedAt, facts?.lastEntryAt, cp ? null : facts?.mtimeMs);
  const lastError =
    cp?.episode?.lastError ??
    cp?.lastStop?.error ??
    (facts?.lastAssistant && (facts.lastAssistant.stopReason === 'error' || facts.lastAssistant.stopReason === 'aborted')
      ? (facts.lastAssistant.errorMessage ?? facts.lastAssistant.stopReason)
      : null) ??
    ownError;

  // Where this row stops being the same but for its countdowns and checkpoint age: the checkpoint
  // turns stale; an idle root's next loop-wait timer comes due; another host's checkpoint is
  // judged by its age in seconds (built again every time).
  let stableUntil = Infinity;
  if (cp) {
    if (cp.host.toLowerCase() !== opts.host.toLowerCase()) {
      // Judged by age (liveness.ts): its detail shows the age rounded to the second, and it turns
      // stale past REMOTE_STALE_MS.
      const age = now - cp.updatedAt;
      stableUntil = Number.isFinite(age) ? Math.min(cp.updatedAt + (Math.round(age / 1000) + 0.5) * 1000, age <= REMOTE_STALE_MS ? cp.updatedAt + REMOTE_STALE_MS : Infinity) : now;
    }
    // (A lost session is never stale: past the edge, a row that is not stale stays so.)
    if (staleAfter !== null && !stale && derived.state !== 'lost' && cp.updatedAt + staleAfter >= now) stableUntil = Math.min(stableUntil, cp.updatedAt + staleAfter);
    if (cp.state === 'idle') for (const t of timers) if (t.at !== null && t.at > now) stableUntil = Math.min(stableUntil, t.at);
  }

  const view: SessionView = {
    session: p.session,
    home: p.home,
    name,
    cwd,
    model,
    role,
    armed,
    held: derived.state === 'held' || !!cp?.held || heldByEntry === true,
    state: derived.state,
    why: derived.why,
    lastActivityAt,
    clocks,
    limits,
    source: { checkpoint: !!p.checkpoint, checkpointUpdatedAt: p.checkpoint ? cp!.updatedAt : null, stale, sessionFile: facts?.file ?? null, checkpointFile: p.checkpoint?.file ?? null, clockSkewMs },
    liveness,
    checkpoint: cp,
    timers,
    watchers,
    incidents: inputs.incidents,
    lastError,
    history: facts?.history ?? [],
    stateLogFile: null,
    stateLog: [],
    runId,
    lane: null,
    task: null,
    deadline: laneStatus?.deadlineAt ?? null,
    laneStatus,
    parent: null,
    lanes: [],
  };
  return { view, stableUntil };
}

const NO_EVENTS: readonly StateLogEvent[] = Object.freeze([]);
/** Derived once per launch record and per version of a state log (both are replaced, never changed). */
const stateLogFiles = new WeakMap<object, string>();
const dispatchIndexes = new WeakMap<readonly StateLogEvent[], ReadonlyMap<string, StateLogEvent>>();

/** The newest `dispatch` of each run a version of a state log names. */
function dispatchIndex(events: readonly StateLogEvent[]): ReadonlyMap<string, StateLogEvent> {
  const had = dispatchIndexes.get(events);
  if (had) return had;
  const dispatchByRun = new Map<string, StateLogEvent>();
  for (let i = 0; i < events.length; i++) {
    const ev = events[i]!;
    const run = typeof ev.raw.run === 'string' ? ev.raw.run : null;
    if (ev.ev === 'dispatch' && run) dispatchByRun.set(run, ev);
  }
  dispatchIndexes.set(events, dispatchByRun);
  return dispatchByRun;
}

/** The state log a session file's facts follow: its launch report's (SPEC §3.4), located from its cwd. */
function stateLogFileOf(facts: SessionFileFacts | null | undefined): string | null {
  const launch = facts?.continuation?.launch;
  const report = launch?.report;
  if (!launch || !report) return null;
  let file: string | null | undefined = stateLogFiles.get(launch);
  if (file === undefined) {
    file = stateLogOfRoot(report, facts.header?.cwd);
    if (file === null) return null;
    stateLogFiles.set(launch, file);
  }
  return file;
}

/** A root's state log gives its lanes their lane name, task and deadline (from `dispatch`). */
function attachStateLog(root: SessionView, state: ModelState, lanes: readonly SessionView[] = root.lanes): void {
  const file = stateLogFileOf(root.source.sessionFile ? state.sessionFiles.get(root.source.sessionFile) : undefined);
  if (file === null) return;
  root.stateLogFile = file;
  const events = state.stateLogs.get(file) ?? NO_EVENTS;
  root.stateLog = events;
  if (lanes.length === 0) return;
  const dispatchByRun = dispatchIndex(events);
  for (let i = 0; i < lanes.length; i++) {
    const lane = lanes[i]!;
    const d = lane.runId ? dispatchByRun.get(lane.runId) : undefined;
    if (!d) continue;
    lane.lane = str(d.raw.lane);
    lane.task = str(d.raw.task);
    if (lane.deadline === null) lane.deadline = toMs(d.raw.deadline);
    // The loop's name for the lane, unless its session names itself (`session_info`): the same from
    // the dispatch on (its placeholder is named so), where an agent's name ("worker") is shared by
    // many lanes and the cwd's by all.
    if (lane.lane && !(lane.source.sessionFile && state.sessionFiles.get(lane.source.sessionFile)?.name)) lane.name = lane.lane;
  }
}

/** The runs each version of a state log has dispatched and not seen return (nor the loop close since), oldest dispatch first. */
const openRunIndexes = new WeakMap<readonly StateLogEvent[], ReadonlyMap<string, StateLogEvent>>();

/**
 * The open runs of a state log (SPEC §3.4: "a dispatched run with no `return` is a live lane"):
 * each run whose newest `dispatch` has no `return` after it, and no `close` of the loop after it,
 * with that dispatch.
 */
export function openDispatches(events: readonly StateLogEvent[]): ReadonlyMap<string, StateLogEvent> {
  let open = openRunIndexes.get(events) as Map<string, StateLogEvent> | undefined;
  if (open) return open;
  open = new Map();
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.ev === 'close') {
      open.clear();
      continue;
    }
    const run = e.raw.run;
    if (typeof run !== 'string' || run.length === 0) continue;
    if (e.ev === 'dispatch') {
      open.delete(run);
      open.set(run, e);
    } else if (e.ev === 'return') open.delete(run);
  }
  openRunIndexes.set(events, open);
  return open;
}

/**
 * The placeholder lanes a root's state log gives it: its open runs (openDispatches) that no
 * session file or checkpoint names (`runsWithSessions`), nor `placed` (a run already given a row in
 * this home: the first root to dispatch it keeps it). Their keys are added to `placed`.
 */
function dispatchPlaceholders(
  root: SessionView,
  state: ModelState,
  runsWithSessions: ReadonlyMap<string, unknown>,
  laneStatusByRun: ReadonlyMap<string, LaneRunStatus>,
  limits: HomeLimits,
  placed: Map<string, PlacedRun>,
  now: number,
): SessionView[] {
  if (root.role !== 'root' || root.stateLogFile === null) return [];
  const open = openDispatches(root.stateLog);
  if (open.size === 0) return [];
  const out: SessionView[] = [];
  open.forEach((dispatch, run) => {
    if (runsWithSessions.has(run)) return;
    const key = `${root.home}\0${run}`;
    if (placed.has(key)) return;
    placed.set(key, { kind: 'dispatch', log: root.stateLogFile });
    out.push(placeholderView(root.home, run, dispatch, laneStatusByRun.get(run) ?? null, limits, root, now));
  });
  return out;
}

/**
 * Whether a root's placeholder lanes from its state log stand for the open runs its log has now
 * (the root's session file as `p` has it): the same runs, from the same dispatches.
 */
function samePlaceholders(
  root: SessionView,
  state: ModelState,
  p: SessionParts,
  runsWithSessions: ReadonlyMap<string, unknown>,
  placed: ReadonlyMap<string, PlacedRun>,
  laneStatusByRun: ReadonlyMap<string, LaneRunStatus>,
): boolean {
  const had = dispatchPlaceholdersOf(root);
  const file = stateLogFileOf(p.facts);
  const events = file === null ? NO_EVENTS : (state.stateLogs.get(file) ?? NO_EVENTS);
  let same = true;
  let n = 0;
  openDispatches(events).forEach((dispatch, run) => {
    if (!same || runsWithSessions.has(run)) return;
    // Another root's placeholder from the log this root followed already (two roots following one
    // log: the first in the build's order holds it, and still does): not this root's. From another
    // log, or one this root follows anew, the build from scratch decides which root holds it.
    if (!had.has(run) && root.stateLogFile === file) {
      const other = placed.get(`${root.home}\0${run}`);
      if (other?.kind === 'dispatch' && other.log === file) return;
    }
    n++;
    if (had.get(run) !== dispatch) same = false;
  });
  if (!same || n !== had.size) return false;
  // A run with a status.json and no session is the log's to show while the log dispatched it, and
  // may be a placeholder of its status.json alone when not: the same such runs dispatched before
  // (the log as the root last attached it) and now, or a build from scratch.
  const was = root.stateLogFile === null ? NO_EVENTS : root.stateLog;
  if (was === events) return true;
  const statusRuns = (log: readonly StateLogEvent[]) => {
    const runs: string[] = [];
    dispatchIndex(log).forEach((_, run) => {
      if (laneStatusByRun.has(run) && !runsWithSessions.has(run)) runs.push(run);
    });
    return runs;
  };
  const before = statusRuns(was);
  const now = statusRuns(events);
  if (before.length !== now.length) return false;
  const dispatchedBefore = new Set(before);
  return now.every((run) => dispatchedBefore.has(run));
}

/** The open runs (by run id, with their dispatch) a root's placeholder lanes from its state log stand for. */
function dispatchPlaceholdersOf(root: SessionView): Map<string, StateLogEvent | null> {
  const had = new Map<string, StateLogEvent | null>();
  for (let i = 0; i < root.lanes.length; i++) {
    const lane = root.lanes[i]!;
    if (lane.placeholder === 'dispatch' && lane.runId !== null) had.set(lane.runId, lane.dispatch ?? null);
  }
  return had;
}

/**
 * A placeholder lane (SessionView.placeholder): a run its root's state log dispatched with no
 * return yet (`dispatch`), or one pi-subagents' status.json lists and no dispatch names (`dispatch`
 * null), when no session file or checkpoint of the run is there to read, under `parent`, its root.
 * Its state is `dispatched`; `ended` when the run's status.json says the run is over, `unknown` when
 * its root is lost or has ended. It has no clock of its own.
 */
function placeholderView(
  home: string,
  runId: string,
  dispatch: StateLogEvent | null,
  status: LaneRunStatus | null,
  homeLimits: HomeLimits,
  parent: SessionView,
  now: number,
): SessionView {
  const raw = dispatch?.raw ?? {};
  const step = status && status.steps.length === 1 ? status.steps[0]! : null;
  const model = str(raw.model) ?? step?.model ?? null;
  const agent = str(raw.agent) ?? step?.agent ?? status?.steps[0]?.agent ?? null;
  const limits = effectiveLimits(homeLimits, null, model);
  const over = status !== null && RUN_OVER.has(status.state);
  // A root that is lost or has ended returns nothing: its open run is no live lane any more, only
  // a record (`unknown`, which the metrics drop after their grace).
  const orphaned = !over && (parent.state === 'lost' || parent.state === 'ended') ? parent.state : null;
  const iso = (t: number | null) => (t === null ? 'at an unknown time' : new Date(t).toISOString().replace('.000Z', 'Z'));
  const said = status ? `pi-subagents says the run is ${status.state}${status.pid !== null && !over ? ` (pid ${status.pid})` : ''}${status.error ? `: ${status.error}` : ''}` : null;
  const why = [
    dispatch ? `dispatched ${iso(dispatch.at)} (state log line ${dispatch.line}${agent ? `, agent ${agent}` : ''}), no return yet` : `pi-subagents lists run ${runId}, which no state log dispatched`,
    said,
    orphaned ? `its root is ${orphaned}: it may never start or return` : null,
    `no session file or checkpoint of run ${runId} found: nothing here to act on`,
  ]
    .filter((x) => x !== null)
    .join('; ');
  return {
    session: placeholderKey(runId),
    home,
    name: str(raw.lane) ?? agent ?? runId.slice(0, 8),
    cwd: null,
    model,
    role: 'lane',
    armed: null,
    held: false,
    state: over ? 'ended' : orphaned ? 'unknown' : 'dispatched',
    why,
    lastActivityAt: status?.lastActivityAt ?? status?.startedAt ?? dispatch?.at ?? null,
    clocks: computeClocks({ limits, request: null, episode: null, recovery: null }, now),
    limits,
    source: { checkpoint: false, checkpointUpdatedAt: null, stale: false, sessionFile: null, checkpointFile: null, clockSkewMs: 0 },
    liveness: null,
    checkpoint: null,
    timers: [],
    watchers: [],
    incidents: 0,
    lastError: status?.error ?? null,
    history: [],
    stateLogFile: null,
    stateLog: [],
    runId,
    lane: str(raw.lane),
    task: str(raw.task),
    deadline: status?.deadlineAt ?? toMs(raw.deadline),
    laneStatus: status,
    parent: parent.session,
    lanes: [],
    placeholder: dispatch ? 'dispatch' : 'status',
    ...(dispatch ? { dispatch } : {}),
  };
}

/**
 * A session's incidents are those of its home: a copy of a home given beside it holds the same
 * incident files, which counted twice.
 */
const incidentKey = (home: string, session: string) => `${home}\0${session}`;

/**
 * What depends only on one model map (not on `now`) is derived once per version of that map: the
 * maps are replaced, never changed, so the map itself is the cache key. A tick then costs only the
 * per-session clocks, not a sort of thousands of incidents.
 */
const incidentIndexes = new WeakMap<ReadonlyMap<string, IncidentRecord>, { bySession: Map<string, number>; sorted: readonly IncidentRecord[] }>();
function incidentIndex(incidents: ReadonlyMap<string, IncidentRecord>): { bySession: Map<string, number>; sorted: readonly IncidentRecord[] } {
  let index = incidentIndexes.get(incidents);
  if (!index) {
    const bySession = new Map<string, number>();
    const sorted: IncidentRecord[] = [];
    incidents.forEach((inc) => {
      sorted.push(inc);
      if (!inc.session) return;
      const key = incidentKey(inc.home, inc.session);
      bySession.set(key, (bySession.get(key) ?? 0) + 1);
    });
    sorted.sort((a, b) => (b.at ?? 0) - (a.at ?? 0) || (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
    index = { bySession, sorted };
    incidentIndexes.set(incidents, index);
  }
  // Not a copy: the list is read-only (a snapshot's incidents are typed so, and whoever adds to
  // them — the remote merge — copies first). A copy of the big home's 5 000 incidents at every
  // patch was ~40 KB of garbage 14 times a second under appends.
  return index;
}

/** A lane status index: the status of each run id, and the run ids more than one file names. */
interface LaneStatusIndex {
  byRun: ReadonlyMap<string, LaneRunStatus>;
  shared: ReadonlySet<string>;
}
const laneStatusIndexes = new WeakMap<ReadonlyMap<string, LaneRunStatus>, LaneStatusIndex>();
/** The lane status index of `statuses`: the one a patch derived into `cache`, else the memo's. */
function laneIndexFor(cache: SnapshotCache | undefined, statuses: ReadonlyMap<string, LaneRunStatus>): LaneStatusIndex {
  return cache?.laneIndex?.of === statuses ? cache.laneIndex.index : laneStatusIndexOf(statuses);
}
function laneStatusIndexOf(statuses: ReadonlyMap<string, LaneRunStatus>): LaneStatusIndex {
  let index = laneStatusIndexes.get(statuses);
  if (!index) {
    const byRun = new Map<string, LaneRunStatus>();
    const shared = new Set<string>();
    statuses.forEach((ls) => {
      if (byRun.has(ls.runId)) shared.add(ls.runId);
      byRun.set(ls.runId, ls);
    });
    index = { byRun, shared };
    laneStatusIndexes.set(statuses, index);
  }
  return index;
}

/**
 * The index after `changes` from the one before (`was`), when each file that changed was rewritten
 * with the same run id, one no other file names: a running lane's status.json at its turns and
 * tools. The index is then a version of the last one with those runs set (shared-map.ts); built
 * afresh, it cost ~4–5 ms a rewrite on a home of 10 002 lane statuses. Anything else (a file
 * added or gone, a run id changed or shared) is left to the full build.
 */
function deriveLaneStatusIndex(was: LaneStatusIndex, changes: readonly [LaneRunStatus | undefined, LaneRunStatus | undefined][]): LaneStatusIndex | null {
  const draft = new MapDraft(was.byRun);
  for (let i = 0; i < changes.length; i++) {
    const [a, b] = changes[i]!;
    if (!a || !b || a.runId !== b.runId || was.shared.has(b.runId)) return null;
    draft.set(b.runId, b);
  }
  return { byRun: draft.done(), shared: was.shared };
}

const receiptIndexes = new WeakMap<ReadonlyMap<string, WatcherReceipt>, Map<string, WatcherReceipt>>();
function receiptIndex(receipts: ReadonlyMap<string, WatcherReceipt>): Map<string, WatcherReceipt> {
  let index = receiptIndexes.get(receipts);
  if (!index) {
    const byId = new Map<string, WatcherReceipt>();
    receipts.forEach((r) => byId.set(`${r.session}\0${r.id}`, r));
    receiptIndexes.set(receipts, byId);
    index = byId;
  }
  return index;
}

/** Every warning in one list, once per version of the warnings map (plus the settings notes). */
const warningLists = new WeakMap<ModelState['warnings'], Warning[]>();
function warningList(byFile: ModelState['warnings'], homeLimits: Map<string, { notes: string[] }>, copies: readonly Warning[]): Warning[] {
  let fromFiles = warningLists.get(byFile);
  if (!fromFiles) {
    const all: Warning[] = [];
    byFile.forEach((list) => all.push(...list));
    warningLists.set(byFile, all);
    fromFiles = all;
  }
  const warnings = fromFiles.slice();
  for (const [home, l] of homeLimits) for (const note of l.notes) warnings.push({ file: path.join(home, 'settings.json'), line: null, message: note, severity: 'warning' });
  for (let i = 0; i < copies.length; i++) warnings.push(copies[i]!);
  return warnings;
}

/** Sorts by {@link compareViews}, keyed by each row's first deadline instant (computed once per row). */
function sortViews(views: SessionView[]): void {
  if (views.length < 2) return;
  // Instants, not remaining times: rows kept from earlier snapshots order the same at any `now`.
  const keyed = views.map((v) => ({ v, r: treeKey(v) }));
  keyed.sort((a, b) => (a.r !== b.r ? (a.r < b.r ? -1 : 1) : byName(a.v, b.v)));
  for (let i = 0; i < keyed.length; i++) views[i] = keyed[i]!.v;
}

/** By name (its numbers by their value: `L3` before `L10`), then session id: the tie-break of every row order (text-order.ts). */
export const byName = (a: SessionView, b: SessionView) => compareNames(a.name, b.name) || compareText(a.session, b.session);

/**
 * Rows nearest to being cut first (by the first limit to fire); then the rows waiting for a retry
 * or a resume and nothing else, by when it is due; then the rest, by name. A root goes by its own
 * row or its most urgent lane, whichever comes first (treeKey).
 */
export function compareViews(a: SessionView, b: SessionView): number {
  const ka = treeKey(a);
  const kb = treeKey(b);
  if (ka !== kb) return ka < kb ? -1 : 1;
  return byName(a, b);
}

/**
 * Past every epoch-ms instant: a row whose only deadline is a retry or a resume sorts after every
 * row with a limit running, and still by its instant among its like (keys stay safe integers).
 */
const AFTER_LIMITS = 4e15;

/**
 * A row's place with its lanes: its own, or its most urgent lane's when that comes first. The
 * request nearest to being cut is on top also when a lane runs it: a lane 1:55 from its cut sat
 * under its root (running tools, nothing due) at the bottom, below lost and stopped roots (a user
 * review, 12-08).
 */
function treeKey(v: SessionView): number {
  const lanes = v.lanes;
  if (lanes.length === 0) return sortKey(v);
  // Kept per row and lanes list: a comparator (the state sort of every frame, a remote document's
  // rows) asks for it at each comparison, and a wide home's roots have several lanes each.
  const m = treeKeys.get(v);
  if (m !== undefined && m.lanes === lanes && m.count === lanes.length) return m.key;
  let k = sortKey(v);
  for (let i = 0; i < lanes.length; i++) {
    const l = sortKey(lanes[i]!);
    if (l < k) k = l;
  }
  treeKeys.set(v, { lanes, count: lanes.length, key: k });
  return k;
}
/** {@link treeKey} of each root as last asked, with the lanes list (and its length) it was taken over. */
const treeKeys = new WeakMap<SessionView, { lanes: readonly SessionView[]; count: number; key: number }>();

/**
 * A request streaming: its checkpoint written within this long of its last model event. Its
 * inactivity deadline moves at every refresh (~1 s while events arrive).
 */
const STREAMING_MS = 2_000;
/**
 * A streaming request's inactivity deadline is placed by the minute it falls in (rounded up: it
 * only moves later). By its instant, rows streaming side by side swapped places several times a
 * second, and the rows around the cursor with them (a user review, 12-08); now they keep their
 * order by name and move at most once a minute. A deadline that stands still — a stalled
 * request's, the absolute limit, an episode — keeps its exact instant.
 */
const STREAMING_STEP_MS = 60_000;

/**
 * Whether the row's request was streaming when its checkpoint was written (STREAMING_MS): its last
 * model event is its inactivity deadline less the limit. Read from the clocks, not the checkpoint,
 * so a remote row (which carries none) is placed as a local one.
 */
function streaming(v: SessionView): boolean {
  const inactivity = v.clocks.inactivity;
  const updated = v.source.checkpointUpdatedAt;
  return inactivity !== null && updated !== null && updated - (inactivity.at - v.limits.inactivityMs) <= STREAMING_MS;
}

/** The row's place in the default order: an instant (Infinity when nothing is due). */
function sortKey(v: SessionView): number {
  // Run per row at each snapshot, interpreted for most of a start: no array of candidates and
  // no for-of (docs/PERFORMANCE.md, "Indexed loops on the start's path").
  const c = v.clocks;
  let limit: Deadline | null = null;
  if (c.firstToFire === 'inactivity') {
    limit = earlierDue(limit, c.inactivity);
    if (limit && streaming(v)) {
      // Never past the row's next limit: a request cut by its absolute limit at 10:00:20 sorts
      // before a stalled one due at 10:00:40, though its inactivity deadline rounds to 10:01.
      const next = earlierDue(earlierDue(null, c.absolute), c.episode);
      const rounded = Math.ceil(limit.at / STREAMING_STEP_MS) * STREAMING_STEP_MS;
      return next !== null && next.at < rounded ? next.at : rounded;
    }
  } else if (c.firstToFire === 'absolute') limit = earlierDue(limit, c.absolute);
  else if (c.firstToFire === 'episode') limit = earlierDue(limit, c.episode);
  if (limit) return limit.at;
  const next = earlierDue(earlierDue(null, c.nextRetry), c.nextResume);
  return next ? AFTER_LIMITS + next.at : Number.POSITIVE_INFINITY;
}

/** `d` when it is due (finite) and before `first`, else `first`. */
function earlierDue(first: Deadline | null, d: Deadline | null): Deadline | null {
  return d && Number.isFinite(d.at) && Number.isFinite(d.remainingMs) && (first === null || d.at < first.at) ? d : first;
}

function maxOf(...xs: (number | null | undefined)[]): number | null {
  let best: number | null = null;
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i];
    if (typeof x === 'number' && Number.isFinite(x) && (best === null || x > best)) best = x;
  }
  return best;
}

function str(x: unknown): string | null {
  return typeof x === 'string' && x.length > 0 ? x : null;
}

function toMs(x: unknown): number | null {
  if (typeof x === 'number' && Number.isFinite(x)) return x < 1e11 ? x * 1000 : x;
  if (typeof x === 'string') {
    const t = Date.parse(x);
    return Number.isNaN(t) ? null : t;
  }
  return null;
}
