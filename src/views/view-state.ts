/**
 * The dashboard's view state and its reducer: cursor, folds, sort, filter, panes, overlays, the
 * confirmation dialog, owner actions in flight and the activity log. Input handlers only dispatch
 * key presses; everything a key needs (the rows as they are now, the pane heights) travels in the
 * event, so several keys delivered in one batch by Ink each see the state the previous one left.
 */
import type { ControlAction } from '../contract/control.js';
import { placeholderKey, type SessionView } from '../model/snapshot.js';

const PLACEHOLDER_PREFIX = placeholderKey('');
import type { IncidentRecord } from '../model/types.js';
import { recordActivity, type ActivityLog, type ActivityObservation } from './activity.js';
import type { KeyPress } from './keymap.js';
import { filterIncidents } from './incident-lines.js';
import { refusalReason } from './owner-actions.js';
import type { RowList } from './row-list.js';
import { findSession, nextSortMode, treeRowList, treeRows, type SortMode, type TreeRow } from './session-rows.js';

/** Which full-screen view is shown. */
export type Mode = 'main' | 'incidents' | 'audit';

/** An owner action confirmed here; its outcome is then read from the model (acks, journal). */
export interface PendingAction {
  localId: number;
  action: ControlAction;
  session: string;
  home: string;
  name: string;
  /** The session as it was when `y` was pressed; for an abort, with the checkpoint (so the request in flight) of when `x` was. */
  target: SessionView;
  requestedAt: number;
  /** queued: not handed to the action port yet; sent: it answered with an id; failed: it answered with an error. */
  status: 'queued' | 'sent' | 'failed';
  requestId: string | null;
  error: string | null;
  failedAt: number | null;
}

export interface ViewState {
  mode: Mode;
  cursor: string | null;
  /** Where the cursor was, for when its session disappears. */
  cursorIndex: number;
  tableTop: number;
  collapsed: ReadonlySet<string>;
  sort: SortMode;
  filter: string;
  filterEditing: boolean;
  detailOpen: boolean;
  focus: 'table' | 'detail';
  detailTop: number;
  help: boolean;
  helpTop: number;
  confirm: { action: ControlAction; session: string; captured: SessionView } | null;
  incidents: { cursor: string | null; cursorIndex: number; top: number; filter: string; filterEditing: boolean; open: string | null; recordTop: number };
  pending: readonly PendingAction[];
  nextLocalId: number;
  activity: ActivityLog;
  quit: boolean;
}

/** What a key needs to know about the screen as it is now. */
export interface KeyContext {
  roots: readonly SessionView[];
  incidents: readonly IncidentRecord[];
  now: number;
  /** Session rows that fit in the table. */
  tableRows: number;
  /** Lines of the detail pane, and how many of them fit. */
  detailLines: number;
  detailRows: number;
  /** Incident rows that fit, and the open record's lines. */
  incidentRows: number;
  recordLines: number;
}

export type ViewEvent =
  | { type: 'key'; press: KeyPress; ctx: KeyContext }
  | { type: 'pin-cursor'; id: string }
  | { type: 'request-answered'; localId: number; result: { id: string } | { error: string }; at: number }
  | { type: 'observe'; at: number; observations: readonly ActivityObservation[] };

/** Owner actions kept for the flash line and the detail pane. */
const PENDING_KEEP = 20;

export function initialViewState(): ViewState {
  return {
    mode: 'main',
    cursor: null,
    cursorIndex: 0,
    tableTop: 0,
    collapsed: new Set(),
    sort: 'first-limit',
    filter: '',
    filterEditing: false,
    detailOpen: false,
    focus: 'table',
    detailTop: 0,
    help: false,
    helpTop: 0,
    confirm: null,
    incidents: { cursor: null, cursorIndex: 0, top: 0, filter: '', filterEditing: false, open: null, recordTop: 0 },
    pending: [],
    nextLocalId: 1,
    activity: new Map(),
    quit: false,
  };
}

/** The rows the main table shows for this state. */
export function visibleRows(state: Pick<ViewState, 'sort' | 'filter' | 'collapsed'>, roots: readonly SessionView[]): TreeRow[] {
  return treeRows(roots, { sort: state.sort, filter: state.filter, collapsed: state.collapsed });
}

/** {@link visibleRows} as the frame takes them (row-list.ts: the last frame's unchanged chunks shared). */
export function visibleRowList(state: Pick<ViewState, 'sort' | 'filter' | 'collapsed'>, roots: readonly SessionView[]): RowList {
  return treeRowList(roots, { sort: state.sort, filter: state.filter, collapsed: state.collapsed });
}

/** The cursor's row index: its session if still shown, else the nearest index. */
export function cursorRowIndex(
  cursor: string | null,
  cursorIndex: number,
  ids: { readonly length: number; findIndex(predicate: (row: { id: string; view?: { runId: string | null } }) => boolean): number },
): number {
  if (ids.length === 0) return -1;
  let i = cursor === null ? -1 : ids.findIndex((r) => r.id === cursor);
  // A lane with no session yet (`run:<runId>`) whose session has appeared: the cursor stays on that lane.
  if (i < 0 && cursor !== null && cursor.startsWith(PLACEHOLDER_PREFIX)) {
    const run = cursor.slice(PLACEHOLDER_PREFIX.length);
    i = ids.findIndex((r) => r.view?.runId === run);
  }
  return i >= 0 ? i : Math.max(0, Math.min(cursorIndex, ids.length - 1));
}

/** A scroll offset that keeps `index` inside a window of `height` rows, moving as little as possible. */
export function scrollTo(top: number, index: number, height: number, count: number): number {
  const h = Math.max(1, height);
  let t = Math.min(top, index);
  if (index >= t + h) t = index - h + 1;
  return Math.max(0, Math.min(t, Math.max(0, count - h)));
}

const clamp = (n: number, lo: number, hi: number) => Math.max(lo, Math.min(hi, n));

/** The selected session (null when nothing is shown). */
export function selectedSession(state: ViewState, roots: readonly SessionView[]): SessionView | null {
  const rows = visibleRowList(state, roots);
  const i = cursorRowIndex(state.cursor, state.cursorIndex, rows);
  return i >= 0 ? rows.at(i)!.view : null;
}

export function viewReducer(state: ViewState, event: ViewEvent): ViewState {
  switch (event.type) {
    case 'key':
      return onKey(state, event.press, event.ctx);
    case 'pin-cursor':
      // The first row shown becomes the cursor's session, so a reorder before any key keeps it.
      return state.cursor === null ? { ...state, cursor: event.id } : state;
    case 'request-answered': {
      const answered = state.pending.map((p): PendingAction => {
        if (p.localId !== event.localId) return p;
        return 'id' in event.result
          ? { ...p, status: 'sent', requestId: event.result.id }
          : { ...p, status: 'failed', error: event.result.error, failedAt: event.at };
      });
      // Pressing twice yields the same request id (the control layer dedupes): show it once.
      const mine = answered.find((p) => p.localId === event.localId);
      const dup = mine?.requestId ? answered.find((p) => p.localId !== event.localId && p.requestId === mine.requestId) : undefined;
      return { ...state, pending: dup ? answered.filter((p) => p.localId !== event.localId) : answered };
    }
    case 'observe': {
      const activity = recordActivity(state.activity, event.observations, event.at);
      return activity === state.activity ? state : { ...state, activity };
    }
    default: {
      const never: never = event;
      return never;
    }
  }
}

function onKey(state: ViewState, press: KeyPress, ctx: KeyContext): ViewState {
  // 1. The confirmation takes the next key: `y` confirms, anything else cancels.
  if (state.confirm) return press.text === 'y' || press.text === 'Y' ? confirm(state, ctx) : { ...state, confirm: null };

  // 2. A filter prompt takes typed text.
  if (state.mode === 'main' && state.filterEditing) {
    const edited = editText(state.filter, press);
    if (edited === 'cancel') return moveCursor({ ...state, filter: '', filterEditing: false }, ctx, 0);
    if (edited === 'submit') return { ...state, filterEditing: false };
    // A filter that hides the cursor's row puts it on the first match (it went to the last one:
    // the row's old place, clamped); one that keeps the row keeps the cursor on it.
    if (edited !== null) return moveCursor({ ...state, filter: edited, tableTop: 0, cursorIndex: 0 }, ctx, 0);
  }
  if (state.mode === 'incidents' && state.incidents.filterEditing) {
    const inc = state.incidents;
    const edited = editText(inc.filter, press);
    if (edited === 'cancel') return { ...state, incidents: { ...inc, filter: '', filterEditing: false, top: 0 } };
    if (edited === 'submit') return { ...state, incidents: { ...inc, filterEditing: false } };
    // The cursor keeps its incident while it matches; otherwise it goes to the newest match.
    if (edited !== null) return { ...state, incidents: { ...inc, filter: edited, top: 0, cursorIndex: 0 } };
  }

  const action = press.action;
  if (action === null) return state;

  // 3. The help overlay.
  if (state.help) {
    if (action === 'help' || action === 'back') return { ...state, help: false };
    if (action === 'quit') return { ...state, quit: true };
    // The screen reports the help's length and room in the detail sizes while it is open.
    if (action === 'up' || action === 'down') {
      const max = Math.max(0, ctx.detailLines - ctx.detailRows + 1);
      return { ...state, helpTop: clamp(state.helpTop + (action === 'up' ? -1 : 1), 0, max) };
    }
    return state;
  }

  if (action === 'quit') return { ...state, quit: true };
  if (action === 'help') return { ...state, help: true, helpTop: 0 };

  if (state.mode === 'incidents') return onIncidentsKey(state, action, ctx);
  if (state.mode === 'audit') {
    if (action === 'back' || action === 'audit') return { ...state, mode: 'main' };
    // The audit text scrolls like the help (the screen reports its length in the detail sizes).
    if (action === 'up' || action === 'down') {
      const max = Math.max(0, ctx.detailLines - ctx.detailRows + 1);
      return { ...state, helpTop: clamp(state.helpTop + (action === 'up' ? -1 : 1), 0, max) };
    }
    return state;
  }
  return onMainKey(state, action, ctx);
}

/** A text edit: the new text, `submit`, `cancel`, or null when the key is not text editing. */
function editText(text: string, press: KeyPress): string | 'submit' | 'cancel' | null {
  if (press.action === 'back') return 'cancel';
  if (press.submit) return 'submit';
  if (press.erase) return [...text].slice(0, -1).join('');
  if (press.text) return (text + press.text).slice(0, 200);
  return null;
}

function onMainKey(state: ViewState, action: NonNullable<KeyPress['action']>, ctx: KeyContext): ViewState {
  const detailFocused = state.detailOpen && state.focus === 'detail';
  const page = Math.max(1, ctx.tableRows - 1);
  switch (action) {
    case 'up':
    case 'down':
    case 'pageUp':
    case 'pageDown':
    case 'top':
    case 'bottom': {
      if (detailFocused) {
        const max = Math.max(0, ctx.detailLines - ctx.detailRows + 1);
        const dpage = Math.max(1, ctx.detailRows - 2);
        const delta = { up: -1, down: 1, pageUp: -dpage, pageDown: dpage, top: -Infinity, bottom: Infinity }[action];
        return { ...state, detailTop: clamp(state.detailTop + delta, 0, max) };
      }
      const delta = { up: -1, down: 1, pageUp: -page, pageDown: page, top: -Infinity, bottom: Infinity }[action];
      return moveCursor(state, ctx, delta);
    }
    case 'collapse': {
      const rows = visibleRowList(state, ctx.roots);
      const i = cursorRowIndex(state.cursor, state.cursorIndex, rows);
      const row = i >= 0 ? rows.at(i) : undefined;
      if (!row) return state;
      if (row.depth === 1 && row.parent) return moveCursor({ ...state, cursor: row.parent }, ctx, 0);
      if (row.laneCount === 0 || row.collapsed) return state;
      const collapsed = new Set(state.collapsed);
      collapsed.add(row.id);
      return moveCursor({ ...state, collapsed, cursor: row.id }, ctx, 0);
    }
    case 'expand': {
      const rows = visibleRowList(state, ctx.roots);
      const i = cursorRowIndex(state.cursor, state.cursorIndex, rows);
      const row = i >= 0 ? rows.at(i) : undefined;
      if (!row || !row.collapsed) return state;
      const collapsed = new Set(state.collapsed);
      collapsed.delete(row.id);
      return moveCursor({ ...state, collapsed, cursor: row.id }, ctx, 0);
    }
    case 'detail':
      return state.detailOpen ? { ...state, detailOpen: false, focus: 'table' } : { ...pin(state, ctx), detailOpen: true, detailTop: 0 };
    case 'switchPane':
      if (!state.detailOpen) return { ...pin(state, ctx), detailOpen: true, focus: 'detail', detailTop: 0 };
      return { ...state, focus: state.focus === 'table' ? 'detail' : 'table' };
    case 'filter':
      return { ...state, filterEditing: true };
    case 'sort':
      return moveCursor({ ...pin(state, ctx), sort: nextSortMode(state.sort) }, ctx, 0);
    case 'incidents':
      return { ...state, mode: 'incidents' };
    case 'audit':
      return { ...state, mode: 'audit', helpTop: 0 };
    case 'abort':
    case 'disarm':
    case 'arm': {
      const target = selectedSession(state, ctx.roots);
      return target ? { ...pin(state, ctx), confirm: { action, session: target.session, captured: target } } : state;
    }
    case 'back':
      if (detailFocused) return { ...state, focus: 'table' };
      if (state.detailOpen) return { ...state, detailOpen: false };
      if (state.filter) return moveCursor({ ...state, filter: '' }, ctx, 0);
      return state;
    case 'help':
    case 'quit':
      return state; // handled before
    default: {
      const never: never = action;
      return never;
    }
  }
}

/** Fix the cursor to the session it shows now (so a later reorder keeps it). */
function pin(state: ViewState, ctx: KeyContext): ViewState {
  const rows = visibleRowList(state, ctx.roots);
  const i = cursorRowIndex(state.cursor, state.cursorIndex, rows);
  return i >= 0 ? { ...state, cursor: rows.at(i)!.id, cursorIndex: i } : state;
}

/** Move the cursor by `delta` rows (0 = just re-anchor it) and keep it in the table window. */
function moveCursor(state: ViewState, ctx: KeyContext, delta: number): ViewState {
  const rows = visibleRowList(state, ctx.roots);
  if (rows.length === 0) return { ...state, cursorIndex: 0, tableTop: 0 };
  const from = cursorRowIndex(state.cursor, state.cursorIndex, rows);
  const to = clamp(delta === Infinity ? rows.length - 1 : delta === -Infinity ? 0 : from + delta, 0, rows.length - 1);
  const id = rows.at(to)!.id;
  return {
    ...state,
    cursor: id,
    cursorIndex: to,
    tableTop: scrollTo(state.tableTop, to, ctx.tableRows, rows.length),
    detailTop: id === state.cursor ? state.detailTop : 0,
  };
}

function confirm(state: ViewState, ctx: KeyContext): ViewState {
  const c = state.confirm!;
  // The live row at `y` for the session's facts; an abort's target is the request in flight when
  // `x` was pressed (the dialog says when it has changed since): the session refuses it if that
  // request is no longer the one in flight, so the owner never cuts a request they did not see.
  const live = findSession(ctx.roots, c.session) ?? c.captured;
  const target = c.action === 'abort' ? { ...live, checkpoint: c.captured.checkpoint } : live;
  // A remote row is read-only, a lane with no session yet has nothing to answer: the dialog said
  // why; `y` only closes it.
  if (refusalReason(c.captured) !== null || refusalReason(target) !== null) return { ...state, confirm: null };
  const pending: PendingAction = {
    localId: state.nextLocalId,
    action: c.action,
    session: target.session,
    home: target.home,
    name: target.name,
    target,
    requestedAt: ctx.now,
    status: 'queued',
    requestId: null,
    error: null,
    failedAt: null,
  };
  return { ...state, confirm: null, pending: [...state.pending, pending].slice(-PENDING_KEEP), nextLocalId: state.nextLocalId + 1 };
}

function onIncidentsKey(state: ViewState, action: NonNullable<KeyPress['action']>, ctx: KeyContext): ViewState {
  const inc = state.incidents;
  if (inc.open !== null) {
    const max = Math.max(0, ctx.recordLines - ctx.incidentRows + 1);
    switch (action) {
      case 'back':
      case 'detail':
        return { ...state, incidents: { ...inc, open: null } };
      case 'incidents':
        return { ...state, mode: 'main', incidents: { ...inc, open: null } };
      case 'up':
      case 'down':
        return { ...state, incidents: { ...inc, recordTop: clamp(inc.recordTop + (action === 'up' ? -1 : 1), 0, max) } };
      default:
        return state;
    }
  }
  const list = filterIncidents(ctx.incidents, inc.filter, ctx.roots);
  const move = (delta: number): ViewState => {
    if (list.length === 0) return state;
    const from = cursorRowIndex(inc.cursor, inc.cursorIndex, list.map((i) => ({ id: i.file })));
    const to = clamp(delta === Infinity ? list.length - 1 : delta === -Infinity ? 0 : from + delta, 0, list.length - 1);
    return { ...state, incidents: { ...inc, cursor: list[to]!.file, cursorIndex: to, top: scrollTo(inc.top, to, ctx.incidentRows, list.length) } };
  };
  const page = Math.max(1, ctx.incidentRows - 1);
  switch (action) {
    case 'up':
      return move(-1);
    case 'down':
      return move(1);
    case 'pageUp':
      return move(-page);
    case 'pageDown':
      return move(page);
    case 'top':
      return move(-Infinity);
    case 'bottom':
      return move(Infinity);
    case 'detail': {
      const i = cursorRowIndex(inc.cursor, inc.cursorIndex, list.map((x) => ({ id: x.file })));
      const rec = list[i];
      return rec ? { ...state, incidents: { ...inc, cursor: rec.file, cursorIndex: i, open: rec.file, recordTop: 0 } } : state;
    }
    case 'filter':
      return { ...state, incidents: { ...inc, filterEditing: true } };
    case 'back':
      if (inc.filter) return { ...state, incidents: { ...inc, filter: '', top: 0 } };
      return { ...state, mode: 'main' };
    case 'incidents':
      return { ...state, mode: 'main' };
    default:
      return state;
  }
}
