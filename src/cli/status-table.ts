/** The plain `status` table: one line per root and lane, fixed-width, no escape sequences. */
import type { RemoteFeedStatus, Snapshot } from '../model/snapshot.js';
import { sanitize } from '../views/text.js';
import { COLUMNS, COLUMN_TITLES, formatAge, ID_WIDTH, sessionCells, shortId, type ColumnId } from '../views/cells.js';
import { groupByHome, hasSeveralHomes, homeKey, homeLabels } from '../views/home-groups.js';

const WIDTH: Record<ColumnId, number> = {
  home: 16,
  name: 24,
  // As wide as the TUI lets them grow: a provider/model id, and a state with its `(stale)` flag.
  model: 28,
  state: 18,
  inactivity: 8,
  absolute: 8,
  first: 16,
  episode: 16,
  resume: 16,
  armed: 8,
  incidents: 4,
  age: 6,
  // The session id's prefix last (idPrefix: 8 characters, 13 of a time-ordered id): what
  // `loop-dash abort|disarm|arm` takes (with a name). Widened to the rows' own (renderStatusTable).
  id: 4 + ID_WIDTH,
};

function fit(text: string, width: number): string {
  const clean = sanitize(text);
  return clean.length > width ? `${clean.slice(0, width - 1)}…` : clean.padEnd(width);
}

/**
 * With several homes (or remote machines) the rows are grouped by home and a HOME column labels
 * each root; the labels are spelled out under the table.
 */
export function renderStatusTable(snap: Snapshot): string {
  const lines: string[] = [];
  const labels = hasSeveralHomes(snap.roots) ? homeLabels(snap.roots) : null;
  const roots = labels ? groupByHome(snap.roots, labels) : snap.roots;
  const columns = COLUMNS.filter((c) => c !== 'home' || labels);
  const width = { ...WIDTH, home: labels ? Math.min(24, Math.max(4, ...[...labels.values()].map((l) => l.length))) : 0 };
  for (const r of roots) for (const v of [r, ...r.lanes]) width.id = Math.max(width.id, shortId(v).length);
  lines.push(columns.map((c) => fit(COLUMN_TITLES[c], width[c])).join(' ').trimEnd());
  for (const root of roots) {
    const rows = [{ v: root, prefix: '' }, ...root.lanes.map((l, i) => ({ v: l, prefix: i === root.lanes.length - 1 ? '└ ' : '├ ' }))];
    for (const { v, prefix } of rows) {
      const cells = sessionCells(v, snap.now, labels && prefix === '' ? (labels.get(homeKey(v)) ?? v.home) : '');
      lines.push(columns.map((c) => fit(c === 'name' ? `${prefix}${cells.name.text}` : cells[c].text, width[c])).join(' ').trimEnd());
    }
  }
  if (snap.roots.length === 0) lines.push('(no sessions found)');
  lines.push('');
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  lines.push(`${count(snap.roots.length, 'root')}, ${count(snap.roots.reduce((n, r) => n + r.lanes.length, 0), 'lane')}, ${count(snap.incidents.length, 'incident')}, ${count(snap.warnings.length, 'warning')} — at ${new Date(snap.now).toISOString()}`);
  if (labels) {
    const seen = new Set<string>();
    for (const r of roots) {
      const key = homeKey(r);
      if (seen.has(key)) continue;
      seen.add(key);
      lines.push(`home ${labels.get(key)}: ${r.remote ? `${r.home} on ${r.remote.host} (${r.remote.url}, read-only)` : r.home}`);
    }
  }
  for (const f of snap.remotes ?? []) lines.push(remoteLine(f, snap.now));
  for (const w of snap.warnings.slice(0, 10)) lines.push(`warning: ${w.file}${w.line ? `:${w.line}` : ''}: ${w.message}`);
  if (snap.warnings.length > 10) lines.push(`… and ${snap.warnings.length - 10} more warnings (status --json lists them all)`);
  return lines.join('\n') + '\n';
}

function remoteLine(f: RemoteFeedStatus, now: number): string {
  const age = f.fetchedAt === null ? 'never fetched' : `fetched ${formatAge(now - f.fetchedAt)} ago${f.stale ? ' (stale)' : ''}`;
  return `remote ${f.host} (${f.url}): ${f.roots} roots, ${age}${f.error ? `; last fetch failed: ${f.error}` : ''}${f.hidden ? `; ${f.hidden} also read locally` : ''}`;
}
