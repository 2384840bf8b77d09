/**
 * Shared pieces of the reliability suite (RELIABILITY.md A–E): the two watcher backends, a live
 * store that records when a condition first held (timed at the store's own notification, not by
 * a polling loop), session lines that leave a visible trace, and process-level counters.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLiveStore, type LiveStore, type LiveStoreOptions } from '../../src/app/live-store.js';
import { cwdSlug, utcStamp } from '../../src/contract/paths.js';
import type { ModelState } from '../../src/model/reducer.js';
import type { Warning } from '../../src/model/types.js';
import { sessionHeader } from './mini-home.js';

export const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);

/** The two ways a home is followed; every file case (A, B, C) runs on both. */
export const BACKENDS = [
  { name: 'native', polling: false },
  { name: 'polling', polling: true },
] as const;
export type Backend = (typeof BACKENDS)[number];

/** The polling interval the product uses (and the banner states). */
export const POLL_MS = 1_000;
/** RELIABILITY's latency bound after a write: 250 ms; polling may first wait one interval. */
export function latencyBound(b: Backend, boundMs = 250): number {
  return b.polling ? POLL_MS + boundMs : boundMs;
}

/** A temp home (`<tmp>/reliability-XXXX/home`, not created when `create` is false). */
export function faultHome(create = true): string {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-reliability-'));
  const home = path.join(base, 'home');
  if (create) fs.mkdirSync(home, { recursive: true });
  return home;
}

/** Removes a home made by {@link faultHome} (its temp parent too). */
export function removeHome(home: string): void {
  fs.rmSync(path.dirname(home), { recursive: true, force: true });
}

/** The path of a root session file (not written). */
export function sessionPath(home: string, id: string, cwd = `/work/${id}`, at = T0): string {
  return path.join(home, 'sessions', cwdSlug(cwd), `${utcStamp(at)}_${id}.jsonl`);
}

/** Writes a root session file with its header (and `lines`); returns its path. */
export function newSession(home: string, id: string, lines: string[] = [], cwd = `/work/${id}`): string {
  const file = sessionPath(home, id, cwd);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, sessionHeader(id, cwd, T0) + lines.join(''));
  return file;
}

/**
 * A record that shows up in a session's history (a `loop-wake` message) with `text` as its
 * summary: so "which records are displayed, in which order" can be read back from the model.
 */
export function wake(text: string, at = T0 + 1000): string {
  return JSON.stringify({ type: 'custom_message', id: `w${at}`, parentId: null, timestamp: new Date(at).toISOString(), customType: 'loop-wake', content: text, display: false, details: null }) + '\n';
}

/** A `session_info` entry that names the session. */
export function named(name: string, at = T0 + 1000): string {
  return JSON.stringify({ type: 'session_info', id: `n-${at}`, parentId: null, timestamp: new Date(at).toISOString(), name }) + '\n';
}

/** The summaries of a session's displayed history (the records shown, in order). */
export function shown(state: ModelState, file: string): string[] {
  return state.sessionFiles.get(file)?.history.map((h) => h.summary) ?? [];
}

/** Every warning now shown for `file`. */
export function warningsOf(state: ModelState, file: string): readonly Warning[] {
  return state.warnings.get(file) ?? [];
}

export function errorsOf(state: ModelState, file: string): Warning[] {
  return warningsOf(state, file).filter((w) => w.severity !== 'warning');
}

/** A live store plus a record of when conditions first held. */
export interface Probe {
  store: LiveStore;
  state(): ModelState;
  /**
   * Resolves with the epoch ms of the first store notification at which `pred` held (or now,
   * when it holds already). Rejects after `timeoutMs` with `what` and a state summary.
   */
  until(pred: (s: ModelState) => unknown, what: string, timeoutMs?: number): Promise<number>;
  /** Checks `invariant` at every notification from now on; its failures are collected. */
  always(name: string, invariant: (s: ModelState) => string | null): void;
  /** The invariant failures so far (each once per name). */
  violations(): string[];
  /** Store notifications so far. */
  notifications(): number;
  stop(): Promise<void>;
}

/** Starts a live store over `homes` and watches its notifications. */
export async function startProbe(homes: string | string[], opts: LiveStoreOptions = {}): Promise<Probe> {
  const store = createLiveStore(Array.isArray(homes) ? homes : [homes], opts);
  const waiters: { pred: (s: ModelState) => unknown; resolve: (at: number) => void }[] = [];
  const invariants: { name: string; check: (s: ModelState) => string | null }[] = [];
  const failed = new Map<string, string>();
  let notifications = 0;
  const check = () => {
    const s = store.getState();
    const at = Date.now();
    for (const inv of invariants) {
      if (failed.has(inv.name)) continue;
      const bad = inv.check(s);
      if (bad !== null) failed.set(inv.name, `${inv.name}: ${bad}`);
    }
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i]!;
      if (w.pred(s)) {
        waiters.splice(i, 1);
        w.resolve(at);
      }
    }
  };
  store.subscribe(() => {
    notifications++;
    check();
  });
  await store.start();
  return {
    store,
    state: () => store.getState(),
    until(pred, what, timeoutMs = 5_000) {
      if (pred(store.getState())) return Promise.resolve(Date.now());
      return new Promise<number>((resolve, reject) => {
        const waiter = { pred, resolve: (at: number) => (clearTimeout(timer), resolve(at)) };
        const timer = setTimeout(() => {
          const i = waiters.indexOf(waiter);
          if (i >= 0) waiters.splice(i, 1);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; ${summarise(store.getState())}`));
        }, timeoutMs);
        waiters.push(waiter);
      });
    },
    always(name, invariant) {
      invariants.push({ name, check: invariant });
      check();
    },
    violations: () => [...failed.values()],
    notifications: () => notifications,
    stop: () => store.stop(),
  };
}

/** A short description of a state, for failure messages. */
export function summarise(s: ModelState): string {
  const files = [...s.sessionFiles.values()].map((f) => `${path.basename(f.file)}: size ${f.size}, history ${f.history.length}, incomplete ${f.incompleteSince !== null}`);
  const warnings = [...s.warnings.entries()].map(([f, ws]) => `${path.basename(f)}: ${ws.map((w) => w.message).join(' | ')}`);
  return `sessions [${files.slice(0, 8).join('; ')}${files.length > 8 ? `; … ${files.length} in all` : ''}] warnings [${warnings.slice(0, 8).join('; ')}] watch ${s.watchMode.mode}`;
}

/** Open file descriptors of this process (or `pid`). */
export function openFds(pid: number | 'self' = 'self'): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

/** inotify watches held by this process (or `pid`): the `inotify wd:` lines of its fdinfo. */
export function inotifyWatches(pid: number | 'self' = 'self'): number {
  let n = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      n += (fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8').match(/^inotify wd:/gm) ?? []).length;
    } catch {
      // closed while we looked
    }
  }
  return n;
}

/** The `RELIABILITY_SOAK_S` length option for soak cases (seconds), else `fallback`. */
export function soakSeconds(fallback: number): number {
  const v = Number(process.env.RELIABILITY_SOAK_S);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

/** `<home>/loop-dash/checkpoints/<session>.json` (directory created). */
export function checkpointPath(home: string, session: string): string {
  const dir = path.join(home, 'loop-dash', 'checkpoints');
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, `${session}.json`);
}

/** A valid checkpoint document (SPEC §4.1) for `session`, with `over` merged in. */
export function checkpointText(session: string, over: Record<string, unknown> = {}): string {
  return JSON.stringify({
    v: 1, session, sessionFile: null, role: 'root', parentSession: null, cwd: `/work/${session}`, pid: 1, pidStart: null,
    host: 'another-host', model: 'p/m', thinking: null, limits: null, state: 'idle', request: null, episode: null, recovery: null,
    lastStop: null, held: null, ownerAbort: null, updatedAt: T0, ...over,
  });
}

/** What {@link watchLoop} saw. */
export interface LoopWatch {
  /** Longest wall-clock gap between two loop turns (ms): includes time the OS ran something else. */
  maxGapMs: number;
  /** Longest gap during which this process itself kept the CPU (ms): the loop blocked by our own work. */
  maxBusyMs: number;
}

/**
 * Samples the event loop every 2 ms. A gap is charged as "blocked" only by the CPU time this
 * process used during it: on a loaded 2-core machine a gap can be pre-emption by other
 * processes, which no code of ours causes or can prevent. Both figures are reported.
 */
export function watchLoop(): { stop(): LoopWatch } {
  let lastWall = performance.now();
  let lastCpu = process.cpuUsage();
  const seen: LoopWatch = { maxGapMs: 0, maxBusyMs: 0 };
  const timer = setInterval(() => {
    const wall = performance.now();
    const cpu = process.cpuUsage();
    const gap = wall - lastWall;
    const busy = Math.min(gap, (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000);
    seen.maxGapMs = Math.max(seen.maxGapMs, gap);
    seen.maxBusyMs = Math.max(seen.maxBusyMs, busy);
    lastWall = wall;
    lastCpu = cpu;
  }, 2);
  return {
    stop() {
      clearInterval(timer);
      return seen;
    },
  };
}
