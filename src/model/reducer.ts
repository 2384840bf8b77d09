/**
 * The model: a pure reducer that folds reader events into one immutable state. Each event replaces
 * one item (a file's facts), so folding is order-independent per file and cheap to batch.
 */
import type { ControlAck, JournalEntry } from '../contract/control.js';
import type {
  CheckpointRecord,
  HomeSettings,
  IncidentRecord,
  LaneRunStatus,
  ProcessProbe,
  ReaderEvent,
  SessionFileFacts,
  StateLogEvent,
  WatcherReceipt,
  Warning,
} from './types.js';
import { MapDraft } from './shared-map.js';

/** The polling sweep's interval, unless a reader is given another (`HomeReader`'s `pollMs`). */
export const DEFAULT_POLL_MS = 1_000;

/** How many state-log events are kept per log (the detail pane shows the recent ones). */
export const STATE_LOG_KEEP = 200;
/**
 * Older `dispatch` events kept beyond those, one per run (the newest): a lane's name, task and
 * deadline. With each, its run's newest `return` (a dispatch with none is a live lane: SPEC §3.4).
 */
export const STATE_LOG_DISPATCH_KEEP = 2_000;

/**
 * What is kept of a state log's events: the last STATE_LOG_KEEP, and before them the newest
 * `dispatch` of each run (at most STATE_LOG_DISPATCH_KEEP runs), the newest `return` of each of
 * those runs and the newest `close`. A long loop's lanes kept their name, task and deadline only
 * while their dispatch was among the last 200 events; without the returns, every older run would
 * look dispatched and never returned.
 */
export function keepStateLog(events: StateLogEvent[]): StateLogEvent[] {
  if (events.length <= STATE_LOG_KEEP) return events;
  const cut = events.length - STATE_LOG_KEEP;
  const dispatched = new Set<string>();
  const returns = new Map<string, number>();
  const keep: number[] = [];
  let closed = false;
  for (let i = cut - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.ev === 'close') {
      if (!closed) keep.push(i);
      closed = true;
      continue;
    }
    const run = e.raw.run;
    if (typeof run !== 'string') continue;
    if (e.ev === 'return') {
      if (!returns.has(run)) returns.set(run, i);
    } else if (e.ev === 'dispatch' && !dispatched.has(run) && dispatched.size < STATE_LOG_DISPATCH_KEEP) {
      dispatched.add(run);
      keep.push(i);
    }
  }
  returns.forEach((i, run) => {
    if (dispatched.has(run)) keep.push(i);
  });
  keep.sort((a, b) => a - b);
  const older = keep.map((i) => events[i]!);
  return [...older, ...events.slice(cut)];
}
/** How many journal lines are kept per home. */
export const JOURNAL_KEEP = 500;

/** Everything the dashboard knows, folded from reader events. Never mutated in place. */
export interface ModelState {
  /** Bumped on every change, so views can memoise on it. */
  version: number;
  sessionFiles: ReadonlyMap<string, SessionFileFacts>;
  checkpoints: ReadonlyMap<string, CheckpointRecord>;
  incidents: ReadonlyMap<string, IncidentRecord>;
  laneStatuses: ReadonlyMap<string, LaneRunStatus>;
  stateLogs: ReadonlyMap<string, readonly StateLogEvent[]>;
  receipts: ReadonlyMap<string, WatcherReceipt>;
  settings: ReadonlyMap<string, HomeSettings>;
  probes: ReadonlyMap<number, ProcessProbe>;
  journal: ReadonlyMap<string, readonly JournalEntry[]>;
  /** Keyed by `${home}\0${requestId}`. */
  acks: ReadonlyMap<string, ControlAck & { session: string }>;
  /** Warnings per file; a file's list is replaced whenever the file is read again. */
  warnings: ReadonlyMap<string, readonly Warning[]>;
  /** Per home: sessions read of those listed, whether all are, and whether the list is still being made. */
  progress: ReadonlyMap<string, HomeProgress>;
  watchMode: { mode: 'native' | 'polling' | 'degraded'; detail: string | null; everyMs: number };
}

/** A home's start: see the `progress` event. */
export interface HomeProgress {
  read: number;
  total: number;
  done: boolean;
  listing: boolean;
  /** Session files still to be searched before their tail windows (the `searching` event). */
  searching: number;
}

export function initialModelState(): ModelState {
  return {
    version: 0,
    sessionFiles: new Map(),
    checkpoints: new Map(),
    incidents: new Map(),
    laneStatuses: new Map(),
    stateLogs: new Map(),
    receipts: new Map(),
    settings: new Map(),
    probes: new Map(),
    journal: new Map(),
    acks: new Map(),
    warnings: new Map(),
    progress: new Map(),
    watchMode: { mode: 'native', detail: null, everyMs: DEFAULT_POLL_MS },
  };
}

type MapKeys = {
  [K in keyof ModelState]: ModelState[K] extends ReadonlyMap<unknown, unknown> ? K : never;
}[keyof ModelState];

/**
 * A batch fold: each touched map gets one draft per batch, not one per event, and a draft does not
 * copy the map (`MapDraft`: the new version shares the old one's entries), so a batch costs what
 * it changes, not what the home holds. A batch that changes nothing (a probe that saw what the
 * last one saw, no warnings where there were none) returns `state` itself, so an idle dashboard
 * has nothing to redraw.
 */
export function reduceEvents(state: ModelState, events: readonly ReaderEvent[]): ModelState {
  if (events.length === 0) return state;
  const drafts = new Map<MapKeys, MapDraft<unknown, unknown>>();
  const draft = <K extends MapKeys>(key: K): MapDraft<unknown, unknown> => {
    let m = drafts.get(key);
    if (!m) {
      m = new MapDraft(state[key] as ReadonlyMap<unknown, unknown>);
      drafts.set(key, m);
    }
    return m;
  };
  let watchMode = state.watchMode;

  // Indexed: a start reduces ~10 000 events of the big home, interpreted (docs/PERFORMANCE.md,
  // "Indexed loops on the start's path").
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!;
    switch (event.type) {
      case 'session-file':
        draft('sessionFiles').set(event.facts.file, event.facts);
        break;
      case 'session-file-removed':
        draft('sessionFiles').delete(event.file);
        draft('warnings').delete(event.file);
        break;
      case 'checkpoint':
        draft('checkpoints').set(event.record.file, event.record);
        break;
      case 'checkpoint-removed':
        draft('checkpoints').delete(event.file);
        draft('warnings').delete(event.file);
        break;
      case 'incident':
        draft('incidents').set(event.record.file, event.record);
        break;
      case 'incident-removed':
        draft('incidents').delete(event.file);
        draft('warnings').delete(event.file);
        break;
      case 'lane-status':
        draft('laneStatuses').set(event.status.file, event.status);
        break;
      case 'lane-status-removed':
        draft('laneStatuses').delete(event.file);
        break;
      case 'state-log': {
        const logs = draft('stateLogs');
        const before = event.reset ? [] : ((logs.get(event.file) as StateLogEvent[] | undefined) ?? []);
        logs.set(event.file, keepStateLog([...before, ...event.events]));
        break;
      }
      case 'receipt':
        draft('receipts').set(event.receipt.file, event.receipt);
        break;
      case 'receipt-removed':
        draft('receipts').delete(event.file);
        break;
      case 'settings':
        draft('settings').set(event.settings.home, event.settings);
        break;
      case 'probe': {
        // Only what a probe saw matters (its `checkedAt` is shown nowhere): the same answer again is no news.
        const had = (drafts.get('probes') ?? state.probes).get(event.probe.pid) as ProcessProbe | undefined;
        if (had && had.status === event.probe.status && had.start === event.probe.start && had.detail === event.probe.detail && had.linked === event.probe.linked) break;
        draft('probes').set(event.probe.pid, event.probe);
        break;
      }
      case 'journal': {
        const journal = draft('journal');
        const before = event.reset ? [] : ((journal.get(event.home) as JournalEntry[] | undefined) ?? []);
        journal.set(event.home, keepLast([...before, ...event.entries], JOURNAL_KEEP));
        break;
      }
      case 'ack':
        draft('acks').set(`${event.home}\0${event.ack.id}`, { ...event.ack, session: event.session });
        break;
      case 'warnings': {
        const had = (drafts.get('warnings') ?? state.warnings).get(event.file) as readonly Warning[] | undefined;
        if (event.warnings.length === 0) {
          if (had !== undefined) draft('warnings').delete(event.file);
        } else if (had !== event.warnings) draft('warnings').set(event.file, event.warnings);
        break;
      }
      case 'progress': {
        const had = (drafts.get('progress') ?? state.progress).get(event.home) as HomeProgress | undefined;
        const listing = event.listing === true;
        if (had && had.read === event.read && had.total === event.total && had.done === event.done && had.listing === listing) break;
        draft('progress').set(event.home, { read: event.read, total: event.total, done: event.done, listing, searching: had?.searching ?? 0 });
        break;
      }
      case 'searching': {
        // Only for a home whose start began (the search follows it); anything else is dropped.
        const had = (drafts.get('progress') ?? state.progress).get(event.home) as HomeProgress | undefined;
        if (!had || had.searching === event.left) break;
        draft('progress').set(event.home, { ...had, searching: event.left });
        break;
      }
      case 'watch-mode':
        if (watchMode.mode !== event.mode || watchMode.detail !== event.detail || watchMode.everyMs !== event.everyMs) watchMode = { mode: event.mode, detail: event.detail, everyMs: event.everyMs };
        break;
      default:
        assertNever(event);
    }
  }

  if (drafts.size === 0 && watchMode === state.watchMode) return state;
  const next: ModelState = { ...state, watchMode, version: state.version + 1 };
  for (const [key, map] of drafts) (next as unknown as Record<string, unknown>)[key] = map.done();
  return next;
}

/** Single-event convenience over {@link reduceEvents}. */
export function reduce(state: ModelState, event: ReaderEvent): ModelState {
  return reduceEvents(state, [event]);
}

function keepLast<T>(items: T[], n: number): T[] {
  return items.length > n ? items.slice(items.length - n) : items;
}

export function assertNever(x: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(x)}`);
}
