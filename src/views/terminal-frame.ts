/**
 * Draws the dashboard's frames straight to the terminal, in place below where it started, and
 * rewrites only the lines whose text changed. Ink's own renderer rebuilds a width × height grid of
 * styled cells on every render (~10 ms of CPU for a 200 × 70 frame even when one digit changed);
 * our lines are already planned, measured and clipped by `buildScreen`, so drawing them needs no
 * layout: each line becomes one string of text and SGR codes, compared with what is on screen.
 *
 * The cursor model is Ink's: after a frame the cursor sits at the start of the line below it, so
 * the frame must stay below the terminal height (buildScreen plans `rows − 1` lines). No
 * full-screen clear and no scrollback clear is ever written.
 */
import type { Line, Span, Tone } from './line.js';

/** Where frames go: the live terminal, or a test double. */
export interface FrameSink {
  /** Shows `lines` (already clipped to `width`); writes nothing when no line changed. */
  draw(lines: readonly Line[], width: number, noColor: boolean): void;
  /** The terminal is handed back: the cursor is shown again below the last frame. */
  done(): void;
}

const ESC = '\u001b[';
const HIDE_CURSOR = `${ESC}?25l`;
const SHOW_CURSOR = `${ESC}?25h`;
/** Synchronized output (DEC 2026): the terminal paints the frame at once, never half of it. */
const BEGIN_SYNC = `${ESC}?2026h`;
const END_SYNC = `${ESC}?2026l`;
const ERASE_TO_EOL = `${ESC}K`;
const ERASE_BELOW = `${ESC}J`;

const TONE_SGR: Record<Tone, number> = { red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36, gray: 90 };

/** One span as text with its SGR codes (reset after it, so spans never bleed into each other). */
function encodeSpan(s: Span): string {
  let codes = '';
  if (s.bold) codes += '1;';
  if (s.dim) codes += '2;';
  if (s.inverse) codes += '7;';
  if (s.color) codes += `${TONE_SGR[s.color]};`;
  return codes === '' ? s.text : `${ESC}${codes.slice(0, -1)}m${s.text}${ESC}0m`;
}

/**
 * Encoded lines by Line object, one map per colour mode. Rows' lines are memoised upstream (the
 * same Line object while a row is unchanged), so a frame encodes only the lines that changed:
 * at 100 appends/s, encoding every line of every frame was ~5 % of the main thread's work.
 */
const encoded = { color: new WeakMap<Line, string>(), noColor: new WeakMap<Line, string>() };

/** A line as the bytes a terminal needs: text and SGR codes (none under `noColor`). */
export function encodeLine(line: Line, noColor: boolean): string {
  const memo = noColor ? encoded.noColor : encoded.color;
  let out = memo.get(line);
  if (out !== undefined) return out;
  out = '';
  for (const s of line) out += noColor ? s.text : encodeSpan(s);
  memo.set(line, out);
  return out;
}

/** Anything with `write` (process.stdout, or a test's collector). */
export interface FrameOutput {
  write(chunk: string): unknown;
  isTTY?: boolean;
}

/**
 * The live terminal's frame sink. `write` receives one string per frame that changed something
 * (cursor moves, the changed lines, erases), wrapped in synchronized-output markers on a TTY.
 */
export class TerminalFrame implements FrameSink {
  private shown: string[] = [];
  private width = -1;
  private started = false;
  private finished = false;
  private readonly sync: boolean;

  constructor(private readonly out: FrameOutput) {
    this.sync = !!out.isTTY;
  }

  draw(lines: readonly Line[], width: number, noColor: boolean): void {
    if (this.finished) return;
    const next = lines.map((l) => encodeLine(l, noColor));
    let buf = '';
    if (!this.started) {
      this.started = true;
      buf += HIDE_CURSOR;
    }
    const prev = this.shown;
    if (width !== this.width && prev.length > 0) {
      // A narrower terminal may have re-wrapped the old frame: erase it from its top (as Ink does)
      // and draw the new one whole.
      buf += `${ESC}${prev.length}A\r${ERASE_BELOW}`;
      for (const l of next) buf += `${l}\n`;
    } else {
      const changed = next.length !== prev.length || next.some((l, i) => l !== prev[i]);
      if (!changed) {
        if (buf) this.out.write(buf);
        return;
      }
      // From the line below the frame up to its first changed line; then each line from there is
      // rewritten when it changed and stepped over when not.
      let first = 0;
      while (first < next.length && first < prev.length && next[first] === prev[first]) first++;
      const up = prev.length - first;
      if (up > 0) buf += `${ESC}${up}A`;
      buf += '\r';
      for (let i = first; i < next.length; i++) {
        if (i < prev.length && next[i] === prev[i]) buf += `${ESC}1B`;
        else buf += `${next[i]}${ERASE_TO_EOL}\n`;
      }
      // A shorter frame: clear what is left of the old one below the new end.
      if (next.length < prev.length) buf += ERASE_BELOW;
    }
    this.shown = next;
    this.width = width;
    this.out.write(this.sync ? `${BEGIN_SYNC}${buf}${END_SYNC}` : buf);
  }

  done(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.started) this.out.write(SHOW_CURSOR);
  }
}
