/**
 * One frame, as keyed lines: header, then the view of the moment (table and detail pane,
 * incidents, help, audit), the confirmation dialog, the flash message and the footer. The whole
 * frame is planned here to stay within `rows − 1` lines (a full-height frame makes Ink clear the
 * screen every frame: flicker) and every line is clipped to the width, so nothing ever wraps.
 */
import type { ModelState } from '../model/reducer.js';
import type { Snapshot } from '../model/snapshot.js';
import type { IncidentFields, IncidentRecord } from '../model/types.js';
import { detailLines, type LocalAction } from './detail-lines.js';
import { footerLine } from './footer-lines.js';
import { headerLines } from './header-lines.js';
import { helpLines } from './help-lines.js';
import { filterIncidents, incidentRecordLines, incidentRow, warningLines } from './incident-lines.js';
import { clipLine, fillLine, plainLine, span, windowLines, type Line, type Tone } from './line.js';
import { confirmText, describeOutcome, FLASH_MS, outcomeOf, refusalReason, type Outcome } from './owner-actions.js';
import type { RowSeq } from './row-list.js';
import { findSession } from './session-rows.js';
import { GUTTER, headerLine, layoutColumns, rowCellsCached, rowLineCached, type ColumnWidths } from './table-layout.js';
import { wrapWords } from './text.js';
import { cursorRowIndex, scrollTo, type KeyContext, type PendingAction, type ViewState } from './view-state.js';

/** A line with a stable React key (session rows are keyed by session id). */
export interface ScreenLine {
  key: string;
  line: Line;
}
import type { AuditResult } from '../model/audit.js';
import { auditLines } from './audit-lines.js';

export interface ScreenInput {
  snapshot: Snapshot;
  model: Pick<ModelState, 'journal' | 'acks'>;
  view: ViewState;
  /** The main table's rows for the view's sort, filter and folds. */
  rows: RowSeq;
  width: number;
  /** Terminal rows; the frame uses at most `height − 1`. */
  height: number;
  readOnly: boolean;
  noColor: boolean;
  /** The derived-bounds audit per home, once computed (null while it runs or when there is none). */
  audits?: readonly AuditResult[] | null;
  /** The fields read from an opened incident's file, and the record they were read for (App). */
  opened?: OpenedIncident | null;
  /** The widths the main table's columns have had (the dashboard's); without, each frame's own. */
  columnWidths?: ColumnWidths | null;
}

/** An incident's fields as read from its file when it was opened, with the record they belong to. */
export interface OpenedIncident {
  record: IncidentRecord;
  fields: IncidentFields;
}

export interface Screen {
  lines: ScreenLine[];
  /** The sizes the key handler needs (row capacity, scroll ranges). */
  sizes: Omit<KeyContext, 'roots' | 'incidents' | 'now'>;
}

const keyed = (prefix: string, lines: readonly Line[]): ScreenLine[] => lines.map((line, i) => ({ key: `${prefix}:${i}`, line }));

export function buildScreen(input: ScreenInput): Screen {
  const { snapshot, view, width, readOnly } = input;
  const now = snapshot.now;
  const maxLines = Math.max(2, input.height - 1);
  const sizes: Screen['sizes'] = { tableRows: 1, detailLines: 0, detailRows: 0, incidentRows: 1, recordLines: 0 };

  const header = headerLines({ audits: input.audits ?? null, snapshot, sort: view.sort, filter: view.mode === 'main' ? view.filter : '', filterEditing: view.mode === 'main' && view.filterEditing, readOnly });
  const fullDialog = confirmDialogLines(input);
  const flash = fullDialog.length ? [] : flashLines(input);
  const refusing = !!view.confirm && refusalReason(view.confirm.captured) !== null;
  const footer = fullDialog.length ? [plainLine(refusing ? 'any key closes' : 'y confirm · any other key cancels', { bold: true })] : [footerLine({ readOnly }, width, null, view.help ? 'help' : view.mode)];
  const fixed = flash.length + footer.length;

  // On a small terminal the dialog keeps its top (what and which session); then the header
  // gives way, extras first, so the frame never grows past `maxLines`.
  const dialog = fullDialog.slice(0, Math.max(0, maxLines - fixed));
  let head = header;
  while (head.length > 0 && head.length + dialog.length + fixed + (head.length > 1 ? 2 : 1) > maxLines) head = head.slice(0, -1);
  const bodyHeight = Math.max(0, maxLines - head.length - dialog.length - fixed);

  let body: ScreenLine[];
  if (view.help) {
    const help = helpLines({ readOnly });
    sizes.detailLines = help.length;
    sizes.detailRows = bodyHeight;
    body = keyed('help', windowLines(help, bodyHeight, view.helpTop).lines);
  }
  else if (view.mode === 'incidents') body = incidentsBody(input, bodyHeight, sizes);
  else if (view.mode === 'audit') {
    const text = input.audits
      ? input.audits.flatMap((a) => auditLines(a, width, input.snapshot.now))
      : ['Bounds audit', 'measuring generation rates from the session files… (first 15 s after the home is read; again every 10 min)'];
    const lines = [...text.map((t, i) => plainLine(t, i === 0 ? { bold: true } : {})), plainLine('Esc goes back.', { dim: true })];
    sizes.detailLines = lines.length;
    sizes.detailRows = bodyHeight;
    body = keyed('audit', windowLines(lines, bodyHeight, view.helpTop).lines);
  } else body = mainBody(input, bodyHeight, sizes);

  const all = [...keyed('head', head), ...body.slice(0, bodyHeight), ...keyed('dialog', dialog), ...keyed('flash', flash), ...keyed('foot', footer)].slice(0, maxLines);
  return { lines: all.map((l) => ({ key: l.key, line: clipLine(l.line, width) })), sizes };
}

function mainBody(input: ScreenInput, height: number, sizes: Screen['sizes']): ScreenLine[] {
  const { view, rows, snapshot, width } = input;
  const now = snapshot.now;
  if (height <= 0) return [];
  const cursor = cursorRowIndex(view.cursor, view.cursorIndex, rows);
  const selected = cursor >= 0 ? rows.at(cursor)!.view : null;

  // The detail pane takes what the table does not need, leaving the table at least a few rows.
  const wantTable = rows.length + 1;
  const tableHeight = view.detailOpen && selected ? Math.max(Math.min(3, height), Math.min(wantTable, Math.floor(height * 0.4))) : height;
  const detailHeight = height - tableHeight;

  const out: ScreenLine[] = [];
  if (rows.length === 0) {
    // A home that is not there (not yet, or removed while we ran) is said so here, not only in
    // the warnings (RELIABILITY B12).
    const waiting = snapshot.warnings.filter((w) => snapshot.homes.includes(w.file) && w.message.startsWith('waiting for ')).map((w) => w.message);
    const empty = waiting.length
      ? `${waiting.join('; ')}; it is read as soon as it exists`
      : snapshot.progress.done
        ? view.filter
          ? `no session matches "${view.filter}" (Esc clears the filter)`
          : `no sessions found yet in ${snapshot.homes.join(', ') || 'the pi home'}; watching for new ones`
        : snapshot.progress.listing
          ? 'listing sessions…'
          : 'reading sessions…';
    out.push({ key: 'empty', line: plainLine(`  ${empty}`, { dim: true }) });
    sizes.tableRows = 1;
  } else {
    // Row capacity: title line, then rows, then a `+N more` line when they do not all fit.
    let capacity = Math.max(1, tableHeight - 1);
    if (rows.length > capacity) capacity = Math.max(1, capacity - 1);
    sizes.tableRows = capacity;
    const top = scrollTo(view.tableTop, Math.max(0, cursor), capacity, rows.length);
    const shown = rows.slice(top, top + capacity);
    const cells = shown.map((r) => rowCellsCached(r, now, input.noColor));
    const layout = layoutColumns(cells, width, input.columnWidths ?? null, now);
    if (tableHeight > 1) out.push({ key: 'table-title', line: headerLine(layout) });
    shown.forEach((r, i) => out.push({ key: `row:${r.id}`, line: rowLineCached(cells[i]!, layout, top + i === cursor, input.noColor) }));
    const hidden = rows.length - shown.length;
    if (hidden > 0) {
      const below = rows.length - top - shown.length;
      const where = top > 0 && below > 0 ? ` (${top} above, ${below} below)` : top > 0 ? ' above' : '';
      out.push({ key: 'table-more', line: plainLine(`${' '.repeat(GUTTER)}+${hidden} more${where}`, { dim: true }) });
    }
  }
  const table = out.slice(0, tableHeight);

  if (!(view.detailOpen && selected) || detailHeight <= 0) return table;
  const content = detailLines(selected, {
    now,
    width,
    noColor: input.noColor,
    incidents: snapshot.incidents,
    journal: selected.remote ? undefined : input.model.journal.get(selected.home),
    acks: input.model.acks,
    activity: view.activity.get(selected.session),
    local: localActions(view.pending),
  });
  const focused = view.focus === 'detail';
  const rule = fillLine(
    [span(focused ? '━━ detail ' : '── detail ', { bold: focused, color: focused ? 'cyan' : undefined }), span(`${focused ? '(↑↓ scroll, Tab/Esc back to the table)' : '(Tab to scroll, Esc closes)'} `, { dim: true })],
    width,
    '─',
    { dim: true },
  );
  const room = detailHeight - 1;
  sizes.detailLines = content.length;
  sizes.detailRows = room;
  const win = windowLines(content, room, view.detailTop);
  return [...table, { key: 'detail-rule', line: rule }, ...keyed('detail', win.lines)];
}

function localActions(pending: readonly PendingAction[]): LocalAction[] {
  return pending.map((p) => ({ action: p.action, session: p.session, requestId: p.requestId, requestedAt: p.requestedAt, status: p.status, error: p.error }));
}

function incidentsBody(input: ScreenInput, height: number, sizes: Screen['sizes']): ScreenLine[] {
  const { snapshot, view } = input;
  const now = snapshot.now;
  const inc = view.incidents;
  const roots = snapshot.roots;
  if (height <= 0) return [];

  if (inc.open !== null) {
    const rec = snapshot.incidents.find((i) => i.file === inc.open);
    // The fields read for this very record (a record replaced since is read again: App).
    const fields = input.opened && input.opened.record === rec ? input.opened.fields : null;
    const content = rec ? incidentRecordLines(rec, roots, now, input.width, fields) : [plainLine('this incident file is gone', { dim: true })];
    sizes.recordLines = content.length;
    sizes.incidentRows = height - 1;
    const title: Line = [span('Incident record', { bold: true }), span('  (Esc back to the list)', { dim: true })];
    return [{ key: 'rec-title', line: title }, ...keyed('rec', windowLines(content, height - 1, inc.recordTop).lines)];
  }

  const list = filterIncidents(snapshot.incidents, inc.filter, roots);
  const title: Line = [
    span(`Incidents (${list.length}${inc.filter ? ` of ${snapshot.incidents.length}` : ''}), newest first`, { bold: true }),
    span(inc.filterEditing || inc.filter ? `  filter: ${inc.filter}${inc.filterEditing ? '▏' : ''}` : '  (/ filters by class or session, Enter opens, Esc back)', { dim: !inc.filterEditing }),
  ];
  const warnings = warningLines(snapshot.warnings, input.width);
  // Warnings below the list get at most a third of the room while there are incidents to show.
  const warnRoom = warnings.length === 0 ? 0 : list.length === 0 ? height - 2 : Math.min(warnings.length, Math.max(2, Math.floor(height / 3)));
  const listRoom = Math.max(1, height - 1 - warnRoom);
  let capacity = listRoom;
  if (list.length > capacity) capacity = Math.max(1, capacity - 1);
  sizes.incidentRows = capacity;
  const out: ScreenLine[] = [{ key: 'inc-title', line: title }];
  if (list.length === 0) {
    out.push({ key: 'inc-empty', line: plainLine(inc.filter ? `  no incident matches "${inc.filter}"` : '  no incidents', { dim: true }) });
  } else {
    const cursor = cursorRowIndex(inc.cursor, inc.cursorIndex, list.map((i) => ({ id: i.file })));
    const top = scrollTo(inc.top, cursor, capacity, list.length);
    const shown = list.slice(top, top + capacity);
    shown.forEach((i, k) => out.push({ key: `inc:${i.file}`, line: incidentRow(i, roots, now, top + k === cursor, input.noColor) }));
    if (list.length > shown.length) out.push({ key: 'inc-more', line: plainLine(`  +${list.length - shown.length} more`, { dim: true }) });
  }
  const used = out.length;
  const room = Math.max(0, height - used);
  const warn = windowLines(warnings, room, 0).lines;
  // Cut: say where every warning can be read whole.
  if (warnings.length > room && warn.length > 0) warn[warn.length - 1] = plainLine(`  +${warnings.length - (room - 1)} more lines of warnings: \`loop-dash status --json\` lists every one`, { dim: true });
  return [...out, ...keyed('warn', warn)].slice(0, height);
}

function confirmDialogLines(input: ScreenInput): Line[] {
  const c = input.view.confirm;
  if (!c) return [];
  const v = findSession(input.snapshot.roots, c.session) ?? c.captured;
  const t = confirmText(c.action, v, input.snapshot.now, c.captured);
  const inner = Math.max(10, input.width - 2);
  const tone: Tone = c.action === 'arm' ? 'yellow' : 'red';
  return [
    fillLine([span('┌ ', { color: tone }), span(t.title, { bold: true, color: tone }), span(' ')], input.width, '─', { color: tone }),
    ...t.facts.map((f): Line => [span('│ ', { color: tone }), span(f)]),
    ...wrapWords(t.effect, inner).map((w): Line => [span('│ ', { color: tone }), span(w, { bold: true })]),
    fillLine([span('└', { color: tone })], input.width, '─', { color: tone }),
  ];
}

const OUTCOME_TONE: Record<Outcome['status'], Tone> = {
  sending: 'cyan',
  pending: 'cyan',
  applied: 'green',
  refused: 'red',
  expired: 'yellow',
  'stale-target': 'yellow',
  'no-answer': 'yellow',
  failed: 'red',
};

/** The newest owner action still worth a message: pending, or settled less than FLASH_MS ago. */
function flashLines(input: ScreenInput): Line[] {
  const now = input.snapshot.now;
  for (const p of [...input.view.pending].reverse()) {
    const o: Outcome =
      p.status === 'queued'
        ? { status: 'sending', detail: null, settledAt: null }
        : p.status === 'failed'
          ? { status: 'failed', detail: p.error, settledAt: p.failedAt }
          : outcomeOf({ id: p.requestId!, home: p.home, requestedAt: p.requestedAt }, input.model.acks, input.model.journal.get(p.home), now);
    if (o.settledAt !== null && now - o.settledAt >= FLASH_MS) continue;
    return flashText(`${p.action} ${p.name}: `, describeOutcome(o), OUTCOME_TONE[o.status], input.width);
  }
  return [];
}

/** At most this many lines of a flash message: a refusal's reason runs long. */
const FLASH_MAX_LINES = 3;

/**
 * The flash message wrapped to the width, its action and row in bold: a refusal's reason was cut at
 * the edge (`… (turn 38, started …) is not the on…`), the one part that says why.
 */
function flashText(prefix: string, message: string, color: Tone | undefined, width: number): Line[] {
  const wrapped = wrapWords(prefix + message, Math.max(20, width));
  const lines = wrapped.slice(0, FLASH_MAX_LINES);
  if (wrapped.length > FLASH_MAX_LINES) lines[FLASH_MAX_LINES - 1] = `${lines[FLASH_MAX_LINES - 1]!.slice(0, Math.max(0, width - 1))}…`;
  return lines.map((text, i): Line => {
    // The prefix never wraps (an action and a row name): it opens the first line.
    if (i === 0 && text.startsWith(prefix.trimEnd())) {
      const head = prefix.trimEnd();
      return [span(head, { bold: true }), span(text.slice(head.length), { color })];
    }
    return [span(text, { color })];
  });
}
