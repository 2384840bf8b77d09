/**
 * Follows one pi home: an initial load (session list first, then tails, newest first, in slices
 * that yield to the event loop), then a watch backend whose events are only hints — each hint
 * makes us read the file to its end and re-check ~75 ms later — and a slow reconcile sweep that
 * catches anything the watcher missed. Directories are watched, not files (watch-backend.ts).
 */
import { promises as fsp, readdirSync, statSync, type Stats } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { aliveSocketPath, homePaths, stateLogOfRoot } from '../contract/paths.js';
import type { IncidentRecord, LaneRunStatus, ReaderEvent, WatcherReceipt, Warning } from '../model/types.js';
import { DEFAULT_POLL_MS } from '../model/reducer.js';
import { readCheckpointFile } from './checkpoint-file.js';
import { BUNDLE_PART, bundleOf, bundleRecords, cachedIncidentStats, FRONT_TREE_KEYS, isRecordedDir, makeBundle, RACY_DIR_MS, DirListings, trustedBundle, withoutFileAndHome, type CachedDir, type CachedTree, type IncidentBundle } from './dir-listings.js';
import { classifyPath, isTempName, LATER_ROOTS, LIST_ROOTS, LIVE_ROOTS, walkHome, type ArtifactKind, type DirListing, type FoundFile, type KnownStat, type WalkOptions, type WalkRoot } from './home-walk.js';
import { readAck, JournalReader } from './journal.js';
import { LivenessLinks } from './liveness-links.js';
import { COALESCE_MS, Periodic } from './periodic.js';
import { probeProcess, type ProcessProbeResult } from './process-probe.js';
import { fileWarning, type SmallFileRead } from './json-file.js';
import type { ReadCounter } from './read-counter.js';
import { SMALL_FILE_READERS, type SmallFileKind } from './small-file-kinds.js';
import { relativeInside, resolvedPrefix } from './rel-path.js';
import { readInWorker, type ReadJob, type ReadJobInput, type ReadJobResult } from './read-pool.js';
import { CLAIMED_BY_MAIN, claimForMain } from './read-claims.js';
import { SessionCache } from './session-cache.js';
import { SessionFileReader, type CachedSessionFile } from './session-file.js';
import { parseSessionPath } from './session-path.js';
import { readHomeSettings } from './settings-file.js';
import type { JsonlPosition } from './small-jsonl.js';
import { StateLogReader, stateLogEventOf } from './state-log.js';
import { TimeSlices } from './time-slices.js';
import { msFromNs } from './time-value.js';
import { createWatchBackend, FallbackBackend, POLL_QUIET_MS, type FileStamp, type WatchBackend, type WatchFactory } from './watch-backend.js';

/** What a start waits for (HomeReader.start). */
export interface StartOptions {
  afterList?: Promise<unknown>;
  listShown?: () => Promise<unknown>;
  beforeBackground?: Promise<unknown>;
}

export interface HomeReaderOptions {
  home: string;
  /** Receives batches of reader events (never one call per file). */
  emit: (events: ReaderEvent[]) => void;
  now?: () => number;
  /** Follow changes after the initial load (default true). */
  watch?: boolean;
  /** Force polling instead of native file events (default: `CHOKIDAR_USEPOLLING=1` in the environment). */
  polling?: boolean;
  /** Polling sweep interval, forced or after a fall-back (default 1 s). */
  pollMs?: number;
  /** Builds the watch backend; tests inject watcher faults here. */
  watchFactory?: WatchFactory;
  /** How long a session's last line may stay without its newline before it is flagged (default 5 s). */
  incompleteGraceMs?: number;
  /**
   * The session cache is written once what it remembers has not changed for this long (default
   * 30 s), and at most every 5 minutes while it keeps changing; never while nothing changed.
   */
  cacheQuietMs?: number;
  /**
   * A start with at least this many files to read that the cache does not answer (session files,
   * incidents, lane statuses, receipts) reads part of them on a worker thread (default 1 000);
   * `Infinity`: never.
   */
  workerMinFiles?: number;
  /** Starts the worker's reads (tests inject failures here). */
  readJob?: (input: ReadJobInput) => ReadJob;
  /**
   * Start-up stages, for the benchmark's timing marks: the session list is out; the checkpoints are
   * read; this thread's session tails are read; the worker's results are in.
   */
  onStage?: (stage: 'listed' | 'checkpoints' | 'tails' | 'worker') => void;
  /**
   * Asked before a start walks `loop-dash/` ahead of drawing the session list, then before each
   * checkpoint it would read (newest first): true reads it now, so the first batch carries it;
   * false draws the list and reads the rest after (`afterList`). The dashboard answers from the
   * time since exec, so the first frame still comes within its budget. Default: none (the
   * checkpoints the cache answers still come with the list).
   */
  checkpointsBeforeList?: () => boolean;
  /**
   * Backstop sweep interval. Default: adaptive — at least 5 s, and long enough that the sweep (a
   * walk of the whole home) costs under 0.1% of a core; files changed in the last 15 minutes are
   * re-checked every 5 s meanwhile.
   */
  reconcileMs?: number;
  /**
   * With the adaptive sweep: the full walk's interval instead of the adaptive one (tests use it to
   * tell the 5 s re-check of recent files apart from the walk). 0 = adaptive.
   */
  sweepMs?: number;
  /** Re-check delay after a hint (default 75 ms). */
  recheckMs?: number;
  /** Event batching window (default 70 ms: an append reaches the screen within ~50 ms at the median). */
  batchMs?: number;
  /** Liveness probe interval for local pids (default 2.5 s). */
  probeMs?: number;
  /** This machine's host name. */
  host?: string;
  counter?: ReadCounter;
  /** Session files read per slice before yielding to the event loop. */
  sliceSize?: number;
  /**
   * Where what was read is remembered between runs (session-cache.ts), so a restart reads only
   * what was appended since. Absent or null: nothing is remembered.
   */
  cacheDir?: string | null;
  /**
   * Bound on each session file's backward scan for state entries before its tail window at start
   * (default: none when watching — the head block and the tail window only, the rest is searched in
   * the background, roots first; unbounded for a one-shot read, which has no background).
   */
  startScanBytes?: number;
  /** The background search's pace, bytes per second (default 64 MiB/s). */
  deepScanRate?: number;
}

/** Progress events (and so renders) during the initial load: at most one per this long. */
const PROGRESS_MS = 250;
/** The slices (ms) the session list is primed in: longer than a big home's whole list (~9 ms). */
const LIST_PRIME_SLICE_MS = 32;
/** The small record files, in the order a start reads them. */
const SMALL_KINDS: readonly SmallFileKind[] = ['incident', 'lane-status', 'receipt'];
/** The adaptive sweep: at least this often … */
const SWEEP_MIN_MS = 5_000;
/** … at most this long apart … */
const SWEEP_MAX_MS = 10 * 60_000;
/** … and a walk may cost at most 1/SWEEP_COST of the time between walks. */
const SWEEP_COST = 3_000;
/**
 * Files changed this recently are re-checked (stat) between full sweeps: every RECHECK_MS when
 * they changed in the last RECENT_FAST_MS, else every RECHECK_SLOW_EVERY × RECHECK_MS.
 */
const ACTIVE_MS = 15 * 60_000;
const RECENT_FAST_MS = 60_000;
const RECHECK_MS = 5_000;
const RECHECK_SLOW_EVERY = 6;
const RECHECK_SLOW_MS = RECHECK_MS * RECHECK_SLOW_EVERY;
/**
 * At most this many recently changed files are looked at per re-check (a stat each, ~10 µs here),
 * in turn when there are more: a home whose 10 000 files were all just written (copied, restored)
 * cost 150-170 ms every 5 s for a minute, now ~3 ms, each file's turn coming within
 * ceil(n / RECHECK_MAX_FILES) re-checks. The watcher is the first line; this is the backstop.
 */
export const RECHECK_MAX_FILES = 256;
/**
 * A pid whose liveness socket is linked reports its own death; it is still probed this often, as
 * a backstop (and a probe every `probeMs` for the pids without a link).
 */
const LINKED_PROBE_MS = 30_000;
/** After a link closes, the pid is probed again after these waits while it still looks alive. */
const CLOSE_PROBE_MS = [20, 100, 400, 1_500];
/** How long the end of a start waits for its worker thread to be gone. */
const WORKER_EXIT_WAIT_MS = 1_000;
/** What the background search reads per step. */
const DEEP_SCAN_STEP = 4 * 1024 * 1024;
/**
 * The session cache is written at most this often while things change (and always at stop). A
 * write is the whole cache: ~90–140 ms of CPU for a big home's 8 MB, so every 30 s it cost
 * ~0.4 % of a core for as long as any session was appended to. A cache older than this only
 * makes a start after a crash read what was appended since (its resume points stay valid).
 */
const CACHE_SAVE_MS = 5 * 60_000;
/** Bumped when what a cache entry means changes (with session-cache's own format number). */
export const CACHE_WRITER = 'session-file/2 small-file/1';

/** How long a checkpoint may stay unparseable (a non-atomic writer mid-write) before it is an error. */
const CHECKPOINT_GRACE_MS = 2_000;

/** Per-file bookkeeping, for tests that check state is released (RELIABILITY B4). */
export interface HomeReaderStats {
  /** Files known (listed or read). */
  files: number;
  /** Incremental readers held (sessions, state logs). */
  readers: number;
  /** Entries in the other per-file maps (warnings kept, grace clocks, errors, timers). */
  perFile: number;
  /** Directories watched (native) or polled. */
  watchedDirs: number;
  mode: 'native' | 'polling' | null;
  /** Pi processes linked by their liveness sockets (their deaths need no probe). */
  links: number;
  /** Wake-ups of the background jobs' timer so far (probes, re-checks, cache saves). */
  periodicWakeUps: number;
  /** Re-checks of recently changed files so far, and how many files the last one looked at. */
  rechecks: number;
  lastRecheckFiles: number;
  /** Full walks of the home after the start so far: the backstop sweeps, and those a new directory asks for. */
  sweeps: number;
  /** Liveness probes of pids so far. */
  probes: number;
}

/** A small file as remembered between runs: its stat at the walk, and the record read from it. */
interface CachedSmallFile {
  k: 'small';
  kind: ArtifactKind;
  size: number;
  mtimeMs: number;
  ino: number;
  record: unknown;
  /** Which of the record's session paths were written relative to the home (see compactHomePaths). */
  homeOmitted?: number;
}

/**
 * A state log (outside the home; keyed by its path relative to the home) as read to its end, with
 * no line that had a problem: a start takes its events from here, without reading it, while the
 * file has the same identity, size and mtime (HomeReader.stateLogFromCache). Each event is kept as
 * its line number and JSON (the rest follows from them: stateLogEventOf).
 */
interface CachedLog extends JsonlPosition {
  k: 'log';
  lines: number[];
  raws: Record<string, unknown>[];
}

type CacheEntry = CachedSessionFile | CachedSmallFile | CachedDir | CachedTree | CachedLog;

interface Known {
  kind: ArtifactKind | 'state-log';
  size: number;
  mtimeMs: number;
  ino: number;
}

export class HomeReader {
  readonly home: string;
  private readonly opts: Required<Omit<HomeReaderOptions, 'counter' | 'polling'>> & Pick<HomeReaderOptions, 'counter'> & { polling: boolean };
  private readonly sessions = new Map<string, SessionFileReader>();
  private readonly stateLogs = new Map<string, StateLogReader>();
  private journal: JournalReader | null = null;
  private readonly known = new Map<string, Known>();
  /** When a small file was first seen unparseable, and its mtime then (a change restarts the grace). */
  private readonly invalidSince = new Map<string, { since: number; mtimeMs: number | null }>();
  /** The last record emitted per incident/lane-status/receipt file: an unchanged re-read is not news. */
  private readonly lastEmitted = new Map<string, unknown>();
  /** The warnings last sent per file (the list, and as JSON; '' for none), so an unchanged list is not resent. */
  private readonly shownWarnings = new Map<string, { list: readonly Warning[]; key: string }>();
  /** Files whose last read failed (EACCES, …): every reconcile tries them again. */
  private readonly failing = new Set<string>();
  /** One timer per session whose last line is incomplete: look again when its grace runs out. */
  private readonly incompleteTimers = new Map<string, NodeJS.Timeout>();
  /** Incremental readers report a bad line once; keep them so a later clean read does not hide it. */
  private readonly lineWarnings = new Map<string, Warning[]>();
  /** Paths to read; the flag says whether to re-check once more ~75 ms after reading. */
  private readonly dirty = new Map<string, boolean>();
  private buffer: ReaderEvent[] = [];
  private flushTimer: NodeJS.Timeout | null = null;
  /** Re-checks ~75 ms after a read that are still to come. */
  private pendingRechecks = 0;
  /** The start's walk is done: the cache's entries of files not in the home are dropped at the next save. */
  private prunePending = false;
  /** Where the next re-check of recent files starts when they are more than it looks at. */
  private recheckCursor = 0;
  private recheckCount = 0;
  private lastRecheckFiles = 0;
  private sweepCount = 0;
  /**
   * Hints for session files whose readers have not read yet, held from the cache's opening until
   * the start has offered the readers the cache's entries (null: not holding). Read before, such a
   * file is read afresh — its head and tail window — and the cache's entry, offered after, is
   * refused: its bytes are read again, and what the cache remembers from before the tail window
   * (state entries far from the end) is gone until the background search finds it again. On a warm
   * start beside running loops, those are the sessions being appended to.
   */
  private heldForCache: Set<string> | null = null;
  private lastFlushAt = -Infinity;
  /**
   * True from the start until the session list (with the checkpoints read before it) is flushed:
   * `flush` sends nothing meanwhile (a timer armed then finds it holding), or the list goes out
   * without the checkpoints — a liveness link coming up during those reads did, and the first
   * frame lost its clocks.
   */
  private holdingList = false;
  private working: Promise<void> | null = null;
  private backend: WatchBackend | null = null;
  private reconcileKick: NodeJS.Timeout | null = null;
  private stopped = false;
  private homeExists = false;
  private cache: SessionCache<CacheEntry> | null = null;
  /**
   * The incident directories this start walked, as they are to be recorded in the cache once every
   * file in them is answered (null: changed too recently to be recorded).
   */
  private readonly incidentDirs = new Map<string, CachedDir | null>();
  /** The start's incident directories taken whole from their bundles (takeIncidentDir), until their incidents are applied. */
  private takenIncidentDirs: { dir: string; bundle: IncidentBundle }[] = [];
  /** What the start's walk found in each incident directory it listed (null: names alone do not say it), for its bundle. */
  private readonly incidentListings = new Map<string, DirListing | null>();
  /** During a start: each incident file with a clean read (from the cache or read), with its walk stat — what bundles are made of. */
  private cleanIncidents: Map<string, { found: FoundFile; record: unknown }> | null = null;
  /** The start has answered every incident it found (its reads since are news: untrustBundle). */
  private incidentsAnswered = false;
  /** The cache keys of the incident directories whose bundle this process took whole or made, trusted (untrustBundle). */
  private readonly trustedBundleDirs = new Set<string>();
  /**
   * From a start until its bundles are made: the incident files read since the start answered
   * them, or read without a walk stat — the start's own answer for them may be older
   * (untrustBundle; applyTakenIncidents, recordIncidentDirs).
   */
  private touchedIncidents: Set<string> | null = null;
  /** Per incident directory's cache key: its bundle's names by index, and the parts of records deserialised so far (bundleHit). */
  private readonly bundleLookups = new Map<string, { bundle: IncidentBundle; index: Map<string, number>; parts: (Record<string, unknown>[] | null | undefined)[] }>();
  /** The directories' listings this start takes from the cache and records in it. */
  private readonly listings: DirListings;
  /** Sessions whose cache entry is out of date. */
  private readonly cacheDirty = new Set<string>();
  private cacheSaving: Promise<void> | null = null;
  /** performance.now() of the last change to what the cache remembers. */
  private cacheChangedAt = -Infinity;
  /** The start's reads on a worker thread, while they run. */
  private readJob: ReadJob | null = null;
  private deepScanning: Promise<void> | null = null;
  /** The background search has ended its passes (a new one may begin: searchLater). */
  private searchIdle = false;
  /** A file to search came while a pass ran: another pass follows. */
  private searchAgain = false;
  /** How long the last full walk took (ms), for the adaptive sweep interval. */
  private walkMs = 0;
  private sweepTimer: NodeJS.Timeout | null = null;
  /** The start's and the drain's slices of synchronous work. */
  private readonly slices = new TimeSlices();
  /** performance.now() of the last re-check that covered every recent file (the slow tier). */
  private recheckAllAt = performance.now();
  /** The newest time in `recent` (ms, opts.now()), so the re-check knows without a scan whether a fast tier is due. */
  private recentNewest = -Infinity;
  /** The background jobs' timer (watching only). */
  private periodic: Periodic | null = null;
  /** Links to the live pi processes' liveness sockets (watching only). */
  private readonly links = new LivenessLinks((pid, closed) => this.onLinkChange(pid, closed));
  private lastProgressAt = -Infinity;

  constructor(options: HomeReaderOptions) {
    this.home = path.resolve(options.home);
    this.listings = new DirListings(this.home, (file) => this.cache?.get(file));
    this.opts = {
      now: () => Date.now(),
      watch: true,
      reconcileMs: 5_000,
      sweepMs: 0,
      recheckMs: 75,
      batchMs: 70,
      // 2.5 s: a multiple of it gives the re-checks (5 s) and the probes' backstop (30 s) the same timer.
      probeMs: 2_500,
      host: os.hostname(),
      sliceSize: 25,
      pollMs: DEFAULT_POLL_MS,
      watchFactory: createWatchBackend,
      incompleteGraceMs: 5_000,
      cacheQuietMs: 30_000,
      onStage: () => undefined,
      checkpointsBeforeList: () => false,
      workerMinFiles: 1_000,
      readJob: readInWorker,
      cacheDir: null,
      startScanBytes: options.watch === false ? Infinity : 0,
      deepScanRate: 64 * 1024 * 1024,
      // An option passed as `undefined` keeps its default (a 0 ms poll would spin).
      ...(Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as HomeReaderOptions),
      polling: options.polling ?? /^(1|true)$/i.test(process.env.CHOKIDAR_USEPOLLING ?? ''),
    };
    this.fixedSweep = options.reconcileMs !== undefined;
  }

  /** `reconcileMs` was given: sweep at that fixed interval (else adaptive). */
  private readonly fixedSweep: boolean;

  /**
   * Reads the whole home once; resolves when every known file has been read. `afterList`: once
   * every session is listed (and drawn), the rest of the start waits for it — the dashboard loads
   * Ink then — for at most AFTER_LIST_WAIT_MS. `listShown`: called once the list is emitted, the
   * rest of the start waits (within the same bound) for what it returns — the live store resolves
   * it once the list is published, so the list's frame, prepared in slices (12 000 rows: ~0.3 s),
   * does not share its turns with the rest of the start. `beforeBackground`: the one-time
   * background work (the incident directories' bundles, the first cache write, the search before
   * the tails) waits for it — the live store resolves it once what the start read is published
   * (and drawn), so that work does not hold up the frame.
   */
  async start(opts: StartOptions = {}): Promise<void> {
    this.holdingList = true;
    try {
      await this.startReads(opts);
    } finally {
      this.releaseHeldHints();
      this.releaseList();
    }
  }

  /** Whether a hint for the session `file` waits for the cache's entries (see {@link heldForCache}). */
  private holdsForCache(file: string): boolean {
    const held = this.heldForCache;
    if (held === null || this.sessions.get(file)?.begun) return false;
    held.add(file);
    return true;
  }

  /** Ends the hold on session hints (see {@link heldForCache}): the files held are read now. */
  private releaseHeldHints(): void {
    const held = this.heldForCache;
    if (held === null) return;
    this.heldForCache = null;
    for (const file of held) if (!this.dirty.has(file)) this.dirty.set(file, true);
    if (held.size > 0) void this.drain();
  }

  /** Ends the hold on batches (see {@link holdingList}): what was held goes out now. */
  private releaseList(): void {
    if (!this.holdingList) return;
    this.holdingList = false;
    this.flush();
  }

  private async startReads(opts: StartOptions): Promise<void> {
    this.slices.restart();
    await this.loadSettings();
    // Watch each directory just before the walk lists it (A5): whatever appears or changes after
    // that is hinted, so no second walk is needed to close a gap.
    if (this.opts.watch) this.startWatcher([]);
    const onDir = (dir: string, ino: number) => this.backend?.addDir(dir, ino);
    if (this.opts.cacheDir) {
      // Only the cache's front now: the listings of sessions/ (its walk comes first) and the
      // checkpoints' records (~1 MB of a big home's ~8 MB).
      this.cache = await SessionCache.open<CacheEntry>(this.opts.cacheDir, this.home, CACHE_WRITER, this.compactCacheEntry, isFrontEntry, isBundleEntry);
      this.cache.onChange = this.onCacheChange;
      this.heldForCache = new Set();
    }
    // Directories unchanged since the cache recorded them are not read (dir-listings.ts), and the
    // incidents in them are the cache's (takeIncidentDir, knownIncidentStats) — both trust a
    // directory's ctime, which a network file system's client may cache: not when polling is
    // forced (`--poll`, CHOKIDAR_USEPOLLING: how such a home is watched).
    const trustDirs = !this.opts.polling;
    const incidents = homePaths(this.home).incidents;
    const underIncidents = incidents + path.sep;
    const isIncidentDir = (dir: string) => dir === incidents || dir.startsWith(underIncidents);
    if (this.cache) {
      this.cleanIncidents = new Map();
      this.touchedIncidents = new Set();
    }
    const listings = {
      knownListing: (dir: string, own: Stats) => (trustDirs ? this.listings.known(dir, own) : null),
      onListing: (dir: string, own: Stats, listing: DirListing | null, known: boolean) => {
        if (!this.cache) return;
        this.listings.found(dir, own, listing, known, this.opts.now());
        if (isIncidentDir(dir)) this.incidentListings.set(dir, listing);
      },
    };
    const walkStart = performance.now();
    // The list first: sessions/ is walked, and every session appears (from its path) before
    // anything else is walked or read; then what the cache remembers, the checkpoints (the live
    // requests), the rest of the walk, the session tails, and the rest.
    const listed = await walkHome(this.home, { onDir, roots: LIST_ROOTS, ...listings });
    let walkMs = performance.now() - walkStart;
    this.homeExists = listed.homeExists;
    if (!listed.homeExists) {
      this.push({ type: 'warnings', file: this.home, warnings: [{ file: this.home, line: null, message: `waiting for ${this.home} (it does not exist yet)`, severity: 'warning' }] });
    }
    const sessions = listed.files.filter((f) => f.kind === 'session').sort((a, b) => b.mtimeMs - a.mtimeMs);
    // In time slices (the sessions the cache remembers, after the list is drawn: on a home of
    // 12 013 sessions, ~100 ms of readers made and primed, which held up a key pressed meanwhile).
    // The list itself in slices of LIST_PRIME_SLICE_MS: on the big home it is ~9 ms, primed in one
    // go (a turn given away there lands on the first frame's path: +12–34 ms to the list, measured
    // 2026-12-05); on a home of 12 013 sessions it was a block of ~130 ms.
    const prime = async (list: readonly FoundFile[], slices: TimeSlices) => {
      for (let i = 0; i < list.length; i++) {
        const f = list[i]!;
        const reader = this.sessionReader(f.file);
        if (reader) this.push({ type: 'session-file', facts: reader.prime(f.size, f.mtimeMs) });
        if (slices.due()) await slices.pause();
      }
    };
    for (let i = 0; i < sessions.length; i++) this.known.set(sessions[i]!.file, { kind: 'session', size: -1, mtimeMs: -1, ino: sessions[i]!.ino });
    await prime(sessions, new TimeSlices(LIST_PRIME_SLICE_MS));
    this.push({ type: 'progress', home: this.home, read: 0, total: sessions.length, done: sessions.length === 0 });
    this.opts.onStage('listed');
    const more = async (roots: readonly WalkRoot[], incidentDirs?: Pick<WalkOptions, 'knownStats' | 'takeDir'>) => {
      const t0 = performance.now();
      const r = listed.homeExists ? await walkHome(this.home, { onDir, roots, top: false, ...listings, ...incidentDirs }) : { files: [], dirs: [], problems: [] };
      walkMs += performance.now() - t0;
      return r;
    };
    // Newest first: the requests running now are drawn before the ones that ended long ago.
    const checkpointsOf = (w: Awaited<ReturnType<typeof more>>) => w.files.filter((f) => f.kind === 'checkpoint').sort((a, b) => b.mtimeMs - a.mtimeMs);
    let live: Awaited<ReturnType<typeof more>> | null = null;
    const drawn = new Set<string>();
    let marked = false;
    const markCheckpoints = () => {
      if (!marked) this.opts.onStage('checkpoints');
      marked = true;
    };
    // The checkpoints drawn with the list, so the first frame shows the live requests' clocks: the
    // ones the cache answers (a stat each, no read) and, newest first, as many others as
    // `checkpointsBeforeList` lets this thread read before the list must be drawn.
    const beforeList = this.opts.checkpointsBeforeList;
    if ((this.cache?.size ?? 0) > 0 || beforeList()) {
      live = await more(LIVE_ROOTS);
      const all = checkpointsOf(live);
      for (let i = 0; i < all.length; i++) {
        const f = all[i]!;
        if (!this.cacheHit(f.file, 'checkpoint', f) && !beforeList()) continue;
        await this.readOne(f.file, 'checkpoint', f);
        drawn.add(f.file);
        await this.breathe();
      }
      if (drawn.size === all.length) markCheckpoints();
    }
    this.releaseList();
    // The frame is drawn before the rest of the cache is loaded (~0.15 s on a big home).
    await this.slices.pause();
    const shown = opts.listShown?.();
    if (opts.afterList || shown) await waitAtMost(Promise.all([opts.afterList, shown]), AFTER_LIST_WAIT_MS);
    if (this.cache) {
      await this.cache.loadRest(() => this.breathe());
      // The sessions the cache knows are shown again, as it remembers them.
      const remembered: FoundFile[] = [];
      for (let i = 0; i < sessions.length; i++) {
        const f = sessions[i]!;
        const entry = this.cache.get(f.file);
        const reader = this.sessions.get(f.file);
        if (!entry || 'k' in entry || !reader) continue;
        reader.offerCache(entry);
        remembered.push(f);
        if (this.slices.due()) await this.slices.pause();
      }
      await prime(remembered, this.slices);
      this.releaseHeldHints();
    }
    live ??= await more(LIVE_ROOTS);
    const checkpoints = checkpointsOf(live).filter((f) => !drawn.has(f.file));
    for (const f of checkpoints) {
      await this.readOne(f.file, 'checkpoint', f);
      await this.breathe();
    }
    markCheckpoints();
    // A warm start drew the checkpoints with the list: what the cache remembers of the sessions
    // waits for the frame of the whole home (~0.3 s later) instead of a frame of its own.
    if (checkpoints.length > 0 || drawn.size === 0) this.flush();

    // What the cache does not answer of the sessions. When that is a lot (a cold start of a big
    // home), a worker thread starts on them now, from the oldest, while this thread walks the rest
    // of the home (not before the checkpoints: it would delay them) and then reads them from the
    // newest; the two take each file in turn (read-claims.ts) and meet wherever the work leaves
    // them. The incidents, lane statuses and receipts the cache does not answer either are handed
    // to the worker after that walk, and it reads those first.
    const uncached = sessions.filter((f) => this.cache?.get(f.file) === undefined);
    let workerSessions: FoundFile[] = [];
    // The slots of the items both threads may read (read-claims.ts): the sessions' (oldest first),
    // and where the small files' begin.
    let claims = null as Int32Array | null;
    let smallSlots = null as { claims: Int32Array; offset: number } | null;
    const readJob = (list: readonly FoundFile[], more: boolean, small: ReadJobInput['items'] = []) => {
      workerSessions = [...list].reverse();
      const buffer = new SharedArrayBuffer(4 * (workerSessions.length + small.length));
      claims = new Int32Array(buffer);
      if (small.length > 0) smallSlots = { claims, offset: workerSessions.length };
      return this.opts.readJob({
        home: this.home,
        items: [...workerSessions.map((f) => ['session', f.file] as ['session', string]), ...small],
        scanMaxBytes: this.opts.startScanBytes,
        incompleteGraceMs: this.opts.incompleteGraceMs,
        more,
        claims: buffer,
      });
    };
    let job = uncached.length >= this.opts.workerMinFiles && uncached.length > 0 ? readJob(uncached, true) : null;
    this.readJob = job;

    const later = await more(
      LATER_ROOTS,
      trustDirs
        ? {
            takeDir: (dir, own) => (isIncidentDir(dir) ? this.takeIncidentDir(dir, own) : null),
            knownStats: (dir, own) => (isIncidentDir(dir) ? this.knownIncidentStats(dir, own) : null),
          }
        : {},
    );
    this.walkMs = walkMs;
    const walk = { files: [...listed.files, ...live.files, ...later.files], dirs: [...listed.dirs, ...live.dirs, ...later.dirs], problems: [...listed.problems, ...live.problems, ...later.problems] };
    // Each step below runs over every file or directory of the home: the loop gets a turn between.
    this.syncWatches(walk.dirs);
    await this.breathe();
    this.pushWalkProblems(walk.problems);
    const horizon = this.opts.now() - ACTIVE_MS;
    for (let i = 0; i < walk.files.length; i++) if (walk.files[i]!.mtimeMs >= horizon) this.markRecent(walk.files[i]!.file, walk.files[i]!.mtimeMs);
    // The cache's entries of files gone since it was written are dropped at its first save, off
    // the start's path (a set of every file of the home: ~18 ms of a warm start of the big home).
    this.prunePending = true;
    await this.breathe();
    const byKind = (k: ArtifactKind) => walk.files.filter((f) => f.kind === k);
    this.lastProgressAt = performance.now();
    // What the cache does not answer: on a big start (at least `workerMinFiles` files) a worker
    // thread reads the oldest share of the session files, then the incidents, lane statuses and
    // receipts, while this thread reads the newest session files (the ones that matter first).
    const small = SMALL_KINDS.flatMap((kind) => byKind(kind).map((f) => ({ kind, f })));
    // Answered without a read here: cache hits now, the worker's reads later. In slices: a home
    // of 12 000 sessions has ~27 000 small files, ~70 ms of cache lookups.
    const answered = new Map<string, SmallFileRead<unknown>>();
    const toRead: typeof small = [];
    for (let i = 0; i < small.length; i++) {
      const { kind, f } = small[i]!;
      const hit = this.cacheHit(f.file, kind, f);
      if (hit) answered.set(f.file, hit);
      else toRead.push(small[i]!);
      if (this.slices.due()) {
        await this.slices.pause();
        if (this.stopped) return;
      }
    }
    await this.breathe();
    const smallItems = toRead.map(({ kind, f }) => [kind, f.file] as [SmallFileKind, string]);
    if (job) {
      const buffer = new SharedArrayBuffer(4 * smallItems.length);
      smallSlots = { claims: new Int32Array(buffer), offset: 0 };
      job.add(smallItems, true, buffer);
    } else if (toRead.length + uncached.length >= this.opts.workerMinFiles) {
      job = readJob(uncached, false, smallItems);
      this.readJob = job;
    }
    // Each shared file's slot (its index among the worker's, which are oldest first).
    const slotOf = new Map(workerSessions.map((f, i) => [f.file, i]));
    /** True when the worker has (or had) `f`: this thread then leaves it, and every older shared one. */
    let workerHasTheRest = false;
    const theWorkers = (f: FoundFile): boolean => {
      const slot = slotOf.get(f.file);
      if (slot === undefined || !claims) return false;
      if (!workerHasTheRest && claimForMain(claims, slot)) return false;
      workerHasTheRest = true;
      return true;
    };

    let read = 0;
    const readSessions = async (list: readonly FoundFile[], skip: (f: FoundFile) => boolean = () => false) => {
      for (let i = 0; i < list.length; i++) {
        const f = list[i]!;
        if (this.stopped) return;
        if (skip(f)) continue;
        await this.readOne(f.file, 'session', f);
        read++;
        if (performance.now() - this.lastProgressAt >= PROGRESS_MS) {
          this.lastProgressAt = performance.now();
          this.push({ type: 'progress', home: this.home, read, total: sessions.length, done: false });
          this.flush();
        }
        await this.breathe();
      }
    };
    await readSessions(sessions, theWorkers);
    if (this.stopped) return;
    this.opts.onStage('tails');
    // The small files the worker has not reached yet: this thread reads them from the last down
    // until it meets the worker (which reads them from the first up), instead of waiting for it.
    if (smallSlots) {
      for (let i = toRead.length - 1; i >= 0 && !this.stopped; i--) {
        if (!claimForMain(smallSlots.claims, smallSlots.offset + i)) break;
        const { kind, f } = toRead[i]!;
        answered.set(f.file, await this.cachedRead(f.file, kind, f, () => SMALL_FILE_READERS[kind](this.home, f.file, f)));
        await this.breathe();
      }
      if (this.stopped) return;
    }
    // The worker's results (null: it failed; everything is then read here).
    const results: ReadJobResult[] = (job ? await job.result : null) ?? [];
    const workerGone = job?.exited;
    if (job) this.opts.onStage('worker');
    this.readJob = null;
    // The shared files this thread did not read: the worker's (or, if it failed, still unread).
    const left = workerSessions.filter((_, i) => claims?.[i] !== CLAIMED_BY_MAIN);
    workerSessions.forEach((f, i) => {
      const r = results[i];
      if (!r || !('entry' in r) || !r.entry) return;
      // Taken as a warm start takes a cache entry: unchanged since, it is not read again.
      this.sessions.get(f.file)?.offerCache(r.entry);
      this.cache?.set(f.file, r.entry);
    });
    // Newest first, as a start on one thread reads them: warnings and state logs reach the model
    // (and the warnings list) in the same order whatever the split.
    await readSessions([...left].reverse());
    if (this.stopped) return;
    toRead.forEach(({ kind, f }, i) => {
      const r = results[workerSessions.length + i];
      if (!r || 'entry' in r) return;
      this.cacheStore(f.file, kind, f, r);
      answered.set(f.file, r);
    });
    await this.applyTakenIncidents();
    if (this.stopped) return;
    for (let i = 0; i < small.length; i++) {
      const { kind, f } = small[i]!;
      if (this.stopped) return;
      const r = answered.get(f.file);
      if (r) this.applySmall(f.file, kind, r, f);
      else await this.readOne(f.file, kind, f);
      await this.breathe();
    }
    // Every file the walk found is answered: the directories' stats and listings hold for the next
    // start (the incident directories' bundles are made once the start is drawn when watching, below).
    const cleanIncidents = this.cleanIncidents;
    this.cleanIncidents = null;
    this.incidentsAnswered = true;
    this.recordListings();
    for (const kind of ['journal', 'ack'] as const) {
      for (const f of byKind(kind)) {
        await this.readOne(f.file, kind, f);
        await this.breathe();
      }
    }
    // The worker thread's exit is the start's last cost (it has answered long before, so it is
    // gone by now unless the machine is busy): done is reported after it, bounded.
    if (workerGone) await waitAtMost(workerGone, WORKER_EXIT_WAIT_MS);
    if (this.stopped) return;
    this.push({ type: 'progress', home: this.home, read, total: sessions.length, done: true });
    await this.probe();
    this.flush();
    if (this.stopped) return;

    if (this.opts.watch) {
      // A backstop sweep at once for the fixed interval (tests rely on it); the watches were set
      // before each directory was listed, so the adaptive sweep waits its time.
      if (this.fixedSweep) await this.reconcile();
      else this.scheduleSweep();
      // Stopped during that sweep: nothing more is begun (stop has not waited for any of it).
      if (this.stopped) return;
      this.periodic = this.periodicTasks();
      // Remember what was read (the incident directories' bundles first: made right after the
      // last batch, in the turns before its frame was drawn, they held up the big home's cold
      // populated frame by ~20 ms), then search the long files' middles in the background.
      this.deepScanning = Promise.resolve(opts.beforeBackground)
        // A failure leaves the incidents' own entries, which the next start reads (not a rejection nobody awaits).
        .then(() => this.recordIncidentDirs(cleanIncidents).catch(() => undefined))
        .then(() => this.saveCache())
        .then(() => this.deepScan());
    } else {
      // A one-shot read searches to the head at once; a file taken from a cache written while a
      // dashboard's search was under way still has its middle to search: searched now.
      for (const [file, reader] of this.sessions) {
        if (reader.unsearchedBytes() === 0) continue;
        const r = await reader.deepen(Infinity);
        this.cacheStale(file);
        if (r.changed) this.push({ type: 'session-file', facts: r.facts });
      }
      this.flush();
      await this.recordIncidentDirs(cleanIncidents);
      await this.saveCache();
    }
  }

  /**
   * Probes, re-checks (or the fixed sweep) and cache saves share one timer, each due only while it
   * has something to do (every wake-up of an idle process costs 1–3.5 ms of CPU here): an idle
   * dashboard whose pi processes are all linked wakes for its minute frame and a backstop every
   * LINKED_PROBE_MS. Made here, not in `startReads`: closures made there would keep that
   * function's whole context (the start's file lists and answers) for as long as they live
   * (see onCacheChange).
   */
  private periodicTasks(): Periodic {
    return new Periodic([
      { dueAt: (last) => this.probeDueAt(last), run: () => this.probe() },
      this.fixedSweep ? { dueAt: (last) => last + this.opts.reconcileMs, run: () => this.reconcile() } : { dueAt: (last) => this.recheckDueAt(last), run: () => this.recheckActive() },
      ...(this.cache ? [{ dueAt: (last: number) => this.cacheSaveDueAt(last), run: () => this.saveCache() }] : []),
    ]);
  }

  /** Yields to the event loop once a slice of work has been done since the last yield. */
  private breathe(): Promise<void> {
    return this.slices.breathe();
  }

  /** The next full sweep, far enough away that sweeping costs under 1/SWEEP_COST of a core. */
  private scheduleSweep(): void {
    if (this.stopped) return;
    const wait = this.opts.sweepMs > 0 ? this.opts.sweepMs : Math.min(SWEEP_MAX_MS, Math.max(SWEEP_MIN_MS, this.walkMs * SWEEP_COST));
    this.sweepTimer = setTimeout(() => {
      this.sweepTimer = null;
      void this.reconcile().finally(() => this.scheduleSweep());
    }, wait);
    this.sweepTimer.unref();
  }

  /**
   * Between full sweeps: stat the files that changed recently (and those whose read failed), the
   * ones a missed event would matter for. A few dozen stats, not a walk of the whole home.
   */
  private async recheckActive(): Promise<void> {
    if (this.stopped) return;
    const now = this.opts.now();
    const horizon = now - ACTIVE_MS;
    // Files changed in the last minute every time; the others of the last ACTIVE_MS every
    // RECHECK_SLOW_EVERY-th time (an idle dashboard beside a hundred quiet sessions then stats a
    // few files every RECHECK_MS instead of all of them).
    const all = performance.now() >= this.recheckAllAt + RECHECK_SLOW_MS - COALESCE_MS;
    if (all) this.recheckAllAt = performance.now();
    const fastHorizon = now - RECENT_FAST_MS;
    const due: string[] = [];
    // Polling stats every file it knows each pollMs: then only the failing ones are re-checked here.
    if (this.backend?.mode !== 'polling') {
      for (const [file, at] of this.recent) {
        if (at < horizon) this.recent.delete(file);
        else if ((all || at >= fastHorizon) && !this.failing.has(file)) due.push(file);
      }
    }
    const turn = recheckTurn(due, this.recheckCursor, RECHECK_MAX_FILES);
    this.recheckCursor = turn.next;
    const files = [...this.failing, ...turn.files];
    this.recheckCount++;
    this.lastRecheckFiles = files.length;
    for (const file of files) {
      const k = this.known.get(file);
      if (!k || k.size < 0) continue;
      // A session file is compared with what its reader last read (known keeps the walk's stat).
      if (k.kind === 'session' && this.sessions.has(file) && !this.failing.has(file)) {
        if (!this.dirty.has(file) && this.mayHaveChanged(file)) {
          this.markRecent(file, this.opts.now());
          this.dirty.set(file, false);
        }
        continue;
      }
      let st: import('node:fs').Stats | undefined;
      try {
        st = statSync(file, { throwIfNoEntry: false });
      } catch {
        st = undefined;
      }
      if (!st || st.size !== k.size || st.mtimeMs !== k.mtimeMs || st.ino !== k.ino || this.failing.has(file)) {
        if (st) this.known.set(file, { kind: k.kind, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
        this.markRecent(file, this.opts.now());
        if (!this.dirty.has(file)) this.dirty.set(file, false);
      }
    }
    if (this.dirty.size > 0) await this.drain();
  }

  /**
   * Searches the long session files before their tail windows for the state entries the start
   * did not find (roots first, newest first), at `deepScanRate`, then remembers the results: a
   * one-time cost per file, as the cache keeps where they were found.
   */
  private async deepScan(): Promise<void> {
    do {
      this.searchAgain = false;
      await this.deepScanPass();
    } while (this.searchAgain && !this.stopped);
    this.searchIdle = true;
  }

  /**
   * A session file read after the first search began — new, or read afresh after a rewrite — whose
   * middle is unsearched is searched too (a pass after the current one, or one of its own): until
   * then its head block's loop state is not shown (session-file.ts pendingBehind).
   */
  private searchLater(): void {
    if (!this.opts.watch || this.stopped || this.deepScanning === null) return;
    if (!this.searchIdle) {
      this.searchAgain = true;
      return;
    }
    this.searchIdle = false;
    this.deepScanning = this.deepScan();
  }

  private async deepScanPass(): Promise<void> {
    const role = (r: SessionFileReader) => (r.facts().role === 'root' ? 0 : 1);
    const order = [...this.sessions.entries()]
      .filter(([, r]) => r.unsearchedBytes() > 0)
      .sort(([a, ra], [b, rb]) => role(ra) - role(rb) || (this.known.get(b)?.mtimeMs ?? 0) - (this.known.get(a)?.mtimeMs ?? 0));
    // How many are left, for the header: on the start's progress clock (at most one every
    // PROGRESS_MS), and the first and the last always.
    const tell = (left: number, now: boolean) => {
      if (!now && performance.now() - this.lastProgressAt < PROGRESS_MS) return;
      this.lastProgressAt = performance.now();
      this.push({ type: 'searching', home: this.home, left });
      this.scheduleFlush();
    };
    if (order.length > 0) tell(order.length, true);
    for (let i = 0; i < order.length; i++) {
      const [file, reader] = order[i]!;
      if (i > 0) tell(order.length - i, false);
      while (!this.stopped && this.sessions.get(file) === reader && reader.unsearchedBytes() > 0) {
        const t0 = performance.now();
        const r = await reader.deepen(DEEP_SCAN_STEP);
        if (this.stopped || this.sessions.get(file) !== reader) break;
        this.cacheStale(file);
        if (r.changed) {
          this.push({ type: 'session-file', facts: r.facts });
          this.scheduleFlush();
        }
        const pause = (r.bytesRead / this.opts.deepScanRate) * 1000 - (performance.now() - t0);
        await new Promise<void>((res) => setTimeout(res, Math.max(1, pause)).unref());
      }
      if (this.stopped) return;
    }
    if (order.length > 0) tell(0, true);
    await this.saveCache();
  }

  /**
   * The cache's save: once nothing it remembers changed for `cacheQuietMs` (a burst of appends is
   * followed by one write soon after, not a write minutes later in an idle stretch), at most every
   * CACHE_SAVE_MS while changes go on; never while nothing changed (no wake-up for it).
   */
  private cacheSaveDueAt(last: number): number | null {
    if (!this.cache || this.cacheClean()) return null;
    return Math.min(last + CACHE_SAVE_MS, Math.max(last, this.cacheChangedAt) + this.opts.cacheQuietMs);
  }

  /** Nothing waits to be written to the cache: no session's entry out of date, no entry changed. */
  private cacheClean(): boolean {
    return this.cacheDirty.size === 0 && !(this.cache?.changed ?? false);
  }

  /** `file`'s cache entry is out of date: it is made and written at the next save. */
  private cacheStale(file: string): void {
    const first = this.cacheClean();
    this.cacheDirty.add(file);
    this.cacheChanged(first);
  }

  /**
   * The cache's callbacks (its change callback, the form an entry is written in). Fields, not
   * arrows made in `startReads`: V8 keeps one context for all of a function's closures, so a
   * callback made there (and kept as long as the cache) kept the whole start's state alive — the
   * walk's file list, the cache's answers for the small files, the worker's results (seen in heap
   * snapshots of the big and wide homes, 12-05).
   */
  private readonly onCacheChange = (wasChanged: boolean): void => this.cacheChanged(!wasChanged && this.cacheDirty.size === 0);
  private readonly compactCacheEntry = (entry: CacheEntry): CacheEntry => compactEntry(entry, this.home);

  /**
   * What the cache remembers changed. The first change since a write gives the save a due time:
   * the background timer is told; later ones only move it later, which its next wake-up sees.
   */
  private cacheChanged(first: boolean): void {
    this.cacheChangedAt = performance.now();
    if (first) this.periodic?.poke();
  }

  /** Writes the cache entries of the sessions that changed since the last save. Never throws. */
  private saveCache(): Promise<void> {
    const cache = this.cache;
    if (!cache) return Promise.resolve();
    if (this.cacheSaving) return this.cacheSaving;
    this.cacheSaving = (async () => {
      for (const file of [...this.cacheDirty]) {
        this.cacheDirty.delete(file);
        const reader = this.sessions.get(file);
        const entry = reader ? await reader.cacheEntry().catch(() => null) : null;
        if (entry) cache.set(file, entry);
        else cache.delete(file);
        await this.breathe();
      }
      if (this.prunePending) {
        this.prunePending = false;
        // What the reader knows now: the walk's files and those found since (gone ones were dropped as seen).
        const keep: string[] = [];
        this.known.forEach((_, file) => keep.push(file));
        this.incidentDirs.forEach((seen, dir) => {
          if (seen) keep.push(dir + path.sep);
        });
        keep.push(...this.listings.keys);
        await cache.retain(keep, this.slices);
      }
      await cache.save();
    })().finally(() => {
      this.cacheSaving = null;
      // Changes made while it ran (or a write that failed) are the next save's, whoever ran this one.
      if (!this.cacheClean()) this.periodic?.poke();
    });
    return this.cacheSaving;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.periodic?.stop();
    this.periodic = null;
    this.links.stop();
    for (const t of this.closeProbes) clearTimeout(t);
    this.closeProbes.clear();
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    this.sweepTimer = null;
    for (const t of this.incompleteTimers.values()) clearTimeout(t);
    this.incompleteTimers.clear();
    if (this.reconcileKick) clearTimeout(this.reconcileKick);
    this.reconcileKick = null;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.readJob?.stop();
    this.backend?.close();
    this.backend = null;
    await this.working;
    await this.deepScanning;
    await this.saveCache();
    // A start stopped before it loaded the rest of the cache leaves it unloaded (and unwritten).
    this.cache?.close();
    this.releaseList();
    this.flush();
  }

  /**
   * Nothing is being read and nothing is due to be soon: no changed path waiting, no read in
   * progress, no re-check after a read to come, no reconcile kicked, no batch waiting to be sent.
   * (The periodic jobs and the sweep are not counted: they are always due some time.) For tests
   * that count what a change cost once all its follow-ups are done.
   */
  settled(): boolean {
    return this.working === null && this.dirty.size === 0 && this.pendingRechecks === 0 && this.reconcileKick === null && this.flushTimer === null;
  }

  /** Resolves when the one-time background work after `start` (the incident directories' bundles, the first cache write, the search before the tails) is done. */
  async background(): Promise<void> {
    await this.deepScanning;
  }

  /** Per-file bookkeeping counts (diagnostics; RELIABILITY B4 checks they return to baseline). */
  stats(): HomeReaderStats {
    return {
      files: this.known.size,
      readers: this.sessions.size + this.stateLogs.size,
      perFile: this.lineWarnings.size + this.invalidSince.size + this.lastEmitted.size + this.failing.size + this.incompleteTimers.size + this.shownWarnings.size,
      watchedDirs: this.backend?.dirs().length ?? 0,
      mode: this.backend?.mode ?? null,
      links: this.links.size,
      periodicWakeUps: this.periodic?.wakeUps ?? 0,
      rechecks: this.recheckCount,
      lastRecheckFiles: this.lastRecheckFiles,
      sweeps: this.sweepCount,
      probes: this.probeCount,
    };
  }

  /** Marks a path as possibly changed (from the watcher, or a test). */
  hint(file: string): void {
    if (this.stopped) return;
    const resolved = path.resolve(file);
    this.markRecent(resolved, this.opts.now());
    this.dirty.set(resolved, true);
    void this.drain();
  }

  /**
   * Files seen changing in the last ACTIVE_MS (by mtime at the walk, a hint, or a sweep), with
   * when: the 5 s re-check stats these, not every file of the home.
   */
  private readonly recent = new Map<string, number>();

  /** Notes that `file` changed at `at`; a first recent file after a quiet spell makes the re-check due. */
  private markRecent(file: string, at: number): void {
    this.recent.set(file, at);
    if (at <= this.recentNewest) return;
    // A future mtime counts as now (else the fast tier would stay due until that time).
    const now = this.opts.now();
    if (at > now) at = now;
    if (at > this.recentNewest) {
      const wasFast = this.recentNewest >= now - RECENT_FAST_MS;
      this.recentNewest = at;
      if (!wasFast) this.periodic?.poke();
    }
  }

  /** The re-check: every RECHECK_MS while files changed in the last minute (or reads fail), every RECHECK_SLOW_EVERY-th while only older ones remain, never when none changed in ACTIVE_MS; under polling only while reads fail. */
  private recheckDueAt(last: number): number | null {
    if (this.failing.size > 0) return last + RECHECK_MS;
    if (this.backend?.mode === 'polling') return null; // it stats every file it knows each pollMs
    if (this.recentNewest >= this.opts.now() - RECENT_FAST_MS) return last + RECHECK_MS;
    if (this.recent.size > 0) return this.recheckAllAt + RECHECK_SLOW_MS;
    return null;
  }

  /** Probes every `probeMs` while a pid has no link, every LINKED_PROBE_MS when all do, never without pids. */
  private probeDueAt(last: number): number | null {
    if (this.pids.size === 0) return null;
    for (const pid of this.pids) if (!this.links.isLinked(pid)) return last + this.opts.probeMs;
    return last + LINKED_PROBE_MS;
  }

  /**
   * A link came up (fewer probes due) or closed: its process most likely ended — probe it now, and
   * again shortly while it still looks alive (the kernel closes a dying process's sockets before
   * the process is gone), then at the unlinked pace.
   */
  private onLinkChange(pid: number, closed: boolean): void {
    if (this.stopped) return;
    if (closed) this.probeAfterClose(pid, 0);
    else if (this.pids.has(pid) && this.probeOne(pid, this.opts.now())) this.scheduleFlush(); // now linked: shown
    this.periodic?.poke();
  }

  private readonly closeProbes = new Set<NodeJS.Timeout>();
  private probeAfterClose(pid: number, step: number): void {
    if (this.stopped || !this.pids.has(pid)) return;
    if (this.probeOne(pid, this.opts.now())) this.scheduleFlush();
    const wait = CLOSE_PROBE_MS[step];
    if (wait === undefined || !this.pids.has(pid) || this.links.isLinked(pid)) return;
    const t = setTimeout(() => {
      this.closeProbes.delete(t);
      this.probeAfterClose(pid, step + 1);
    }, wait);
    t.unref();
    this.closeProbes.add(t);
  }

  private startWatcher(dirs: { dir: string; ino: number }[]): void {
    const sink = { changed: (file: string) => this.hint(file), failed: () => undefined, paced: (ms: number) => this.onPaced(ms) };
    const opts = { polling: this.opts.polling, pollMs: this.opts.pollMs, files: () => this.stamps(), now: this.opts.now };
    // Forced polling (`--poll`) polls everything; otherwise native watches, and past the inotify
    // limit the refused directories alone are polled (FallbackBackend).
    const backend = this.opts.polling ? this.opts.watchFactory(sink, opts) : new FallbackBackend(this.opts.watchFactory, sink, opts, (err) => this.onWatchRefused(err), () => this.onWatchRecovered());
    this.backend = backend;
    this.watching = { mode: this.opts.polling ? 'polling' : 'native', cause: this.opts.polling ? 'forced' : null, quietEveryMs: null };
    this.pushWatchMode();
    this.syncWatches(dirs);
  }

  /** What the banner says of the watching: its mode, the cause, and how often the sweep looks at quiet entries (null: every sweep). */
  private watching: { mode: 'native' | 'polling' | 'degraded'; cause: string | null; quietEveryMs: number | null } = { mode: 'native', cause: null, quietEveryMs: null };

  // The banner reads "file watching degraded - polling every N s (<detail>)": the detail is the
  // cause, and when the quiet entries take turns (PollingBackend), how often each is looked at.
  private pushWatchMode(): void {
    const w = this.watching;
    const turns = w.quietEveryMs !== null && w.quietEveryMs > this.opts.pollMs;
    const quiet = turns ? `files unchanged for ${Math.round(POLL_QUIET_MS / 60_000)} min: every ${Math.round(w.quietEveryMs! / 1000)} s` : null;
    const detail = [w.cause, quiet].filter((x) => x !== null).join('; ');
    this.push({ type: 'watch-mode', mode: w.mode, detail: detail === '' ? null : detail, everyMs: this.opts.pollMs });
  }

  /** The polling sweep now looks at each quiet entry every `ms` (PollingBackend). */
  private onPaced(ms: number): void {
    if (this.stopped) return;
    this.watching.quietEveryMs = ms;
    this.pushWatchMode();
    this.flush();
  }

  /** Watches exactly the walked directories (re-watching a recreated one) plus the state logs' directories. */
  private syncWatches(dirs: { dir: string; ino: number }[]): void {
    const backend = this.backend;
    if (!backend) return;
    const want = new Set<string>();
    for (let i = 0; i < dirs.length; i++) {
      const d = dirs[i]!;
      want.add(d.dir);
      backend.addDir(d.dir, d.ino);
    }
    for (const file of this.stateLogs.keys()) {
      want.add(path.dirname(file));
      backend.addDir(path.dirname(file));
    }
    for (const dir of backend.dirs()) if (!want.has(dir)) backend.removeDir(dir);
  }

  /** The polling backend's view of what we know: path and the stat our last read was based on. */
  private *stamps(): Iterable<[string, FileStamp]> {
    // Size -1: listed, not read yet; the initial load reads it (and a hint would read it twice).
    for (const [file, k] of this.known) if (k.size >= 0) yield [file, k];
  }

  /** The kernel refused a watch (ENOSPC: no inotify watches left; EMFILE): say so (the directories without a watch are polled: FallbackBackend). */
  private onWatchRefused(err: NodeJS.ErrnoException): void {
    if (this.stopped) return;
    const code = err.code ?? 'error';
    const why = code === 'ENOSPC' ? 'ENOSPC: no inotify watches left' : code === 'EMFILE' ? 'EMFILE: too many open files' : code;
    this.watching = { ...this.watching, mode: 'degraded', cause: why };
    this.pushWatchMode();
    this.flush();
    // A watch that failed while running (not before its directory was listed) may have missed a change.
    this.kickReconcile();
  }

  /** Every directory has a native watch again (FallbackBackend.rebalance): the banner goes. */
  private onWatchRecovered(): void {
    if (this.stopped) return;
    this.watching = { mode: 'native', cause: null, quietEveryMs: null };
    this.pushWatchMode();
    this.flush();
  }

  private kickReconcile(): void {
    if (this.reconcileKick || this.stopped) return;
    this.reconcileKick = setTimeout(() => {
      this.reconcileKick = null;
      void this.reconcile();
    }, this.opts.recheckMs);
    this.reconcileKick.unref();
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
          if (kind === 'session' && this.holdsForCache(file)) continue;
          if (kind) await this.readOne(file, kind);
          else await this.maybeDirectory(file);
        }
        this.scheduleFlush();
        // Re-check once a little later: a write can land between our read and the event that signals it.
        // (Not a file held for the cache's entries: it was not read, and is read once they are offered.)
        const again = batch.filter(([f, recheck]) => {
          const k = this.known.get(f)?.kind;
          return recheck && (k === 'session' || k === 'state-log' || k === 'journal' || k === 'checkpoint') && !this.heldForCache?.has(f);
        });
        if (again.length) {
          this.pendingRechecks++;
          const t = setTimeout(() => {
            this.pendingRechecks--;
            for (const [f] of again) if (!this.dirty.has(f) && this.mayHaveChanged(f)) this.dirty.set(f, false);
            if (this.dirty.size > 0) void this.drain();
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

  /**
   * For a re-check: false when a session file still has the size and mtime its reader last saw
   * (one stat instead of a read; at 100 appends/s the re-checks are half the polls).
   */
  private mayHaveChanged(file: string): boolean {
    const reader = this.sessions.get(file);
    if (!reader) return true;
    const seen = reader.facts();
    try {
      const st = statSync(file, { bigint: true, throwIfNoEntry: false });
      return !st || Number(st.size) !== seen.size || msFromNs(st.mtimeNs) !== seen.mtimeMs;
    } catch {
      return true;
    }
  }

  /** A hint for a path that is no artifact: a directory appearing or going away means a sweep. */
  private async maybeDirectory(p: string): Promise<void> {
    if (isTempName(path.basename(p))) return;
    if (relativeInside(this.home, p) === null) return;
    if (this.backend?.has(p)) return this.kickReconcile(); // a watched directory changed or went
    const st = await fsp.lstat(p).catch(() => null);
    if (st?.isDirectory()) this.kickReconcile();
  }

  private kindOf(file: string): Known['kind'] | null {
    if (this.stateLogs.has(file)) return 'state-log';
    // A path's artifact kind is a function of the path alone (classifyPath): a known file's kind is
    // its classification, but for a state log, which only the root's report makes one. At 100
    // appends/s this is one map lookup per event instead of splitting the path each time.
    const known = this.known.get(file)?.kind;
    if (known !== undefined && known !== 'state-log') return known;
    return classifyPath(this.home, file);
  }

  /** Reads one file and queues what changed. Never throws. */
  private async readOne(file: string, kind: Known['kind'], found?: FoundFile): Promise<void> {
    try {
      switch (kind) {
        case 'session':
          return await this.readSession(file, found);
        case 'checkpoint':
          return await this.readCheckpoint(file, found);
        case 'incident':
        case 'lane-status':
        case 'receipt':
          return this.applySmall(file, kind, await this.cachedRead(file, kind, found, () => SMALL_FILE_READERS[kind](this.home, file, found)), found);
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
          const r = this.stateLogFromCache(file, reader) ?? (await reader.update());
          if (r.events.length || r.reset) this.push({ type: 'state-log', file, events: r.events, reset: r.reset });
          this.pushLineWarnings(file, r.warnings, r.reset);
          this.cacheStateLog(file, reader);
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

  /** What a read of an incident, lane status or receipt found, into events (also for the worker's reads). */
  private applySmall(file: string, kind: SmallFileKind, r: SmallFileRead<unknown>, found?: FoundFile): void {
    if (r.missing) {
      const removed: ReaderEvent =
        kind === 'incident' ? { type: 'incident-removed', file } : kind === 'lane-status' ? { type: 'lane-status-removed', file } : { type: 'receipt-removed', file };
      return this.forget(file, removed);
    }
    // An incident caught mid-write stays unread until its grace ends (B9).
    if (kind === 'incident' && r.transient && !r.record && this.withinGrace(file, r.mtimeMs)) return this.retryLater(file);
    if (kind === 'incident') this.invalidSince.delete(file);
    // One notification per record (B9): a re-read of the same content is not a new one.
    if (r.record && this.isNews(file, r.record)) {
      if (kind === 'incident') this.push({ type: 'incident', record: r.record as IncidentRecord });
      else if (kind === 'lane-status') this.push({ type: 'lane-status', status: r.record as LaneRunStatus });
      else this.push({ type: 'receipt', receipt: r.record as WatcherReceipt });
    }
    // Still empty or cut off past its grace: said (a cut-off one names its line; an empty one was silent).
    const warnings =
      kind === 'incident' && r.transient && !r.record && r.warnings.length === 0
        ? [fileWarning(file, this.opts.watch ? 'incident file is empty (past the grace a writer gets to finish it)' : 'incident file is empty (or being written)', 'warning')]
        : r.warnings;
    this.push({ type: 'warnings', file, warnings });
    this.noteFailure(file, warnings);
    this.remember(file, kind, found);
  }

  /** Session files whose removal notice is shown, oldest first (see readSession). */
  private readonly removedNotices = new Set<string>();

  private async readSession(file: string, found?: FoundFile): Promise<void> {
    const reader = this.sessionReader(file);
    if (!reader) return;
    const r = await reader.update(found);
    if (r.gone) {
      this.sessions.delete(file);
      this.cacheDirty.delete(file);
      this.cache?.delete(file);
      this.forget(file, { type: 'session-file-removed', file });
      // Said, not only done (RELIABILITY B4): a notice for the gone file — unless the whole home
      // went, which the home's own "waiting for" says once. The last REMOVED_NOTICES are kept; an
      // older one is cleared, so months of archived lanes do not pile up (nor does memory).
      if (await exists(this.home)) {
        this.push({ type: 'warnings', file, warnings: [{ file, line: null, message: 'removed: the session file is gone (archived or deleted); its session is shown from its checkpoint, if it has one', severity: 'warning' }] });
        this.removedNotices.delete(file);
        this.removedNotices.add(file);
        for (const old of this.removedNotices) {
          if (this.removedNotices.size <= REMOVED_NOTICES) break;
          this.removedNotices.delete(old);
          if (this.shownWarnings.delete(old)) this.buffer.push({ type: 'warnings', file: old, warnings: [] });
        }
      }
      return;
    }
    this.removedNotices.delete(file);
    // A file resumed from the cache with nothing appended: its entry is still right.
    if (r.fromCache ? r.bytesRead > 0 : r.changed) this.cacheStale(file);
    if (r.changed) this.push({ type: 'session-file', facts: r.facts });
    this.push({ type: 'warnings', file, warnings: r.warnings });
    if (r.error !== null) this.failing.add(file);
    else this.failing.delete(file);
    this.watchIncomplete(file, r.facts.incompleteSince);
    this.remember(file, 'session', found);
    if (reader.unsearchedBytes() > 0) this.searchLater();
    const report = r.facts.continuation?.launch?.report;
    if (report && r.facts.role === 'root') await this.followStateLog(report, r.facts.header?.cwd ?? null);
  }

  /**
   * A small file read through the cache: during a walk-driven read (`found`: its size, mtime and
   * inode) a file unchanged since an earlier run is not read again; a clean read is remembered.
   */
  private async cachedRead<T>(file: string, kind: ArtifactKind, found: FoundFile | undefined, read: () => Promise<SmallFileRead<T>>): Promise<SmallFileRead<T>> {
    const hit = this.cacheHit<T>(file, kind, found);
    if (hit) return hit;
    const r = await read();
    this.cacheStore(file, kind, found, r);
    return r;
  }

  /** The cached record of a small file whose walk stat (size, mtime, inode) is the one it was cached with. */
  private cacheHit<T>(file: string, kind: ArtifactKind, found: FoundFile | undefined): SmallFileRead<T> | null {
    if (!found) return null;
    const c = this.cache?.get(file);
    // An incident without an entry of its own may be in its directory's bundle.
    if (c === undefined && kind === 'incident') return this.bundleHit(file, found) as SmallFileRead<T> | null;
    if (!isEntry(c, 'small') || c.kind !== kind || c.size !== found.size || c.mtimeMs !== found.mtimeMs || c.ino !== found.ino) return null;
    // Written with its file and home empty (the key says them: withoutFileAndHome): they are set
    // in the record as deserialised (not in a copy: a warm start of a big home takes ~2 200
    // records from the cache), which the cache and the model then share.
    const record = c.record as { file?: string; home?: string };
    if (record.file !== file) {
      record.file = file;
      record.home = this.home;
      if (c.homeOmitted) {
        expandHomePaths(kind, c.record, c.homeOmitted, this.home);
        c.homeOmitted = 0;
      }
    }
    if (kind === 'incident') this.cleanIncidents?.set(file, { found, record: c.record });
    return { record: c.record as T, warnings: [], missing: false, transient: false, mtimeMs: found.mtimeMs };
  }

  /**
   * The record of an incident its directory's bundle holds with the walk stat `found` (the
   * directory changed since it was recorded, so its files were listed and stat'ed, but most of
   * them are the files they were), or null.
   */
  private bundleHit(file: string, found: FoundFile): SmallFileRead<IncidentRecord> | null {
    const cut = file.lastIndexOf(path.sep);
    const key = file.slice(0, cut + 1);
    const bundle = bundleOf(this.cache?.get(key));
    if (!bundle) return null;
    let look = this.bundleLookups.get(key);
    if (look?.bundle !== bundle) {
      const index = new Map<string, number>();
      for (let i = 0; i < bundle.names.length; i++) index.set(bundle.names[i]!, i);
      look = { bundle, index, parts: [] };
      this.bundleLookups.set(key, look);
    }
    const i = look.index.get(file.slice(cut + 1));
    if (i === undefined || bundle.size[i] !== found.size || bundle.mtimeMs[i] !== found.mtimeMs || bundle.ino[i] !== found.ino) return null;
    const j = Math.floor(i / BUNDLE_PART);
    if (look.parts[j] === undefined) look.parts[j] = bundleRecords(bundle, j);
    const records = look.parts[j];
    if (!records) return null;
    const record = records[i - j * BUNDLE_PART] as unknown as IncidentRecord;
    record.file = file;
    record.home = this.home;
    this.cleanIncidents?.set(file, { found, record });
    return { record, warnings: [], missing: false, transient: false, mtimeMs: found.mtimeMs };
  }

  /**
   * A start's walk of `incidents/`: a directory the cache records unchanged with a bundle (same
   * inode and ctime: no file in it created, removed or renamed since, and each one had a clean
   * read) is taken whole from it — its subdirectories, and its incidents applied from the bundle
   * once the walk is over (applyTakenIncidents) — without listing it, stat'ing its files or an
   * object per file on the way. Incident files are written in one go and not rewritten (SPEC
   * §3.2); one rewritten in place while the dashboard was closed is found by the first backstop
   * sweep, which stats every file (`reconcile`), and one rewritten while it runs takes the trust
   * from its directory's bundle (untrustBundle).
   */
  private takeIncidentDir(dir: string, own: Stats): readonly string[] | null {
    const bundle = trustedBundle(this.cache?.get(dir + path.sep), own);
    if (!bundle) return null;
    this.incidentDirs.set(dir, { k: 'dir', ino: own.ino, ctimeMs: own.ctimeMs });
    this.takenIncidentDirs.push({ dir, bundle });
    this.trustedBundleDirs.add(dir + path.sep);
    return bundle.dirs;
  }

  /** The incidents of the directories taken from their bundles, as a read of each would give them; a part of records per slice. */
  private async applyTakenIncidents(): Promise<void> {
    const taken = this.takenIncidentDirs;
    this.takenIncidentDirs = [];
    const horizon = this.opts.now() - ACTIVE_MS;
    for (let d = 0; d < taken.length; d++) {
      const { dir, bundle } = taken[d]!;
      const prefix = dir + path.sep;
      for (let j = 0; j * BUNDLE_PART < bundle.names.length; j++) {
        const records = bundleRecords(bundle, j);
        if (!records) {
          await this.readTakenDirAfresh(dir);
          break;
        }
        for (let k = 0; k < records.length; k++) {
          const i = j * BUNDLE_PART + k;
          const file = prefix + bundle.names[i]!;
          // Read meanwhile (a watcher's hint): what was read then is newer than the bundle.
          if (this.touchedIncidents?.has(file)) continue;
          const record = records[k] as unknown as IncidentRecord;
          record.file = file;
          record.home = this.home;
          this.lastEmitted.set(file, record);
          this.push({ type: 'incident', record });
          const mtimeMs = bundle.mtimeMs[i]!;
          this.known.set(file, { kind: 'incident', size: bundle.size[i]!, mtimeMs, ino: bundle.ino[i]! });
          if (mtimeMs >= horizon) this.markRecent(file, mtimeMs);
        }
        await this.breathe();
        if (this.stopped) return;
      }
    }
  }

  /**
   * A directory taken from a bundle that turned out damaged (a part of its records would not
   * deserialise): its bundle dropped, its incidents read as a start without a cache reads them
   * (those already applied from the bundle's good parts are not news again), and not recorded.
   */
  private async readTakenDirAfresh(dir: string): Promise<void> {
    this.cache?.delete(dir + path.sep);
    this.incidentDirs.set(dir, null);
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (let i = 0; i < names.length; i++) {
      const file = dir + path.sep + names[i]!;
      if (classifyPath(this.home, file) !== 'incident') continue;
      let st;
      try {
        st = statSync(file, { throwIfNoEntry: false });
      } catch {
        continue;
      }
      if (!st?.isFile()) continue;
      await this.readOne(file, 'incident', { kind: 'incident', file, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
      await this.breathe();
      if (this.stopped) return;
    }
  }

  /**
   * An incident read (or found unreadable) while the dashboard runs: its directory's bundle, if it
   * has one, is no longer trusted as a whole by the next start (its ctime did not change if the
   * file was rewritten in place), but still answers for its other files' stats (bundleHit).
   */
  private untrustBundle(file: string, found: FoundFile | undefined): void {
    const key = file.slice(0, file.lastIndexOf(path.sep) + 1);
    // A read after the start answered its incidents, or one without a walk stat (a watcher's, a
    // sweep's) at any time: what the start found of the file may be older than what was read.
    if (this.incidentsAnswered || !found) {
      this.touchedIncidents?.add(file);
      this.cleanIncidents?.delete(file);
    }
    // Only a bundle this process took whole or made can be trusted by the next start (any other
    // is of a directory changed since, or dropped by the first save: polling): no lookup per
    // incident read of a cold start.
    if (!this.trustedBundleDirs.has(key)) return;
    const entry = this.cache?.get(key);
    if (isEntry(entry, 'dir') && entry.bundle !== undefined && entry.ctimeMs !== -1) this.cache!.set(key, { ...entry, ctimeMs: -1 });
  }

  /**
   * A start's walk of `incidents/`: in a directory unchanged since the cache recorded it (same
   * inode and ctime: creating, removing or renaming a file there changes its ctime), an incident
   * file the cache holds a clean read of takes its stat from the cache, not from a stat call
   * (the big home's 5 000 incidents: ~5–9 µs each, plus the Stats object). The directory is still
   * listed, so a name the cache does not know is stat'ed and read. Incident files are written in
   * one go and not rewritten (SPEC §3.2); one rewritten in place while the dashboard was closed is
   * found by the first backstop sweep, which stats every file (`reconcile`).
   * The directory's stat is recorded once the start has answered every file in it
   * (`recordIncidentDirs`), and only when its last change is RACY_DIR_MS old: a change within the
   * same tick of the file system's clock would leave its ctime as recorded.
   */
  private knownIncidentStats(dir: string, own: Stats): KnownStat | null {
    const cache = this.cache;
    if (!cache) return null;
    this.incidentDirs.set(dir, own.ctimeMs < this.opts.now() - RACY_DIR_MS ? { k: 'dir', ino: own.ino, ctimeMs: own.ctimeMs } : null);
    return cachedIncidentStats(dir, own, (file) => cache.get(file));
  }

  /**
   * Records the incident directories the start walked (see takeIncidentDir, knownIncidentStats):
   * one whose every incident had a clean read with its bundle of them (their own entries then
   * dropped); one whose stat is not recorded is forgotten, and the clean reads in a directory
   * without a bundle (some may have come from its old one) each get an entry of their own.
   */
  private async recordIncidentDirs(clean: Map<string, { found: FoundFile; record: unknown }> | null): Promise<void> {
    const cache = this.cache;
    const touched = this.touchedIncidents ?? new Set<string>();
    this.bundleLookups.clear();
    if (!cache || !clean) return;
    const cleanByDir = new Map<string, string[]>();
    clean.forEach((_, file) => {
      const dir = file.slice(0, file.lastIndexOf(path.sep));
      const list = cleanByDir.get(dir);
      if (list) list.push(file);
      else cleanByDir.set(dir, [file]);
    });
    for (const [dir, seen] of this.incidentDirs) {
      const key = dir + path.sep;
      const was = cache.get(key);
      const old = bundleOf(was);
      if (seen && isRecordedDir(was, seen) && old) continue;
      const listing = this.incidentListings.get(dir);
      const files = seen && listing ? listing.files.map((name) => ({ name, read: clean.get(key + name) })) : [];
      if (seen && listing && files.every((f) => f.read)) {
        const bundle = await makeBundle(
          listing.dirs,
          files.map(({ name, read }) => ({ name, size: read!.found.size, mtimeMs: read!.found.mtimeMs, ino: read!.found.ino, record: read!.record })),
          () => this.breathe(),
        );
        // Not given up when stopped meanwhile: a quit soon after a start (stop waits for this)
        // still leaves the next start its bundles.
        // A file of it read since the start answered them (rewritten in place?): not to be trusted whole (untrustBundle).
        const readSince = [...touched].some((file) => file.startsWith(key) && !file.includes(path.sep, key.length));
        cache.set(key, readSince ? { ...seen, ctimeMs: -1, bundle } : { ...seen, bundle });
        this.trustedBundleDirs.add(key);
        for (let i = 0; i < files.length; i++) cache.delete(key + files[i]!.name);
        continue;
      }
      // Taken whole, then a file of it read while the dashboard ran: its bundle is kept, not
      // trusted whole (the next start lists the directory, and the bundle answers by stat).
      if (seen && old && !this.incidentListings.has(dir)) {
        cache.set(key, { ...seen, ctimeMs: -1, bundle: old });
        continue;
      }
      // No bundle now: each clean read (those the old bundle answered among them) in an entry of
      // its own — not one read again since (what the start found of it may be older).
      const reads = cleanByDir.get(dir) ?? [];
      for (let i = 0; i < reads.length; i++) {
        const file = reads[i]!;
        if (touched.has(file)) continue;
        const { found, record } = clean.get(file)!;
        if (cache.get(file) === undefined) cache.set(file, { k: 'small', kind: 'incident', size: found.size, mtimeMs: found.mtimeMs, ino: found.ino, record });
      }
      if (!seen) cache.delete(key);
      else if (!isRecordedDir(was, seen) || (isEntry(was, 'dir') && was.bundle !== undefined)) cache.set(key, seen);
    }
    this.incidentListings.clear();
    this.touchedIncidents = null;
  }

  /** Records the listings the start's walk found (see dir-listings.ts), once every file it found is answered. */
  private recordListings(): void {
    const cache = this.cache;
    if (!cache) return;
    for (const [key, tree] of this.listings.trees()) {
      if (tree) cache.set(key, tree);
      else cache.delete(key);
    }
  }

  /**
   * A state log's first read, answered by the cache when the file is the same file (device and
   * inode), of the size it was read to and with the mtime it had then: nothing appended since.
   * A start of the big home read 210 logs (2 228 lines, ~350 KB; parsed and validated) in ~20–30 ms.
   * Anything else is read in full, as without a cache.
   */
  private stateLogFromCache(file: string, reader: StateLogReader): Awaited<ReturnType<StateLogReader['update']>> | null {
    const c = reader.started ? undefined : this.cache?.get(file);
    // An entry saved without the bytes before its offset (an older build) is read afresh instead.
    if (!isEntry(c, 'log') || typeof c.tail !== 'string') return null;
    let st;
    try {
      st = statSync(file, { throwIfNoEntry: false });
    } catch {
      return null;
    }
    if (!st?.isFile() || `${st.dev}:${st.ino}` !== c.identity || st.size !== c.offset || st.mtimeMs !== c.mtimeMs) return null;
    const events = c.lines.map((line, i) => stateLogEventOf(file, line, c.raws[i]!));
    return { events: reader.adopt(c, events), reset: false, missing: false, warnings: [] };
  }

  /** What a state log's reader has read, into the cache (or out of it, when there is nothing to keep). */
  private cacheStateLog(file: string, reader: StateLogReader): void {
    const cache = this.cache;
    if (!cache) return;
    const now = reader.remembered();
    if (!now) return cache.delete(file);
    const was = cache.get(file);
    if (isEntry(was, 'log') && was.identity === now.identity && was.offset === now.offset && was.mtimeMs === now.mtimeMs && was.tail === now.tail && was.lines.length === now.events.length) return;
    const { events, ...at } = now;
    cache.set(file, { k: 'log', ...at, lines: events.map((e) => e.line), raws: events.map((e) => e.raw) });
  }

  /**
   * A clean read is remembered with the walk's stat; anything else forgotten. A read on a hint or a
   * sweep has no walk stat to remember it with: the entry stays, to be checked against the next
   * start's stat — but an incident's is forgotten, since a start takes its stat from the cache while
   * its directory is unchanged (knownIncidentStats), so the next start stats the file and reads it.
   */
  private cacheStore(file: string, kind: ArtifactKind, found: FoundFile | undefined, r: SmallFileRead<unknown>): void {
    const cache = this.cache;
    if (!cache) return;
    if (kind === 'incident') this.untrustBundle(file, found);
    if (!found) {
      if (kind === 'incident') cache.delete(file);
      return;
    }
    if (r.record && r.warnings.length === 0 && !r.transient) {
      cache.set(file, { k: 'small', kind, size: found.size, mtimeMs: found.mtimeMs, ino: found.ino, record: r.record });
      if (kind === 'incident') this.cleanIncidents?.set(file, { found, record: r.record });
    } else cache.delete(file);
  }

  /** The reader of a session file (made on first use, with what the cache remembers), or null for a path that is no session. */
  private sessionReader(file: string): SessionFileReader | null {
    let reader = this.sessions.get(file);
    if (!reader) {
      const pathInfo = parseSessionPath(this.home, file);
      if (!pathInfo) return null;
      const entry = this.cache?.get(file);
      const cached = entry && !('k' in entry) ? entry : undefined;
      reader = new SessionFileReader(this.home, file, {
        pathInfo,
        now: this.opts.now,
        counter: this.opts.counter,
        incompleteGraceMs: this.opts.incompleteGraceMs,
        scanMaxBytes: this.opts.startScanBytes,
        ...(cached ? { cached } : {}),
      });
      this.sessions.set(file, reader);
    }
    return reader;
  }

  /**
   * The launch reports whose state log is followed: a root's report is the same at each append to
   * it, and its state log stays in `stateLogs` for the reader's life, so the path is worked out
   * once per report (at 100 appends/s it was ~2 % of the main thread's work, 12-04).
   */
  private readonly followedReports = new Set<string>();

  private async followStateLog(report: string, cwd: string | null): Promise<void> {
    const key = path.isAbsolute(report) ? report : `${cwd ?? ''}\0${report}`;
    if (this.followedReports.has(key)) return;
    this.followedReports.add(key);
    const file = stateLogOfRoot(report, cwd);
    if (file === null || this.stateLogs.has(file)) return;
    this.stateLogs.set(file, new StateLogReader(file));
    this.backend?.addDir(path.dirname(file));
    await this.readOne(file, 'state-log');
  }

  private async readCheckpoint(file: string, found?: FoundFile): Promise<void> {
    const r = await this.cachedRead(file, 'checkpoint', found, () => readCheckpointFile(this.home, file, found));
    if (r.missing) {
      this.invalidSince.delete(file);
      return this.forget(file, { type: 'checkpoint-removed', file });
    }
    this.noteFailure(file, r.warnings);
    if (r.record) {
      this.invalidSince.delete(file);
      this.push({ type: 'checkpoint', record: r.record });
      this.push({ type: 'warnings', file, warnings: r.warnings });
    } else if (this.withinGrace(file, r.mtimeMs)) {
      // Keep the last good value through a non-atomic rewrite; complain only if it stays bad.
      this.retryLater(file);
    } else {
      const warnings: Warning[] = r.warnings.length ? r.warnings : [{ file, line: null, message: 'checkpoint is empty or incomplete' }];
      this.push({ type: 'warnings', file, warnings });
    }
    this.remember(file, 'checkpoint');
  }

  private async loadSettings(): Promise<void> {
    const p = homePaths(this.home);
    // Known as read (stat first: a change after it is a change to a sweep): one found missing is
    // forgotten, so its return — even the same file with the same size, mtime and inode, moved
    // out and back, or the whole home — is new to a sweep.
    // stat, as the walk does: a settings.json linked from a dotfiles repository is a file here too.
    const stats = await Promise.all([p.settings, p.models].map((file) => fsp.stat(file).then((st) => ({ file, st }), () => ({ file, st: null }))));
    const r = await readHomeSettings(this.home);
    for (const { file, st } of stats) {
      if (st?.isFile()) this.known.set(file, { kind: 'settings', size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
      else this.known.delete(file);
    }
    this.push({ type: 'settings', settings: r.settings });
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

  /**
   * True while a file has been unparseable for less than the writer's grace period. A file that
   * changed since (still being written, B9) starts the grace again: only a file that stays bad
   * and unchanged for the whole period becomes an error.
   */
  private withinGrace(file: string, mtimeMs: number | null): boolean {
    if (!this.opts.watch) return false; // a one-shot read has no later look: report now
    const now = this.opts.now();
    const prev = this.invalidSince.get(file);
    const since = prev && prev.mtimeMs === mtimeMs ? prev.since : now;
    this.invalidSince.set(file, { since, mtimeMs });
    return now - since < CHECKPOINT_GRACE_MS;
  }

  /** A file that could not be opened or read is tried again at every sweep (a chmod back, B10). */
  private noteFailure(file: string, warnings: Warning[]): void {
    if (warnings.some((w) => /^cannot (open|read)/.test(w.message))) this.failing.add(file);
    else this.failing.delete(file);
  }

  /** False when `record` is what this file said last time (compared as JSON only on a re-read). */
  private isNews(file: string, record: unknown): boolean {
    const had = this.lastEmitted.get(file);
    this.lastEmitted.set(file, record);
    return had === undefined || JSON.stringify(had) !== JSON.stringify(record);
  }

  /** A session whose last line is incomplete is looked at again when its grace runs out (A6). */
  private watchIncomplete(file: string, since: number | null): void {
    const had = this.incompleteTimers.get(file);
    if (since === null || !this.opts.watch) {
      if (had) clearTimeout(had);
      this.incompleteTimers.delete(file);
      return;
    }
    if (had) return;
    const due = since + this.opts.incompleteGraceMs - this.opts.now();
    if (due < 0) return; // already flagged by this read
    const t = setTimeout(() => {
      this.incompleteTimers.delete(file);
      this.hint(file);
    }, due + 10);
    t.unref();
    this.incompleteTimers.set(file, t);
  }

  /** A file caught half-written: look again after the writer's grace period, silently meanwhile. */
  private retryLater(file: string): void {
    const t = setTimeout(() => this.hint(file), CHECKPOINT_GRACE_MS + 50);
    t.unref();
  }

  private remember(file: string, kind: Known['kind'], found?: FoundFile): void {
    // The walk's record of the file is kept as it is (neither is changed after it is made): not a
    // copy per file of a start (~3 400 on the big home's warm start).
    if (found?.kind === kind) {
      this.known.set(file, found);
      return;
    }
    const prev = this.known.get(file);
    this.known.set(file, { kind, size: found?.size ?? prev?.size ?? -1, mtimeMs: found?.mtimeMs ?? prev?.mtimeMs ?? -1, ino: found?.ino ?? prev?.ino ?? -1 });
  }

  private forget(file: string, event: ReaderEvent): void {
    this.known.delete(file);
    this.recent.delete(file);
    this.lineWarnings.delete(file);
    this.invalidSince.delete(file);
    this.lastEmitted.delete(file);
    this.failing.delete(file);
    this.watchIncomplete(file, null);
    this.push(event);
    // Whatever the file's kind, its warnings go with it (and nothing about it is kept here).
    if (this.shownWarnings.delete(file)) this.buffer.push({ type: 'warnings', file, warnings: [] });
  }

  /** The backstop: a fresh walk; read what is new, changed or gone since we last looked. */
  private async reconcile(): Promise<void> {
    if (this.stopped) return;
    this.sweepCount++;
    const walkStart = performance.now();
    const walk = await walkHome(this.home);
    this.walkMs = performance.now() - walkStart;
    if (walk.homeExists !== this.homeExists) {
      this.homeExists = walk.homeExists;
      this.push({
        type: 'warnings',
        file: this.home,
        warnings: walk.homeExists ? [] : [{ file: this.home, line: null, message: `waiting for ${this.home} (it was removed)`, severity: 'warning' }],
      });
      if (walk.homeExists) await this.loadSettings();
      else {
        // The home's own "waiting for" says it all: the removal notices of its files go.
        for (const file of this.removedNotices) if (this.shownWarnings.delete(file)) this.buffer.push({ type: 'warnings', file, warnings: [] });
        this.removedNotices.clear();
      }
    }
    this.pushWalkProblems(walk.problems);
    this.syncWatches(walk.dirs);
    const seen = new Set<string>();
    for (const f of walk.files) {
      seen.add(f.file);
      const k = this.known.get(f.file);
      if (!k || k.size !== f.size || k.mtimeMs !== f.mtimeMs || k.ino !== f.ino) {
        this.known.set(f.file, { kind: f.kind, size: f.size, mtimeMs: f.mtimeMs, ino: f.ino });
        this.markRecent(f.file, this.opts.now());
        this.dirty.set(f.file, false);
      }
    }
    for (const [file, k] of this.known) {
      if (k.kind !== 'state-log' && !seen.has(file)) this.dirty.set(file, false);
    }
    for (const file of this.stateLogs.keys()) if (!this.dirty.has(file)) this.dirty.set(file, false);
    // A read that failed (EACCES, …) may work now: a chmod back changes no size or mtime (B10).
    for (const file of this.failing) if (!this.dirty.has(file)) this.dirty.set(file, false);
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

  /**
   * Liveness of the pids our checkpoints name (same host only; the dashboard never signals). A pid
   * found gone is not probed again: that process cannot come back, and a new process that reuses
   * the pid is probed when a checkpoint names it (its start identity tells it apart).
   */
  private pids = new Set<number>();
  /**
   * The latest probe per pid. The same answer again is not sent (the model ignores it anyway). A
   * checkpoint written at or before the instant its pid was last found gone names the process that
   * was gone then, and is not probed again: a process that reuses the pid started after that
   * instant, so its checkpoints are written after it. (A home where one process wrote many
   * checkpoints — its lanes', say — probed that pid once per checkpoint at a start.)
   */
  private readonly probed = new Map<number, ProcessProbeResult>();
  private probeCount = 0;
  private async probe(): Promise<void> {
    const now = this.opts.now();
    let news = false;
    for (const pid of [...this.pids]) if (this.probeOne(pid, now)) news = true;
    // An idle dashboard beside a live pi then wakes once per probe, not twice (no batch to send).
    if (news) this.scheduleFlush();
  }

  /** Probes `pid`; true when the answer is news (pushed). A pid found gone is dropped, and its link. */
  private probeOne(pid: number, now: number): boolean {
    const probe = probeProcess(pid, now);
    this.probeCount++;
    if (probe.status === 'gone') {
      this.pids.delete(pid);
      this.links.forget(pid);
    }
    if (this.links.isLinked(pid)) probe.linked = true;
    const had = this.probed.get(pid);
    this.probed.set(pid, probe);
    if (had && had.status === probe.status && had.start === probe.start && had.detail === probe.detail && had.linked === probe.linked) return false;
    this.push({ type: 'probe', probe });
    return true;
  }

  private push(event: ReaderEvent): void {
    if (event.type === 'warnings') {
      // A re-read that found the same problems is not news: no event, no render (and a burst's
      // last records are not held behind a batch of no-op events).
      // Readers hand back the same list until it changes: then no key is built (every append
      // pushes its file's warnings).
      const shown = this.shownWarnings.get(event.file);
      if (shown?.list === event.warnings) return;
      // None shown and none now (every file a start reads, the first time): nothing to send or
      // keep — the model holds warnings of a file only while this map does (forget clears both).
      if (shown === undefined && event.warnings.length === 0) return;
      const key = event.warnings.length === 0 ? '' : JSON.stringify(event.warnings);
      this.shownWarnings.set(event.file, { list: event.warnings, key });
      if (shown?.key === key) return;
    }
    if (event.type === 'checkpoint') {
      const cp = event.record.checkpoint;
      const last = this.probed.get(cp.pid);
      const namesGone = last?.status === 'gone' && cp.updatedAt <= last.checkedAt;
      if (cp.host === this.opts.host && cp.state !== 'ended' && !this.pids.has(cp.pid) && !namesGone) {
        this.pids.add(cp.pid);
        this.probeOne(cp.pid, this.opts.now());
        this.periodic?.poke();
      }
      // Tried at most every 30 s per process: a checkpoint rewrite of an unlinked one costs a lookup.
      if (this.opts.watch && cp.host === this.opts.host && this.pids.has(cp.pid)) {
        this.links.link(cp.pid, () => aliveSocketPath(this.home, cp.host, cp.pid, cp.pidStart));
      }
    }
    this.buffer.push(event);
  }

  /**
   * At most one batch per `batchMs` (a burst costs one render per window), but the first change
   * after a quiet spell goes out at once instead of waiting out a window (RELIABILITY A3, A4).
   */
  private scheduleFlush(): void {
    if (this.flushTimer || this.stopped) return;
    const wait = Math.max(0, this.lastFlushAt + this.opts.batchMs - performance.now());
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      this.flush();
    }, wait);
    this.flushTimer.unref();
  }

  private flush(): void {
    if (this.buffer.length === 0 || this.holdingList) return;
    const events = this.buffer;
    this.buffer = [];
    this.lastFlushAt = performance.now();
    this.opts.emit(events);
  }
}

/**
 * One snapshot of a home without watching (for `status` and scripts). With `cacheDir`, read with
 * the session cache kept there and leave it as this read found the home (written only if
 * something changed).
 */
export async function loadHomeOnce(home: string, opts: { now?: () => number; host?: string; cacheDir?: string; counter?: ReadCounter } = {}): Promise<ReaderEvent[]> {
  const events: ReaderEvent[] = [];
  const reader = new HomeReader({ home, emit: (e) => events.push(...e), watch: false, ...opts });
  await reader.start();
  await reader.stop();
  return events;
}

/**
 * A small file's record is written with its file and home empty (withoutFileAndHome); a lane
 * status's and a checkpoint's session paths under the home relative to it (compactHomePaths).
 * (An incident's record holds no raw fields: incident-file.ts.)
 */
function compactEntry(e: CacheEntry, home: string): CacheEntry {
  if (!('k' in e) || e.k === 'dir' || e.k === 'tree' || e.k === 'log') return e;
  // Still as loaded (not taken up since): already compact.
  if (e.homeOmitted) return e;
  const record = withoutFileAndHome(e.record);
  if (e.kind === 'lane-status' || e.kind === 'checkpoint') {
    const { record: compact, homeOmitted } = compactHomePaths(e.kind, record, home);
    return homeOmitted ? { ...e, record: compact, homeOmitted } : { ...e, record };
  }
  return { ...e, record };
}

/** Paths a record may carry beyond this many are written as they are (bit i of `homeOmitted` is 2 ** i). */
const HOME_PATH_SLOTS = 50;

/**
 * Calls `f` on each string field of a lane status or checkpoint record that may hold a session
 * path under the home — slot 0, 1, … in a fixed order — and sets the field to what it returns.
 */
function eachHomePath(kind: ArtifactKind, record: unknown, f: (value: string, slot: number) => string): void {
  const at = (o: Record<string, unknown> | undefined, key: string, slot: number) => {
    const value = o?.[key];
    if (o && typeof value === 'string' && slot < HOME_PATH_SLOTS) o[key] = f(value, slot);
  };
  if (kind === 'lane-status') {
    const r = record as Record<string, unknown>;
    at(r, 'sessionId', 0);
    at(r, 'sessionFile', 1);
    if (Array.isArray(r.steps)) r.steps.forEach((step: Record<string, unknown>, i) => at(step, 'sessionFile', 2 + i));
  } else if (kind === 'checkpoint') {
    at((record as { checkpoint?: Record<string, unknown> }).checkpoint, 'sessionFile', 0);
  }
}

/**
 * A copy of a lane status or checkpoint record (without file and home) with its session paths
 * under the home written relative to it, and which were (bit i: slot i of eachHomePath). They
 * are what most of these records' bytes repeat: ~50 bytes of home prefix, three times in a lane
 * status — ~215 KB of the big home's cache, read at every start.
 */
function compactHomePaths(kind: 'lane-status' | 'checkpoint', record: Record<string, unknown>, home: string): { record: Record<string, unknown>; homeOmitted: number } {
  const prefix = resolvedPrefix(home);
  const copy =
    kind === 'lane-status'
      ? { ...record, ...(Array.isArray(record.steps) ? { steps: (record.steps as object[]).map((s) => ({ ...s })) } : {}) }
      : { ...record, ...(record.checkpoint ? { checkpoint: { ...(record.checkpoint as object) } } : {}) };
  let homeOmitted = 0;
  eachHomePath(kind, copy, (value, slot) => {
    if (!value.startsWith(prefix)) return value;
    homeOmitted += 2 ** slot;
    return value.slice(prefix.length);
  });
  return { record: copy, homeOmitted };
}

/** Puts back the home in front of the session paths compactHomePaths left relative (in place: a record as deserialised). */
function expandHomePaths(kind: ArtifactKind, record: unknown, homeOmitted: number, home: string): void {
  const prefix = resolvedPrefix(home);
  eachHomePath(kind, record, (value, slot) => (Math.floor(homeOmitted / 2 ** slot) % 2 === 1 ? prefix + value : value));
}

/**
 * The cache's front: what a warm start draws with the session list — the checkpoints, and the
 * listings of sessions/ (walked before the list is drawn).
 */
function isFrontEntry(e: CacheEntry, key: string): boolean {
  if (isEntry(e, 'tree')) return FRONT_TREE_KEYS.includes(key);
  return isEntry(e, 'small') && e.kind === 'checkpoint';
}

/** A cache entry of the kind `k` (a session file's entry has no kind: `'k' in` tells it apart). */
function isEntry<K extends Exclude<CacheEntry, CachedSessionFile>['k']>(e: CacheEntry | undefined, k: K): e is Extract<CacheEntry, { k: K }> {
  return e !== undefined && 'k' in e && e.k === k;
}

/** An incident directory's entry with a bundle of records (the cache writes it in a slice alone). */
function isBundleEntry(e: CacheEntry): boolean {
  return isEntry(e, 'dir') && e.bundle !== undefined;
}

/** How long a start waits for its `afterList` promise at most. */
const AFTER_LIST_WAIT_MS = 1_000;

/**
 * One re-check's share of the `due` files: all of them when they are at most `max`, else `max`
 * of them from position `cursor` on (wrapping), and where the next turn starts. Over
 * ceil(due.length / max) turns of the same list every file is looked at. Pure.
 */
export function recheckTurn(due: readonly string[], cursor: number, max: number): { files: string[]; next: number } {
  if (due.length <= max) return { files: [...due], next: 0 };
  const start = cursor % due.length;
  const files = due.slice(start, start + max);
  if (files.length < max) files.push(...due.slice(0, max - files.length));
  return { files, next: (start + max) % due.length };
}

/** Resolves when `p` settles or after `ms`, whichever is first. */
function waitAtMost(p: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    p.then(done, done);
  });
}

/** How many removed session files keep their "removed" notice at once. */
export const REMOVED_NOTICES = 20;

/** Whether a path exists (anything at it). */
async function exists(p: string): Promise<boolean> {
  return fsp.lstat(p).then(
    () => true,
    () => false,
  );
}
