/**
 * How a HomeReader learns that something may have changed. Everything reported here is a hint,
 * never data: the reader stats and reads the path itself.
 *
 * - native: one `fs.watch` per directory. inotify reports a change to any entry of a watched
 *   directory, so 10,000 session files cost one watch per directory, not one per file, and no fd
 *   (libuv shares one inotify descriptor per process).
 * - polling: a stat sweep every `pollMs` of the watched directories (a changed directory is
 *   listed again to find new and removed names) and of the files the reader knows, in slices that
 *   keep the event loop free (`statSync` costs a few µs; an async stat costs several times more);
 *   past `QUIET_PER_SWEEP` entries unchanged for ten minutes, those take turns (`PollingBackend`).
 *
 * A native watch that cannot be made (ENOSPC: inotify watches exhausted; EMFILE) is reported
 * through `failed`. `FallbackBackend` keeps the native watches the kernel gave and polls only the
 * directories it refused (and the files in them), until the kernel gives watches again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { nextTurn } from './time-slices.js';

/** Where a backend sends its hints. */
export interface WatchSink {
  /** Something at `file` may have changed: appended, created, removed, renamed, chmod-ed. */
  changed(file: string): void;
  /** The backend could not watch `dir` (ENOSPC: no inotify watches left; EMFILE): it must be polled. */
  failed(err: NodeJS.ErrnoException, dir: string): void;
  /**
   * Polling: how often a quiet entry (unchanged for `POLL_QUIET_MS`) is looked at now, in ms —
   * `pollMs` while the sweep looks at everything each time; told when it changes.
   */
  paced?(quietEveryMs: number): void;
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
  /**
   * Polling only: stops polling `dir` after a last look at it and at the files directly in it,
   * hinting what changed since the last sweep (a native watch has just been set on it: nothing
   * changed before that watch is lost between the two). `files`: the files known in `dir`, when
   * the caller has them (else they are picked out of every file known).
   */
  release?(dir: string, files?: Iterable<[string, FileStamp]>): void;
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
  /** The clock the files' mtimes are compared with (FallbackBackend.rebalance, the sweep's quiet entries; default Date.now). */
  now?: () => number;
  /** Polling: how many quiet entries a sweep looks at, at most, before they take turns (`QUIET_PER_SWEEP`). */
  quietPerSweep?: number;
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
      this.sink.failed(e, dir);
      return;
    }
    watcher.on('error', (err: NodeJS.ErrnoException) => {
      this.removeDir(dir);
      if (err.code === 'ENOSPC' || err.code === 'EMFILE') this.sink.failed(err, dir);
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

/** How long after the last refused watch the watches are moved to the densest directories. */
export const REBALANCE_MS = 2_000;
/** A polled directory takes a watch from a watched one only if it has at least this many more files. */
const REBALANCE_MIN_FILES = 4;
/** While directories are polled, the watches are rebalanced this often. */
export const REBALANCE_EVERY_MS = 60_000;
/** Directories given a watch again in one rebalance at most (the wide benchmark home polls ~16 000 past 8 192 watches). */
const FILL_MAX = 500;
/** A rebalance stopped at FILL_MAX goes on this soon. */
const FILL_AGAIN_MS = 50;
/** A directory with a file changed this recently is followed by a watch before one without. */
export const REBALANCE_RECENT_MS = 10 * 60_000;

/**
 * Native watches where the kernel gives them, a polling sweep for the directories it refused.
 * A home with more directories than the inotify budget left (the kernel's default on older
 * systems is 8 192 watches per user, shared with every editor and tool) keeps its native watches
 * and their latency; only the refused directories, and the files directly in them, are stat'ed
 * every `pollMs` — not the whole home, as when every watch was given up at the first refusal
 * (measured on the big benchmark home with room for half its directories: see
 * docs/PERFORMANCE.md, "Past the inotify limit, only the rest polled").
 *
 * After a refusal, new directories go straight to the sweep (no failing system call and error
 * each) until a native watch is given back. `onDegraded` is told of the first refusal, with its
 * cause; `onRecovered` once a rebalance has given every polled directory a watch again (the
 * limit raised, another process's watches freed), and `onDegraded` again at the next refusal.
 *
 * The walk hands the watches out in its order, and on a pi home the directories are far from
 * equal: on the big benchmark home sessions/'s 1 412 directories hold a file or so each and come
 * first, while 6 directories (the checkpoints and the incidents) hold 6 227 of its 8 445 files.
 * So `REBALANCE_MS` after the last refusal, and every `REBALANCE_EVERY_MS` while any directory is
 * polled, the polled directories take whatever watches the kernel gives again, then the watches
 * go to the directories with the most files, then to those changed recently (`rebalance`).
 */
export class FallbackBackend implements WatchBackend {
  /** Native: the reader's re-checks of recently changed files go on (they back up native hints). */
  readonly mode = 'native' as const;
  private readonly native: WatchBackend;
  private poller: WatchBackend | null = null;
  /** The kernel refused a watch and none has been given back since. */
  private full = false;
  /** `onDegraded` was told and `onRecovered` not since. */
  private degraded = false;
  private closed = false;
  private rebalanceTimer: NodeJS.Timeout | null = null;
  /** The last rebalance stopped at FILL_MAX directories given a watch: the next comes soon. */
  private filling = false;
  private rebalancing = false;
  private refusedInTrade = false;

  constructor(
    private readonly factory: WatchFactory,
    private readonly sink: WatchSink,
    private readonly opts: WatchBackendOptions,
    private readonly onDegraded: (err: NodeJS.ErrnoException) => void,
    private readonly onRecovered: () => void = () => undefined,
  ) {
    this.native = factory({ changed: (file) => sink.changed(file), failed: (err, dir) => this.refused(err, dir) }, { ...opts, polling: false });
  }

  addDir(dir: string, ino?: number): void {
    if (this.closed || this.poller?.has(dir)) return;
    if (this.full && !this.native.has(dir)) this.poll(dir);
    else this.native.addDir(dir, ino);
  }

  removeDir(dir: string): void {
    if (this.poller?.has(dir)) {
      this.poller.removeDir(dir);
      // The last polled directory gone (no rebalance is due once nothing is polled): the next
      // rebalance finds nothing polled and says so (`onRecovered`).
      if (this.degraded && this.polledDirs() === 0) this.scheduleRebalance(REBALANCE_MS);
    } else if (this.native.has(dir)) {
      this.native.removeDir(dir);
      this.full = false;
    }
  }

  dirs(): string[] {
    return this.poller ? [...this.native.dirs(), ...this.poller.dirs()] : this.native.dirs();
  }

  has(dir: string): boolean {
    return this.native.has(dir) || (this.poller?.has(dir) ?? false);
  }

  /** The directories polled because the kernel refused them a watch. */
  polledDirs(): number {
    return this.poller?.dirs().length ?? 0;
  }

  close(): void {
    this.closed = true;
    if (this.rebalanceTimer) clearTimeout(this.rebalanceTimer);
    this.rebalanceTimer = null;
    this.native.close();
    this.poller?.close();
    this.poller = null;
  }

  /**
   * Moves the native watches to where they save the most, in passes over the files the reader
   * knows, counted per directory with the newest mtime among them:
   * - fill: the polled directories, the most files first, ask the kernel for a watch again until it
   *   refuses one (a refused watch costs one system call a rebalance): a limit raised after the
   *   banner, or watches another process freed, are taken up within `REBALANCE_EVERY_MS`, and once
   *   nothing is polled any more `onRecovered` is told. At most `FILL_MAX` a rebalance (the
   *   scheduled one goes on `FILL_AGAIN_MS` later), so the event loop is never held long;
   * - density: while the polled directory with the most files has more than twice as many, and at
   *   least `REBALANCE_MIN_FILES` more, as the watched one with the fewest, the two trade places
   *   (each file moved from the sweep is a stat less every `pollMs`);
   * - recency: then a polled directory with a file changed in the last `REBALANCE_RECENT_MS` takes
   *   the watch of one with nothing changed in that time and no more files (the sweep grows by
   *   nothing): a lane running now is followed at the watch's latency, not the sweep's.
   * The watched one is polled before its watch is removed, and the polled one released only once
   * its watch is set, after a last look (`release`): nothing changed meanwhile is missed. Returns
   * the number of directories that took a watch (filled or traded).
   */
  rebalance(): number {
    const poller = this.poller;
    if (this.closed || poller === null || !poller.release) return 0;
    const counts = new Map<string, number>();
    const newest = new Map<string, number>();
    // The polled directories' files, for their release (one pass over the files known, not one a trade).
    const polledFiles = new Map<string, [string, FileStamp][]>();
    for (const entry of this.opts.files()) {
      const [file, stamp] = entry;
      const dir = parentOf(file);
      counts.set(dir, (counts.get(dir) ?? 0) + 1);
      if (stamp.mtimeMs > (newest.get(dir) ?? -Infinity)) newest.set(dir, stamp.mtimeMs);
      if (poller.has(dir)) {
        const list = polledFiles.get(dir);
        if (list) list.push(entry);
        else polledFiles.set(dir, [entry]);
      }
    }
    const count = (dir: string) => counts.get(dir) ?? 0;
    let trades = 0;
    this.filling = false;
    for (const dir of poller.dirs().sort((a, b) => count(b) - count(a))) {
      // A watch, a stat and a listing each (~30 µs): at most FILL_MAX a turn, the rest soon after.
      if (trades === FILL_MAX) {
        this.filling = true;
        return trades;
      }
      const took = this.takeWatch(poller, dir, polledFiles.get(dir));
      if (took === 'refused') break;
      // Gone meanwhile: the sweep looks at it until the reader lets it go.
      if (took === 'gone') continue;
      this.full = false;
      trades++;
    }
    if (this.degraded && poller.dirs().length === 0) {
      this.degraded = false;
      this.onRecovered();
      return trades;
    }
    const trade = (toWatch: string, toPoll: string): boolean => {
      poller.addDir(toPoll);
      this.native.removeDir(toPoll);
      // The watch just freed; refused (another process took it), `toWatch` simply stays polled.
      const took = this.takeWatch(poller, toWatch, polledFiles.get(toWatch));
      // Gone meanwhile (not refused): the freed watch is there for the next one.
      if (took === 'gone') this.full = false;
      return took === 'taken';
    };
    const polled = poller.dirs().sort((a, b) => count(b) - count(a));
    const watched = this.native.dirs().sort((a, b) => count(a) - count(b));
    for (let i = 0; i < polled.length && i < watched.length; i++) {
      const dense = polled[i]!;
      const sparse = watched[i]!;
      if (count(dense) <= 2 * count(sparse) || count(dense) - count(sparse) < REBALANCE_MIN_FILES) break;
      if (!trade(dense, sparse)) return trades;
      trades++;
    }
    const horizon = (this.opts.now ?? Date.now)() - REBALANCE_RECENT_MS;
    const at = (dir: string) => newest.get(dir) ?? -Infinity;
    const recent = poller.dirs().filter((d) => at(d) >= horizon).sort((a, b) => at(b) - at(a));
    const stale = this.native.dirs().filter((d) => at(d) < horizon).sort((a, b) => count(a) - count(b) || at(a) - at(b));
    for (let i = 0, j = 0; i < recent.length && j < stale.length; i++) {
      if (count(stale[j]!) > count(recent[i]!)) continue; // the sweep would grow: the next recent one may have more files
      if (!trade(recent[i]!, stale[j]!)) return trades;
      trades++;
      j++;
    }
    return trades;
  }

  /**
   * Asks the kernel for a watch on the polled `dir`: set, it is released from the sweep after a
   * last look at it and `files` (`taken`); else it stays polled — the kernel refused (`refused`)
   * or the directory went away (`gone`).
   */
  private takeWatch(poller: WatchBackend, dir: string, files: [string, FileStamp][] | undefined): 'taken' | 'refused' | 'gone' {
    this.rebalancing = true;
    this.refusedInTrade = false;
    this.native.addDir(dir, statOrNull(dir)?.ino);
    this.rebalancing = false;
    if (this.refusedInTrade) return 'refused';
    if (!this.native.has(dir)) return 'gone';
    poller.release!(dir, files ?? []);
    return 'taken';
  }

  private refused(err: NodeJS.ErrnoException, dir: string): void {
    if (this.closed) return;
    const first = !this.degraded;
    this.degraded = true;
    this.full = true;
    this.poll(dir);
    if (first) this.onDegraded(err);
    if (this.rebalancing) this.refusedInTrade = true;
    // Once the refusals stop (the walk is over), the watches go where they save the most; not
    // again for a refusal within a rebalance (a watch taken by another process meanwhile).
    if (!this.rebalancing) this.scheduleRebalance(REBALANCE_MS);
  }

  /** A rebalance in `ms`, and then every `REBALANCE_EVERY_MS` while directories are polled (lanes start and end). */
  private scheduleRebalance(ms: number): void {
    if (this.rebalanceTimer) clearTimeout(this.rebalanceTimer);
    this.rebalanceTimer = setTimeout(() => {
      this.rebalanceTimer = null;
      this.rebalance();
      if (this.polledDirs() > 0 && !this.closed) this.scheduleRebalance(this.filling ? FILL_AGAIN_MS : REBALANCE_EVERY_MS);
    }, ms);
    this.rebalanceTimer.unref();
  }

  private poll(dir: string): void {
    if (this.poller === null) {
      const files = this.opts.files;
      const polled = (file: string) => this.poller!.has(parentOf(file));
      this.poller = this.factory(this.sink, {
        ...this.opts,
        polling: true,
        // Only the files directly in a polled directory: the others have a native watch.
        *files() {
          for (const entry of files()) if (polled(entry[0])) yield entry;
        },
      });
    }
    this.poller.addDir(dir);
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

/** A file or directory unchanged for this long is quiet: when there are many, they take turns in the sweeps. */
export const POLL_QUIET_MS = 10 * 60_000;
/**
 * How many quiet entries a sweep looks at, at most, before they take turns: ~1 % of a core at
 * ~4–6 µs a stat (measured on the big and wide benchmark homes). Below it, every entry is
 * looked at every sweep, as before.
 */
export const QUIET_PER_SWEEP = 2_500;
/** A quiet entry is looked at every this many sweeps at least, however many there are (10 s at 1 s). */
export const QUIET_MAX_TURNS = 10;

/** A directory the sweep looks at, and its slot among the quiet entries' turns. */
interface PolledDir {
  stat: Seen | null;
  names: Set<string> | null;
  slot: number;
}

/** What a file looked like at the last look, the sweep that last met it, and its slot among the quiet entries' turns. */
interface PolledFile {
  seen: Seen | null;
  sweep: number;
  slot: number;
}

/**
 * A stat sweep every `pollMs`: the fallback when native watching is impossible, or forced.
 *
 * Every entry changed in the last `POLL_QUIET_MS` (a running lane's session, a checkpoint, a
 * status) is looked at every sweep. The quiet ones too, while there are at most `quietPerSweep`;
 * past that they take turns: each is looked at every `turns` sweeps (`turns` = quiet entries ÷
 * `quietPerSweep`, at most `QUIET_MAX_TURNS`; just after `turns` changes, one gap may be up to
 * the old and the new `turns` together), spread over the sweeps. A directory whose stat changed
 * has its files looked at in the same sweep: an atomic write (a rename) into a directory in use
 * — the checkpoints', a run's — is seen at the next sweep however quiet the file it replaced.
 * What waits, for up to `turns` sweeps, is a change in a directory and to a file that had both
 * been quiet for ten minutes: a session appended again after that long, a lane started in a
 * quiet directory. The wide benchmark home (24 029 directories, 39 045 files) went from ~25 % of
 * a core to a few (docs/PERFORMANCE.md, "Polling takes the quiet in turns").
 */
export class PollingBackend implements WatchBackend {
  readonly mode = 'polling' as const;
  private readonly watched = new Map<string, PolledDir>();
  private readonly files = new Map<string, PolledFile>();
  private sweeps = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly sliceSize: number;
  private readonly quietPerSweep: number;
  private readonly now: () => number;
  /** Each quiet entry is looked at every `turns` sweeps (1: every entry every sweep). */
  private turns = 1;
  /** The next slot given out (see `sweep`). */
  private slots = 0;
  /** Stats made so far (the tests count what a sweep costs). */
  stats = 0;

  constructor(
    private readonly sink: WatchSink,
    private readonly opts: WatchBackendOptions,
  ) {
    this.sliceSize = opts.sliceSize ?? 500;
    this.quietPerSweep = opts.quietPerSweep ?? QUIET_PER_SWEEP;
    this.now = opts.now ?? Date.now;
    this.schedule();
  }

  /** Sweeps done so far. */
  get sweepCount(): number {
    return this.sweeps;
  }

  /** How often a quiet entry is looked at now, in ms. */
  get quietEveryMs(): number {
    return this.turns * this.opts.pollMs;
  }

  /** One sweep now, off the timer (the tests count what each sweep looks at). */
  sweepNow(): Promise<void> {
    return this.sweep();
  }

  addDir(dir: string): void {
    if (this.closed || this.watched.has(dir)) return;
    const stat = this.stat(dir);
    const names = listOrNull(dir);
    this.watched.set(dir, { stat, names, slot: this.slots++ });
    // Added after the first census (a new lane's directory, one a rebalance gave up a watch of):
    // its files are met now, not at the next census (up to `turns` sweeps away).
    if (this.sweeps > 0 && names) for (const name of names) this.meet(path.join(dir, name));
  }

  /** A file met between two censuses: looked at from now on, compared with how it is now. */
  private meet(file: string): void {
    if (!this.files.has(file)) this.files.set(file, { seen: this.stat(file), sweep: this.sweeps, slot: this.slots++ });
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

  release(dir: string, files?: Iterable<[string, FileStamp]>): void {
    const seen = this.watched.get(dir);
    if (!seen) return;
    this.lookAt(dir, seen);
    // Its files while it is still polled (`opts.files` may be limited to the polled directories).
    for (const [file, stamp] of files ?? this.opts.files()) {
      if (parentOf(file) !== dir) continue;
      const known = this.files.get(file);
      if (!sameStat(this.statRaw(file), known === undefined ? stamp : known.seen)) this.sink.changed(file);
      this.files.delete(file);
    }
    this.watched.delete(dir);
  }

  /** A stat, counted (`stats`), as `fs` gives it: compared without a copy. */
  private statRaw(p: string): fs.Stats | null {
    this.stats++;
    return statNow(p);
  }

  /** A stat, counted, as a sweep keeps it. */
  private stat(p: string): Seen | null {
    return seenOf(this.statRaw(p));
  }

  /** A directory whose stat changed is listed again: its new and removed names are hinted. Returns whether it changed. */
  private lookAt(dir: string, seen: PolledDir): boolean {
    const st = this.stat(dir);
    if (sameStat(st, seen.stat)) return false;
    seen.stat = st;
    const names = st ? listOrNull(dir) : null;
    const before = seen.names ?? new Set<string>();
    const after = names ?? new Set<string>();
    for (const name of after) {
      if (before.has(name)) continue;
      const file = path.join(dir, name);
      this.sink.changed(file);
      // Met now, not at the next census: appends to a file just created are followed every sweep.
      if (this.sweeps > 0) this.meet(file);
    }
    for (const name of before) if (!after.has(name)) this.sink.changed(path.join(dir, name));
    seen.names = names;
    if (!st) this.sink.changed(dir);
    return true;
  }

  private async sweep(): Promise<void> {
    const sweep = ++this.sweeps;
    const turns = this.turns;
    const quietBefore = this.now() - POLL_QUIET_MS;
    // A quiet entry is looked at in the sweeps where its slot comes round: every `turns` sweeps,
    // the entries spread over them by slot (one given out, in turn, to each entry at first sight).
    const due = (slot: number) => (slot + sweep) % turns === 0;
    // A quiet file waits for its turn unless its directory changed (a rename into it changes it).
    const waits = (file: string, known: PolledFile) => !due(known.slot) && !changedDirs?.has(parentOf(file));
    let quiet = 0;
    // The loop yields once per slice, not a promise per entry.
    let n = 0;
    let changedDirs: Set<string> | null = null;
    // The map itself, not a copy (entries added or removed during a pause are well defined).
    for (const [dir, seen] of this.watched) {
      if (this.closed) return;
      // A directory gone (stat null) is not quiet: it is looked at until the reader lets it go.
      const isQuiet = seen.stat !== null && Math.max(seen.stat.mtimeMs, seen.stat.ctimeMs) < quietBefore;
      if (isQuiet) {
        quiet++;
        if (!due(seen.slot)) continue;
      }
      if (this.lookAt(dir, seen)) (changedDirs ??= new Set()).add(dir);
      if (++n % this.sliceSize === 0) await nextTurn();
    }
    // Every known file is stat'ed each sweep (10 000 on a big home) but the quiet ones past
    // `quietPerSweep`: per file one stat and no other allocation when nothing changed (the fresh
    // stat is compared, not copied). The reader's list of files is taken in a census, every
    // `turns` sweeps: there files first met are compared with what the reader read, and files no
    // longer known are dropped by sweep number. In between, the files met so far are gone
    // through (on the wide benchmark home the census — the reader's 39 045 files, filtered to the
    // polled directories when degraded — cost more than the stats it leaves out); a file created
    // meanwhile is met when its directory is listed (`lookAt`).
    if (sweep % turns === 0) {
      for (const [file, stamp] of this.opts.files()) {
        if (this.closed) return;
        const known = this.files.get(file);
        // Quiet by what it looked like last: at first sight, by what the reader read.
        const last = known === undefined ? stamp : known.seen;
        const isQuiet = last !== null && last.mtimeMs < quietBefore;
        if (isQuiet) quiet++;
        if (known === undefined) {
          // First sight: compared with what the reader read (a stamp has no ctime).
          const st = this.statRaw(file);
          if (!sameStat(st, stamp)) this.sink.changed(file);
          this.files.set(file, { seen: seenOf(st), sweep, slot: this.slots++ });
        } else {
          known.sweep = sweep;
          if (isQuiet && waits(file, known)) continue;
          this.lookAtFile(file, known);
        }
        if (++n % this.sliceSize === 0) await nextTurn();
      }
      for (const [file, known] of this.files) if (known.sweep !== sweep) this.files.delete(file);
    } else {
      for (const [file, known] of this.files) {
        if (this.closed) return;
        if (known.seen !== null && known.seen.mtimeMs < quietBefore) {
          quiet++;
          if (waits(file, known)) continue;
        }
        this.lookAtFile(file, known);
        if (++n % this.sliceSize === 0) await nextTurn();
      }
    }
    const next = Math.min(QUIET_MAX_TURNS, Math.max(1, Math.ceil(quiet / this.quietPerSweep)));
    if (next !== this.turns) {
      this.turns = next;
      this.sink.paced?.(this.quietEveryMs);
    }
  }

  /** A file's stat compared with the last look: a change is hinted. */
  private lookAtFile(file: string, known: PolledFile): void {
    const st = this.statRaw(file);
    if (!sameStat(st, known.seen)) {
      this.sink.changed(file);
      known.seen = seenOf(st);
    }
  }
}

/** The directory a known file is directly in (the walk's paths are joined, so no normalising). */
function parentOf(file: string): string {
  return file.slice(0, file.lastIndexOf(path.sep));
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
