/**
 * Follow a small append-only JSON Lines file (a state log, our action journal) with a byte offset
 * and a kept partial line. Simpler than the session tailer: these files are small, so there is
 * no head fingerprint — a shrink or a new inode re-reads from 0, and so does a file rewritten in
 * place (the same inode: `cat new > log`, or a checkout that frees the inode and creates the file
 * again, which the file system may give the same number) to at least the length read: each read
 * first checks that the TAIL_BYTES before the offset are still the bytes read there. A state
 * log's first line stays the same through such a rewrite (the loop's `open`); its last lines do
 * not. Never throws.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { Warning } from '../model/types.js';
import { errorCode, fileWarning } from './json-file.js';
import { parseJsonText } from './json-text.js';
import { keepLastBytes, READ_FLAGS } from './read-counter.js';
import { nextTurn } from './time-slices.js';

/** Longest line we parse; a longer one is skipped with a warning. */
export const JSONL_MAX_LINE_BYTES = 1024 * 1024;

const CHUNK = 64 * 1024;
/** A long read yields to the event loop after this many bytes. */
const YIELD_BYTES = 1024 * 1024;
/**
 * How many bytes before the offset each read checks against what was read there: several lines
 * of a state log (their `seq` and `ts` differ from line to line), one small read.
 */
export const TAIL_BYTES = 256;

/** One complete, parsed line. */
export interface JsonlLine {
  /** 1-based line number in the file. */
  line: number;
  /** Byte offset of the line's first byte. */
  offset: number;
  value: unknown;
}

/** What one {@link JsonlFollower.update} found. */
export interface JsonlUpdate {
  lines: JsonlLine[];
  /** The file shrank, was replaced or vanished: drop what was read before. */
  reset: boolean;
  missing: boolean;
  warnings: Warning[];
}

/** Where reading a file stands (JsonlFollower.position): enough to resume in a later run. */
export interface JsonlPosition {
  /** The file's device and inode, `dev:ino`. */
  identity: string;
  /** The offset after the last complete line. */
  offset: number;
  /** That line's number. */
  line: number;
  /** The file's mtime when it was read. */
  mtimeMs: number;
  /** The last min(TAIL_BYTES, offset) bytes before the offset as read, base64. */
  tail: string;
}

/** Incremental reader of one JSONL file. */
export class JsonlFollower {
  private offset = 0;
  private partial: Buffer[] = [];
  private partialBytes = 0;
  private partialStart = 0;
  /** Dropping the rest of an over-long line until its newline. */
  private skipping = false;
  private lineNo = 0;
  private identity: string | null = null;
  /** The file's mtime at the last read. */
  private mtimeMs = -1;
  /** The last min(TAIL_BYTES, offset) bytes consumed: checked at the next read (a rewrite in place). */
  private tail: Buffer = Buffer.alloc(0);

  constructor(
    readonly file: string,
    private readonly maxLineBytes = JSONL_MAX_LINE_BYTES,
  ) {}

  /** Bytes consumed so far (complete lines plus the kept partial line). */
  get bytesRead(): number {
    return this.offset;
  }

  /** Bytes of an incomplete last line held back until its newline arrives (0 when none). */
  get pendingBytes(): number {
    return this.partialBytes;
  }

  /** Where reading stands; null before a read, and while part of a line is held back or skipped. */
  get position(): JsonlPosition | null {
    if (this.identity === null || this.partialBytes > 0 || this.skipping) return null;
    return { identity: this.identity, offset: this.offset, line: this.lineNo, mtimeMs: this.mtimeMs, tail: this.tail.toString('base64') };
  }

  /** Goes on from a {@link position} of an earlier run (the caller checked the file is still as it was then). */
  resume(at: JsonlPosition): void {
    this.restart(at.identity);
    this.offset = at.offset;
    this.partialStart = at.offset;
    this.lineNo = at.line;
    this.mtimeMs = at.mtimeMs;
    // A position saved before it had a tail (an older build's cache) leaves none: the first read
    // then starts over from 0, as for a file it cannot tell is the same.
    this.tail = typeof at.tail === 'string' ? Buffer.from(at.tail, 'base64') : Buffer.alloc(0);
  }

  /**
   * Read what was appended since the last call. Synchronous calls on one descriptor (a few µs
   * each for these small files; through the thread pool each cost a round trip, and a start with
   * 200 state logs sat idle for ~0.1 s), yielding to the event loop after every MiB.
   */
  async update(): Promise<JsonlUpdate> {
    const warnings: Warning[] = [];
    let fd: number;
    try {
      fd = openSync(this.file, READ_FLAGS);
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        const reset = this.identity !== null || this.offset > 0;
        this.restart(null);
        return { lines: [], reset, missing: true, warnings };
      }
      return { lines: [], reset: false, missing: false, warnings: [fileWarning(this.file, `cannot open: ${code ?? String(err)}`)] };
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) return { lines: [], reset: false, missing: false, warnings: [fileWarning(this.file, 'not a regular file')] };
      const identity = `${st.dev}:${st.ino}`;
      this.mtimeMs = st.mtimeMs;
      let reset = false;
      if (this.identity !== identity || st.size < this.offset || !this.sameTail(fd)) {
        reset = this.identity !== null || this.offset > 0;
        this.restart(identity);
      }
      const lines: JsonlLine[] = [];
      const buf = Buffer.alloc(Math.min(CHUNK, Math.max(1, st.size - this.offset)));
      let sinceYield = 0;
      while (this.offset < st.size) {
        const want = Math.min(buf.length, st.size - this.offset);
        const bytesRead = readSync(fd, buf, 0, want, this.offset);
        if (bytesRead === 0) break;
        const chunk = buf.subarray(0, bytesRead);
        this.consume(chunk, lines, warnings);
        this.tail = keepLastBytes(this.tail, chunk, TAIL_BYTES);
        sinceYield += bytesRead;
        if (sinceYield >= YIELD_BYTES) {
          sinceYield = 0;
          await nextTurn();
        }
      }
      return { lines, reset, missing: false, warnings };
    } catch (err) {
      return { lines: [], reset: false, missing: false, warnings: [fileWarning(this.file, `cannot read: ${errorCode(err) ?? String(err)}`)] };
    } finally {
      try {
        closeSync(fd);
      } catch {
        /* already closed */
      }
    }
  }

  /** True when the bytes before the offset are the ones read there (nothing read yet: true). */
  private sameTail(fd: number): boolean {
    const want = this.tail.length;
    // None kept (nothing read yet, or a position saved without them) or more than was read (a
    // damaged cache entry): the same file only when nothing was read.
    if (want === 0 || want > this.offset) return want === 0 && this.offset === 0;
    const got = Buffer.alloc(want);
    return readSync(fd, got, 0, want, this.offset - want) === want && got.equals(this.tail);
  }

  private restart(identity: string | null): void {
    this.identity = identity;
    this.tail = Buffer.alloc(0);
    this.offset = 0;
    this.partial = [];
    this.partialBytes = 0;
    this.partialStart = 0;
    this.skipping = false;
    this.lineNo = 0;
  }

  /** Split a chunk on LF at the byte level (a UTF-8 character split across chunks stays intact). */
  private consume(chunk: Buffer, lines: JsonlLine[], warnings: Warning[]): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl < 0 ? chunk.length : nl;
      const piece = chunk.subarray(start, end);
      if (!this.skipping) {
        if (this.partialBytes + piece.length > this.maxLineBytes) {
          this.skipping = true;
          this.partial = [];
        } else if (piece.length > 0) {
          this.partial.push(Buffer.from(piece));
        }
      }
      this.partialBytes += piece.length;
      this.offset += piece.length;
      if (nl < 0) return;
      this.offset += 1;
      this.lineNo++;
      this.finishLine(lines, warnings);
      start = nl + 1;
    }
  }

  private finishLine(lines: JsonlLine[], warnings: Warning[]): void {
    const line = this.lineNo;
    const offset = this.partialStart;
    const size = this.partialBytes;
    const skipped = this.skipping;
    const bytes = Buffer.concat(this.partial);
    this.partial = [];
    this.partialBytes = 0;
    this.partialStart = this.offset;
    this.skipping = false;
    if (skipped) {
      warnings.push({ file: this.file, line, offset, message: `line too long (${size} bytes), skipped`, severity: 'error' });
      return;
    }
    let text = bytes.toString('utf8');
    if (line === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.trim() === '') return;
    const parsed = parseJsonText(text);
    if (!parsed.ok) {
      warnings.push({ file: this.file, line, offset, message: parsed.message.replace(/ \(line 1 column (\d+)\)$/, ' (column $1)'), severity: 'error' });
      return;
    }
    if (parsed.droppedProtoKeys > 0) {
      warnings.push({ file: this.file, line, offset, message: `ignored ${parsed.droppedProtoKeys} "__proto__" key(s)`, severity: 'warning' });
    }
    lines.push({ line, offset, value: parsed.value });
  }
}
