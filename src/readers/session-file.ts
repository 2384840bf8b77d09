/**
 * Follows one pi session file (SPEC §3.1) without ever reading it whole on a change: the header,
 * a tail window, the last loop-pi state entries before the window found once by a backward scan,
 * then only appended bytes. Bad lines become warnings; the lines around them still fold.
 */
import { open } from 'node:fs/promises';
import type { SessionFileFacts, Warning } from '../model/types.js';
import { DEFAULT_MAX_LINE_BYTES, type AssembledLine } from './line-assembler.js';
import { parseJsonText } from './json-text.js';
import { readAt, type ReadCounter } from './read-counter.js';
import {
  emptySessionFacts,
  foldSessionEntry,
  parseSessionEntry,
  type SessionEntry,
} from './session-entry.js';
import { parseSessionPath, type SessionPathInfo } from './session-path.js';
import { FileTailer, HEAD_FINGERPRINT_BYTES, scanBackward, type FileIdentity, type TailReset } from './tailer.js';

/** 256 KiB: how much of a large file's end is read at start. */
export const DEFAULT_TAIL_WINDOW_BYTES = 256 * 1024;

/** Options of a `SessionFileReader`. */
export interface SessionFileReaderOptions {
  tailWindowBytes?: number;
  maxLineBytes?: number;
  counter?: ReadCounter;
  now: () => number;
  /** Bound on the one-time backward scan before the window (default: no bound). */
  scanMaxBytes?: number;
  chunkBytes?: number;
  /** How long the last line may stay without its newline before a warning says so (default 5 s). */
  incompleteGraceMs?: number;
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

/** Nesting bound for a session line: far above what pi writes, far below what blocks the loop. */
const SESSION_JSON_MAX_DEPTH = 256;
/** Start attempts when the file changes identity while we open it. */
const START_ATTEMPTS = 3;
const HEAD_READ_BYTES = 1024;

export class SessionFileReader {
  readonly home: string;
  readonly file: string;
  private readonly pathInfo: SessionPathInfo | null;
  private readonly opts: Required<Omit<SessionFileReaderOptions, 'counter'>> & { counter: ReadCounter | undefined };
  /** Facts with `lastEntryAt` from entries only (the mtime fallback is applied on output). */
  private state: SessionFileFacts;
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
    this.pathInfo = parseSessionPath(home, file);
    this.opts = {
      tailWindowBytes: opts.tailWindowBytes ?? DEFAULT_TAIL_WINDOW_BYTES,
      maxLineBytes: opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
      counter: opts.counter,
      now: opts.now,
      scanMaxBytes: opts.scanMaxBytes ?? Infinity,
      chunkBytes: opts.chunkBytes ?? 1024 * 1024,
      incompleteGraceMs: opts.incompleteGraceMs ?? DEFAULT_INCOMPLETE_GRACE_MS,
    };
    this.state = emptySessionFacts(home, file, this.pathInfo);
  }

  /** The current facts. */
  facts(): SessionFileFacts {
    return this.output();
  }

  /** Reads what is new. Calls are serialised; never throws. */
  update(): Promise<SessionFileUpdate> {
    const run = this.chain.then(() => this.step());
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async step(): Promise<SessionFileUpdate> {
    const before = this.state;
    const errorBefore = this.lastError;
    const fresh: Warning[] = [];
    let bytesRead = 0;
    let gone = false;
    let started = false;
    let error: string | null = null;
    try {
      if (this.tailer === null) {
        const s = await this.start(fresh);
        bytesRead += s.bytesRead;
        gone = s.gone;
        started = !s.gone && s.error === null;
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
          this.state = emptySessionFacts(this.home, this.file, this.pathInfo);
          this.tailer = null;
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
    return { facts: this.output(), warnings: this.warnings(), newWarnings, bytesRead, changed, gone, error };
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

  /** Header, tail window, and (once) the last state entries before the window. */
  private async start(warnings: Warning[]): Promise<{ bytesRead: number; gone: boolean; error: string | null }> {
    let bytesRead = 0;
    for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
      const head = await this.readHead(warnings);
      if (head.kind === 'gone') return { bytesRead, gone: true, error: null };
      if (head.kind === 'error') return { bytesRead, gone: false, error: head.error };
      bytesRead += head.bytesRead;
      const { size, headerEnd, identity } = head;
      const windowStart = size <= this.opts.tailWindowBytes ? 0 : Math.max(headerEnd ?? 0, size - this.opts.tailWindowBytes);
      const tailer = new FileTailer(this.file, {
        startOffset: windowStart,
        startLine: windowStart === 0 ? 1 : windowStart === headerEnd ? 2 : undefined,
        maxLineBytes: this.opts.maxLineBytes,
        chunkBytes: this.opts.chunkBytes,
        counter: this.opts.counter,
        expectIdentity: identity,
        rereadOnReset: false,
      });
      const r = await tailer.poll();
      if (r.gone) return { bytesRead, gone: true, error: null };
      if (r.reset !== null) continue; // changed while we opened it: start again, quietly
      bytesRead += r.bytesRead;
      this.tailer = tailer;

      let facts = emptySessionFacts(this.home, this.file, this.pathInfo);
      // Line 1 is the header: from the head read for a large file, else the window's first line.
      const fromZero = windowStart === 0;
      const headerLine = fromZero ? r.lines.find((l) => l.line === 1) : head.headerLine;
      if (headerLine) {
        const header = this.parseLine(headerLine, warnings);
        if (header && header.type !== 'session') {
          warnings.push(warn(this.file, 1, headerLine.offset, 'line 1 is not a session header', 'error'));
        }
        if (header) facts = foldSessionEntry(facts, header, { line: 1, offset: 0 });
      }
      const window = r.lines
        .filter((line) => !(fromZero && line === headerLine))
        .map((line) => ({ line, entry: this.parseLine(line, warnings) }));

      if (windowStart > 0 && headerEnd !== null) {
        const cut = r.lines[0]?.offset ?? r.pending?.offset ?? tailer.offset();
        const scanned = await this.scanBeforeWindow(window.map((w) => w.entry), cut, headerEnd, warnings);
        bytesRead += scanned.bytesRead;
        for (const s of scanned.entries) facts = foldSessionEntry(facts, s.entry, { line: null, offset: s.offset });
      }
      for (const w of window) {
        if (w.entry) facts = foldSessionEntry(facts, w.entry, w.line);
      }
      this.state = facts;
      this.track(r.size, r.mtimeMs, r.pending !== null);
      return { bytesRead, gone: false, error: r.error ?? null };
    }
    return { bytesRead, gone: false, error: 'the file kept changing while it was opened' };
  }

  /** Size, identity, and for a file larger than the window the header line and where it ends. */
  private async readHead(warnings: Warning[]): Promise<
    | { kind: 'gone' }
    | { kind: 'error'; error: string }
    | { kind: 'ok'; size: number; headerEnd: number | null; headerLine: AssembledLine | null; identity: FileIdentity | undefined; bytesRead: number }
  > {
    let handle;
    try {
      handle = await open(this.file, 'r');
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'gone' };
      return { kind: 'error', error: errText(err) };
    }
    try {
      const st = await handle.stat({ bigint: true });
      if (!st.isFile()) return { kind: 'error', error: 'not a regular file' };
      const size = Number(st.size);
      if (size <= this.opts.tailWindowBytes) {
        return { kind: 'ok', size, headerEnd: null, headerLine: null, identity: undefined, bytesRead: 0 };
      }
      // Read the first line only, growing the read until its LF (bounded by the line cap).
      let buf = Buffer.alloc(0);
      let lf = -1;
      let length = HEAD_READ_BYTES;
      while (lf < 0 && buf.length < size && buf.length <= this.opts.maxLineBytes) {
        const more = await readAt(handle, buf.length, Math.min(length, size - buf.length), this.opts.counter);
        if (more.length === 0) break;
        const searchFrom = buf.length;
        buf = Buffer.concat([buf, more]);
        lf = buf.indexOf(0x0a, searchFrom);
        length = Math.min(length * 2, this.opts.chunkBytes);
      }
      const identity: FileIdentity = { dev: st.dev, ino: st.ino, head: Buffer.from(buf.subarray(0, Math.min(HEAD_FINGERPRINT_BYTES, buf.length))) };
      if (lf < 0 || lf > this.opts.maxLineBytes) {
        warnings.push(warn(this.file, 1, 0, `line too long (over ${this.opts.maxLineBytes} bytes) at offset 0: no session header read`, 'error'));
        return { kind: 'ok', size, headerEnd: null, headerLine: null, identity, bytesRead: buf.length };
      }
      let text = buf.subarray(0, lf);
      if (text.length >= 3 && text[0] === 0xef && text[1] === 0xbb && text[2] === 0xbf) text = text.subarray(3);
      if (text.length > 0 && text[text.length - 1] === 0x0d) text = text.subarray(0, text.length - 1);
      const headerLine: AssembledLine = { text: text.toString('utf8'), offset: 0, line: 1 };
      return { kind: 'ok', size, headerEnd: lf + 1, headerLine, identity, bytesRead: buf.length };
    } catch (err) {
      return { kind: 'error', error: errText(err) };
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  /** Finds, once, the last entry of each state type the window does not contain. */
  private async scanBeforeWindow(
    windowEntries: (SessionEntry | null)[],
    cut: number,
    headerEnd: number,
    warnings: Warning[],
  ): Promise<{ entries: { offset: number; entry: SessionEntry }[]; bytesRead: number }> {
    const present = new Set(windowEntries.filter((e): e is SessionEntry => e !== null).map((e) => e.type));
    const wanted = STATE_PROBES.filter((p) => !windowEntries.some((e) => e !== null && p.matches(e)) && !(p.coveredBy && present.has(p.coveredBy)));
    if (wanted.length === 0 || cut <= headerEnd) return { entries: [], bytesRead: 0 };
    const accepted = new Map<string, SessionEntry>();
    const result = await scanBackward(this.file, {
      from: cut,
      to: headerEnd,
      maxBytes: this.opts.scanMaxBytes,
      chunkBytes: this.opts.chunkBytes,
      maxLineBytes: this.opts.maxLineBytes,
      needles: wanted.map((p) => p.needle),
      counter: this.opts.counter,
      accept: (needle, text) => {
        const probe = wanted.find((p) => p.needle === needle);
        const entry = parseText(text);
        if (!probe || !entry || !probe.matches(entry)) return false;
        accepted.set(needle, entry);
        return true;
      },
    });
    if (result.error !== undefined) warnings.push(warn(this.file, null, cut, `backward scan stopped: ${result.error}`, 'warning'));
    const entries: { offset: number; entry: SessionEntry }[] = [];
    for (const [needle, hit] of Object.entries(result.found)) {
      const entry = accepted.get(needle);
      if (entry) entries.push({ offset: hit.offset, entry });
    }
    // Oldest first, so "last one wins" holds across types.
    entries.sort((a, b) => a.offset - b.offset);
    return { entries, bytesRead: result.bytesScanned };
  }

  private foldLines(lines: AssembledLine[], warnings: Warning[]): void {
    let facts = this.state;
    for (const line of lines) {
      const entry = this.parseLine(line, warnings);
      if (entry) facts = foldSessionEntry(facts, entry, line);
    }
    this.state = facts;
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
      warnings.push(warn(this.file, line.line, line.offset, `invalid entry at offset ${line.offset}: ${r.error}`, 'error'));
      return null;
    }
    return r.entry;
  }

  /** Size, mtime and the incomplete-last-line clock; a new facts object only when one changed. */
  private track(size: number, mtimeMs: number, incomplete: boolean): void {
    const s = this.state;
    const incompleteSince = incomplete ? (s.incompleteSince ?? this.opts.now()) : null;
    if (s.size !== size || s.mtimeMs !== mtimeMs || s.incompleteSince !== incompleteSince) {
      this.state = { ...s, size, mtimeMs, incompleteSince };
    }
  }

  private output(): SessionFileFacts {
    const s = this.state;
    return s.lastEntryAt === null && s.mtimeMs > 0 ? { ...s, lastEntryAt: s.mtimeMs } : s;
  }
}

function parseText(text: string): SessionEntry | null {
  const json = parseJsonText(text, SESSION_JSON_MAX_DEPTH);
  if (!json.ok) return null;
  const r = parseSessionEntry(json.value);
  return r.ok ? r.entry : null;
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
