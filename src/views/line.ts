/**
 * Everything on screen is built as lines of styled spans, measured and clipped here, so a frame's
 * height is known before Ink lays it out (it must stay below the terminal height) and no line
 * ever wraps.
 */
import { displayWidth, sanitize, takeWidth } from './text.js';

/** Colours the views use (Ink/chalk names). */
export type Tone = 'red' | 'yellow' | 'green' | 'cyan' | 'magenta' | 'blue' | 'gray';

/** A run of text with one style. `text` may come from files: it is sanitised when clipped. */
export interface Span {
  text: string;
  color?: Tone;
  bold?: boolean;
  dim?: boolean;
  inverse?: boolean;
}

/** One screen line. */
export type Line = readonly Span[];

export const span = (text: string, style: Omit<Span, 'text'> = {}): Span => ({ text, ...style });
export const plainLine = (text: string, style: Omit<Span, 'text'> = {}): Line => [span(text, style)];

/** The line's text without styles. */
export function lineText(line: Line): string {
  return line.map((s) => s.text).join('');
}

/** Lines clipped before: a table row that did not change is the same line object frame after frame. */
const clipped = new WeakMap<Line, { width: number; out: Line }>();

/** Sanitise every span and cut the line to `width` cells (`…` marks the cut). */
export function clipLine(line: Line, width: number): Line {
  const m = clipped.get(line);
  if (m && m.width === width) return m.out;
  const out = clip(line, width);
  clipped.set(line, { width, out });
  return out;
}

function clip(line: Line, width: number): Line {
  const clean = line.map((s) => {
    const text = sanitize(s.text);
    return text === s.text ? s : { ...s, text };
  });
  const total = clean.reduce((w, s) => w + displayWidth(s.text), 0);
  if (total <= width) return clean;
  if (width <= 0) return [];
  // Cut at width − 1 cells and end with the marker, in the style of the span that was cut.
  const out: Span[] = [];
  let left = width - 1;
  for (const s of clean) {
    const w = displayWidth(s.text);
    if (w <= left) {
      out.push(s);
      left -= w;
      continue;
    }
    out.push({ ...s, text: `${takeWidth(s.text, left)}…` });
    return out;
  }
  return out;
}

/** A stable signature of a line's content and style (for memoised rows). */
export function lineSignature(line: Line): string {
  return line.map((s) => `${s.color ?? ''}${s.bold ? 'b' : ''}${s.dim ? 'd' : ''}${s.inverse ? 'i' : ''}\u0001${s.text}`).join('\u0002');
}

/**
 * At most `height` lines: when the content is longer, the window starting at `top` (clamped) is
 * shown and the last line says how many lines are hidden.
 */
export function windowLines(lines: readonly Line[], height: number, top: number): { lines: Line[]; top: number } {
  if (height <= 0) return { lines: [], top: 0 };
  if (lines.length <= height) return { lines: [...lines], top: 0 };
  const room = Math.max(1, height - 1);
  const start = Math.max(0, Math.min(top, lines.length - room));
  const shown = lines.slice(start, start + room);
  const hidden = lines.length - shown.length;
  return { lines: [...shown, plainLine(`+${hidden} more line${hidden === 1 ? '' : 's'}${start > 0 ? ` (${start} above)` : ''}`, { dim: true })], top: start };
}

/** The spans followed by `ch` repeated up to exactly `width` cells (for rules and box edges). */
export function fillLine(spans: readonly Span[], width: number, ch: string, style: Omit<Span, 'text'> = {}): Line {
  const used = spans.reduce((w, s) => w + displayWidth(sanitize(s.text)), 0);
  return [...spans, span(ch.repeat(Math.max(0, width - used)), style)];
}
