/**
 * Opens the Ink dashboard on a live store. Owns the terminal while it runs: console output goes to
 * a log file (a stray `console.log` must not force a redraw), and SIGINT/SIGTERM/SIGHUP or an
 * exception unmount Ink so raw mode is off, the cursor visible and the screen restored.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { format } from 'node:util';
import { render } from 'ink';
import { cleanStaleControlTemps, requestAction, targetFromCheckpoint } from '../control/index.js';
import { loadAudit } from '../cli/audit-command.js';
import type { AuditResult } from '../model/audit.js';
import { App, type ActionPort, type AuditSource } from '../views/App.js';
import { installFaultHooks } from './fault-hooks.js';
import type { LiveStore } from './live-store.js';
import { timing } from './timing.js';

export interface DashboardOptions {
  store: LiveStore;
  homes: string[];
  readOnly: boolean;
  clock?: () => number;
  /** Where diagnostics go while the TUI owns the terminal. */
  logFile?: string;
}

export function defaultLogFile(): string {
  const base = process.env.XDG_STATE_HOME || path.join(os.homedir(), '.local', 'state');
  return path.join(base, 'loop-dash', 'dashboard.log');
}

/** Routes console.* to a file for the life of the TUI; returns the undo. */
function captureConsole(logFile: string): () => void {
  try {
    mkdirSync(path.dirname(logFile), { recursive: true });
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

export function actionPort(clock: () => number): ActionPort {
  return {
    async request(action, target) {
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
        return { id: handle.id };
      } catch (err) {
        return { error: err instanceof Error ? err.message : String(err) };
      }
    },
  };
}

/** How often the bounds audit is re-measured while the dashboard is open. */
const AUDIT_EVERY_MS = 10 * 60_000;

/**
 * The bounds audit, measured in the background after the home has been read once (it samples
 * session tails, so it never delays the first frame), then every ten minutes.
 */
export function backgroundAudit(homes: string[], ready: Promise<unknown>, clock: () => number): AuditSource & { stop(): void } {
  let results: readonly AuditResult[] | null = null;
  const listeners = new Set<() => void>();
  let stopped = false;
  const measure = async () => {
    try {
      const next = await Promise.all(homes.map((h) => loadAudit(h, { now: clock() })));
      if (stopped) return;
      results = next;
      for (const l of listeners) l();
    } catch (err) {
      console.error('audit failed', err);
    }
  };
  const timer = setInterval(() => void measure(), AUDIT_EVERY_MS);
  timer.unref();
  void ready.then(measure);
  return {
    get: () => results,
    subscribe(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}

/** Runs the dashboard until the user quits; resolves to the exit code. */
export async function runDashboard(opts: DashboardOptions): Promise<number> {
  const clock = opts.clock ?? (() => Date.now());
  const restoreConsole = captureConsole(opts.logFile ?? defaultLogFile());
  for (const home of opts.homes) void cleanStaleControlTemps(home, Date.now()).catch(() => undefined);

  // The first frame comes before the home is read: rows appear as they are found.
  const started = opts.store.start().catch((err) => console.error('home reader failed', err));
  const audit = backgroundAudit(opts.homes, started, clock);
  if (timing.enabled) {
    const write = process.stdout.write.bind(process.stdout) as (chunk: unknown, ...rest: unknown[]) => boolean;
    process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
      timing.write(typeof chunk === 'string' ? Buffer.byteLength(chunk) : (chunk as Uint8Array).length);
      return write(chunk, ...rest);
    }) as typeof process.stdout.write;
  }
  const instance = render(<App store={opts.store} clock={clock} host={os.hostname()} readOnly={opts.readOnly} actions={actionPort(clock)} audit={audit} />, {
    exitOnCtrlC: true,
    patchConsole: false,
    ...(timing.enabled ? { onRender: () => timing.frame() } : {}),
  });

  const removeFaults = installFaultHooks();
  let code = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    code = signal === 'SIGINT' ? 130 : signal === 'SIGHUP' ? 129 : 143;
    instance.unmount();
  };
  const onCrash = (err: unknown) => {
    code = 1;
    console.error('uncaught', err);
    instance.unmount(err instanceof Error ? err : new Error(String(err)));
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const s of signals) process.on(s, onSignal);
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  try {
    await instance.waitUntilExit();
  } catch (err) {
    code = code || 1;
    restoreConsole();
    process.stderr.write(`loop-dash: ${(err as Error).message}\n`);
  } finally {
    for (const s of signals) process.off(s, onSignal);
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
    removeFaults();
    restoreConsole();
    audit.stop();
    await started;
    await opts.store.stop();
  }
  return code;
}
