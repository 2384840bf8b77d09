/**
 * The incidents view: incidents newest first (filterable by class or session), one whole record
 * on Enter, and the warnings about bad files below the list. Pure line builders.
 */
import type { SessionView } from '../model/snapshot.js';
import type { IncidentFields, IncidentRecord, Warning } from '../model/types.js';
import { explainIncidentClass } from '../readers/incident-classes.js';
import { plainLine, span, type Line } from './line.js';
import { idPrefix } from './cells.js';
import { findSession } from './session-rows.js';
import { wrapWords } from './text.js';
import { formatClockTime, formatRelative } from './time-format.js';

/** Incidents whose class, session (id or name) or limit contains the filter text. */
export function filterIncidents(incidents: readonly IncidentRecord[], filter: string, roots: readonly SessionView[]): IncidentRecord[] {
  const f = filter.trim().toLowerCase();
  if (!f) return [...incidents];
  return incidents.filter((i) => {
    const name = findSession(roots, i.session)?.name ?? '';
    return [i.cls, i.session ?? '', name, i.limit ?? ''].some((s) => s.toLowerCase().includes(f));
  });
}

/** One list row. */
export function incidentRow(i: IncidentRecord, roots: readonly SessionView[], now: number, selected: boolean, noColor: boolean): Line {
  const who = findSession(roots, i.session);
  const session = who ? `${who.name} (${idPrefix(i.session!)})` : (i.session ?? 'no session');
  return [
    span(selected ? '› ' : '  ', { bold: selected, inverse: selected && !noColor }),
    span(`${formatClockTime(i.at, now)}  `, { dim: !noColor }),
    span(i.cls, noColor ? {} : { color: i.known ? 'red' : 'magenta' }),
    span(`${i.movedAside ? ' [moved aside]' : ''}${i.known ? '' : ' [unknown class]'}  ${session}${i.limit ? `  limit ${i.limit}` : ''}${i.exhausted ? '  exhausted' : ''}  ${i.summary}`),
  ];
}

/**
 * The whole record: the class in words, the limit that fired, the linked session, the file, and
 * the file's fields as written — a remote incident's from its feed, a local one's as read from
 * its file when it was opened (`fields`; null: not being read).
 */
export function incidentRecordLines(i: IncidentRecord, roots: readonly SessionView[], now: number, width: number, fields: IncidentFields | null = null): Line[] {
  const who = findSession(roots, i.session);
  const lines: Line[] = [
    plainLine(i.cls, { bold: true }),
    ...wrapWords(explainIncidentClass(i.cls), width - 2).map((w) => plainLine(`  ${w}`)),
    plainLine(`  at        ${formatClockTime(i.at, now)} (${formatRelative(i.at, now)})`),
    plainLine(`  limit     ${i.limit ?? 'not named in the file'}${i.attempt !== null ? ` · attempt ${i.attempt}` : ''}${i.exhausted ? ' · exhausted' : ''}`),
    plainLine(`  session   ${i.session ?? 'none named'}${who ? ` → ${who.name} (${who.role}, ${who.state})` : i.session ? ' (not among the sessions seen)' : ''}`),
    // Wrapped, never cut: the whole path can be read and copied.
    ...wrapWords(`${i.file}${i.movedAside ? '  (moved aside into incidents/bad/ by a watchdog)' : ''}`, width - 12).map((w, k) => plainLine(`  ${k === 0 ? 'file    ' : '        '}  ${w}`)),
    ...wrapWords(i.summary, width - 12).map((w, k) => plainLine(`  ${k === 0 ? 'summary ' : '        '}  ${w}`)),
    plainLine(`Raw fields${i.raw ? '' : ' (as the file says them now)'}${i.known ? '' : ' (unknown class: shown as written)'}`, { bold: true }),
  ];
  const shown: IncidentFields = i.raw ? { state: 'read', fields: i.raw } : (fields ?? { state: 'reading' });
  if (shown.state === 'reading') lines.push(plainLine('  reading the file…', { dim: true }));
  else if (shown.state === 'unreadable') lines.push(plainLine(`  ${shown.message}`, { color: 'yellow' }));
  else {
    for (const [k, val] of Object.entries(shown.fields)) {
      lines.push(plainLine(`  ${k}: ${typeof val === 'string' ? val : JSON.stringify(val)}`));
    }
  }
  return lines;
}

/**
 * Warnings about bad files and lines: the message first, wrapped to the width, then where (file,
 * line, byte offset) on its own wrapped lines — a long path must not push the message off the
 * screen (a home's paths are often wider than the terminal).
 */
export function warningLines(warnings: readonly Warning[], width = 120): Line[] {
  if (warnings.length === 0) return [];
  const indent = '          ';
  const room = Math.max(20, width - indent.length);
  const lines: Line[] = [plainLine(`Warnings (${warnings.length}): files or lines that could not be read`, { bold: true })];
  for (const w of warnings) {
    const message = wrapWords(w.message, room);
    lines.push([span(`  ${w.severity === 'error' ? 'error  ' : 'warning'} `, { color: w.severity === 'error' ? 'red' : 'yellow' }), span(message[0]!)]);
    for (const more of message.slice(1)) lines.push([span(indent), span(more)]);
    const where = `${w.file}${w.line !== null ? `:${w.line}` : ''}${w.offset !== undefined ? ` @${w.offset}` : ''}`;
    for (const part of wrapWords(where, room)) lines.push([span(indent), span(part, { dim: true })]);
  }
  return lines;
}
