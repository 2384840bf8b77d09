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

/** Hints in registry order, as many as fit; `? help` is always kept (it lists the rest). */
export function footerLine(opts: KeymapOptions, width: number, prefix: string | null = null): Line {
  const m = lastFooter;
  if (m && m.readOnly === opts.readOnly && m.width === width && m.prefix === prefix) return m.line;
  const line = buildFooterLine(opts, width, prefix);
  lastFooter = { readOnly: opts.readOnly, width, prefix, line };
  return line;
}

function buildFooterLine(opts: KeymapOptions, width: number, prefix: string | null): Line {
  const hints = footerHints(opts);
  const help = hints.find((h) => h.action === 'help');
  const spans: Span[] = [];
  let used = 0;
  if (prefix) {
    spans.push(span(`${prefix}  `, { color: 'yellow' }));
    used += displayWidth(prefix) + 2;
  }
  const reserve = help ? displayWidth(`${help.keys} ${help.word}`) : 0;
  for (const h of hints) {
    if (h === help) continue;
    const w = displayWidth(`${h.keys} ${h.word}`) + 2;
    if (used + w + reserve > width) break;
    spans.push(span(h.keys, { bold: true }), span(` ${h.word}  `, { dim: true }));
    used += w;
  }
  if (help) spans.push(span(help.keys, { bold: true }), span(` ${help.word}`, { dim: true }));
  return spans;
}
