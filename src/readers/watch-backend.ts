/**
 * How a HomeReader learns that something may have changed. Everything reported here is a hint,
 * never data: the reader stats and reads the path itself.
 *
 * - native: one `fs.watch` per directory. inotify reports a change to any entry of a watched
 *   directory, so 10,000 session files cost one watch per directory, not one per file, and no fd
 *   (libuv shares one inotify descriptor per process).
 * - polling: a stat sweep every `pollMs` of the watched directories (a changed directory is
 *   listed again to find new and removed names) and of the files the reader knows, in slices that
 *   keep the event loop free (`statSync` costs a few µs; an async stat costs several times more).
 *
 * A native watch that cannot be made (ENOSPC: inotify watches exhausted; EMFILE) is reported
 * through `failed`, and the reader falls back to polling.
 */
import fs from 'node:fs';
import path from 'node:path';
import { nextTurn } from './time-slices.js';

/** Where a backend sends its hints. */
export interface WatchSink {
  /** Something at `file` may have changed: appended, created, removed, renamed, chmod-ed. */
  changed(file: string): void;
  /** The backend cannot go on (e.g. ENOSPC); the caller should switch to polling. */
  failed(err: NodeJS.ErrnoException): void;
}

/** A running backend. */
export interface WatchBackend {
  readonly mode: 'native' | 'polling';
  /** Watches a directory's entries; re-watches when `ino` says the directory was recreated. */
  addDir(dir: string, ino?: number): void;
  removeDir(dir: string): void;
  /** The directories being watched. */
  dirs(): string[];
  /** Whether `dir` is watched (without listing them all). */
  has(dir: string): boolean;
  close(): void;
}

/** What a backend is built with. */
export interface WatchBackendOptions {
  polling: boolean;
  /** Polling sweep interval. */
  pollMs: number;
  /**
   * Polling: the files to stat each sweep, with the stat the reader last based a read on (so a
   * change between that read and the first sweep is not missed).
   */
  files: () => Iterable<[string, FileStamp]>;
  /** Stats per slice before yielding to the event loop (polling). */
  sliceSize?: number;
}

/** Builds a backend; tests pass their own to inject watcher faults (RELIABILITY C1, C2). */
export type WatchFactory = (sink: WatchSink, opts: WatchBackendOptions) => WatchBackend;

/** The default factory: native `fs.watch` per directory, or the polling sweep. */
export const createWatchBackend: WatchFactory = (sink, opts) => (opts.polling ? new PollingBackend(sink, opts) : new NativeBackend(sink));

/** One `fs.watch` per directory. */
class NativeBackend implements WatchBackend {
  readonly mode = 'native' as const;
  private readonly watches = new Map<string, { watcher: fs.FSWatcher; ino: number | undefined }>();
  private closed = false;

  constructor(private readonly sink: WatchSink) {}

  addDir(dir: string, ino?: number): void {
    if (this.closed) return;
    const had = this.watches.get(dir);
    if (had && (ino === undefined || had.ino === undefined || had.ino === ino)) return;
    if (had) this.removeDir(dir);
    let watcher: fs.FSWatcher;
    // A name is one entry of `dir` (never `.`, `..` or a path): appended to it, as the walk builds
    // its paths, not joined (path.join's normalising was ~1.6 % of the main thread's work at 100
    // appends/s, 12-04); the sink resolves what it is given.
    const prefix = dir + path.sep;
    try {
      watcher = fs.watch(dir, { persistent: true }, (_event, name) => {
        // No name: the event is about the directory itself; its parent's watch reports it too.
        if (name) this.sink.changed(prefix + name.toString());
      });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      // Gone or unreadable before we got to it: the reconcile sweep reports and retries it.
      if (e.code === 'ENOENT' || e.code === 'ENOTDIR' || e.code === 'EACCES' || e.code === 'EPERM') return;
      this.sink.failed(e);
      return;
    }
    watcher.on('error', (err: NodeJS.ErrnoException) => {
      this.removeDir(dir);
      if (err.code === 'ENOSPC' || err.code === 'EMFILE') this.sink.failed(err);
      else this.sink.changed(dir);
    });
    this.watches.set(dir, { watcher, ino });
  }

  removeDir(dir: string): void {
    const w = this.watches.get(dir);
    if (!w) return;
    this.watches.delete(dir);
    w.watcher.close();
  }

  dirs(): string[] {
    return [...this.watches.keys()];
  }

  has(dir: string): boolean {
    return this.watches.has(dir);
  }

  close(): void {
    this.closed = true;
    for (const dir of [...this.watches.keys()]) this.removeDir(dir);
  }
}

/** What identifies a version of a file for change detection. */
export interface FileStamp {
  size: number;
  mtimeMs: number;
  ino: number;
}

/** A file's or directory's stat as a sweep saw it; a reader's stamp is the same without ctime. */
interface Seen extends FileStamp {
  ctimeMs: number;
}

/** A stat sweep every `pollMs`: the fallback when native watching is impossible, or forced. */
class PollingBackend implements WatchBackend {
  readonly mode = 'polling' as const;
  private readonly watched = new Map<string, { stat: Seen | null; names: Set<string> | null }>();
  /** What each file looked like at the last sweep, and the sweep that saw it there. */
  private readonly files = new Map<string, { seen: Seen | null; sweep: number }>();
  private sweeps = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly sliceSize: number;

  constructor(
    private readonly sink: WatchSink,
    private readonly opts: WatchBackendOptions,
  ) {
    this.sliceSize = opts.sliceSize ?? 500;
    this.schedule();
  }

  addDir(dir: string): void {
    if (this.closed || this.watched.has(dir)) return;
    this.watched.set(dir, { stat: statOrNull(dir), names: listOrNull(dir) });
  }

  removeDir(dir: string): void {
    this.watched.delete(dir);
  }

  dirs(): string[] {
    return [...this.watched.keys()];
  }

  has(dir: string): boolean {
    return this.watched.has(dir);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.sweep().finally(() => this.schedule());
    }, this.opts.pollMs);
    this.timer.unref();
  }

  private async sweep(): Promise<void> {
    // The loop yields once per slice, not a promise per entry.
    let n = 0;
    for (const [dir, seen] of [...this.watched]) {
      if (this.closed) return;
      const st = statOrNull(dir);
      if (!sameStat(st, seen.stat)) {
        seen.stat = st;
        const names = st ? listOrNull(dir) : null;
        const before = seen.names ?? new Set<string>();
        const after = names ?? new Set<string>();
        for (const name of after) if (!before.has(name)) this.sink.changed(path.join(dir, name));
        for (const name of before) if (!after.has(name)) this.sink.changed(path.join(dir, name));
        seen.names = names;
        if (!st) this.sink.changed(dir);
      }
      if (++n % this.sliceSize === 0) await nextTurn();
    }
    // Polling stats every known file each second (10 000 on a big home): per file one stat and no
    // other allocation when nothing changed (the fresh stat is compared, not copied); files no longer
    // known are dropped by sweep number.
    const sweep = ++this.sweeps;
    for (const [file, stamp] of this.opts.files()) {
      if (this.closed) return;
      const st = statNow(file);
      const known = this.files.get(file);
      if (known === undefined) {
        // First sight: compared with what the reader read (a stamp has no ctime).
        if (!sameStat(st, stamp)) this.sink.changed(file);
        this.files.set(file, { seen: seenOf(st), sweep });
      } else {
        if (!sameStat(st, known.seen)) {
          this.sink.changed(file);
          known.seen = seenOf(st);
        }
        known.sweep = sweep;
      }
      if (++n % this.sliceSize === 0) await nextTurn();
    }
    for (const [file, known] of this.files) if (known.sweep !== sweep) this.files.delete(file);
  }
}

function statOrNull(p: string): Seen | null {
  return seenOf(statNow(p));
}

/** The stat of `p` as `fs` gives it, or null when it is gone or cannot be stat'ed (EACCES: a later sweep sees the recovery). */
function statNow(p: string): fs.Stats | null {
  try {
    return fs.statSync(p, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

function seenOf(st: fs.Stats | null): Seen | null {
  return st ? { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino } : null;
}

function listOrNull(dir: string): Set<string> | null {
  try {
    return new Set(fs.readdirSync(dir));
  } catch {
    return null;
  }
}

// ctime too: a chmod back (B10) changes nothing else, and the reader must look again. A reader's
// stamp has no ctime: then it is not compared.
function sameStat(a: Seen | null, b: Seen | FileStamp | null): boolean {
  if (a === null || b === null) return a === b;
  const ctimeSame = !('ctimeMs' in b) || a.ctimeMs === b.ctimeMs;
  return a.size === b.size && a.mtimeMs === b.mtimeMs && ctimeSame && a.ino === b.ino;
}
