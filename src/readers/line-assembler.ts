/**
 * Byte-level LF framing for JSON Lines (STYLE "Tail strictly"). Pure: bytes in, lines out.
 * Lines are decoded only once complete, so a chunk boundary inside a multi-byte UTF-8 character
 * never yields U+FFFD; LF (0x0A) never occurs inside a multi-byte sequence, so splitting on it
 * at the byte level is exact.
 */

/** 4 MiB: a longer line is counted, reported and skipped, never held in memory. */
export const DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;

/** One complete line. */
export interface AssembledLine {
  /** Decoded text without LF, trailing CR or a file-start BOM; '' when `tooLong` is set. */
  text: string;
  /** Byte offset of the line's first byte in the file. */
  offset: number;
  /** 1-based line number, or null when reading began mid-file (the count is unknown). */
  line: number | null;
  /** Byte length of a line over the cap (its text was not kept). */
  tooLong?: number;
}

/** Where and how long the kept partial (unterminated) line is. */
export interface PendingLine {
  bytes: number;
  offset: number;
}

/** How a reset positions the assembler. */
export interface ResetOptions {
  /** Line number of the line starting at `offset`; default 1 at offset 0, else unknown (null). */
  line?: number | null;
  /** Drop everything up to and including the first LF (a tail-window cut, not data). */
  discardFirst?: boolean;
}

export class LineAssembler {
  private readonly maxLineBytes: number;
  private parts: Buffer[] = [];
  private partBytes = 0;
  /** Offset of the first byte of the current (unterminated) line. */
  private lineStart = 0;
  /** Offset of the next byte `push` will receive. */
  private position = 0;
  private lineNo: number | null = 1;
  /** The current line passed the cap: keep counting its bytes, keep none of them. */
  private overflow = false;
  private discarding = false;

  constructor(opts: { maxLineBytes?: number } = {}) {
    this.maxLineBytes = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  }

  /** Start over at `offset` (the next pushed byte is the file's byte at `offset`). */
  reset(offset = 0, opts: ResetOptions = {}): void {
    this.parts = [];
    this.partBytes = 0;
    this.overflow = false;
    this.position = offset;
    this.lineStart = offset;
    this.discarding = opts.discardFirst ?? false;
    this.lineNo = this.discarding ? null : opts.line !== undefined ? opts.line : offset === 0 ? 1 : null;
  }

  /** Offset of the next byte expected. */
  offset(): number {
    return this.position;
  }

  /** The kept partial line, or null when the stream ends on a line boundary. */
  pending(): PendingLine | null {
    return this.partBytes > 0 ? { bytes: this.partBytes, offset: this.lineStart } : null;
  }

  /**
   * Feeds the next bytes of the stream; returns the lines they complete, in order. No view of
   * `chunk` is kept once this returns, so the caller may reuse its buffer for the next read.
   */
  push(chunk: Buffer): AssembledLine[] {
    const out: AssembledLine[] = [];
    let i = 0;
    while (i < chunk.length) {
      const lf = chunk.indexOf(LF, i);
      if (lf === -1) {
        // Kept past this call: copied (only when kept), as the caller may reuse its buffer.
        this.keep(chunk.subarray(i), true);
        this.position += chunk.length - i;
        break;
      }
      this.keep(chunk.subarray(i, lf), false);
      this.position += lf - i + 1;
      this.finishLine(out);
      i = lf + 1;
    }
    return out;
  }

  private keep(piece: Buffer, copy: boolean): void {
    if (piece.length === 0) return;
    this.partBytes += piece.length;
    // An over-long line is counted, not held: a 200 MB line costs no more memory than the cap.
    if (this.discarding || this.overflow) return;
    if (this.partBytes > this.maxLineBytes) {
      this.overflow = true;
      this.parts = [];
      return;
    }
    this.parts.push(copy ? Buffer.from(piece) : piece);
  }

  private finishLine(out: AssembledLine[]): void {
    const offset = this.lineStart;
    const line = this.lineNo;
    if (this.discarding) {
      this.discarding = false;
    } else if (this.overflow) {
      out.push({ text: '', offset, line, tooLong: this.partBytes });
    } else {
      let buf = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.partBytes);
      if (offset === 0 && buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) buf = buf.subarray(3);
      if (buf.length > 0 && buf[buf.length - 1] === CR) buf = buf.subarray(0, buf.length - 1);
      const text = buf.toString('utf8');
      // Empty (or blank) lines are not records; they still count for line numbers.
      if (text.trim() !== '') out.push({ text, offset, line });
    }
    this.parts = [];
    this.partBytes = 0;
    this.overflow = false;
    this.lineStart = this.position;
    this.lineNo = line === null ? null : line + 1;
  }
}
