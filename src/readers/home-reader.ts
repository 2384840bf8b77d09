/**
 * Follows one pi home: an initial load (session list first, then tails, newest first, in slices
 * that yield to the event loop), then a watcher whose events are only hints — each hint makes us
 * read the file to its end, re-check ~75 ms later (chokidar drops a second `change` within 50 ms),
 * and a slow reconcile sweep catches anything the watcher missed.
 */
import os from 'node:os';
import path from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { homePaths, stateLogPathFromReport } from '../contract/paths.js';
import type { ReaderEvent, Warning } from '../model/types.js';
import { readCheckpointFile } from './checkpoint-file.js';
import { classifyPath, walkHome, type ArtifactKind, type FoundFile } from './home-walk.js';
import { readIncidentFile } from './incident-file.js';
import { readAck, JournalReader } from './journal.js';
import { readLaneStatus } from './lane-status.js';
import { probeProcess } from './process-probe.js';
import type { ReadCounter } from './read-counter.js';
import { readReceipt } from './receipt-file.js';
import { SessionFileReader } from './session-file.js';
import { parseSessionPath } from './session-path.js';
import { readHomeSettings } from './settings-file.js';
import { StateLogReader } from './state-log.js';

export interface HomeReaderOptions {
  home: string;
  /** Receives batches of reader events (never one call per file). */
  emit: (events: ReaderEvent[]) => void;
  now?: () => number;
  /** Follow changes after the initial load (default true). */
  watch?: boolean;
  /** Force polling instead of native file events. */
  polling?: boolean;
  /** Backstop sweep interval (default 5 s). */
  reconcileMs?: number;
  /** Re-check delay after a hint (default 75 ms). */
  recheckMs?: number;
  /** Event batching window (default 100 ms). */
  batchMs?: number;
  /** Liveness probe interval for local pids (default 2 s). */
  probeMs?: number;
  /** This machine's host name. */
  host?: string;
  counter?: ReadCounter;
  /** Session files read per slice before yielding to the event loop. */
  sliceSize?: number;
}

/** How long a checkpoint may stay unparseable (a non-atomic writer mid-write) before it is an error. */
const CHECKPOINT_GRACE_MS = 2_000;

interface Known {
  kind: ArtifactKind | 'state-log';
  size: number;
  mtimeMs: number;
  ino: number;
}

export class HomeReader {
  readonly home: string;
  private readonly opts: Required<Omit<HomeReaderOptions, 'counter' | 'polling'>> & Pick<HomeReaderOptions, 'counter' | 'polling'>;
  private readonly sessions = new Map<string, SessionFileReader>();
  private readonly stateLogs = new Map<string, StateLogReader>();
  private journal: JournalReader | null = null;
  private readonly known = new Map<string, Known>();
  private readonly invalidSince = new Map<string, number>();
  /** Incremental readers report a bad line once; keep them so a later clean read does not hide it. */
  private readonly lineWarnings = new Map<string, Warning[]>();
  /** Paths to read; the flag says whether to re-check once more ~75 ms after reading. */
  private readonly dirty = new Map<string, boolean>();
  private buffer: ReaderEvent[] = [];
  private flushTimer: NodeJS.Timeout | null = null;
  private working: Promise<void> | null = null;
  private watcher: FSWatcher | null = null;
  private timers: NodeJS.Timeout[] = [];
  private stopped = false;
  private homeExists = false;

  constructor(options: HomeReaderOptions) {
    this.home = path.resolve(options.home);
    this.opts = {
      now: () => Date.now(),
      watch: true,
      reconcileMs: 5_000,
      recheckMs: 75,
      batchMs: 100,
      probeMs: 2_000,
      host: os.hostname(),
      sliceSize: 25,
      ...options,
    };
  }

  /** Reads the whole home once; resolves when every known file has been read. */
  async start(): Promise<void> {
    await this.loadSettings();
    const walk = await walkHome(this.home);
    this.homeExists = walk.homeExists;
    if (!walk.homeExists) {
      this.push({ type: 'warnings', file: this.home, warnings: [{ file: this.home, line: null, message: `waiting for ${this.home} (it does not exist yet)`, severity: 'warning' }] });
    }
    this.pushWalkProblems(walk.problems);

    // Small files first (checkpoints show live requests even before any session tail is read).
    const byKind = (k: ArtifactKind) => walk.files.filter((f) => f.kind === k);
    for (const f of byKind('checkpoint')) await this.readOne(f.file, 'checkpoint', f);
    const sessions = byKind('session').sort((a, b) => b.mtimeMs - a.mtimeMs);
    // The list first: every session appears (from its path) before any tail is read.
    for (const f of sessions) this.known.set(f.file, { kind: 'session', size: -1, mtimeMs: -1, ino: f.ino });
    this.push({ type: 'progress', home: this.home, read: 0, total: sessions.length, done: sessions.length === 0 });
    this.flush();

    if (this.opts.watch) await this.startWatcher();

    let read = 0;
    for (const f of sessions) {
      if (this.stopped) return;
      await this.readOne(f.file, 'session', f);
      read++;
      if (read % this.opts.sliceSize === 0) {
        this.push({ type: 'progress', home: this.home, read, total: sessions.length, done: false });
        this.flush();
        await new Promise<void>((r) => setImmediate(r));
      }
    }
    for (const kind of ['incident', 'lane-status', 'receipt', 'journal', 'ack'] as const) {
      for (const f of byKind(kind)) await this.readOne(f.file, kind, f);
    }
    this.push({ type: 'progress', home: this.home, read, total: sessions.length, done: true });
    await this.probe();
    this.flush();

    if (this.opts.watch && !this.stopped) {
      this.every(this.opts.reconcileMs, () => this.reconcile());
      this.every(this.opts.probeMs, () => this.probe());
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    await this.watcher?.close();
    this.watcher = null;
    await this.working;
    this.flush();
  }

  /** Marks a path as possibly changed (from the watcher, or a test). */
  hint(file: string): void {
    if (this.stopped) return;
    this.dirty.set(path.resolve(file), true);
    void this.drain();
  }

  private every(ms: number, fn: () => Promise<void>): void {
    let running = false;
    const t = setInterval(() => {
      if (running || this.stopped) return;
      running = true;
      fn().finally(() => (running = false));
    }, ms);
    t.unref();
    this.timers.push(t);
  }

  private async startWatcher(): Promise<void> {
    const p = homePaths(this.home);
    // Watching the home's top directory (shallowly) too lets a missing subtree appear later.
    const targets = [this.home, p.sessions, p.incidents, p.dash, p.laneRuns, p.loopWait, ...this.stateLogs.keys()];
    const watcher = watch(targets, {
      ignoreInitial: true,
      persistent: true,
      usePolling: this.opts.polling ?? false,
      interval: 1000,
      binaryInterval: 1000,
      followSymlinks: false,
      depth: 12,
      ignored: (p: string) => {
        const name = path.basename(p);
        return name.startsWith('.') && p !== this.home;
      },
    });
    const onPath = (file: string) => this.hint(file);
    watcher.on('add', onPath).on('change', onPath).on('unlink', onPath);
    watcher.on('addDir', () => this.kickReconcile()).on('unlinkDir', () => this.kickReconcile());
    watcher.on('error', (err: unknown) => this.onWatchError(err));
    this.watcher = watcher;
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
    this.push({ type: 'watch-mode', mode: this.opts.polling ? 'polling' : 'native', detail: this.opts.polling ? 'polling every 1 s (forced)' : null });
  }

  private onWatchError(err: unknown): void {
    const code = (err as NodeJS.ErrnoException)?.code ?? String(err);
    if (this.opts.polling) return;
    // ENOSPC (inotify watches exhausted) or EMFILE: fall back to polling, and say so.
    this.opts.polling = true;
    const old = this.watcher;
    this.watcher = null;
    void old?.close().then(() => this.startWatcher()).then(() => {
      this.push({ type: 'watch-mode', mode: 'degraded', detail: `file watching degraded (${code}) - polling every 1 s` });
      this.flush();
    });
  }

  private kickReconcile(): void {
    const t = setTimeout(() => void this.reconcile(), this.opts.recheckMs);
    t.unref();
  }

  /** Processes dirty paths one at a time (a file reader is never updated concurrently). */
  private drain(): Promise<void> {
    if (this.working) return this.working;
    this.working = (async () => {
      while (this.dirty.size > 0 && !this.stopped) {
        const batch = [...this.dirty];
        this.dirty.clear();
        for (const [file] of batch) {
          const kind = this.kindOf(file);
          if (kind) await this.readOne(file, kind);
        }
        this.scheduleFlush();
        // Re-check once a little later: a second change inside chokidar's throttle window is dropped.
        const again = batch.filter(([f, recheck]) => {
          const k = this.known.get(f)?.kind;
          return recheck && (k === 'session' || k === 'state-log' || k === 'journal' || k === 'checkpoint');
        });
        if (again.length) {
          const t = setTimeout(() => {
            for (const [f] of again) if (!this.dirty.has(f)) this.dirty.set(f, false);
            void this.drain();
          }, this.opts.recheckMs);
          t.unref();
        }
      }
    })().finally(() => {
      this.working = null;
      if (this.dirty.size > 0 && !this.stopped) void this.drain();
    });
    return this.working;
  }

  private kindOf(file: string): Known['kind'] | null {
    if (this.stateLogs.has(file)) return 'state-log';
    return classifyPath(this.home, file);
  }

  /** Reads one file and queues what changed. Never throws. */
  private async readOne(file: string, kind: Known['kind'], found?: FoundFile): Promise<void> {
    try {
      switch (kind) {
        case 'session':
          return await this.readSession(file);
        case 'checkpoint':
          return await this.readCheckpoint(file);
        case 'incident': {
          const r = await readIncidentFile(this.home, file);
          if (r.missing) return this.forget(file, { type: 'incident-removed', file });
          if (r.transient && !r.record && this.withinGrace(file)) return this.retryLater(file);
          this.invalidSince.delete(file);
          if (r.record) this.push({ type: 'incident', record: r.record });
          this.push({ type: 'warnings', file, warnings: r.warnings });
          return this.remember(file, kind, found);
        }
        case 'lane-status': {
          const r = await readLaneStatus(this.home, file);
          if (r.missing) return this.forget(file, { type: 'lane-status-removed', file });
          if (r.record) this.push({ type: 'lane-status', status: r.record });
          this.push({ type: 'warnings', file, warnings: r.warnings });
          return this.remember(file, kind, found);
        }
        case 'receipt': {
          const r = await readReceipt(this.home, file);
          if (r.missing) return this.forget(file, { type: 'receipt-removed', file });
          if (r.record) this.push({ type: 'receipt', receipt: r.record });
          this.push({ type: 'warnings', file, warnings: r.warnings });
          return this.remember(file, kind, found);
        }
        case 'settings':
          return await this.loadSettings();
        case 'journal': {
          this.journal ??= new JournalReader(this.home);
          const r = await this.journal.update();
          if (r.entries.length || r.reset) this.push({ type: 'journal', home: this.home, entries: r.entries, reset: r.reset });
          this.pushLineWarnings(file, r.warnings, r.reset);
          return this.remember(file, kind, found);
        }
        case 'ack': {
          const r = await readAck(file);
          if (r.record) {
            const session = path.basename(path.dirname(file));
            this.push({ type: 'ack', home: this.home, session, ack: r.record });
          }
          if (r.warnings.length) this.push({ type: 'warnings', file, warnings: r.warnings });
          return this.remember(file, kind, found);
        }
        case 'state-log': {
          const reader = this.stateLogs.get(file);
          if (!reader) return;
          const r = await reader.update();
          if (r.events.length || r.reset) this.push({ type: 'state-log', file, events: r.events, reset: r.reset });
          this.pushLineWarnings(file, r.warnings, r.reset);
          return this.remember(file, kind, found);
        }
        default: {
          const never: never = kind;
          return never;
        }
      }
    } catch (err) {
      this.push({ type: 'warnings', file, warnings: [{ file, line: null, message: `could not read: ${(err as Error).message}` }] });
    }
  }

  private async readSession(file: string): Promise<void> {
    let reader = this.sessions.get(file);
    if (!reader) {
      if (!parseSessionPath(this.home, file)) return;
      reader = new SessionFileReader(this.home, file, { now: this.opts.now, counter: this.opts.counter });
      this.sessions.set(file, reader);
    }
    const r = await reader.update();
    if (r.gone) {
      this.sessions.delete(file);
      return this.forget(file, { type: 'session-file-removed', file });
    }
    if (r.changed) this.push({ type: 'session-file', facts: r.facts });
    this.push({ type: 'warnings', file, warnings: r.warnings });
    this.remember(file, 'session');
    const report = r.facts.continuation?.launch?.report;
    if (report && r.facts.role === 'root') await this.followStateLog(report);
  }

  private async followStateLog(report: string): Promise<void> {
    const file = stateLogPathFromReport(report);
    if (this.stateLogs.has(file)) return;
    this.stateLogs.set(file, new StateLogReader(file));
    this.watcher?.add(file);
    await this.readOne(file, 'state-log');
  }

  private async readCheckpoint(file: string): Promise<void> {
    const r = await readCheckpointFile(this.home, file);
    if (r.missing) {
      this.invalidSince.delete(file);
      return this.forget(file, { type: 'checkpoint-removed', file });
    }
    if (r.record) {
      this.invalidSince.delete(file);
      this.push({ type: 'checkpoint', record: r.record });
      this.push({ type: 'warnings', file, warnings: r.warnings });
    } else if (this.withinGrace(file)) {
      // Keep the last good value through a non-atomic rewrite; complain only if it stays bad.
      this.retryLater(file);
    } else {
      const warnings: Warning[] = r.warnings.length ? r.warnings : [{ file, line: null, message: 'checkpoint is empty or incomplete' }];
      this.push({ type: 'warnings', file, warnings });
    }
    this.remember(file, 'checkpoint');
  }

  private async loadSettings(): Promise<void> {
    const r = await readHomeSettings(this.home);
    this.push({ type: 'settings', settings: r.settings });
    const p = homePaths(this.home);
    this.push({ type: 'warnings', file: p.settings, warnings: r.warnings.filter((w) => w.file === p.settings) });
    this.push({ type: 'warnings', file: p.models, warnings: r.warnings.filter((w) => w.file === p.models) });
  }

  private pushLineWarnings(file: string, fresh: Warning[], reset: boolean): void {
    const before = reset ? [] : (this.lineWarnings.get(file) ?? []);
    if (fresh.length === 0 && !reset) return;
    const all = [...before, ...fresh].slice(-50);
    this.lineWarnings.set(file, all);
    this.push({ type: 'warnings', file, warnings: all });
  }

  /** True while a file has been unreadable for less than the writer's grace period. */
  private withinGrace(file: string): boolean {
    if (!this.opts.watch) return false; // a one-shot read has no later look: report now
    const now = this.opts.now();
    const since = this.invalidSince.get(file) ?? now;
    this.invalidSince.set(file, since);
    return now - since < CHECKPOINT_GRACE_MS;
  }

  /** A file caught half-written: look again after the writer's grace period, silently meanwhile. */
  private retryLater(file: string): void {
    const t = setTimeout(() => this.hint(file), CHECKPOINT_GRACE_MS + 50);
    t.unref();
  }

  private remember(file: string, kind: Known['kind'], found?: FoundFile): void {
    const prev = this.known.get(file);
    this.known.set(file, { kind, size: found?.size ?? prev?.size ?? -1, mtimeMs: found?.mtimeMs ?? prev?.mtimeMs ?? -1, ino: found?.ino ?? prev?.ino ?? -1 });
  }

  private forget(file: string, event: ReaderEvent): void {
    this.known.delete(file);
    this.push(event);
  }

  /** The backstop: a fresh walk; read what is new, changed or gone since we last looked. */
  private async reconcile(): Promise<void> {
    if (this.stopped) return;
    const walk = await walkHome(this.home);
    if (walk.homeExists !== this.homeExists) {
      this.homeExists = walk.homeExists;
      this.push({
        type: 'warnings',
        file: this.home,
        warnings: walk.homeExists ? [] : [{ file: this.home, line: null, message: `waiting for ${this.home} (it was removed)`, severity: 'warning' }],
      });
      if (walk.homeExists) await this.loadSettings();
    }
    this.pushWalkProblems(walk.problems);
    const seen = new Set<string>();
    for (const f of walk.files) {
      seen.add(f.file);
      const k = this.known.get(f.file);
      if (!k || k.size !== f.size || k.mtimeMs !== f.mtimeMs || k.ino !== f.ino) {
        this.known.set(f.file, { kind: f.kind, size: f.size, mtimeMs: f.mtimeMs, ino: f.ino });
        this.dirty.set(f.file, false);
      }
    }
    for (const [file, k] of this.known) {
      if (k.kind !== 'state-log' && !seen.has(file)) this.dirty.set(file, false);
    }
    for (const file of this.stateLogs.keys()) if (!this.dirty.has(file)) this.dirty.set(file, false);
    await this.drain();
    this.flush();
  }

  private walkProblemFiles = new Set<string>();
  private pushWalkProblems(problems: { file: string; message: string }[]): void {
    const now = new Set(problems.map((p) => p.file));
    for (const p of problems) {
      if (!this.walkProblemFiles.has(p.file)) this.push({ type: 'warnings', file: p.file, warnings: [{ file: p.file, line: null, message: p.message }] });
    }
    for (const f of this.walkProblemFiles) if (!now.has(f)) this.push({ type: 'warnings', file: f, warnings: [] });
    this.walkProblemFiles = now;
  }

  /** Liveness of the pids our checkpoints name (same host only; the dashboard never signals). */
  private pids = new Set<number>();
  private async probe(): Promise<void> {
    const now = this.opts.now();
    const pids = [...this.pids];
    for (const pid of pids) this.push({ type: 'probe', probe: probeProcess(pid, now) });
    this.scheduleFlush();
  }

  private push(event: ReaderEvent): void {
    if (event.type === 'checkpoint') {
      const cp = event.record.checkpoint;
      if (cp.host === this.opts.host && cp.state !== 'ended' && !this.pids.has(cp.pid)) {
        this.pids.add(cp.pid);
        this.buffer.push({ type: 'probe', probe: probeProcess(cp.pid, this.opts.now()) });
      }
    }
    this.buffer.push(event);
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.stopped) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      this.flush();
    }, this.opts.batchMs);
    this.flushTimer.unref();
  }

  private flush(): void {
    if (this.buffer.length === 0) return;
    const events = this.buffer;
    this.buffer = [];
    this.opts.emit(events);
  }
}

/** One snapshot of a home without watching (for `status` and scripts). */
export async function loadHomeOnce(home: string, opts: { now?: () => number; host?: string } = {}): Promise<ReaderEvent[]> {
  const events: ReaderEvent[] = [];
  const reader = new HomeReader({ home, emit: (e) => events.push(...e), watch: false, ...opts });
  await reader.start();
  await reader.stop();
  return events;
}
