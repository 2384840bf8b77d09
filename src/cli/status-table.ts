/** The plain `status` table: one line per root and lane, fixed-width, no escape sequences. */
import type { Snapshot } from '../model/snapshot.js';
import { COLUMNS, COLUMN_TITLES, sessionCells, type ColumnId } from '../views/cells.js';

const WIDTH: Record<ColumnId, number> = {
  name: 24,
  model: 22,
  state: 12,
  inactivity: 8,
  absolute: 8,
  first: 16,
  episode: 16,
  resume: 16,
  armed: 8,
  incidents: 4,
  age: 6,
};

function fit(text: string, width: number): string {
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
  return clean.length > width ? `${clean.slice(0, width - 1)}…` : clean.padEnd(width);
}

export function renderStatusTable(snap: Snapshot): string {
  const lines: string[] = [];
  const multiHome = snap.homes.length > 1;
  lines.push(COLUMNS.map((c) => fit(COLUMN_TITLES[c], WIDTH[c])).join(' ').trimEnd());
  for (const root of snap.roots) {
    const rows = [{ v: root, prefix: '' }, ...root.lanes.map((l, i) => ({ v: l, prefix: i === root.lanes.length - 1 ? '└ ' : '├ ' }))];
    for (const { v, prefix } of rows) {
      const cells = sessionCells(v, snap.now);
      const name = `${prefix}${cells.name.text}${multiHome && prefix === '' ? ` [${v.home}]` : ''}`;
      lines.push(COLUMNS.map((c) => fit(c === 'name' ? name : cells[c].text, WIDTH[c])).join(' ').trimEnd());
    }
  }
  if (snap.roots.length === 0) lines.push('(no sessions found)');
  lines.push('');
  lines.push(`${snap.roots.length} roots, ${snap.roots.reduce((n, r) => n + r.lanes.length, 0)} lanes, ${snap.incidents.length} incidents, ${snap.warnings.length} warnings — at ${new Date(snap.now).toISOString()}`);
  for (const w of snap.warnings.slice(0, 10)) lines.push(`warning: ${w.file}${w.line ? `:${w.line}` : ''}: ${w.message}`);
  if (snap.warnings.length > 10) lines.push(`… and ${snap.warnings.length - 10} more warnings (status --json lists them all)`);
  return lines.join('\n') + '\n';
}
