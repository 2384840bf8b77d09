/**
 * The main table's columns and how they narrow: from 200 columns down to 80 the table first
 * abbreviates cells, then shrinks the name and model columns, then drops low-priority columns in a
 * fixed order. At 80 columns name, state, inactivity, absolute, first-to-fire and age always stay.
 * Cell text comes from `cells.ts`, shared with the plain `status` table.
 */
import type { SessionState } from '../model/session-state.js';
import { retimeBase, type SessionView } from '../model/snapshot.js';
import { ageText, COLUMNS, COLUMN_TITLES, countdownKey, sessionCells, type ColumnId, type Urgency } from './cells.js';
import { span, type Line, type Span, type Tone } from './line.js';
import type { TreeRow } from './session-rows.js';
import { displayWidth, fit, sanitize } from './text.js';

/** A cell ready to lay out: full and abbreviated text, and how urgent it is. */
export interface TableCell {
  text: string;
  compact: string;
  urgency: Urgency;
  tone?: Tone;
  dim?: boolean;
}

export type RowCells = Record<ColumnId, TableCell>;

/** A column as laid out. */
export interface LaidColumn {
  id: ColumnId;
  width: number;
  compact: boolean;
}

/** The columns shown and their widths. */
export interface TableLayout {
  columns: LaidColumn[];
  /** Columns left out for lack of width, in the order they were dropped. */
  dropped: ColumnId[];
}

/** The cursor gutter: `› ` on the selected row. */
export const GUTTER = 2;
const GAP = 1;

/** Abbreviate first (least loss of meaning first). */
const COMPACT_ORDER: readonly ColumnId[] = ['model', 'resume', 'episode', 'first', 'armed', 'state', 'name'];
/** Then drop, lowest priority first (the short id before any: computeLayout). Never dropped: name, state, inactivity, absolute, first, age. */
export const DROP_ORDER: readonly ColumnId[] = ['model', 'incidents', 'armed', 'resume', 'episode', 'home'];
/** Countdown columns keep a minimum width so they do not jitter as the seconds tick. */
const MIN_WIDTH: Partial<Record<ColumnId, number>> = { inactivity: 7, absolute: 7, age: 4 };
const MAX_WIDTH: Partial<Record<ColumnId, number>> = { name: 40, model: 28, home: 20 };
/** How far the flexible columns may shrink before a column is dropped, and after. */
const SHRINK_SOFT: Partial<Record<ColumnId, number>> = { name: 16, model: 12, home: 8 };
const SHRINK_HARD: Partial<Record<ColumnId, number>> = { name: 10 };
const RIGHT_ALIGNED = new Set<ColumnId>(['inactivity', 'absolute', 'incidents', 'age']);

const STATE_TONE: Record<SessionState, Tone | undefined> = {
  lost: 'red',
  held: 'magenta',
  requesting: 'green',
  tools: 'green',
  'retry-wait': 'yellow',
  recovering: 'yellow',
  stopped: 'red',
  waiting: 'cyan',
  idle: undefined,
  ended: 'gray',
  unknown: 'gray',
  dispatched: 'cyan',
};

const URGENCY_TONE: Record<Urgency, Tone | undefined> = { critical: 'red', warning: 'yellow', ok: undefined, none: undefined };

/** Text markers that stand in for colour under NO_COLOR. */
export function urgencyMarker(u: Urgency): string {
  return u === 'critical' ? '!!' : u === 'warning' ? '!' : '';
}

function treePrefix(row: TreeRow): string {
  if (row.depth === 1) return row.last ? ' └ ' : ' ├ ';
  if (row.laneCount === 0) return '  ';
  return row.collapsed ? '▸ ' : '▾ ';
}

/** Model ids without the provider prefix. */
function shortModel(model: string): string {
  const i = model.lastIndexOf('/');
  return i >= 0 ? model.slice(i + 1) : model;
}

/** The cells of one tree row at `now`. */
export function rowCells(row: TreeRow, now: number, noColor: boolean): RowCells {
  const c = sessionCells(row.view, now, row.home ?? '');
  const v = row.view;
  const mark = (u: Urgency) => (noColor ? urgencyMarker(u) : '');
  const cell = (id: ColumnId, compact?: (t: string) => string): TableCell => {
    const base = c[id];
    const text = sanitize(base.text) + mark(base.urgency);
    return { text, compact: compact ? compact(sanitize(base.text)) + mark(base.urgency) : text, urgency: base.urgency, tone: URGENCY_TONE[base.urgency] };
  };
  const name = `${treePrefix(row)}${sanitize(shownName(row))}`;
  const home = sanitize(c.home.text);
  return {
    // A remote row's machine in cyan: it is read-only here.
    home: { text: home, compact: home, urgency: 'none', tone: row.view.remote ? 'cyan' : undefined, dim: !row.view.remote },
    name: { text: name + collapsedSuffix(row), compact: name + collapsedSuffix(row, true), urgency: 'none' },
    model: { text: sanitize(c.model.text), compact: shortModel(sanitize(c.model.text)), urgency: 'none', dim: true },
    state: {
      text: sanitize(c.state.text),
      compact: sanitize(c.state.text).replace(' (stale)', '*'),
      urgency: 'none',
      tone: STATE_TONE[v.state],
      dim: v.source.stale,
    },
    inactivity: cell('inactivity'),
    absolute: cell('absolute'),
    first: cell('first', (t) => t.replace(' by ', '+')),
    episode: cell('episode', (t) => t.replace(/ left$/, '')),
    resume: cell('resume', (t) => t.replace(/ #(\d+) (sched|pred)$/, (_m, n: string, s: string) => `#${n}${s[0]}`).replace(/^retry /, 'r')),
    armed: {
      ...cell('armed', (t) => (t === 'disarmed' ? 'off' : t === 'armed' ? 'on' : t)),
      tone: v.held ? 'magenta' : v.armed === false ? 'yellow' : undefined,
    },
    incidents: { ...cell('incidents'), tone: v.incidents > 0 ? 'red' : undefined },
    age: { ...cell('age'), tone: v.source.stale ? 'yellow' : undefined },
    id: { ...cell('id'), dim: true },
  };
}

/**
 * A row's name in the tree: a lane named `<root>/<lane>` (loop-pi names its lanes' sessions so) is
 * `<lane>` under its root, which the tree already shows — on a narrow terminal two lanes read
 * `api-refa…` alike, and a lane named by its dispatch alone (`L3`) sat beside `api-refactor/L1`.
 */
function shownName(row: TreeRow): string {
  const name = row.view.name;
  const root = row.rootName;
  return root !== undefined && name.length > root.length + 1 && name.startsWith(root) && name[root.length] === '/' ? name.slice(root.length + 1) : name;
}

/**
 * A folded root's lanes: how many, and how many of them have a request in flight — a folded root
 * read `▸ papa (+1) … tools — — —` while its hidden lane was 1:55 from its cut (the root sorts
 * by that lane too, so it is on top: snapshot.ts, treeKey).
 */
function collapsedSuffix(row: TreeRow, compact = false): string {
  if (row.depth !== 0 || !row.collapsed || row.laneCount === 0) return '';
  const lanes = row.view.lanes;
  let requesting = 0;
  for (let i = 0; i < lanes.length; i++) if (lanes[i]!.state === 'requesting') requesting++;
  return requesting > 0 ? ` (+${row.laneCount}, ${requesting} ${compact ? 'req' : 'requesting'})` : ` (+${row.laneCount})`;
}

/**
 * The cells of a row that did not change since the last frame. Cells are a function of the
 * session view, the row's place in the tree, and `now` — through the age cell alone
 * ({@link ageText}). A view is the same object from one snapshot to the next while nothing about
 * the session changed and it has no running clock; one with a running clock is a new re-timed
 * copy in every snapshot, of the same base row ({@link retimeBase}), differing from it only in
 * what {@link countdownKey} shows. So the key is the base row, the age's text and the countdowns'
 * texts, not `now`: the rows a batch did not touch keep their cells and lines, and a countdown
 * row's change once a second, not at every one of ~14 frames a second under appends.
 */
interface CellsMemo {
  countdowns: string;
  age: string;
  noColor: boolean;
  prefix: string;
  suffix: string;
  home: string | undefined;
  rootName: string | undefined;
  cells: RowCells;
}
const cellsMemo = new WeakMap<SessionView, CellsMemo>();

/** {@link rowCells}, reusing the cells of the same base row, countdown texts, tree place and age. */
export function rowCellsCached(row: TreeRow, now: number, noColor: boolean): RowCells {
  const base = retimeBase(row.view);
  const countdowns = countdownKey(row.view);
  const age = ageText(row.view, now);
  const prefix = treePrefix(row);
  const suffix = collapsedSuffix(row);
  const m = cellsMemo.get(base);
  if (m && m.countdowns === countdowns && m.age === age && m.noColor === noColor && m.prefix === prefix && m.suffix === suffix && m.home === row.home && m.rootName === row.rootName) return m.cells;
  let cells = rowCells(row, now, noColor);
  // A row built again with nothing on screen changed (an append's new facts for a live root, whose
  // age is its checkpoint's) keeps the cells it was drawn with: its widths, the layout and its
  // line are then the last frame's, not measured, laid out and clipped again. At 100 appends/s on
  // the big home's 312-row screen, ~285 of ~308 frames in 20 s changed nothing on screen and each
  // laid out every column afresh (layoutColumns 5.8 % of the main thread's samples; kept, a frame's
  // build ~0.35 ms less, 0.4-0.7 % of a core: docs/PERFORMANCE-HISTORY.md, session 21).
  const last = lastCells.get(row.id);
  if (last !== undefined && sameCells(last, cells)) cells = last;
  else {
    if (lastCells.size >= LAST_CELLS_MAX) lastCells.clear();
    lastCells.set(row.id, cells);
  }
  cellsMemo.set(base, { countdowns, age, noColor, prefix, suffix, home: row.home, rootName: row.rootName, cells });
  return cells;
}

/** The cells each row (by its id) was last given, for {@link rowCellsCached}; cleared past LAST_CELLS_MAX rows. */
const lastCells = new Map<string, RowCells>();
const LAST_CELLS_MAX = 50_000;

/** Two rows' cells show the same: every column's texts, urgency, tone and dimness. */
function sameCells(a: RowCells, b: RowCells): boolean {
  for (let i = 0; i < COLUMNS.length; i++) {
    const x = a[COLUMNS[i]!];
    const y = b[COLUMNS[i]!];
    if (x.text !== y.text || x.compact !== y.compact || x.urgency !== y.urgency || x.tone !== y.tone || x.dim !== y.dim) return false;
  }
  return true;
}

/**
 * Display widths of a row's cell texts, per column, full and compact: measured once per cells
 * object (cells are kept across frames, see {@link rowCellsCached}, and never changed), so a
 * layout measures only the rows whose cells are new.
 */
const cellWidths = new WeakMap<RowCells, [Partial<Record<ColumnId, number>>, Partial<Record<ColumnId, number>>]>();
function cellWidth(r: RowCells, id: ColumnId, compact: boolean): number {
  let m = cellWidths.get(r);
  if (m === undefined) cellWidths.set(r, (m = [{}, {}]));
  const side = m[compact ? 1 : 0];
  let w = side[id];
  if (w === undefined) side[id] = w = displayWidth(compact ? r[id].compact : r[id].text);
  return w;
}

/** The width a column's text needs (within its bounds). Not a closure: see snapshot.ts's InPlace. */
function naturalWidth(rows: readonly RowCells[], id: ColumnId, compact: boolean): number {
  let w = Math.max(displayWidth(COLUMN_TITLES[id]), MIN_WIDTH[id] ?? 0);
  for (const r of rows) w = Math.max(w, cellWidth(r, id, compact));
  return Math.min(w, MAX_WIDTH[id] ?? Number.POSITIVE_INFINITY);
}

/** How long a column keeps a width no row on screen needs any more before it narrows. */
export const COLUMN_HOLD_MS = 60_000;

/**
 * The widths a table's columns have had, so that they do not follow their cells' text frame by
 * frame: a column widens at once, and narrows only once nothing on screen has needed its width for
 * {@link COLUMN_HOLD_MS} (by the snapshot's clock), or when the terminal's width changes. Without
 * it, a countdown crossing the hour, a state gaining `(stale)` or a scroll moved every column to
 * its right, and could abbreviate the model column and give it back a second later. One per
 * dashboard: the first screen's is handed to App with its view state.
 */
export class ColumnWidths {
  private terminalWidth = -1;
  private readonly held = new Map<string, { width: number; neededAt: number; neededNow: boolean }>();

  /** When the layout last made would first narrow a column held wider than its cells need. */
  narrowsAt = Number.POSITIVE_INFINITY;

  /**
   * Starts a layout at `now` for a terminal of `width` columns; nothing is held across a resize.
   * What the last layout's cells needed stayed on screen until now (frames may not have been laid
   * out since, with nothing changing): it counts as needed now.
   */
  begin(width: number, now: number): void {
    this.narrowsAt = Number.POSITIVE_INFINITY;
    if (width !== this.terminalWidth) {
      this.terminalWidth = width;
      this.held.clear();
      return;
    }
    for (const h of this.held.values()) if (h.neededNow) h.neededAt = Math.max(h.neededAt, now);
  }

  /** The width to give a column whose cells now need `natural`, at `now`. */
  hold(id: ColumnId, compact: boolean, natural: number, now: number): number {
    const key = compact ? `${id}:c` : id;
    const h = this.held.get(key);
    if (h === undefined || natural >= h.width || now - h.neededAt >= COLUMN_HOLD_MS) {
      this.held.set(key, { width: natural, neededAt: now, neededNow: true });
      return natural;
    }
    h.neededNow = false;
    this.narrowsAt = Math.min(this.narrowsAt, h.neededAt + COLUMN_HOLD_MS);
    return h.width;
  }
}

/**
 * The last layout made, with the cells it was made for. Cells objects are never changed once made
 * (rowCellsCached hands the same object out while what it shows is the same), so the same cells
 * in the same width give the same layout: a frame redrawn for a change off the table (or in no
 * visible cell) lays nothing out again, and the rows' lines, memoised per layout, are kept too.
 */
let lastLayout: { rows: readonly RowCells[]; width: number; widths: ColumnWidths | null; narrowsAt: number; layout: TableLayout } | null = null;

/**
 * Lay out the columns for rows of cells in `width` terminal cells. With `widths` (the dashboard's),
 * each column keeps the widest width its cells needed in the last minute at `now` (a narrowing
 * shows in the next frame drawn); without, each is as wide as the rows given need.
 */
export function layoutColumns(rows: readonly RowCells[], width: number, widths: ColumnWidths | null = null, now = 0): TableLayout {
  const m = lastLayout;
  // Once a held width may narrow, the same cells are laid out again.
  const same = m && m.width === width && m.widths === widths && now < m.narrowsAt;
  if (same && m.rows.length === rows.length && m.rows.every((r, i) => r === rows[i])) return m.layout;
  widths?.begin(width, now);
  const layout = computeLayout(rows, width, widths === null ? naturalWidth : (r, id, compact) => widths.hold(id, compact, naturalWidth(r, id, compact), now));
  lastLayout = { rows: rows.slice(), width, widths, narrowsAt: widths?.narrowsAt ?? Number.POSITIVE_INFINITY, layout };
  return layout;
}

/**
 * The short id only where it costs no other column anything: beside every other column in full.
 * (Shown at the cost of abbreviations, the demo's table at 132 columns lost its EPISODE and
 * RESUME words to it.)
 */
function computeLayout(rows: readonly RowCells[], width: number, wantWidth: typeof naturalWidth): TableLayout {
  const rest = layoutWithout(rows, width, wantWidth, 'id');
  const id = wantWidth(rows, 'id', false);
  const used = rest.columns.reduce((n, c) => n + c.width, 0) + GAP * Math.max(0, rest.columns.length - 1);
  if (rest.dropped.length === 0 && rest.columns.every((c) => !c.compact) && used + GAP + id <= width - GUTTER) {
    return { columns: [...rest.columns, { id: 'id', width: id, compact: false }], dropped: [] };
  }
  return { columns: rest.columns, dropped: ['id', ...rest.dropped] };
}

function layoutWithout(rows: readonly RowCells[], width: number, wantWidth: typeof naturalWidth, left: ColumnId): TableLayout {
  // The home column only when some row has a home label (several homes or machines).
  const shown = COLUMNS.filter((id) => id !== left && (id !== 'home' || rows.some((r) => r.home.text !== '')));
  let columns: LaidColumn[] = shown.map((id) => ({ id, width: wantWidth(rows, id, false), compact: false }));
  const dropped: ColumnId[] = [];
  const avail = width - GUTTER;
  const total = () => columns.reduce((n, c) => n + c.width, 0) + GAP * Math.max(0, columns.length - 1);

  for (const id of COMPACT_ORDER) {
    if (total() <= avail) break;
    const col = columns.find((c) => c.id === id)!;
    col.compact = true;
    col.width = wantWidth(rows, id, true);
  }
  const shrink = (limits: Partial<Record<ColumnId, number>>) => {
    for (const col of columns) {
      const floor = limits[col.id];
      if (floor === undefined || total() <= avail) continue;
      col.width = Math.max(Math.min(col.width, floor), col.width - (total() - avail));
    }
  };
  shrink(SHRINK_SOFT);
  for (const id of DROP_ORDER) {
    if (total() <= avail) break;
    if (!columns.some((c) => c.id === id)) continue;
    columns = columns.filter((c) => c.id !== id);
    dropped.push(id);
  }
  shrink(SHRINK_HARD);
  // Give any room left back to the name, then the model (up to what their text needs).
  for (const id of ['name', 'model'] as const) {
    const col = columns.find((c) => c.id === id);
    if (!col) continue;
    const want = wantWidth(rows, id, col.compact);
    if (col.width < want) col.width = Math.min(want, col.width + Math.max(0, avail - total()));
  }
  return { columns, dropped };
}

/** The title row. */
export function headerLine(layout: TableLayout): Line {
  const text = layout.columns.map((c) => fit(COLUMN_TITLES[c.id], c.width, RIGHT_ALIGNED.has(c.id) ? 'right' : 'left')).join(' '.repeat(GAP));
  return [span(' '.repeat(GUTTER) + text, { bold: true })];
}

/** What a row's line depends on in a layout: each column's id, width and abbreviation. */
const layoutKeys = new WeakMap<TableLayout, string>();
function layoutKey(layout: TableLayout): string {
  let key = layoutKeys.get(layout);
  if (key === undefined) {
    key = layout.columns.map((c) => `${c.id}:${c.width}:${c.compact ? 1 : 0}`).join(',');
    layoutKeys.set(layout, key);
  }
  return key;
}

const lineMemo = new WeakMap<RowCells, { layout: string; selected: boolean; noColor: boolean; line: Line }>();

/** {@link rowLine}, reusing the line of the same cells in a layout of the same columns and widths. */
export function rowLineCached(cells: RowCells, layout: TableLayout, selected: boolean, noColor: boolean): Line {
  const key = layoutKey(layout);
  const m = lineMemo.get(cells);
  if (m && m.layout === key && m.selected === selected && m.noColor === noColor) return m.line;
  const line = rowLine(cells, layout, selected, noColor);
  lineMemo.set(cells, { layout: key, selected, noColor, line });
  return line;
}

/** One session row, pre-formatted: a gutter, then each cell fitted to its column. */
export function rowLine(cells: RowCells, layout: TableLayout, selected: boolean, noColor: boolean): Line {
  const spans: Span[] = [span(selected ? '› ' : '  ', { bold: selected, inverse: selected && !noColor })];
  layout.columns.forEach((col, i) => {
    const cell = cells[col.id];
    const text = fit(col.compact ? cell.compact : cell.text, col.width, RIGHT_ALIGNED.has(col.id) ? 'right' : 'left');
    const style: Omit<Span, 'text'> = noColor
      ? {}
      : { ...(cell.tone ? { color: cell.tone } : {}), ...(cell.dim ? { dim: true } : {}), ...(selected ? { inverse: true } : {}), ...(cell.urgency === 'critical' ? { bold: true } : {}) };
    spans.push(span(i === 0 ? text : ' '.repeat(GAP) + text, style));
  });
  if (noColor) return [span(spans.map((s) => s.text).join(''))];
  return spans;
}
