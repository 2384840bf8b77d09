/** The `?` overlay, generated from the keymap registry (read-only mode drops the owner actions). */
import { helpSections, type KeymapOptions } from './keymap.js';
import { plainLine, span, type Line } from './line.js';

export function helpLines(opts: KeymapOptions): Line[] {
  const lines: Line[] = [];
  // The group name sits beside its first key, so the whole table fits an 80×24 terminal.
  for (const section of helpSections(opts)) {
    section.bindings.forEach((b, i) => {
      lines.push([
        span((i === 0 ? section.group : '').padEnd(14), { bold: true, color: 'cyan' }),
        span(b.label.padEnd(7), { bold: true }),
        span(` ${b.description}`),
        ...(b.dangerous ? [span(' (confirms)', { dim: true })] : []),
      ]);
    });
  }
  if (opts.readOnly) lines.push(plainLine('read-only: abort, disarm and arm are disabled', { color: 'yellow' }));
  lines.push(plainLine('Esc or ? closes this help; ↑↓ scroll', { dim: true }));
  return lines;
}
