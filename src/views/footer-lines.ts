/** The footer: key hints generated from the keymap registry, fitted to the width. */
import { footerHints, type KeymapOptions } from './keymap.js';
import { span, type Line, type Span } from './line.js';
import { displayWidth } from './text.js';

/** Hints in registry order, as many as fit; `? help` is always kept (it lists the rest). */
export function footerLine(opts: KeymapOptions, width: number, prefix: string | null = null): Line {
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
