/**
 * The lines above the table: homes and counts, the degraded-watching banner, and the loading
 * progress (so the first frame is never blank while sessions are still being read).
 */
import type { Snapshot } from '../model/snapshot.js';
import { plainLine, span, type Line } from './line.js';
import { SORT_LABELS, type SortMode } from './session-rows.js';
import { formatClockTime } from './time-format.js';
import type { AuditResult } from '../model/audit.js';
import { auditHeaderWarning } from './audit-lines.js';

export interface HeaderInput {
  snapshot: Snapshot;
  sort: SortMode;
  filter: string;
  filterEditing: boolean;
  readOnly: boolean;
  audits?: readonly AuditResult[] | null;
}

const LIVE = new Set(['requesting', 'tools', 'retry-wait']);

export function headerLines({ snapshot: s, sort, filter, filterEditing, readOnly, audits }: HeaderInput): Line[] {
  let lanes = 0;
  let live = 0;
  let lost = 0;
  for (const r of s.roots) {
    lanes += r.lanes.length;
    for (const v of [r, ...r.lanes]) {
      if (LIVE.has(v.state)) live++;
      if (v.state === 'lost') lost++;
    }
  }
  const homes = s.homes.length === 0 ? 'no home yet' : s.homes.length === 1 ? s.homes[0]! : `${s.homes.length} homes`;
  const lines: Line[] = [
    [
      span('loop-dash', { bold: true }),
      span(` ${formatClockTime(s.now, s.now)}  `),
      span(`${s.roots.length} root${s.roots.length === 1 ? '' : 's'} · ${lanes} lane${lanes === 1 ? '' : 's'} · ${live} live`),
      ...(lost ? [span(` · ${lost} lost`, { color: 'red' })] : []),
      span(` · ${s.incidents.length} incident${s.incidents.length === 1 ? '' : 's'}`, s.incidents.length ? { color: 'red' } : {}),
      span(` · ${s.warnings.length} warning${s.warnings.length === 1 ? '' : 's'}`, s.warnings.length ? { color: 'yellow' } : {}),
      ...(readOnly ? [span('  read-only', { color: 'yellow' })] : []),
      span(`  ${homes}`, { dim: true }),
    ],
  ];
  if (s.watchMode.mode !== 'native') {
    lines.push(plainLine(`⚠ file watching degraded - polling every 1 s${s.watchMode.detail ? ` (${s.watchMode.detail})` : ''}`, { color: 'yellow', bold: true }));
  }
  for (const a of audits ?? []) {
    const warning = auditHeaderWarning(a);
    if (warning) lines.push(plainLine(`⚠ ${warning} (b: bounds audit)`, { color: 'red', bold: true }));
  }
  if (!s.progress.done) {
    lines.push(plainLine(`reading ${s.progress.read}/${s.progress.total} sessions…`, { color: 'cyan' }));
  }
  const sortText = `sort: ${SORT_LABELS[sort]}`;
  if (filterEditing || filter) {
    lines.push([span(`filter: `, { bold: true }), span(filter), span(filterEditing ? '▏' : ''), span(`  (${filterEditing ? 'Enter keeps, Esc clears' : 'Esc clears'}) · ${sortText}`, { dim: true })]);
  } else if (sort !== 'first-limit') {
    lines.push(plainLine(sortText, { dim: true }));
  }
  return lines;
}
