/** The footer: key hints generated from the keymap registry, fitted to the width. */
import { footerHints, type KeymapOptions } from './keymap.js';
import { span, type Line, type Span } from './line.js';
import { displayWidth } from './text.js';

/**
 * The last footer made: the same options, width and prefix give the same line object, so the
 * frame's clipping (memoised per line object) and line comparison do nothing for it at the ~14
 * frames a second a busy home renders.
 */
let lastFooter: { readOnly: boolean; width: number; prefix: string | null; line: Line } | null = null;

/**
 * Hints in registry order, as many as fit; `q quit` and `? help` are always kept (help lists the
 * rest): at 60 columns the footer read `… s sort  ? help`, with no way out said.
 */
export function footerLine(opts: KeymapOptions, width: number, prefix: string | null = null): Line {
  const m = lastFooter;
  if (m && m.readOnly === opts.readOnly && m.width === width && m.prefix === prefix) return m.line;
  const line = buildFooterLine(opts, width, prefix);
  lastFooter = { readOnly: opts.readOnly, width, prefix, line };
  return line;
}

function buildFooterLine(opts: KeymapOptions, width: number, prefix: string | null): Line {
  const hints = footerHints(opts);
  // Help last, as ever.
  const kept = [...hints.filter((h) => h.action === 'quit'), ...hints.filter((h) => h.action === 'help')];
  const spans: Span[] = [];
  let used = 0;
  if (prefix) {
    spans.push(span(`${prefix}  `, { color: 'yellow' }));
    used += displayWidth(prefix) + 2;
  }
  const hint = (h: (typeof hints)[number], last: boolean) => spans.push(span(h.keys, { bold: true }), span(` ${h.word}${last ? '' : '  '}`, { dim: true }));
  // The kept hints' width, two spaces between them.
  const reserve = kept.reduce((n, h, i) => n + displayWidth(`${h.keys} ${h.word}`) + (i > 0 ? 2 : 0), 0);
  for (const h of hints) {
    if (kept.includes(h)) continue;
    const w = displayWidth(`${h.keys} ${h.word}`) + 2;
    if (used + w + reserve > width) break;
    hint(h, false);
    used += w;
  }
  kept.forEach((h, i) => hint(h, i === kept.length - 1));
  return spans;
}
