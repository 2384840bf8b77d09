/** The footer: key hints generated from the keymap registry, fitted to the width. */
import { footerHints, type FooterHint, type KeymapOptions } from './keymap.js';
import { span, type Line, type Span } from './line.js';
import { displayWidth } from './text.js';

/**
 * The last footer made: the same options, width and prefix give the same line object, so the
 * frame's clipping (memoised per line object) and line comparison do nothing for it at the ~14
 * frames a second a busy home renders.
 */
let lastFooter: { readOnly: boolean; view: FooterView; width: number; prefix: string | null; line: Line } | null = null;

/** What the screen shows: the table, or a view over it whose keys are its own. */
export type FooterView = 'main' | 'incidents' | 'audit' | 'help';

/**
 * The keys that act in a view over the table, as its footer says them: the incidents view's footer
 * listed fold, sort, abort, disarm and arm, which do nothing there (`x` was silently ignored).
 */
const VIEW_HINTS: Record<Exclude<FooterView, 'main'>, readonly FooterHint[]> = {
  incidents: [
    { keys: '↑↓', word: 'move', action: 'up' },
    { keys: '⏎', word: 'open', action: 'detail' },
    { keys: '/', word: 'filter', action: 'filter' },
    { keys: 'Esc', word: 'back', action: 'back' },
  ],
  audit: [
    { keys: '↑↓', word: 'scroll', action: 'up' },
    { keys: 'Esc', word: 'back', action: 'back' },
  ],
  help: [
    { keys: '↑↓', word: 'scroll', action: 'up' },
    { keys: 'Esc', word: 'close', action: 'back' },
  ],
};

/**
 * Hints in registry order (a view's own over the table), as many as fit; `q quit` and `? help` are
 * always kept (help lists the rest): at 60 columns the footer read `… s sort  ? help`, with no way
 * out said.
 */
export function footerLine(opts: KeymapOptions, width: number, prefix: string | null = null, view: FooterView = 'main'): Line {
  const m = lastFooter;
  if (m && m.readOnly === opts.readOnly && m.view === view && m.width === width && m.prefix === prefix) return m.line;
  const line = buildFooterLine(opts, width, prefix, view);
  lastFooter = { readOnly: opts.readOnly, view, width, prefix, line };
  return line;
}

function buildFooterLine(opts: KeymapOptions, width: number, prefix: string | null, view: FooterView): Line {
  const all = footerHints(opts);
  const hints = view === 'main' ? all : [...VIEW_HINTS[view], ...all.filter((h) => h.action === 'quit' || (h.action === 'help' && view !== 'help'))];
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
