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
import { buildSnapshot, type SessionView } from '../model/snapshot.js';
import { observationsOf } from './activity.js';
import { ErrorBoundary } from './error-boundary.js';
import { readKeypresses } from './keymap.js';
import { ScreenView } from './line-view.js';
import { buildScreen, type Screen } from './screen.js';
import { useClock } from './use-clock.js';
import { initialViewState, viewReducer, visibleRows, type KeyContext } from './view-state.js';

/** The one door for owner actions (wired to `src/control/` by the CLI). */
export interface ActionPort {
  request(action: ControlAction, target: SessionView): Promise<{ id: string } | { error: string }>;
}

/** What the dashboard reads the model from. */
export interface ModelStore {
  getState(): ModelState;
  subscribe(listener: () => void): () => void;
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
}

/** Where the dashboard gets the bounds audit from (null until it has run). */
export interface AuditSource {
  get(): readonly AuditResult[] | null;
  subscribe(listener: () => void): () => void;
}

const NO_AUDIT: AuditSource = { get: () => null, subscribe: () => () => undefined };

const envNoColor = () => typeof process.env.NO_COLOR === 'string' && process.env.NO_COLOR !== '';

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

function Dashboard({ store, clock, tick = true, host, readOnly, actions, rows, columns, noColor = envNoColor(), audit = NO_AUDIT }: AppProps) {
  const { exit } = useApp();
  const { isRawModeSupported } = useStdin();
  const subscribe = useCallback((listener: () => void) => store.subscribe(listener), [store]);
  const getState = useCallback(() => store.getState(), [store]);
  const model = useSyncExternalStore(subscribe, getState);
  const audits = useSyncExternalStore(
    useCallback((l: () => void) => audit.subscribe(l), [audit]),
    useCallback(() => audit.get(), [audit]),
  );
  const now = useClock({ clock, tick });
  const size = useTerminalSize(rows, columns);
  const [view, dispatch] = useReducer(viewReducer, undefined, initialViewState);

  // Memoised on (model version, now): a tick or a reader batch rebuilds it, a key press does not.
  // The tick snaps to the second; data that arrived since is newer than that instant, so a reader
  // batch re-reads the clock (never earlier than the tick) — no age of -0s, no countdown above its limit.
  const snapshot = useMemo(() => buildSnapshot(model, Math.max(now, clock()), { host }), [model.version, now, host]);
  const treeRows = useMemo(() => visibleRows(view, snapshot.roots), [snapshot, view.sort, view.filter, view.collapsed]);
  const screen: Screen = buildScreen({ snapshot, model, view, rows: treeRows, width: size.columns, height: size.rows, readOnly, noColor, audits });

  // What a key needs, as of the latest render (Ink may deliver several keys before the next one).
  const keyCtx = useRef<KeyContext>({ roots: snapshot.roots, incidents: snapshot.incidents, now, ...screen.sizes });
  useLayoutEffect(() => {
    keyCtx.current = { roots: snapshot.roots, incidents: snapshot.incidents, now, ...screen.sizes };
  });

  const onInput = useCallback(
    (input: string, key: Key) => {
      for (const press of readKeypresses(input, key, { readOnly })) dispatch({ type: 'key', press, ctx: keyCtx.current });
    },
    [readOnly],
  );
  useInput(onInput, { isActive: isRawModeSupported });

  const firstRow = treeRows[0]?.id ?? null;
  useEffect(() => {
    if (view.cursor === null && firstRow !== null) dispatch({ type: 'pin-cursor', id: firstRow });
  }, [view.cursor, firstRow]);

  // Record model-event activity each time the model changes.
  useEffect(() => {
    dispatch({ type: 'observe', at: clock(), observations: observationsOf(snapshot.roots) });
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

  return <ScreenView lines={screen.lines} noColor={noColor} />;
}
