/**
 * The dashboard. App only composes: the store (model), the one clock, the terminal size and the
 * view-state reducer go in; a planned frame of lines comes out. Keys are dispatched, never
 * interpreted against state captured in a closure; owner actions leave through `actions`.
 */
import { useApp, useInput, useStdin, useStdout, type Key } from 'ink';
import { useCallback, useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState, useSyncExternalStore } from 'react';
import type { ControlAction } from '../contract/control.js';
import type { AuditResult } from '../model/audit.js';
import type { ModelState } from '../model/reducer.js';
import { createSnapshotCache, type SessionView, type SnapshotCache } from '../model/snapshot.js';
import type { IncidentFields, IncidentRecord } from '../model/types.js';
import type { RemoteFeedState } from '../remote/remote-feeds.js';
import { observationsOf, recordActivity, sameObservations, type ActivityObservation } from './activity.js';
import { ErrorBoundary } from './error-boundary.js';
import { envNoColor, everyHomeRead, frameSnapshot } from './first-frame.js';
import { readKeypresses } from './keymap.js';
import { timing } from '../app/timing.js';
import { ScreenView } from './line-view.js';
import { createNextFrameChange } from './next-change.js';
import type { FrameSink } from './terminal-frame.js';
import { buildScreen, type OpenedIncident, type Screen, type ScreenLine } from './screen.js';
import { ColumnWidths } from './table-layout.js';
import { useClock } from './use-clock.js';
import { initialViewState, viewReducer, visibleRowList, type KeyContext, type ViewState } from './view-state.js';

/** The one door for owner actions (wired to `src/control/` by the CLI). */
export interface ActionPort {
  request(action: ControlAction, target: SessionView): Promise<{ id: string } | { error: string }>;
}

/** What the dashboard reads the model from. */
export interface ModelStore {
  getState(): ModelState;
  subscribe(listener: () => void): () => void;
  /** What building the frame of a new model took (ms): the store may space its changes by it (live-store.ts). */
  frameCost?(ms: number): void;
}

export interface AppProps {
  store: ModelStore;
  clock: () => number;
  /** false: no 1 s ticking (tests). */
  tick?: boolean;
  host: string;
  readOnly: boolean;
  actions: ActionPort;
  /** Terminal size overrides (default: stdout's, following resizes). */
  rows?: number;
  columns?: number;
  /** No colours or styles (default: the NO_COLOR environment variable is set and not empty). */
  noColor?: boolean;
  /** The derived-bounds audit, computed in the background (SPEC §8). */
  audit?: AuditSource;
  /** Other machines' `loop-dash serve` (`--remote`): read-only rows merged into the table. */
  remote?: RemoteSource;
  /**
   * Reads an opened incident's fields from its file (the records do not keep them:
   * readers/incident-file.ts readIncidentFields). Without it they show as not available.
   */
  incidentFields?: (file: string) => Promise<IncidentFields>;
  /**
   * Draw frames straight to the terminal through this sink instead of Ink's renderer (the live
   * dashboard, see terminal-frame.ts). Without it the frame is Ink output (tests read it there).
   */
  frame?: FrameSink;
  /** The snapshot cache to go on with (the one the first frame was drawn from, see first-frame.ts). */
  snapshotCache?: SnapshotCache;
  /** The view state and key count to go on from (keys handled before Ink loaded, see early-keys.ts). */
  start?: { view: ViewState; keys: number; columnWidths?: ColumnWidths };
  /** Told of every key read (the dashboard times its start's full collection by it: app/heap.ts). */
  onKey?: () => void;
}

/** Where the dashboard gets the `--remote` feeds from. */
export interface RemoteSource {
  get(): readonly RemoteFeedState[];
  subscribe(listener: () => void): () => void;
}

const NO_FEEDS: readonly RemoteFeedState[] = [];
const NO_REMOTE: RemoteSource = { get: () => NO_FEEDS, subscribe: () => () => undefined };

/** Where the dashboard gets the bounds audit from (null until it has run). */
export interface AuditSource {
  get(): readonly AuditResult[] | null;
  subscribe(listener: () => void): () => void;
}

const NO_AUDIT: AuditSource = { get: () => null, subscribe: () => () => undefined };


/** The terminal's size, re-read on every resize. */
function useTerminalSize(rows?: number, columns?: number): { rows: number; columns: number } {
  const { stdout } = useStdout();
  const read = useCallback(() => ({ rows: stdout.rows || 24, columns: stdout.columns || 80 }), [stdout]);
  const [size, setSize] = useState(read);
  useEffect(() => {
    const onResize = () => setSize(read());
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout, read]);
  return { rows: rows ?? size.rows, columns: columns ?? size.columns };
}

export function App(props: AppProps) {
  const { exit } = useApp();
  return (
    <ErrorBoundary onError={exit}>
      <Dashboard {...props} />
    </ErrorBoundary>
  );
}

const NO_FIELDS = async (): Promise<IncidentFields> => ({ state: 'unreadable', message: 'the file’s fields are not available here' });

function Dashboard({ store, clock, tick = true, host, readOnly, actions, rows, columns, noColor = envNoColor(), audit = NO_AUDIT, remote = NO_REMOTE, incidentFields = NO_FIELDS, frame, snapshotCache: givenCache, start, onKey }: AppProps) {
  const renderStart = performance.now();
  const { exit } = useApp();
  const { isRawModeSupported } = useStdin();
  const subscribe = useCallback((listener: () => void) => store.subscribe(listener), [store]);
  const getState = useCallback(() => store.getState(), [store]);
  const model = useSyncExternalStore(subscribe, getState);
  const audits = useSyncExternalStore(
    useCallback((l: () => void) => audit.subscribe(l), [audit]),
    useCallback(() => audit.get(), [audit]),
  );
  // Set below from the frame being drawn: the clock sleeps while nothing on screen moves.
  const wake = useRef<number | undefined>(undefined);
  const now = useClock({ clock, tick, wakeAt: wake });
  const size = useTerminalSize(rows, columns);
  const [snapshotCache] = useState(() => givenCache ?? createSnapshotCache());
  // When the frame next changes by time alone, looking again only at rows that are new since the last frame.
  const [nextChange] = useState(createNextFrameChange);

  // Memoised on (model version, now): a tick or a reader batch rebuilds it, a key press does not.
  // The tick snaps to the second; data that arrived since is newer than that instant, so a reader
  // batch re-reads the clock (never earlier than the tick) — no age of -0s, no countdown above its limit.
  const feeds = useSyncExternalStore(
    useCallback((l: () => void) => remote.subscribe(l), [remote]),
    useCallback(() => remote.get(), [remote]),
  );
  const snapshot = useMemo(() => {
    const t = Math.max(now, clock());
    // Rows whose data did not change are re-timed, not built again (see SnapshotOptions.cache).
    return frameSnapshot(model, t, host, snapshotCache, feeds);
  }, [model.version, now, host, feeds]);
  // The request counters on screen at mount are the activity's starting point (recorded with no
  // events: we did not see them happen), taken here rather than by a dispatch after the first
  // render, which would render the whole dashboard a second time for nothing visible.
  const [mounted] = useState(() => ({ checkpoints: model.checkpoints, feeds, observations: observationsOf(snapshot.roots) }));
  const [view, dispatch] = useReducer(viewReducer, null, () => {
    const given = start?.view ?? initialViewState();
    return { ...given, activity: recordActivity(given.activity, mounted.observations, clock()) };
  });
  const treeRows = useMemo(() => visibleRowList(view, snapshot.roots), [snapshot, view.sort, view.filter, view.collapsed]);
  wake.current = useMemo(() => nextChange({ snapshot, rows: treeRows, view, now: snapshot.now }), [snapshot, treeRows, view]);
  // An opened incident's fields are read from its file (the records do not keep them), once per
  // record: a record replaced since (its file rewritten) is read again.
  const openFile = view.mode === 'incidents' ? view.incidents.open : null;
  const openRecord = useMemo<IncidentRecord | null>(() => (openFile === null ? null : (snapshot.incidents.find((i) => i.file === openFile) ?? null)), [openFile, snapshot.incidents]);
  const [opened, setOpened] = useState<OpenedIncident | null>(null);
  useEffect(() => {
    if (openRecord === null || openRecord.raw) return;
    let current = true;
    void incidentFields(openRecord.file).then((fields) => {
      if (current) setOpened({ record: openRecord, fields });
    });
    return () => {
      current = false;
    };
  }, [openRecord, incidentFields]);
  const [columnWidths] = useState(() => start?.columnWidths ?? new ColumnWidths());
  const screen: Screen = buildScreen({ snapshot, model, view, rows: treeRows, width: size.columns, height: size.rows, readOnly, noColor, audits, opened, columnWidths });

  // What a key needs, as of the latest render (Ink may deliver several keys before the next one).
  const keyCtx = useRef<KeyContext>({ roots: snapshot.roots, incidents: snapshot.incidents, now, ...screen.sizes });
  useLayoutEffect(() => {
    keyCtx.current = { roots: snapshot.roots, incidents: snapshot.incidents, now, ...screen.sizes };
  });

  const keysHandled = useRef(start?.keys ?? 0);
  const renderMs = performance.now() - renderStart;
  if (timing.enabled) timing.rendered({ version: model.version, keys: keysHandled.current, roots: snapshot.roots.length, populated: everyHomeRead(model), renderMs });
  // The cost of the frame of a new model, told to the store once that frame is committed (the
  // effect runs with the render that brought the new version; a key's render does not run it).
  useLayoutEffect(() => {
    store.frameCost?.(renderMs);
  }, [model.version, store]);

  const onInput = useCallback(
    (input: string, key: Key) => {
      onKey?.();
      for (const press of readKeypresses(input, key, { readOnly })) {
        keysHandled.current++;
        dispatch({ type: 'key', press, ctx: keyCtx.current });
      }
    },
    [readOnly, onKey],
  );
  useInput(onInput, { isActive: isRawModeSupported });

  // The cursor is pinned to the first row once every home has been read: while rows are still
  // arriving (and reordering) it stays on the first line, so where it lands does not depend on
  // how far the reading had got when the first frame was drawn.
  const firstRow = treeRows.at(0)?.id ?? null;
  const populated = model.progress.size === 0 || [...model.progress.values()].every((p) => p.done);
  useEffect(() => {
    if (view.cursor === null && firstRow !== null && populated) dispatch({ type: 'pin-cursor', id: firstRow });
  }, [view.cursor, firstRow, populated]);

  // Record model-event activity each time the model changes a request counter. Most changes (an
  // append, a probe) move none: recording them would change nothing, but the dispatch would
  // still run the dashboard's render a second time. The counters come from the checkpoints (ours
  // and the remote feeds'): with the same ones, even the walk over every root is skipped.
  const observed = useRef<{ checkpoints: ModelState['checkpoints'] | null; feeds: typeof feeds | null; observations: readonly ActivityObservation[] }>(mounted);
  useEffect(() => {
    const last = observed.current;
    if (last.checkpoints === model.checkpoints && last.feeds === feeds) return;
    const observations = observationsOf(snapshot.roots);
    const same = sameObservations(observations, last.observations);
    observed.current = { checkpoints: model.checkpoints, feeds, observations: same ? last.observations : observations };
    if (!same) dispatch({ type: 'observe', at: clock(), observations });
  }, [model.version]); // only a model change can change a counter

  // Hand confirmed owner actions to the action port, once each.
  const started = useRef(new Set<number>());
  useEffect(() => {
    for (const p of view.pending) {
      if (p.status !== 'queued' || started.current.has(p.localId)) continue;
      started.current.add(p.localId);
      void actions.request(p.action, p.target).then(
        (result) => dispatch({ type: 'request-answered', localId: p.localId, result, at: clock() }),
        (error: unknown) => dispatch({ type: 'request-answered', localId: p.localId, result: { error: error instanceof Error ? error.message : String(error) }, at: clock() }),
      );
    }
  }, [view.pending, actions, clock]);

  useEffect(() => {
    if (view.quit) exit();
  }, [view.quit, exit]);

  if (frame) return <DirectScreen sink={frame} lines={screen.lines} width={size.columns} noColor={noColor} />;
  return <ScreenView lines={screen.lines} noColor={noColor} />;
}

/** Hands each committed frame to the sink; Ink itself draws nothing. */
function DirectScreen({ sink, lines, width, noColor }: { sink: FrameSink; lines: readonly ScreenLine[]; width: number; noColor: boolean }) {
  useLayoutEffect(() => {
    sink.draw(
      lines.map((l) => l.line),
      width,
      noColor,
    );
  });
  return null;
}

/** The dashboard as an element, for a caller that loads this module (and React) only when needed. */
export function appElement(props: AppProps) {
  return <App {...props} />;
}
