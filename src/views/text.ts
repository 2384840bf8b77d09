/**
 * Terminal-safe text: every string that came from a file passes through `sanitize` before it is
 * drawn (a session name or an error message must never move the cursor, ring the bell or retitle
 * the terminal), and widths are measured in terminal cells so rows never wrap.
 */

// CSI, OSC (terminated by BEL or ST, or unterminated to the end), DCS/SOS/PM/APC strings, then
// any other two-byte escape. Order matters: the string forms first.
const ESCAPES =
  /\u001b\[[0-?]*[ -/]*[@-~]?|\u009b[0-?]*[ -/]*[@-~]?|\u001b\][^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)?|\u009d[^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)?|\u001b[PX^_][^\u001b\u009c]*(?:\u001b\\|\u009c)?|[\u0090\u0098\u009e\u009f][^\u001b\u009c]*(?:\u001b\\|\u009c)?|\u001b[ -/]*[0-~]?/g;
// Remaining C0/C1 controls, DEL, and bidirectional overrides that could reorder a row visually.
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Anything `sanitize` would change: controls (ESC among them), C1, bidi overrides. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** One line of plain printable text: escapes removed, tabs and newlines as spaces, controls dropped. */
export function sanitize(text: string): string {
  // Most text is already clean; one test is far cheaper than the four replacements (every frame
  // sanitises every cell).
  if (!UNSAFE.test(text)) return text;
  return text.replace(ESCAPES, '').replace(/\r/g, '').replace(/[\t\n]/g, ' ').replace(CONTROLS, '');
}

/** Text of several lines, each made terminal-safe by {@link sanitize} (the line breaks kept): what the one-shot commands print. */
export function terminalText(text: string): string {
  if (!UNSAFE.test(text)) return text;
  return text
    .split('\n')
    .map((line) => sanitize(line))
    .join('\n');
}

/** Zero-width code points: combining marks, joiners, variation selectors. */
function isZeroWidth(cp: number): boolean {
  return (
    (cp >= 0x0300 && cp <= 0x036f) ||
    (cp >= 0x0483 && cp <= 0x0489) ||
    (cp >= 0x0591 && cp <= 0x05bd) ||
    (cp >= 0x0610 && cp <= 0x061a) ||
    (cp >= 0x064b && cp <= 0x065f) ||
    (cp >= 0x1ab0 && cp <= 0x1aff) ||
    (cp >= 0x1dc0 && cp <= 0x1dff) ||
    (cp >= 0x200b && cp <= 0x200f) ||
    (cp >= 0x20d0 && cp <= 0x20ff) ||
    (cp >= 0xfe00 && cp <= 0xfe0f) ||
    (cp >= 0xfe20 && cp <= 0xfe2f) ||
    cp === 0xfeff ||
    (cp >= 0xe0100 && cp <= 0xe01ef)
  );
}

/** East Asian wide and fullwidth ranges, and the emoji blocks terminals draw two cells wide. */
function isWide(cp: number): boolean {
  return (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x231a && cp <= 0x231b) ||
    (cp >= 0x2329 && cp <= 0x232a) ||
    (cp >= 0x23e9 && cp <= 0x23ec) ||
    (cp >= 0x25fd && cp <= 0x25fe) ||
    (cp >= 0x2614 && cp <= 0x2615) ||
    (cp >= 0x26aa && cp <= 0x26ab) ||
    (cp >= 0x2705 && cp <= 0x2705) ||
    (cp >= 0x274c && cp <= 0x274c) ||
    (cp >= 0x2e80 && cp <= 0x303e) ||
    (cp >= 0x3041 && cp <= 0x33ff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0xa000 && cp <= 0xa4cf) ||
    (cp >= 0xa960 && cp <= 0xa97f) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe10 && cp <= 0xfe19) ||
    (cp >= 0xfe30 && cp <= 0xfe6f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f004 && cp <= 0x1f004) ||
    (cp >= 0x1f0cf && cp <= 0x1f0cf) ||
    (cp >= 0x1f18e && cp <= 0x1f18e) ||
    (cp >= 0x1f191 && cp <= 0x1f19a) ||
    (cp >= 0x1f200 && cp <= 0x1f251) ||
    (cp >= 0x1f300 && cp <= 0x1f64f) ||
    (cp >= 0x1f680 && cp <= 0x1f6ff) ||
    (cp >= 0x1f7e0 && cp <= 0x1f7eb) ||
    (cp >= 0x1f90c && cp <= 0x1f9ff) ||
    (cp >= 0x1fa70 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  );
}

function charWidth(cp: number): number {
  if (isZeroWidth(cp)) return 0;
  return isWide(cp) ? 2 : 1;
}

/** Printable ASCII only: one cell per character. */
const ASCII = /^[\u0020-\u007e]*$/;

/** Width in terminal cells of already sanitised text. */
export function displayWidth(text: string): number {
  if (ASCII.test(text)) return text.length;
  // By code point, as a for-of over the string would go, without its iterator (run for every row's
  // cells at a frame, interpreted for most of a start: docs/PERFORMANCE.md, "Indexed loops on the
  // start's path").
  let w = 0;
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i)!;
    w += charWidth(cp);
    i += cp > 0xffff ? 2 : 1;
  }
  return w;
}

/** The longest prefix of `text` that fits in `width` cells (no marker). */
export function takeWidth(text: string, width: number): string {
  if (ASCII.test(text)) return text.length <= width ? text : text.slice(0, Math.max(0, width));
  let w = 0;
  let end = 0;
  while (end < text.length) {
    const cp = text.codePointAt(end)!;
    const cw = charWidth(cp);
    if (w + cw > width) break;
    w += cw;
    end += cp > 0xffff ? 2 : 1;
  }
  return text.slice(0, end);
}

/** Cut to at most `width` cells, ending in `…` when something was cut. */
export function truncate(text: string, width: number): string {
  if (width <= 0) return '';
  if (displayWidth(text) <= width) return text;
  return `${takeWidth(text, width - 1)}…`;
}

/** Exactly `width` cells: truncated with `…` or padded with spaces (left- or right-aligned). */
export function fit(text: string, width: number, align: 'left' | 'right' = 'left'): string {
  const t = truncate(sanitize(text), width);
  const pad = ' '.repeat(Math.max(0, width - displayWidth(t)));
  return align === 'left' ? t + pad : pad + t;
}

/** Word-wrap sanitised text into lines of at most `width` cells (long words are cut). */
export function wrapWords(text: string, width: number): string[] {
  const w = Math.max(1, width);
  const lines: string[] = [];
  let current = '';
  for (const word of sanitize(text).split(/ +/)) {
    if (!word) continue;
    const candidate = current ? `${current} ${word}` : word;
    if (displayWidth(candidate) <= w) {
      current = candidate;
      continue;
    }
    if (current) lines.push(current);
    let rest = word;
    while (displayWidth(rest) > w) {
      const head = takeWidth(rest, w) || [...rest][0]!;
      lines.push(head);
      rest = rest.slice(head.length);
    }
    current = rest;
  }
  if (current) lines.push(current);
  return lines.length ? lines : [''];
}
