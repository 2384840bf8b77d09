/**
 * Follows one pi session file (SPEC §3.1) without ever reading it whole on a change: the header
 * and the first entries (a small head block), a tail window, the last loop-pi state entries before
 * the window found by a bounded backward scan (the rest of the search continues in the background,
 * `deepen`), then only appended bytes. What was found is remembered between runs (session-cache.ts),
 * so a restart reads only what was appended since. Bad lines become warnings; the lines around
 * them still fold.
 *
 * The facts are kept in two parts: `base` (the header and the state entries found before the
 * window, oldest first) and `tail` (the window and everything appended since); a value in `tail`
 * is newer than any in `base`, so the facts shown are the tail's, falling back to the base's.
 */
import { closeSync, fstatSync, openSync } from 'node:fs';
import path from 'node:path';
import type { SessionFileFacts, Warning } from '../model/types.js';
import { DEFAULT_MAX_LINE_BYTES, type AssembledLine } from './line-assembler.js';
import { parseJsonText } from './json-text.js';
import { READ_FLAGS, readAt, type ReadCounter } from './read-counter.js';
import {
  emptySessionFacts,
  foldSessionEntry,
  HISTORY_LIMIT,
  parseSessionEntry,
  type SessionEntry,
} from './session-entry.js';
import { parseSessionPath, sessionIdFromName, type SessionPathInfo } from './session-path.js';
import { BEFORE_OFFSET_BYTES, FileTailer, HEAD_FINGERPRINT_BYTES, scanBackward, type FileIdentity, type TailReset, type TailResult } from './tailer.js';

/** 32 KiB: how much of a large file's end is read at start (the last few entries). */
export const DEFAULT_TAIL_WINDOW_BYTES = 32 * 1024;
/** A window with no complete line (one huge last entry) is read again this much larger, up to the cap. */
const TAIL_WINDOW_GROWTH = 4;
/** 256 KiB: the largest tail window. */
export const MAX_TAIL_WINDOW_BYTES = 256 * 1024;
/** 8 KiB: the head block; pi writes the model, thinking level and session name right after the header. */
export const DEFAULT_HEAD_BYTES = 8 * 1024;

/** Options of a `SessionFileReader`. */
export interface SessionFileReaderOptions {
  tailWindowBytes?: number;
  /** How much of the file's start is read with the header (default 8 KiB). */
  headBytes?: number;
  maxLineBytes?: number;
  counter?: ReadCounter;
  now: () => number;
  /**
   * Bound on the backward scan for state entries before the window at start (default: no bound).
   * What it leaves unsearched is searched later by `deepen`.
   */
  scanMaxBytes?: number;
  chunkBytes?: number;
  /** How long the last line may stay without its newline before a warning says so (default 5 s). */
  incompleteGraceMs?: number;
  /** What an earlier run remembered of this file: used when the file is the same file, only longer. */
  cached?: CachedSessionFile;
  /** What the path says, when the caller has parsed it already (`parseSessionPath(home, file)`). */
  pathInfo?: SessionPathInfo | null;
}

/** A writer killed mid-line leaves a torn last line; past this it is flagged (RELIABILITY A6). */
export const DEFAULT_INCOMPLETE_GRACE_MS = 5_000;

/** The outcome of one `update()`. */
export interface SessionFileUpdate {
  facts: SessionFileFacts;
  /**
   * Every current warning of this file (a whole replacement, as the `warnings` reader event
   * expects): bad lines since the last reset (the newest `MAX_KEPT_WARNINGS`, behind a count of
   * older ones), the reset notice, and the read error while it lasts. The same array while unchanged.
   */
  warnings: Warning[];
  /** The warnings this update added. */
  newWarnings: Warning[];
  /** Content bytes read by this update (header, window, scan, appended bytes). */
  bytesRead: number;
  /** The facts changed. */
  changed: boolean;
  /** The file is missing (deleted or not yet created); facts are the last known. */
  gone: boolean;
  /** A read failure that lasts (e.g. EACCES); it stays in `warnings` until a read succeeds. */
  error: string | null;
  /** Started from what an earlier run remembered (only the bytes appended since were read). */
  fromCache?: boolean;
}

/** Bad-line warnings kept per file; older ones are counted, not kept. */
export const MAX_KEPT_WARNINGS = 50;

/**
 * State entries whose last occurrence must be known even when it lies before the tail window.
 * `needle` is the raw text pi's JSON.stringify writes; `matches` confirms a hit after parsing.
 */
const STATE_PROBES: { needle: string; matches: (e: SessionEntry) => boolean; coveredBy?: SessionEntry['type'] }[] = [
  { needle: '"customType":"loop-continuation-state"', matches: (e) => e.type === 'continuation' },
  { needle: '"customType":"loop-wait-state"', matches: (e) => e.type === 'wait' },
  { needle: '"customType":"loop-dash-control"', matches: (e) => e.type === 'dash-control' },
  { needle: '"type":"session_info"', matches: (e) => e.type === 'session_info' },
  // A later assistant message names the model too, so the window having one is enough.
  { needle: '"type":"model_change"', matches: (e) => e.type === 'model_change', coveredBy: 'assistant' },
  { needle: '"type":"thinking_level_change"', matches: (e) => e.type === 'thinking_level_change' },
  // The last outcome (error, aborted, …) decides whether a stopped root will be resumed.
  { needle: '"role":"assistant"', matches: (e) => e.type === 'assistant' },
];

/**
 * The loop state a session's row shows as its state (armed, the hold, loop-wait's timers and held
 * wakes): a head-block entry of these kinds is not shown while a newer one may be in the middle.
 */
const PROVISIONAL_NEEDLES: ReadonlySet<string> = new Set(['"customType":"loop-continuation-state"', '"customType":"loop-wait-state"', '"customType":"loop-dash-control"']);

/**
 * A line that holds any probe's needle: one regular expression instead of an `includes` per needle.
 * Over the head blocks of the big bench home's 1 213 sessions (8 KiB each: 8.9 MB, 15 018 lines)
 * it takes 5–8 ms against 38–50 ms for the seven `includes` (a fresh node, 2026-12-06).
 */
/** The probes' needles, in their order. */
export const STATE_NEEDLES: readonly string[] = STATE_PROBES.map((p) => p.needle);

const ANY_NEEDLE = new RegExp(STATE_NEEDLES.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'));

/** `text` holds at least one probe's needle: `STATE_NEEDLES.some((n) => text.includes(n))`, in one pass. */
export function holdsStateNeedle(text: string): boolean {
  return ANY_NEEDLE.test(text);
}

/** A state entry found before the tail: the newest of its kind there, and where it sits. */
export interface StateHit {
  needle: string;
  offset: number;
  entry: SessionEntry;
}

/** Where the search before the tail stands: `[floor, tail)` is searched; `[headEnd, floor)` is not yet. */
export interface ScanState {
  headEnd: number;
  floor: number;
  /** Needles whose newest occurrence before the tail is not known yet. */
  unresolved: string[];
}

/** What a reader remembers of a file between runs (see session-cache.ts). Plain data. */
export interface CachedSessionFile {
  v: 2;
  dev: string;
  ino: string;
  /** Base64 of the file's first bytes (up to 64): the same file, not rewritten. */
  head: string;
  /** Where reading resumes: a line start; every byte before it was consumed. */
  end: number;
  /** Base64 of the (up to 64) bytes before `end`: what was read is still there. */
  endBytes: string;
  /** The line number at `end`, when known. */
  line: number | null;
  /** The file's size and mtime when the entry was made (absent in older entries). */
  size?: number;
  mtimeMs?: number;
  /** Line 1, when it was read apart from the tail (a large file). */
  header: SessionEntry | null;
  /** The state entries found before the tail; `p` is the index of their probe. */
  hits: { p: number; offset: number; entry: SessionEntry }[];
  /** Where the search before the tail stands (`unresolved` as probe indexes). */
  scan: { headEnd: number; floor: number; unresolved: number[] } | null;
  /**
   * The facts of the tail (window and appends), without what the path says, size, mtime,
   * incomplete-since, and without the fields that are null or empty (their defaults).
   */
  tail: Partial<SessionFileFacts>;
  kept?: Warning[];
  dropped?: number;
}

/** Nesting bound for a session line: far above what pi writes, far below what blocks the loop. */
const SESSION_JSON_MAX_DEPTH = 256;
/** Start attempts when the file changes identity while we open it. */
const START_ATTEMPTS = 3;

export class SessionFileReader {
  readonly home: string;
  readonly file: string;
  private readonly pathInfo: SessionPathInfo | null;
  private readonly opts: Required<Omit<SessionFileReaderOptions, 'counter' | 'cached' | 'pathInfo'>> & { counter: ReadCounter | undefined };
  private cached: CachedSessionFile | undefined;
  /** The cache entry taken as the state before the file was read (see `prime`). */
  private adopted: CachedSessionFile | null = null;
  /** Line 1 when read apart from the tail; null when the whole file is the tail. */
  private header: SessionEntry | null = null;
  private readonly hits = new Map<string, StateHit>();
  private scan: ScanState | null = null;
  /** Facts of `header` and `hits` (null when there are none). */
  private base: SessionFileFacts | null = null;
  /** Facts of the tail window and the appends, with size, mtime and incomplete-since. */
  private tail: SessionFileFacts;
  /** What is shown: `tail` over `base`. `lastEntryAt` from entries only (mtime fallback on output). */
  private state: SessionFileFacts;
  /** Line number of the next line the tailer delivers, when known. */
  private nextLine: number | null = null;
  private tailer: FileTailer | null = null;
  private lastError: string | null = null;
  private kept: Warning[] = [];
  private dropped = 0;
  private current: Warning[] | null = null;
  /** The torn-last-line warning while it lasts (A6); not kept once the line completes. */
  private incomplete: Warning | null = null;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(home: string, file: string, opts: SessionFileReaderOptions) {
    this.home = home;
    this.file = file;
    this.pathInfo = opts.pathInfo !== undefined ? opts.pathInfo : parseSessionPath(home, file);
    this.opts = {
      tailWindowBytes: opts.tailWindowBytes ?? DEFAULT_TAIL_WINDOW_BYTES,
      headBytes: opts.headBytes ?? DEFAULT_HEAD_BYTES,
      maxLineBytes: opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
      counter: opts.counter,
      now: opts.now,
      scanMaxBytes: opts.scanMaxBytes ?? Infinity,
      chunkBytes: opts.chunkBytes ?? 1024 * 1024,
      incompleteGraceMs: opts.incompleteGraceMs ?? DEFAULT_INCOMPLETE_GRACE_MS,
    };
    this.cached = opts.cached;
    this.tail = emptySessionFacts(home, file, this.pathInfo);
    this.state = this.tail;
  }

  /** The current facts. */
  facts(): SessionFileFacts {
    return this.output();
  }

  /** Reads what is new. Calls are serialised; never throws. */
  /**
   * `stat`: what a walk just saw of the file (start-up). When it equals what the cache entry saw
   * (same inode, size and mtime, and nothing half-read at the end), the file is taken as read from
   * the cache without opening it; its identity is checked by the first read of its next change.
   */
  update(stat?: { size: number; mtimeMs: number; ino: number }): Promise<SessionFileUpdate> {
    return this.serial(() => this.step(stat));
  }

  /** Bytes before the tail still to be searched for state entries (by `deepen`). */
  unsearchedBytes(): number {
    const s = this.scan;
    return s && s.unresolved.length > 0 ? Math.max(0, s.floor - s.headEnd) : 0;
  }

  /**
   * Searches up to `maxBytes` more of the file before the tail for the state entries not found
   * yet (the start-up scan is bounded). Serialised with `update`; never throws.
   */
  deepen(maxBytes: number): Promise<{ bytesRead: number; changed: boolean; facts: SessionFileFacts }> {
    return this.serial(async () => {
      const s = this.scan;
      if (!s || this.tailer === null || this.unsearchedBytes() === 0) return { bytesRead: 0, changed: false, facts: this.output() };
      const pendingBefore = this.pendingCount();
      const r = await this.searchBefore(s.floor, s.headEnd, s.unresolved, maxBytes);
      let found = r.hits.length > 0;
      for (const h of r.hits) this.hits.set(h.needle, h);
      if (r.error !== undefined) {
        // Cannot search further (the file went, or shrank): the next poll deals with the file.
        this.scan = null;
      } else {
        const unresolved = s.unresolved.filter((n) => !r.hits.some((h) => h.needle === n));
        this.scan = { headEnd: s.headEnd, floor: r.floor, unresolved: r.floor > s.headEnd ? unresolved : [] };
      }
      // The search done (or stopped) where a head-block state was waiting for it: it stands now.
      if (this.pendingCount() !== pendingBefore) found = true;
      if (found) this.rebuildBase();
      return { bytesRead: r.bytesRead, changed: found, facts: this.output() };
    });
  }

  /**
   * What to remember of this file for the next run, or null when nothing useful is known (not
   * read yet, or mid-reset). The bytes before the resume point (up to BEFORE_OFFSET_BYTES, which
   * the resuming tailer checks) are the ones the tailer read there; when it does not hold them (a
   * partial last line is held back, or it read nothing yet) they are read from the file, counted
   * as probes — and then only kept if the file still has, before the tailer's offset, the bytes
   * it read: a rewrite in place since the last poll must not be saved as what was read (the next
   * start would take the new bytes from the old offset as an append).
   */
  cacheEntry(): Promise<CachedSessionFile | null> {
    return this.serial(async () => {
      const t = this.tailer;
      const id = t?.fileIdentity();
      if (!t || !id || this.lastError !== null) return null;
      const end = t.pending()?.offset ?? t.offset();
      const from = Math.max(0, end - BEFORE_OFFSET_BYTES);
      const read = t.bytesBeforeOffset();
      let endBytes: Buffer = Buffer.alloc(0);
      if (end > 0 && read !== null && end === t.offset() && read.length === end - from) {
        endBytes = read;
      } else if (end > 0) {
        try {
          endBytes = await readAt(this.file, from, end - from, this.opts.counter, 'probe');
          if (read !== null) {
            const now = await readAt(this.file, t.offset() - read.length, read.length, this.opts.counter, 'probe');
            if (!now.equals(read)) return null;
          }
        } catch {
          return null;
        }
        if (endBytes.length !== end - from) return null;
      }
      // What the path says (file, home, root file) is not remembered: it is the cache's key. Nor
      // are null and empty fields: the facts of an empty file are their defaults.
      const { size: _s, mtimeMs: _m, incompleteSince: _i, file: _f, home: _h, rootFile: _r, ...rest } = this.tail;
      const tail: Partial<SessionFileFacts> = {};
      for (const [k, v] of Object.entries(rest) as [keyof SessionFileFacts, unknown][]) {
        if (v !== null && !(Array.isArray(v) && v.length === 0)) (tail as Record<string, unknown>)[k] = v;
      }
      const entry: CachedSessionFile = {
        v: 2,
        dev: String(id.dev),
        ino: String(id.ino),
        head: id.head.toString('base64'),
        end,
        endBytes: endBytes.toString('base64'),
        line: this.nextLine,
        header: this.header,
        hits: [...this.hits.values()].map((h) => ({ p: probeIndex(h.needle), offset: h.offset, entry: compactHit(h).entry })),
        scan: this.scan ? { headEnd: this.scan.headEnd, floor: this.scan.floor, unresolved: this.scan.unresolved.map(probeIndex) } : null,
        tail,
      };
      if (this.kept.length > 0) entry.kept = this.kept;
      if (this.dropped > 0) entry.dropped = this.dropped;
      // The stat of the last read, so an unchanged file need not be opened at the next start.
      if (this.tail.mtimeMs > 0) {
        entry.size = this.tail.size;
        entry.mtimeMs = this.tail.mtimeMs;
      }
      return entry;
    });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn);
    // The chain keeps only the order, not the last result (a reader's update and its facts, per
    // session file for as long as the reader lives).
    this.chain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async step(stat?: { size: number; mtimeMs: number; ino: number }): Promise<SessionFileUpdate> {
    const before = this.state;
    const errorBefore = this.lastError;
    const fresh: Warning[] = [];
    let bytesRead = 0;
    let gone = false;
    let started = false;
    let fromCache = false;
    let error: string | null = null;
    try {
      if (this.tailer === null) {
        const s = await this.start(fresh, stat);
        bytesRead += s.bytesRead;
        gone = s.gone;
        started = !s.gone && s.error === null;
        fromCache = s.fromCache;
        error = s.error;
      } else {
        const r = await this.tailer.poll();
        bytesRead += r.bytesRead;
        gone = r.gone;
        if (r.reset !== null) {
          // New content: the old file's warnings no longer describe it.
          this.kept = [];
          this.dropped = 0;
          fresh.push(resetWarning(this.file, r.reset));
          this.clear();
          const s = await this.start(fresh);
          bytesRead += s.bytesRead;
          gone = s.gone;
          started = true;
          error = s.error;
        } else {
          if (!r.gone) {
            this.foldLines(r.lines, fresh);
            this.track(r.size, r.mtimeMs, r.pending !== null);
          }
          error = r.error ?? null;
        }
      }
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    this.lastError = error;
    this.keep(fresh);
    const incomplete = this.incompleteWarning();
    if (incomplete?.message !== this.incomplete?.message) {
      this.incomplete = incomplete;
      this.current = null;
    }
    const newWarnings = error !== null && error !== errorBefore ? [...fresh, this.errorWarning(error)] : fresh;
    if (fresh.length > 0 || error !== errorBefore) this.current = null;
    const changed = started || this.state !== before;
    const result: SessionFileUpdate = { facts: this.output(), warnings: this.warnings(), newWarnings, bytesRead, changed, gone, error };
    if (fromCache) result.fromCache = true;
    return result;
  }

  /** Forgets everything read (a reset: the file is another file now). */
  private clear(): void {
    this.header = null;
    this.hits.clear();
    this.scan = null;
    this.base = null;
    this.tail = emptySessionFacts(this.home, this.file, this.pathInfo);
    this.state = this.tail;
    this.nextLine = null;
    this.tailer = null;
    this.cached = undefined;
    this.adopted = null;
  }

  /** The current warnings; the same array until one is added or the error changes. */
  warnings(): Warning[] {
    if (this.current === null) {
      const list: Warning[] = [];
      if (this.dropped > 0) list.push(warn(this.file, null, undefined, `${this.dropped} earlier warnings not shown`, 'warning'));
      list.push(...this.kept);
      if (this.lastError !== null) list.push(this.errorWarning(this.lastError));
      if (this.incomplete !== null) list.push(this.incomplete);
      this.current = list;
    }
    return this.current;
  }

  private keep(fresh: Warning[]): void {
    if (fresh.length === 0) return;
    this.kept = [...this.kept, ...fresh];
    if (this.kept.length > MAX_KEPT_WARNINGS) {
      this.dropped += this.kept.length - MAX_KEPT_WARNINGS;
      this.kept = this.kept.slice(this.kept.length - MAX_KEPT_WARNINGS);
    }
  }

  /** "last line incomplete since hh:mm:ss" once the torn line has outlived the grace period. */
  private incompleteWarning(): Warning | null {
    const since = this.state.incompleteSince;
    const pending = this.tailer?.pending() ?? null;
    if (since === null || pending === null || this.opts.now() - since < this.opts.incompleteGraceMs) return null;
    const message = `last line incomplete since ${clockTime(since)} (${pending.bytes} bytes at offset ${pending.offset} without a newline)`;
    return warn(this.file, null, pending.offset, message, 'warning');
  }

  private errorWarning(error: string): Warning {
    return warn(this.file, null, undefined, `cannot read: ${error}`, 'error');
  }

  /** From the cache when it still describes this file, else header, head, tail window and a scan. */
  private async start(warnings: Warning[], stat?: { size: number; mtimeMs: number; ino: number }): Promise<{ bytesRead: number; gone: boolean; error: string | null; fromCache: boolean }> {
    const cached = this.cached;
    this.cached = undefined;
    if (cached && stat && this.unchangedSince(cached, stat)) {
      if (this.adopted !== cached) this.adopt(cached);
      this.tailer = this.resumingTailer(cached);
      this.track(stat.size, stat.mtimeMs, false);
      return { bytesRead: 0, gone: false, error: null, fromCache: true };
    }
    if (cached) {
      const r = await this.resume(cached, warnings);
      if (r !== null) return { ...r, fromCache: true };
      this.clear();
      this.kept = [];
      this.dropped = 0;
    }
    return { ...(await this.readFresh(warnings)), fromCache: false };
  }

  /**
   * Picks up where an earlier run stopped: the same device and inode, the same first bytes, the
   * same bytes before the resume point, and no shorter. Null when the file is not that file.
   */
  private async resume(c: CachedSessionFile, warnings: Warning[]): Promise<{ bytesRead: number; gone: boolean; error: string | null } | null> {
    if (c.v !== 2) return null;
    if (this.adopted !== c) this.adopt(c);
    // One open: the tailer checks the identity, the head and the bytes before `end`, then reads on.
    const tailer = this.resumingTailer(c);
    const r = await tailer.poll();
    if (r.gone || r.reset !== null || r.error !== undefined) return null;
    this.tailer = tailer;
    this.foldLines(r.lines, warnings);
    this.track(r.size, r.mtimeMs, r.pending !== null);
    return { bytesRead: r.bytesRead, gone: false, error: null };
  }

  /** A tailer that resumes at the cache entry's end; its first poll checks the file is that file. */
  private resumingTailer(c: CachedSessionFile): FileTailer {
    return new FileTailer(this.file, {
      startOffset: c.end,
      startLine: c.end === 0 ? 1 : c.line,
      maxLineBytes: this.opts.maxLineBytes,
      chunkBytes: this.opts.chunkBytes,
      counter: this.opts.counter,
      expectIdentity: { dev: BigInt(c.dev), ino: BigInt(c.ino), head: Buffer.from(c.head, 'base64') },
      expectBefore: Buffer.from(c.endBytes, 'base64'),
      rereadOnReset: false,
    });
  }

  /**
   * The walk's stat is the one the entry was saved at: same inode, size and mtime (to the µs:
   * the walk and the tailer round nanoseconds differently), and the entry ends at the end of the
   * file (no partial line to read again).
   */
  private unchangedSince(c: CachedSessionFile, stat: { size: number; mtimeMs: number; ino: number }): boolean {
    return (
      c.v === 2 &&
      c.size !== undefined &&
      c.mtimeMs !== undefined &&
      c.end === c.size &&
      stat.size === c.size &&
      String(stat.ino) === c.ino &&
      Math.abs(stat.mtimeMs - c.mtimeMs) < 0.001
    );
  }

  /** Whether the file has been opened (from the cache or read): a cache entry offered now is refused. */
  get begun(): boolean {
    return this.tailer !== null;
  }

  /**
   * The cache's entry for this file, when it came after the reader was made (a start lists the
   * sessions before it loads the cache). Ignored once the file has been read or an entry adopted.
   */
  offerCache(c: CachedSessionFile): void {
    if (this.tailer === null && this.adopted === null) this.cached = c;
  }

  /**
   * Facts to show before the file is read (the session list of a start-up): what an earlier run
   * remembered, else what the path and the walk's size and mtime say. No I/O.
   */
  prime(size: number, mtimeMs: number): SessionFileFacts {
    if (this.tailer === null && this.adopted === null) {
      if (this.cached?.v === 2) this.adopt(this.cached);
      else this.track(size, mtimeMs, false);
    }
    return this.output();
  }

  /** What the cache entry says, taken as the current state (verified by the first poll). */
  private adopt(c: CachedSessionFile): void {
    this.adopted = c;
    this.header = c.header;
    for (const h of c.hits) {
      const needle = STATE_PROBES[h.p]?.needle;
      if (needle) this.hits.set(needle, { needle, offset: h.offset, entry: h.entry });
    }
    this.scan = c.scan ? { headEnd: c.scan.headEnd, floor: c.scan.floor, unresolved: c.scan.unresolved.flatMap((i) => STATE_PROBES[i]?.needle ?? []) } : null;
    this.kept = c.kept ?? [];
    this.dropped = c.dropped ?? 0;
    this.current = null;
    this.nextLine = c.end === 0 ? 1 : c.line;
    this.tail = { ...emptySessionFacts(this.home, this.file, this.pathInfo), ...c.tail, file: this.file, home: this.home, size: c.end, mtimeMs: 0, incompleteSince: null };
    this.rebuildBase();
  }

  /** Header and head block, tail window, and the last state entries before the window. */
  private async readFresh(warnings: Warning[]): Promise<{ bytesRead: number; gone: boolean; error: string | null }> {
    let bytesRead = 0;
    for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
      const head = await this.readHead(warnings);
      if (head.kind === 'gone') return { bytesRead, gone: true, error: null };
      if (head.kind === 'error') return { bytesRead, gone: false, error: head.error };
      bytesRead += head.bytesRead;
      const { size, headEnd, identity, whole } = head;
      // A file not much larger than the window is read whole.
      let window = this.opts.tailWindowBytes;
      let tailer: FileTailer;
      let r: TailResult;
      for (;;) {
        const windowStart = whole ? 0 : Math.max(headEnd ?? 0, size - window);
        tailer = new FileTailer(this.file, {
          startOffset: windowStart,
          startLine: windowStart === 0 ? 1 : windowStart === headEnd ? head.headEndLine : undefined,
          maxLineBytes: this.opts.maxLineBytes,
          chunkBytes: this.opts.chunkBytes,
          counter: this.opts.counter,
          expectIdentity: identity,
          rereadOnReset: false,
        });
        r = await tailer.poll();
        if (r.gone || r.reset !== null) break;
        bytesRead += r.bytesRead;
        // One entry longer than the window: read a larger window (rare; those bytes are read twice).
        if (r.lines.length > 0 || windowStart === (headEnd ?? 0) || window >= MAX_TAIL_WINDOW_BYTES) break;
        window = Math.min(MAX_TAIL_WINDOW_BYTES, window * TAIL_WINDOW_GROWTH);
      }
      if (r.gone) return { bytesRead, gone: true, error: null };
      if (r.reset !== null) continue; // changed while we opened it: start again, quietly
      this.tailer = tailer;
      const windowStart = whole ? 0 : Math.max(headEnd ?? 0, size - window);
      const fromZero = windowStart === 0;

      const entries = r.lines.map((line) => ({ line, entry: this.parseLine(line, warnings) }));
      // Read from the start, the window holds line 1 (checked by parseLine); else the head block does.
      if (!fromZero) {
        if (head.headerLine) {
          this.header = this.parseLine(head.headerLine, warnings);
        }
        // The head block's state entries: the oldest of all; anything later wins over them.
        for (const line of head.headLines) {
          if (!holdsStateNeedle(line.text)) continue;
          const entry = parseText(line.text);
          // The parsed entry first: only the probe of its own kind searches the text again.
          const matched = entry ? STATE_PROBES.find((p) => p.matches(entry) && line.text.includes(p.needle)) : undefined;
          if (entry && matched) this.hits.set(matched.needle, { needle: matched.needle, offset: line.offset, entry });
        }
        const cut = r.lines[0]?.offset ?? r.pending?.offset ?? tailer.offset();
        const wanted = wantedProbes(entries.map((e) => e.entry));
        if (headEnd !== null && cut > headEnd && wanted.length > 0) {
          const s = await this.searchBefore(cut, headEnd, wanted, this.opts.scanMaxBytes);
          bytesRead += s.bytesRead;
          if (s.error !== undefined) warnings.push(warn(this.file, null, cut, `backward scan stopped: ${s.error}`, 'warning'));
          for (const h of s.hits) this.hits.set(h.needle, h);
          const unresolved = wanted.filter((n) => !s.hits.some((h) => h.needle === n));
          this.scan = s.error === undefined && s.floor > headEnd && unresolved.length > 0 ? { headEnd, floor: s.floor, unresolved } : null;
        }
      }
      let facts = emptySessionFacts(this.home, this.file, this.pathInfo);
      for (const e of entries) if (e.entry) facts = foldSessionEntry(facts, e.entry, e.line);
      this.tail = facts;
      this.nextLine = nextLineAfter(r.lines, windowStart === 0 ? 1 : windowStart === headEnd ? head.headEndLine : null);
      this.rebuildBase();
      this.track(r.size, r.mtimeMs, r.pending !== null);
      return { bytesRead, gone: false, error: r.error ?? null };
    }
    return { bytesRead, gone: false, error: 'the file kept changing while it was opened' };
  }

  /**
   * Size and identity; for a file larger than window and head block together, also line 1 (the
   * header), the complete lines of the head block after it, and where they end.
   */
  private async readHead(warnings: Warning[]): Promise<
    | { kind: 'gone' }
    | { kind: 'error'; error: string }
    | {
        kind: 'ok';
        size: number;
        /** The file is small: read it whole, from 0. */
        whole: boolean;
        /** End of the head block's last complete line (null: no usable header line). */
        headEnd: number | null;
        /** Line number of the line at `headEnd`. */
        headEndLine: number;
        headerLine: AssembledLine | null;
        headLines: AssembledLine[];
        identity: FileIdentity | undefined;
        bytesRead: number;
      }
  > {
    // Synchronous calls on one descriptor: a few µs each for a file in the page cache.
    let handle: number;
    try {
      handle = openSync(this.file, READ_FLAGS);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'gone' };
      return { kind: 'error', error: errText(err) };
    }
    try {
      const st = fstatSync(handle, { bigint: true });
      if (!st.isFile()) return { kind: 'error', error: 'not a regular file' };
      const size = Number(st.size);
      if (size <= this.opts.tailWindowBytes + this.opts.headBytes) {
        return { kind: 'ok', size, whole: true, headEnd: null, headEndLine: 1, headerLine: null, headLines: [], identity: undefined, bytesRead: 0 };
      }
      // The head block; a header longer than it is read on, up to its LF (bounded by the line cap).
      let buf = await readAt(handle, 0, this.opts.headBytes, this.opts.counter);
      let lf = buf.indexOf(0x0a);
      let length = this.opts.headBytes;
      while (lf < 0 && buf.length < size && buf.length <= this.opts.maxLineBytes) {
        length = Math.min(length * 2, this.opts.chunkBytes);
        const more = await readAt(handle, buf.length, Math.min(length, size - buf.length), this.opts.counter);
        if (more.length === 0) break;
        const searchFrom = buf.length;
        buf = Buffer.concat([buf, more]);
        lf = buf.indexOf(0x0a, searchFrom);
      }
      const identity: FileIdentity = { dev: st.dev, ino: st.ino, head: Buffer.from(buf.subarray(0, Math.min(HEAD_FINGERPRINT_BYTES, buf.length))) };
      if (lf < 0 || lf > this.opts.maxLineBytes) {
        warnings.push(warn(this.file, 1, 0, `line too long (over ${this.opts.maxLineBytes} bytes) at offset 0: no session header read`, 'error'));
        return { kind: 'ok', size, whole: false, headEnd: null, headEndLine: 1, headerLine: null, headLines: [], identity, bytesRead: buf.length };
      }
      const headerLine: AssembledLine = { text: decodeLine(buf.subarray(0, lf), true), offset: 0, line: 1 };
      // The complete lines after the header (a block that ends mid-line leaves that line to the scan).
      const headLines: AssembledLine[] = [];
      let at = lf + 1;
      let lineNo = 2;
      const last = buf.lastIndexOf(0x0a);
      while (at <= last) {
        const next = buf.indexOf(0x0a, at);
        const text = decodeLine(buf.subarray(at, next), false);
        if (text.trim() !== '') headLines.push({ text, offset: at, line: lineNo });
        lineNo++;
        at = next + 1;
      }
      // Never past the window: the window's lines are read by the tailer.
      const headEnd = Math.min(at, size);
      return { kind: 'ok', size, whole: false, headEnd, headEndLine: lineNo, headerLine, headLines, identity, bytesRead: buf.length };
    } catch (err) {
      return { kind: 'error', error: errText(err) };
    } finally {
      try {
        closeSync(handle);
      } catch {
        /* already closed */
      }
    }
  }

  /**
   * Searches `[to, from)` backwards (at most `maxBytes`) for the newest line of each needle that
   * parses as its state entry. `floor`: everything from there up to `from` has been searched.
   */
  private async searchBefore(
    from: number,
    to: number,
    needles: readonly string[],
    maxBytes: number,
  ): Promise<{ hits: StateHit[]; bytesRead: number; floor: number; error?: string }> {
    const accepted = new Map<string, SessionEntry>();
    const result = await scanBackward(this.file, {
      from,
      to,
      maxBytes,
      chunkBytes: this.opts.chunkBytes,
      maxLineBytes: this.opts.maxLineBytes,
      needles: [...needles],
      counter: this.opts.counter,
      accept: (needle, text) => {
        const probe = STATE_PROBES.find((p) => p.needle === needle);
        const entry = parseText(text);
        if (!probe || !entry || !probe.matches(entry)) return false;
        accepted.set(needle, entry);
        return true;
      },
    });
    const hits: StateHit[] = [];
    for (const [needle, hit] of Object.entries(result.found)) {
      const entry = accepted.get(needle);
      if (entry) hits.push({ needle, offset: hit.offset, entry });
    }
    const out: { hits: StateHit[]; bytesRead: number; floor: number; error?: string } = { hits, bytesRead: result.bytesScanned, floor: result.resumeAt };
    if (result.error !== undefined) out.error = result.error;
    return out;
  }

  private foldLines(lines: AssembledLine[], warnings: Warning[]): void {
    if (lines.length === 0) return;
    let facts = this.tail;
    for (const line of lines) {
      const entry = this.parseLine(line, warnings);
      if (entry) facts = foldSessionEntry(facts, entry, line);
    }
    const last = lines[lines.length - 1]!;
    this.nextLine = last.line === null ? null : last.line + 1;
    this.setTail(facts);
  }

  private parseLine(line: AssembledLine, warnings: Warning[]): SessionEntry | null {
    if (line.tooLong !== undefined) {
      warnings.push(warn(this.file, line.line, line.offset, `line too long (${line.tooLong} bytes) at offset ${line.offset}; skipped`, 'error'));
      return null;
    }
    const json = parseJsonText(line.text, SESSION_JSON_MAX_DEPTH);
    if (!json.ok) {
      // json-text locates the error inside this one line; the file position is the line's offset.
      const reason = json.message.replace(/ \(line \d+ column \d+\)$/, '');
      const column = json.column === null ? '' : ` column ${json.column}`;
      warnings.push(warn(this.file, line.line, line.offset, `${reason} (line at offset ${line.offset}${column})`, 'error'));
      return null;
    }
    const r = parseSessionEntry(json.value);
    if (!r.ok) {
      const what = line.line === 1 ? 'line 1 is not a session header: invalid entry' : `invalid entry at offset ${line.offset}`;
      warnings.push(warn(this.file, line.line, line.offset, `${what}: ${r.error}`, 'error'));
      return null;
    }
    // Line 1, however it was read (the head block, a whole read, the first append to an empty file).
    if (line.line === 1) this.checkHeader(r.entry, warnings);
    return r.entry;
  }

  /**
   * Line 1 is a session header whose id is the file name's (pi names the file `<UTC>_<id>.jsonl`).
   * The header's id names the session (a checkpoint and a control request use it); a file name
   * that says otherwise (a copy, a rename by hand) is pointed out rather than shown silently.
   */
  private checkHeader(entry: SessionEntry, warnings: Warning[]): void {
    if (entry.type !== 'session') {
      warnings.push(warn(this.file, 1, 0, 'line 1 is not a session header', 'error'));
      return;
    }
    const named = this.pathInfo?.sessionId ?? sessionIdFromName(path.basename(this.file));
    if (entry.value.id !== named) {
      warnings.push(warn(this.file, 1, 0, `the header's id ${entry.value.id} is not the file name's ${named}; the session is shown as ${entry.value.id}`, 'warning'));
    }
  }

  /** Size, mtime and the incomplete-last-line clock; a new facts object only when one changed. */
  private track(size: number, mtimeMs: number, incomplete: boolean): void {
    const s = this.tail;
    // Torn since the file's last write at the latest (its mtime): a line left torn ten minutes ago
    // is said so at once, by a dashboard started since and by `status`, not from when it was first read.
    const incompleteSince = incomplete ? (s.incompleteSince ?? (mtimeMs > 0 ? Math.min(this.opts.now(), mtimeMs) : this.opts.now())) : null;
    if (s.size !== size || s.mtimeMs !== mtimeMs || s.incompleteSince !== incompleteSince) {
      this.setTail({ ...s, size, mtimeMs, incompleteSince });
    }
  }

  private setTail(facts: SessionFileFacts): void {
    this.tail = facts;
    this.state = this.base === null ? facts : mergeFacts(this.base, facts);
  }

  /**
   * Folds the header and the state entries before the tail (oldest first) into `base`. A loop
   * state entry of the head block whose kind the search has not resolved yet is left out: a newer
   * one may sit in the unsearched middle, and showing the head's (an `armed` or a hold of long ago)
   * as the session's state would be a guess; until the search has been there it is unknown.
   */
  private rebuildBase(): void {
    if (this.header === null && this.hits.size === 0) {
      this.base = null;
    } else {
      let facts = emptySessionFacts(this.home, this.file, this.pathInfo);
      if (this.header) facts = foldSessionEntry(facts, this.header, { line: 1, offset: 0 });
      for (const h of [...this.hits.values()].sort((a, b) => a.offset - b.offset)) {
        if (this.pendingBehind(h)) continue;
        facts = foldSessionEntry(facts, h.entry, { line: null, offset: h.offset });
      }
      this.base = facts;
    }
    this.setTail(this.tail);
  }

  /** A head-block loop state hit that a newer one in the unsearched middle may replace. */
  private pendingBehind(h: StateHit): boolean {
    const s = this.scan;
    return s !== null && PROVISIONAL_NEEDLES.has(h.needle) && h.offset < s.headEnd && s.floor > s.headEnd && s.unresolved.includes(h.needle);
  }

  /** How many hits `rebuildBase` leaves out now (a change says the base must be folded again). */
  private pendingCount(): number {
    let n = 0;
    for (const h of this.hits.values()) if (this.pendingBehind(h)) n++;
    return n;
  }

  private output(): SessionFileFacts {
    const s = this.state;
    return s.lastEntryAt === null && s.mtimeMs > 0 ? { ...s, lastEntryAt: s.mtimeMs } : s;
  }
}

/** The probes the tail does not answer: a later entry of their kind (or one that covers it) is not there. */
function wantedProbes(tail: (SessionEntry | null)[]): string[] {
  const present = new Set(tail.filter((e): e is SessionEntry => e !== null).map((e) => e.type));
  return STATE_PROBES.filter((p) => !tail.some((e) => e !== null && p.matches(e)) && !(p.coveredBy && present.has(p.coveredBy))).map((p) => p.needle);
}

/** `tail`'s values over `base`'s: everything in the tail is newer than anything before it. */
function mergeFacts(base: SessionFileFacts, tail: SessionFileFacts): SessionFileFacts {
  const lastEntryAt = base.lastEntryAt === null ? tail.lastEntryAt : tail.lastEntryAt === null ? base.lastEntryAt : Math.max(base.lastEntryAt, tail.lastEntryAt);
  return {
    ...tail,
    sessionId: base.header ? base.sessionId : tail.sessionId,
    header: tail.header ?? base.header,
    name: tail.name ?? base.name,
    model: tail.model ?? base.model,
    thinking: tail.thinking ?? base.thinking,
    lastEntryAt,
    lastAssistant: tail.lastAssistant ?? base.lastAssistant,
    continuation: tail.continuation ?? base.continuation,
    waitState: tail.waitState ?? base.waitState,
    dashControl: tail.dashControl ?? base.dashControl,
    history: base.history.length === 0 ? tail.history : [...base.history, ...tail.history].slice(-HISTORY_LIMIT),
  };
}

function probeIndex(needle: string): number {
  return STATE_PROBES.findIndex((p) => p.needle === needle);
}

/** A hit as remembered: an assistant message keeps only what the facts use (not its content). */
function compactHit(h: StateHit): StateHit {
  if (h.entry.type !== 'assistant') return h;
  const { role, provider, model, stopReason, errorMessage, usage, timestamp, loopPiRecovery } = h.entry.value;
  const value = { role, provider, model, stopReason, errorMessage, usage: usage ? { output: usage.output } : usage, timestamp, loopPiRecovery };
  return { ...h, entry: { ...h.entry, value: JSON.parse(JSON.stringify(value)) as typeof h.entry.value } };
}

/** Line number of the line after `lines` (complete or not), from the first line's number when known. */
function nextLineAfter(lines: AssembledLine[], startLine: number | null): number | null {
  const last = lines[lines.length - 1];
  if (!last) return startLine;
  return last.line === null ? null : last.line + 1;
}

function parseText(text: string): SessionEntry | null {
  const json = parseJsonText(text, SESSION_JSON_MAX_DEPTH);
  if (!json.ok) return null;
  const r = parseSessionEntry(json.value);
  return r.ok ? r.entry : null;
}

/** A line's bytes as text: no CR at the end, no BOM at the start of the file. */
function decodeLine(buf: Buffer, atFileStart: boolean): string {
  let b = buf;
  if (atFileStart && b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) b = b.subarray(3);
  if (b.length > 0 && b[b.length - 1] === 0x0d) b = b.subarray(0, b.length - 1);
  return b.toString('utf8');
}

/** Local `hh:mm:ss`, as the dashboard's clock shows times. */
function clockTime(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function resetWarning(file: string, reset: TailReset): Warning {
  const what = { truncated: 'truncated', replaced: 'replaced', rewritten: 'rewritten' }[reset];
  return warn(file, null, undefined, `${what}: the file was ${what}; read again from the start`, 'warning');
}

function warn(file: string, line: number | null, offset: number | undefined, message: string, severity: 'warning' | 'error'): Warning {
  const w: Warning = { file, line, message, severity };
  if (offset !== undefined) w.offset = offset;
  return w;
}

function errText(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  return typeof code === 'string' && !message.startsWith(code) ? `${code}: ${message}` : message;
}
