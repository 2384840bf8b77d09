/**
 * Opens the Ink dashboard on a live store. Owns the terminal while it runs: console output goes to
 * a log file (a stray `console.log` must not force a redraw), and SIGINT/SIGTERM/SIGHUP or an
 * exception unmount Ink so raw mode is off, the cursor visible and the screen restored.
 */
import { appendFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { format } from 'node:util';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { cleanStaleControlTemps, followAction, requestAction, targetFromCheckpoint } from '../control/index.js';
import { loadAudit } from '../cli/audit-command.js';
import type { AuditResult } from '../model/audit.js';
import type { ActionPort, AuditSource } from '../views/App.js';
import { drawFirstFrame, envNoColor, prepareFrameSnapshot } from '../views/first-frame.js';
import { readEarlyKeys } from '../views/early-keys.js';
import type { ColumnWidths } from '../views/table-layout.js';
import type { ViewState } from '../views/view-state.js';
import { createSnapshotCache } from '../model/snapshot.js';
import { readIncidentFields } from '../readers/incident-file.js';
import { TerminalFrame, type FrameSink } from '../views/terminal-frame.js';
import { inkLoadDelay, installFaultHooks } from './fault-hooks.js';
import type { LiveStore } from './live-store.js';
import type { RemoteFeeds } from '../remote/remote-feeds.js';
import { NO_ANSWER_MS, refusalReason } from '../views/owner-actions.js';
import { timing } from './timing.js';
import { lineText } from '../views/line.js';
import { preloadInk, runsFromBundle } from './launcher.js';
import { settleHeapGrowth } from './heap.js';
import { ensureDir } from '../extension/atomic-file.js';

/** A table row of a request in flight with its inactivity countdown (`requesting   14:59`). */
const COUNTDOWN_ROW = / requesting(?: \(stale\))? +-?\d+:\d\d/;

export interface DashboardOptions {
  store: LiveStore;
  homes: string[];
  readOnly: boolean;
  clock?: () => number;
  /** Where diagnostics go while the TUI owns the terminal. */
  logFile?: string;
  /** `--remote` feeds: started with the dashboard, stopped when it exits. */
  remote?: RemoteFeeds;
}

/** The size assumed when the terminal reports none (0 rows or columns). */
const DEFAULT_ROWS = 24;
const DEFAULT_COLUMNS = 80;

export function defaultLogFile(): string {
  const base = process.env.XDG_STATE_HOME || path.join(os.homedir(), '.local', 'state');
  return path.join(base, 'loop-dash', 'dashboard.log');
}

/** Routes console.* to a file for the life of the TUI; returns the undo. */
function captureConsole(logFile: string): () => void {
  try {
    ensureDir(path.dirname(logFile), 0o777);
  } catch {
    /* the log is best effort */
  }
  const saved = { log: console.log, info: console.info, warn: console.warn, error: console.error, debug: console.debug };
  const write = (level: string) => (...args: unknown[]) => {
    try {
      appendFileSync(logFile, `${new Date().toISOString()} ${level} ${format(...args)}\n`);
    } catch {
      /* never let logging break the dashboard */
    }
  };
  console.log = write('log');
  console.info = write('info');
  console.warn = write('warn');
  console.error = write('error');
  console.debug = write('debug');
  return () => Object.assign(console, saved);
}

/** How long past its expiry an unanswered request is waited for before its 'no-answer' line. */
const NO_ANSWER_GRACE_MS = 1_000;

/**
 * `noAnswerMs`: how long a request waits for its ack before its 'no-answer' outcome is journalled
 * (default: until it has expired, and a second);
 * `signal`: ends those waits (the dashboard quits: they must not keep the process alive);
 * `followed`: told when a wait is over (tests).
 */
export function actionPort(
  clock: () => number,
  opts: { noAnswerMs?: number; signal?: AbortSignal; followed?: (id: string, status: string) => void } = {},
): ActionPort {
  return {
    async request(action, target) {
      // Never write into a local directory for a row another machine owns (the paths may even exist here).
      const refused = refusalReason(target);
      if (refused) return { error: refused };
      try {
        const handle = await requestAction(
          target.home,
          {
            session: target.session,
            action,
            reason: 'from the loop-dash dashboard',
            target: action === 'abort' ? targetFromCheckpoint(target) : null,
          },
          { now: clock },
        );
        // SPEC §4.2: every request and its outcome is journalled. The session's extension journals
        // what it acks; a request nobody answered gets its 'no-answer' line from here once it has
        // expired (the screen says so after 10 s, but until it expires the session may still apply
        // it, and two outcome lines of one request must agree).
        if (!handle.reused) {
          const untilExpired = handle.expiresAt === null ? (opts.noAnswerMs ?? NO_ANSWER_MS) : Math.max(0, handle.expiresAt - clock()) + NO_ANSWER_GRACE_MS;
          void followAction(handle, { timeoutMs: opts.noAnswerMs ?? untilExpired, now: clock, journal: 'no-answer', validUntil: handle.expiresAt, ...(opts.signal ? { signal: opts.signal } : {}) }).then(
            (r) => opts.followed?.(handle.id, r.status),
            () => undefined,
          );
        }
        return { id: handle.id };
      } catch (err) {
        return { error: err instanceof Error ? err.message : String(err) };
      }
    },
  };
}

/**
 * Runs the audit in a child process: it parses up to 256 MB of session tails, and its memory
 * (~90 MB at its peak) and garbage then never grow the dashboard's own heap, which V8 would not
 * give back. The helper is the bundled one when this code runs from the bundle.
 */
function auditInChild(homes: string[], now: number): Promise<readonly AuditResult[]> {
  const here = import.meta.url;
  const helper = fileURLToPath(new URL(runsFromBundle(here) ? './audit-worker.bundle.mjs' : './audit-worker.js', here));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [helper, JSON.stringify({ homes, now })], { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, LOOP_DASH_TIMING: '' } }, (err, stdout) => {
      if (err) return reject(err);
      try {
        resolve(JSON.parse(stdout) as AuditResult[]);
      } catch (e) {
        reject(e);
      }
    });
  });
}

/** How often the bounds audit is re-measured while the dashboard is open (when anything changed). */
const AUDIT_EVERY_MS = 10 * 60_000;
/** The first audit waits this long after the home was read: it reads up to 256 MB of session tails. */
const AUDIT_DELAY_MS = 15_000;

/**
 * The bounds audit, measured in the background a little after the home has been read once (it
 * samples up to 256 MB of session tails: it must not compete with the start-up, nor delay the first
 * frame), then every ten minutes if the model changed meanwhile (`version`), so an idle dashboard
 * stays idle.
 */
export function backgroundAudit(homes: string[], ready: Promise<unknown>, clock: () => number, version: () => number = () => 0): AuditSource & { stop(): void } {
  let results: readonly AuditResult[] | null = null;
  const listeners = new Set<() => void>();
  let stopped = false;
  let measuredAt: number | null = null;
  const measure = async () => {
    if (stopped || measuredAt === version()) return;
    measuredAt = version();
    try {
      const next = await auditInChild(homes, clock()).catch((err: unknown) => {
        console.error('audit helper failed; measuring in the dashboard', err);
        return Promise.all(homes.map((h) => loadAudit(h, { now: clock() })));
      });
      if (stopped) return;
      results = next;
      timing.mark('audit');
      for (const l of listeners) l();
    } catch (err) {
      console.error('audit failed', err);
    }
  };
  const timer = setInterval(() => void measure(), AUDIT_EVERY_MS);
  timer.unref();
  let first: NodeJS.Timeout | null = null;
  void ready.then(() => {
    if (stopped) return;
    first = setTimeout(() => void measure(), AUDIT_DELAY_MS);
    first.unref();
  });
  return {
    get: () => results,
    subscribe(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    stop() {
      stopped = true;
      clearInterval(timer);
      if (first) clearTimeout(first);
    },
  };
}

/**
 * Until this long after exec a start reads checkpoints (newest first) before it draws the session
 * list, so the first frame shows the requests' clocks; after it the list is drawn at once and the
 * rest follow (after Ink's load: ~200 ms later). On the big home (1 213 checkpoints) the reads end
 * ~450-490 ms after exec and the frame comes ~50 ms later; a budget that ran out just before the
 * last read (440 ms, the first value) saved the list frame a few ms and cost the checkpoints
 * ~180 ms whenever the host was a little slow, so it only bounds a pathological home (tens of
 * thousands of checkpoint files). Node's `performance.now()` counts from the process's start.
 */
export const CHECKPOINTS_BEFORE_LIST_UNTIL_MS = 600;

/** The dashboard's `checkpointsBeforeList` (HomeReaderOptions). */
export const checkpointsBeforeFirstFrame = (): boolean => performance.now() < CHECKPOINTS_BEFORE_LIST_UNTIL_MS;

/** How long the first frame waits for the session list (the walk and the checkpoints). */
const FIRST_FRAME_WAIT_MS = 400;

/** Resolves once every home has published its session list, or after `ms`. */
export function sessionListOrTimeout(store: Pick<LiveStore, 'getState' | 'subscribe'>, homes: number, ms: number): Promise<void> {
  const listed = () => {
    let n = 0;
    store.getState().progress.forEach((p) => {
      if (!p.listing) n++;
    });
    return n >= homes;
  };
  if (listed()) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      unsubscribe();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const unsubscribe = store.subscribe(() => {
      if (listed()) done();
    });
  });
}

const loadInk = () => Promise.all([import('ink'), import('../views/App.js')]);

/**
 * The first frame, drawn before Ink is loaded (first-frame.ts), and the plain keys typed on it
 * while Ink loads (early-keys.ts): resolves with Ink and App (null when `q` quit first), where the
 * keys left the view (stdin is read for them when it is a TTY). The first screen stays in here: its
 * snapshot (every row of the first frame) and the model it was drawn from would otherwise be held
 * for as long as the dashboard runs (seen in a heap snapshot of a big home).
 */
async function firstFrameUntilInk(
  input: Parameters<typeof drawFirstFrame>[0],
  frame: FrameSink,
  stdin: NodeJS.ReadStream,
  onKey: () => void,
): Promise<{ loaded: Awaited<ReturnType<typeof loadInk>> | null; start: { view: ViewState; keys: number; columnWidths: ColumnWidths } }> {
  const first = drawFirstFrame(input, frame);
  // Plain keys typed while Ink loads are handled by the first screen (Ink gets the rest).
  const early = stdin.isTTY === true ? readEarlyKeys(stdin, first, onKey) : null;
  const loading = inkLoadDelay().then(preloadInk).then(loadInk);
  let loaded;
  try {
    // `q` typed before Ink loaded quits without waiting for it.
    loaded = await (early ? Promise.race([loading, early.quit.then(() => null)]) : loading);
  } finally {
    // Also when Ink failed to load: the keys' listener must not keep reading stdin.
    early?.stop();
  }
  if (!loaded) loading.catch(() => undefined);
  return { loaded, start: { view: first.view, keys: first.keys, columnWidths: first.columnWidths } };
}

/** Runs the dashboard until the user quits; resolves to the exit code. */
export async function runDashboard(opts: DashboardOptions): Promise<number> {
  const clock = opts.clock ?? (() => Date.now());
  const restoreConsole = captureConsole(opts.logFile ?? defaultLogFile());
  for (const home of opts.homes) void cleanStaleControlTemps(home, Date.now()).catch(() => undefined);

  // The first frame comes before the home is read: rows appear as they are found. It waits (a
  // little) for the session list of a directory walk, so it shows rows rather than "no sessions".
  // (A warm start draws the checkpoints the cache answers with it.) Once the session list is drawn
  // the readers wait (a moment) for Ink to load, so a key pressed just after the first frame is not
  // held up behind the rest of the cache or the checkpoints' reads.
  let inkLoaded: () => void = () => undefined;
  const inkReady = new Promise<void>((resolve) => (inkLoaded = resolve));
  const started = opts.store.start({ afterList: inkReady }).catch((err) => console.error('home reader failed', err));
  // The start's one-time work done: the heap's growth is limited from then on, and the full
  // collection that applies it waits for a pause in the user's keys (heap.ts).
  const settled = started.then(() => opts.store.background());
  let lastKeyAt = -Infinity;
  const onKey = () => (lastKeyAt = performance.now());
  void settled.then(() => settleHeapGrowth({ lastInput: () => lastKeyAt }));
  await sessionListOrTimeout(opts.store, opts.homes.length, FIRST_FRAME_WAIT_MS);
  const audit = backgroundAudit(opts.homes, started, clock, () => opts.store.getState().version);
  if (timing.enabled) void settled.then(() => timing.mark('background'));
  opts.remote?.start();
  // Frames go straight to the terminal (only changed lines are rewritten, see terminal-frame.ts);
  // Ink keeps the keyboard, the React tree and raw mode.
  let written = 0;
  const terminal = new TerminalFrame({
    isTTY: process.stdout.isTTY,
    write: (s: string) => {
      const bytes = Buffer.byteLength(s);
      written += bytes;
      timing.write(bytes);
      return process.stdout.write(s);
    },
  });
  // Under the bench's timing: each pass's bytes drawn, and after a key the rows showing a request
  // in flight with its countdown (counted only then: a countdown's frame pays nothing for the count).
  let keysCounted = -1;
  const frame: FrameSink = !timing.enabled
    ? terminal
    : {
        draw(lines, width, noColor) {
          const t0 = performance.now();
          const before = written;
          terminal.draw(lines, width, noColor);
          const ms = performance.now() - t0;
          const keys = timing.keysRendered();
          let requesting: number | undefined;
          if (keys !== keysCounted) {
            keysCounted = keys;
            requesting = lines.filter((l) => COUNTDOWN_ROW.test(lineText(l))).length;
          }
          timing.frame(ms, { bytes: written - before, requesting });
        },
        done: () => terminal.done(),
      };
  const host = os.hostname();
  const removeFaults = installFaultHooks();
  let code = 0;
  let instance: { unmount(err?: Error): void; waitUntilExit(): Promise<unknown> } | null = null;
  const follows = new AbortController();
  // A signal before Ink is loaded ends the start there (see below); after, it unmounts Ink.
  let stopBeforeInk = false;
  const onSignal = (signal: NodeJS.Signals) => {
    code = signal === 'SIGINT' ? 130 : signal === 'SIGHUP' ? 129 : 143;
    if (instance) instance.unmount();
    else stopBeforeInk = true;
  };
  const onCrash = (err: unknown) => {
    code = 1;
    console.error('uncaught', err);
    if (instance) instance.unmount(err instanceof Error ? err : new Error(String(err)));
    else stopBeforeInk = true;
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const s of signals) process.on(s, onSignal);
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);

  // A terminal nobody sized (a pty under `script` with no terminal of its own, some CI runners)
  // reports 0 rows: Ink would take every frame for a full screen and clear the terminal,
  // scrollback included (ESC[3J; RELIABILITY F1). Every reader of the size — the first frame, Ink,
  // the App — gets the default instead, until the terminal reports one (a resize sets both again).
  if (process.stdout.isTTY && !process.stdout.rows) process.stdout.rows = DEFAULT_ROWS;
  if (process.stdout.isTTY && !process.stdout.columns) process.stdout.columns = DEFAULT_COLUMNS;
  const stdin = process.stdin;
  const ownRawMode = stdin.isTTY === true && !stdin.isRaw;
  try {
    // The first frame before Ink is loaded (first-frame.ts). Raw mode first, so a key typed while
    // Ink loads is neither echoed over the frame nor lost: the first screen handles it, or leaves
    // it (and what follows) for Ink (early-keys.ts).
    if (ownRawMode) stdin.setRawMode(true);
    const snapshotCache = createSnapshotCache();
    // From the first frame on, each state's snapshot is built before it is published, in slices
    // (a home of 12 000 sessions: a build from scratch held keys for ~150–350 ms in the render).
    opts.store.setPrepare((state) => prepareFrameSnapshot(state, clock(), host, snapshotCache));
    const { loaded, start } = await firstFrameUntilInk(
      {
        model: opts.store.getState(),
        now: clock(),
        host,
        cache: snapshotCache,
        feeds: opts.remote?.get() ?? [],
        audits: audit.get(),
        readOnly: opts.readOnly,
        noColor: envNoColor(),
        rows: process.stdout.rows || DEFAULT_ROWS,
        columns: process.stdout.columns || DEFAULT_COLUMNS,
      },
      frame,
      stdin,
      onKey,
    );
    if (loaded) timing.mark('ink-loaded');
    if (loaded && !stopBeforeInk) {
      const [{ render }, { appElement }] = loaded;
      instance = render(
        appElement({ store: opts.store, clock, host, onKey, readOnly: opts.readOnly, actions: actionPort(clock, { signal: follows.signal }), audit, incidentFields: readIncidentFields, frame, snapshotCache, start, ...(opts.remote ? { remote: opts.remote } : {}) }),
        { exitOnCtrlC: true, patchConsole: false },
      );
      timing.mark('ink-mounted');
    }
    inkLoaded();
    if (instance) await instance.waitUntilExit();
  } catch (err) {
    code = code || 1;
    restoreConsole();
    process.stderr.write(`loop-dash: ${(err as Error).message}\n`);
  } finally {
    inkLoaded();
    for (const s of signals) process.off(s, onSignal);
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
    removeFaults();
    // Ink hands raw mode back when it unmounts; if it never mounted, it was ours to hand back.
    if (!instance && ownRawMode && stdin.isTTY) stdin.setRawMode(false);
    // Ink is not mounted (`q` or a signal before it loaded, or it failed to load): stdin, read for
    // the early keys, must not hold the process open.
    if (!instance && stdin.isTTY === true) {
      stdin.pause();
      stdin.unref();
    }
    terminal.done();
    restoreConsole();
    // Waits for acks still running end here (a request not yet expired gets no outcome line from
    // this dashboard; its session's extension journals its own when it answers).
    follows.abort();
    audit.stop();
    opts.remote?.stop();
    opts.store.setPrepare(null);
    await started;
    await opts.store.stop();
  }
  return code;
}
