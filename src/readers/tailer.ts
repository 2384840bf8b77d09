/**
 * The shared tailer (STYLE "Tail strictly", RELIABILITY A/B): per file a byte offset, an identity
 * (device, inode) and a head fingerprint; each poll opens, reads only what was appended, closes.
 * A file that shrank, changed identity, got a different head, or other bytes just before the
 * offset than were read there (a rewrite in place of the same session: its header, so its head,
 * stays the same) is re-read from 0.
 */
import { closeSync, fstatSync, openSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { DEFAULT_MAX_LINE_BYTES, LineAssembler, type AssembledLine, type PendingLine } from './line-assembler.js';
import { keepLastBytes, READ_FLAGS, readAt, readInto, type ReadCounter } from './read-counter.js';
import { msFromNs } from './time-value.js';

/**
 * A poll with at most this much to read reads synchronously (a few µs on a file in the page
 * cache); more — a big append — goes through the thread pool, chunk by chunk, so a multi-MB line
 * never holds the event loop (RELIABILITY A12).
 */
const SYNC_READ_MAX_BYTES = 256 * 1024;

/** Bytes of the file head kept to detect an in-place rewrite. */
export const HEAD_FINGERPRINT_BYTES = 64;
/** Bytes before the offset kept, and checked at each poll that finds the file changed. */
export const BEFORE_OFFSET_BYTES = 64;
/** Default read size per syscall. */
export const DEFAULT_CHUNK_BYTES = 1024 * 1024;

/** Why a tailer started over: shrank, other inode, or same inode with a different head. */
export type TailReset = 'truncated' | 'replaced' | 'rewritten';

/** Which file a tailer is following: (device, inode) and its first bytes. */
export interface FileIdentity {
  dev: bigint;
  ino: bigint;
  /** The first min(64, size) bytes seen. */
  head: Buffer;
}

/** The outcome of one poll. Never thrown: a missing file is `gone`, other failures are `error`. */
export interface TailResult {
  lines: AssembledLine[];
  reset: TailReset | null;
  gone: boolean;
  size: number;
  mtimeMs: number;
  /** Content bytes read by this poll. */
  bytesRead: number;
  /** Fingerprint bytes read by this poll (to detect rewrites). */
  probeBytes: number;
  /** The kept partial last line after this poll. */
  pending: PendingLine | null;
  /** More appended bytes remain beyond `maxBytesPerPoll`; poll again. */
  more: boolean;
  /** e.g. `EACCES: permission denied`; the tailer keeps its state and retries next poll. */
  error?: string;
}

/** Options of a `FileTailer`. */
export interface FileTailerOptions {
  /** Begin here instead of at 0 (a tail window); the line cut by it is dropped silently. */
  startOffset?: number;
  /**
   * `startOffset` is known to be a line start: the line number there (e.g. 2 after a header), or
   * null when the number is not known. Undefined: it may be mid-line (the cut line is dropped).
   */
  startLine?: number | null;
  maxLineBytes?: number;
  chunkBytes?: number;
  /** Bound on content bytes per poll (default: read to the size seen at this poll). */
  maxBytesPerPoll?: number;
  counter?: ReadCounter;
  /** The identity the caller already saw (e.g. while reading the header): a mismatch is a reset. */
  expectIdentity?: FileIdentity;
  /**
   * The bytes just before `startOffset` as an earlier run read them (up to 64): checked at the
   * first poll, like the bytes before the offset at every later poll that finds the file changed;
   * different bytes there mean the file was rewritten (reset `rewritten`). Used only with
   * `startLine` (the offset is then `startOffset` itself) and when no longer than `startOffset`.
   */
  expectBefore?: Buffer;
  /** true (default): after a reset read from 0 at once; false: report the reset, read nothing. */
  rereadOnReset?: boolean;
}

export class FileTailer {
  readonly file: string;
  private readonly assembler: LineAssembler;
  private readonly chunkBytes: number;
  private readonly maxBytesPerPoll: number;
  private readonly counter: ReadCounter | undefined;
  private readonly rereadOnReset: boolean;
  private position: number;
  private identity: FileIdentity | null;
  private lastSize = -1;
  /** The last bytes read before `position` (up to BEFORE_OFFSET_BYTES); null: not known. */
  private before: Buffer | null;
  private lastMtimeNs = -1n;

  constructor(file: string, opts: FileTailerOptions = {}) {
    this.file = file;
    this.assembler = new LineAssembler({ maxLineBytes: opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES });
    this.chunkBytes = Math.max(1, opts.chunkBytes ?? DEFAULT_CHUNK_BYTES);
    this.maxBytesPerPoll = opts.maxBytesPerPoll ?? Infinity;
    this.counter = opts.counter;
    this.rereadOnReset = opts.rereadOnReset ?? true;
    this.identity = opts.expectIdentity ?? null;
    const start = Math.max(0, opts.startOffset ?? 0);
    // Only where the offset is `start` itself: a start that may be mid-line begins a byte early.
    this.before = opts.expectBefore && opts.expectBefore.length > 0 && opts.expectBefore.length <= start && opts.startLine !== undefined ? opts.expectBefore : null;
    if (start === 0 || opts.startLine !== undefined) {
      this.position = start;
      this.assembler.reset(start, { line: start === 0 ? 1 : (opts.startLine ?? null) });
    } else {
      // Start one byte early and drop through the first LF: if that byte is the LF, the line at
      // `start` is whole and kept; otherwise the cut line is dropped.
      this.position = start - 1;
      this.assembler.reset(start - 1, { discardFirst: true });
    }
  }

  /** Offset of the next byte to read (everything before it has been consumed). */
  offset(): number {
    return this.position;
  }

  /** The kept partial last line, if any. */
  pending(): PendingLine | null {
    return this.assembler.pending();
  }

  /** The identity seen at the last poll, or null before the first. */
  fileIdentity(): FileIdentity | null {
    return this.identity;
  }

  /**
   * Stats the file and reads what was appended since the last poll, on one descriptor with
   * synchronous calls (a poll of a file in the page cache costs a few µs, not ~0.4 ms through the
   * thread pool); a large read goes through the thread pool (see SYNC_READ_MAX_BYTES).
   */
  async poll(): Promise<TailResult> {
    let fd: number;
    try {
      fd = openSync(this.file, READ_FLAGS);
    } catch (err) {
      const code = errCode(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return this.empty({ gone: true });
      return this.empty({ error: errText(err) });
    }
    try {
      return await this.pollOpen(fd);
    } catch (err) {
      return this.empty({ error: errText(err) });
    } finally {
      try {
        closeSync(fd);
      } catch {
        /* already closed */
      }
    }
  }

  private async pollOpen(handle: number): Promise<TailResult> {
    // Stat the descriptor we read from, so identity and content cannot come from different files.
    const st = fstatSync(handle, { bigint: true });
    if (!st.isFile()) return this.empty({ error: 'not a regular file' });
    const size = Number(st.size);
    const mtimeMs = msFromNs(st.mtimeNs);
    let probeBytes = 0;
    let reset: TailReset | null = null;
    let head: Buffer | null = null;
    const known = this.identity;
    const changed = size !== this.lastSize || st.mtimeNs !== this.lastMtimeNs;
    if (known && (known.dev !== st.dev || known.ino !== st.ino)) {
      reset = 'replaced';
    } else if (size < this.position) {
      reset = 'truncated';
    } else if (!known || changed) {
      head = await readAt(handle, 0, Math.min(HEAD_FINGERPRINT_BYTES, size), this.counter, 'probe');
      probeBytes += head.length;
      if (known && known.head.length > 0) {
        if (head.length < known.head.length) reset = 'truncated';
        else if (!head.subarray(0, known.head.length).equals(known.head)) reset = 'rewritten';
      }
    }
    // A rewrite in place that keeps the head (the same session's header) and reaches past the
    // offset shows in the bytes before it (RELIABILITY B2).
    const before = this.before;
    if (reset === null && before !== null && changed) {
      const at = this.position - before.length;
      const got = at >= 0 ? await readAt(handle, at, before.length, this.counter, 'probe') : Buffer.alloc(0);
      probeBytes += got.length;
      if (!got.equals(before)) reset = 'rewritten';
    }
    this.lastSize = size;
    this.lastMtimeNs = st.mtimeNs;
    if (reset !== null) {
      this.position = 0;
      this.before = null;
      this.assembler.reset(0);
      if (head === null) {
        head = await readAt(handle, 0, Math.min(HEAD_FINGERPRINT_BYTES, size), this.counter, 'probe');
        probeBytes += head.length;
      }
    }
    if (head !== null) this.identity = { dev: st.dev, ino: st.ino, head };
    if (reset !== null && !this.rereadOnReset) {
      // The caller starts over its own way; make sure a later poll still sees the change.
      this.lastSize = -1;
      return { ...this.empty({}), reset, size, mtimeMs, probeBytes };
    }

    const lines: AssembledLine[] = [];
    const end = Math.min(size, this.position + this.maxBytesPerPoll);
    let bytesRead = 0;
    let error: string | undefined;
    // One buffer per poll, from a small shared pool: the assembler copies only what it keeps, so
    // a 200 MB append arriving in 200 polls leaves no garbage behind (RELIABILITY A9).
    const scratch = end > this.position ? borrowBuffer(Math.min(this.chunkBytes, end - this.position)) : null;
    const big = end - this.position > SYNC_READ_MAX_BYTES;
    try {
      while (scratch !== null && this.position < end) {
        const want = Math.min(scratch.length, end - this.position);
        const buf = await readInto(big ? { asyncFd: handle } : handle, want === scratch.length ? scratch : scratch.subarray(0, want), this.position, this.counter);
        if (buf.length === 0) break; // shrank while we read: the next poll sees it
        for (const line of this.assembler.push(buf)) lines.push(line);
        this.position += buf.length;
        bytesRead += buf.length;
        this.before = keepLastBytes(this.before, buf, BEFORE_OFFSET_BYTES);
      }
    } catch (err) {
      // Keep what was assembled; the offset stops where the good bytes ended.
      error = errText(err);
    } finally {
      if (scratch !== null) returnBuffer(scratch);
    }
    const result: TailResult = {
      lines,
      reset,
      gone: false,
      size,
      mtimeMs,
      bytesRead,
      probeBytes,
      pending: this.assembler.pending(),
      more: this.position < size,
    };
    if (error !== undefined) result.error = error;
    return result;
  }

  /** The last bytes read before the offset (up to BEFORE_OFFSET_BYTES, a copy), or null when none are known. */
  bytesBeforeOffset(): Buffer | null {
    return this.before === null ? null : Buffer.from(this.before);
  }

  private empty(extra: { gone?: boolean; error?: string }): TailResult {
    const result: TailResult = {
      lines: [],
      reset: null,
      gone: extra.gone ?? false,
      size: extra.gone ? 0 : Math.max(0, this.lastSize),
      mtimeMs: extra.gone || this.lastMtimeNs < 0n ? 0 : msFromNs(this.lastMtimeNs),
      bytesRead: 0,
      probeBytes: 0,
      pending: this.assembler.pending(),
      more: false,
    };
    if (extra.error !== undefined) result.error = extra.error;
    return result;
  }
}

/** Options of `scanBackward`. */
export interface ScanBackwardOptions {
  /** Scan the bytes before this offset; it should be a line start or the end of the file. */
  from: number;
  /** Stop at this offset, a known line start (default 0). */
  to?: number;
  chunkBytes?: number;
  /** At most this many bytes are read (Infinity allowed). */
  maxBytes?: number;
  /** Raw substrings (no LF), e.g. `"customType":"loop-continuation-state"`. */
  needles: string[];
  counter?: ReadCounter;
  /** Lines longer than this are skipped. */
  maxLineBytes?: number;
  /** Rejects a false match (e.g. the needle inside nested data); the search goes on before it. */
  accept?: (needle: string, text: string) => boolean;
}

/** The last line found for each needle. */
export interface ScanBackwardResult {
  /** Per needle found: the byte offset of its last line's start, and that line's text. */
  found: Record<string, { offset: number; text: string }>;
  bytesScanned: number;
  /**
   * A line start: every line from here up to `from` has been searched (for the needles still
   * missing). A later scan of the same region can go on from here; `to` when it was all searched.
   */
  resumeAt: number;
  error?: string;
}

/**
 * Reads a file backwards in chunks from `from` to find, for each needle, the last complete line
 * containing it. Bytes between the last LF before `from` and `from` are an unfinished line and are
 * ignored. Stops when every needle is found, at `to`, or after `maxBytes`. Never throws.
 */
export async function scanBackward(file: string, opts: ScanBackwardOptions): Promise<ScanBackwardResult> {
  const found: Record<string, { offset: number; text: string }> = {};
  const to = Math.max(0, opts.to ?? 0);
  const from = Math.max(to, opts.from);
  const chunkBytes = Math.max(1, opts.chunkBytes ?? DEFAULT_CHUNK_BYTES);
  const maxBytes = opts.maxBytes ?? Infinity;
  const maxLineBytes = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const floor = Number.isFinite(maxBytes) ? Math.max(to, from - Math.max(0, maxBytes)) : to;
  const remaining = new Map(opts.needles.filter((n) => n.length > 0).map((n) => [n, Buffer.from(n, 'utf8')] as const));
  let pos = from;
  // `carry`: bytes from `pos` up to the earliest LF seen so far (exclusive): the start of a line
  // whose beginning lies further back. `carryWhole`: that line is complete (ends in an LF we saw).
  let carry: Buffer = Buffer.alloc(0);
  let carryWhole = false;
  let oversized = false;
  let resumeAt = from;

  // Searches `area` (whole lines; `area` begins at a line start and its last line ends at its end).
  const search = (area: Buffer, areaOffset: number): void => {
    for (const [needle, bytes] of remaining) {
      let limit = area.length - bytes.length;
      while (limit >= 0) {
        const at = area.lastIndexOf(bytes, limit);
        if (at < 0) break;
        const start = area.lastIndexOf(LF_BYTE, at) + 1;
        const lfAt = area.indexOf(LF_BYTE, at + bytes.length);
        const endAt = lfAt < 0 ? area.length : lfAt;
        const text = decodeLine(area.subarray(start, endAt), areaOffset + start === 0);
        if (!opts.accept || opts.accept(needle, text)) {
          found[needle] = { offset: areaOffset + start, text };
          remaining.delete(needle);
          break;
        }
        limit = start - 1 - bytes.length;
      }
    }
  };

  // Nothing to search (a start's scan budget of 0 bytes, or every needle already found): the
  // file is not opened at all — an open and close through the thread pool cost ~0.1 ms each and
  // left the event loop idle while a start read a thousand tails.
  if (pos <= floor || remaining.size === 0) return { found, bytesScanned: 0, resumeAt: from };
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    return { found, bytesScanned: 0, resumeAt: from, error: errText(err) };
  }
  const scratch = borrowBuffer(Math.min(chunkBytes, Math.max(1, from - floor)));
  try {
    while (pos > floor && remaining.size > 0) {
      const start = Math.max(floor, pos - chunkBytes);
      // One buffer for the whole scan (a search through hundreds of MB leaves no garbage behind);
      // what is kept across reads (the carry) is copied out of it.
      const chunk = await readInto(handle, scratch.subarray(0, pos - start), start, opts.counter);
      if (chunk.length < pos - start) break; // the file shrank under us: stop, report what we have
      pos = start;
      const firstLf = chunk.indexOf(LF_BYTE);
      if (firstLf < 0) {
        if (!oversized) carry = Buffer.concat([chunk, carry]);
        if (carry.length > maxLineBytes) {
          oversized = true;
          carry = Buffer.alloc(0);
        }
        continue;
      }
      // Whole lines: from just after the chunk's first LF through the carry (when it is whole).
      const tail = chunk.subarray(firstLf + 1);
      const base = start + firstLf + 1;
      if (carryWhole && !oversized && carry.length > 0) {
        // The line across the read boundary (this chunk's last bytes and the carry) is joined on
        // its own — not the whole chunk — and searched first: it is the later one in the file.
        const lastLf = tail.lastIndexOf(LF_BYTE);
        search(trimLastLf(Buffer.concat([tail.subarray(lastLf + 1), carry])), base + lastLf + 1);
        if (lastLf >= 0) search(trimLastLf(tail.subarray(0, lastLf + 1)), base);
      } else {
        const lineBytes = oversized || !carryWhole ? tail.subarray(0, tail.lastIndexOf(LF_BYTE) + 1) : tail;
        if (lineBytes.length > 0) search(trimLastLf(lineBytes), base);
      }
      resumeAt = base;
      carry = Buffer.from(chunk.subarray(0, firstLf));
      carryWhole = true;
      oversized = false;
      if (carry.length > maxLineBytes) {
        oversized = true;
        carry = Buffer.alloc(0);
      }
    }
    // At `to` the carry is a whole line that starts there.
    if (pos === to && carryWhole && !oversized && carry.length > 0 && remaining.size > 0) search(carry, to);
    if (pos === to) resumeAt = to;
    return { found, bytesScanned: from - pos, resumeAt };
  } catch (err) {
    return { found, bytesScanned: from - pos, resumeAt, error: errText(err) };
  } finally {
    returnBuffer(scratch);
    await handle.close().catch(() => undefined);
  }
}

const LF_BYTE = 0x0a;

/** Reads below this size use a fresh small buffer; larger ones a pooled one. */
const POOL_MIN_BYTES = 64 * 1024;
/** Pooled read buffers kept for re-use: enough for the polls in flight at once. */
const POOL_MAX = 4;
const pool: Buffer[] = [];

function borrowBuffer(size: number): Buffer {
  if (size < POOL_MIN_BYTES) return Buffer.allocUnsafe(size);
  const i = pool.findIndex((b) => b.length >= size);
  const whole = i >= 0 ? pool.splice(i, 1)[0]! : Buffer.allocUnsafe(Math.max(size, DEFAULT_CHUNK_BYTES));
  return whole.subarray(0, size);
}

function returnBuffer(buf: Buffer): void {
  // A subarray shares its parent's memory: give the whole allocation back.
  const whole = Buffer.from(buf.buffer, buf.byteOffset, buf.buffer.byteLength - buf.byteOffset);
  if (whole.length >= POOL_MIN_BYTES && pool.length < POOL_MAX) pool.push(whole);
}

function trimLastLf(buf: Buffer): Buffer {
  return buf.length > 0 && buf[buf.length - 1] === LF_BYTE ? buf.subarray(0, buf.length - 1) : buf;
}

function decodeLine(buf: Buffer, atFileStart: boolean): string {
  let b = buf;
  if (atFileStart && b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) b = b.subarray(3);
  if (b.length > 0 && b[b.length - 1] === 0x0d) b = b.subarray(0, b.length - 1);
  return b.toString('utf8');
}

function errCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : undefined;
}

function errText(err: unknown): string {
  const code = errCode(err);
  const message = err instanceof Error ? err.message : String(err);
  return code && !message.startsWith(code) ? `${code}: ${message}` : message;
}
