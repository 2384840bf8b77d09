/**
 * The main table's rows: roots and their lanes flattened into a tree, sorted, filtered and folded.
 * Pure: the view state decides the sort, the filter and which roots are collapsed.
 */
import { byName, compareViews, retimeBase, type SessionView } from '../model/snapshot.js';
import type { SessionState } from '../model/session-state.js';
import { changedPlaces } from './changed-places.js';
import { groupByHome, hasSeveralHomes, homeKey, homeLabels } from './home-groups.js';
import { RowList } from './row-list.js';

/** Sort modes, in the order `s` cycles through them. */
export const SORT_MODES = ['first-limit', 'name', 'state', 'activity'] as const;
export type SortMode = (typeof SORT_MODES)[number];

export const SORT_LABELS: Record<SortMode, string> = {
  'first-limit': 'time to first limit',
  name: 'name',
  state: 'state',
  activity: 'last activity',
};

export function nextSortMode(mode: SortMode): SortMode {
  return SORT_MODES[(SORT_MODES.indexOf(mode) + 1) % SORT_MODES.length]!;
}

/** SPEC §2's precedence order, most urgent first. */
const STATE_ORDER: readonly SessionState[] = ['lost', 'held', 'requesting', 'tools', 'retry-wait', 'recovering', 'stopped', 'waiting', 'dispatched', 'idle', 'ended', 'unknown'];

function comparator(mode: SortMode): (a: SessionView, b: SessionView) => number {
  switch (mode) {
    case 'first-limit':
      return compareViews;
    case 'name':
      return byName;
    case 'state':
      return (a, b) => STATE_ORDER.indexOf(a.state) - STATE_ORDER.indexOf(b.state) || compareViews(a, b);
    case 'activity':
      // Most recent first; never-active last.
      return (a, b) => (b.lastActivityAt ?? Number.NEGATIVE_INFINITY) - (a.lastActivityAt ?? Number.NEGATIVE_INFINITY) || byName(a, b);
    default: {
      const never: never = mode;
      return never;
    }
  }
}

/** One visible row of the tree. */
export interface TreeRow {
  /** The session id: the cursor's key. */
  id: string;
  view: SessionView;
  depth: 0 | 1;
  /** For a lane: its root's id. */
  parent: string | null;
  /** For a lane: the last lane of its root (drawn `└`). */
  last: boolean;
  /** For a root: how many lanes it has (shown or not). */
  laneCount: number;
  collapsed: boolean;
  /** The home's short label, on root rows when several homes (or machines) are shown. */
  home?: string;
  /** For a lane: its root's name (a lane named `<root>/<lane>` is shown by `<lane>` under it). */
  rootName?: string;
}

/** Does the session match the filter text (name, session id, model, state, or a remote row's host; case-insensitive)? */
export function matchesFilter(v: SessionView, filter: string): boolean {
  return matchesNeedle(v, filter.trim().toLowerCase());
}

/**
 * The searched fields of a row, lower-cased, one per line (a filter is one line of typed text, so
 * it never spans two fields). Rows that did not change are the same objects from one snapshot to
 * the next, so each is lower-cased once, not on every frame. A row with a running countdown is a
 * new re-timed copy in every snapshot; the copy differs from its base row only in its clocks (and
 * a root's lanes list), never in a searched field, so its text is kept under the base row.
 */
const haystacks = new WeakMap<SessionView, string>();
function matchesNeedle(v: SessionView, needle: string): boolean {
  if (!needle) return true;
  const base = retimeBase(v);
  let hay = haystacks.get(base);
  if (hay === undefined) {
    hay = searchFields(v).join('\n').toLowerCase();
    haystacks.set(base, hay);
  }
  if (!needle.includes('\n')) return hay.includes(needle);
  return searchFields(v).some((s) => s.toLowerCase().includes(needle));
}

const searchFields = (v: SessionView): string[] => [v.name, v.session, v.model ?? '', v.state, v.lane ?? '', v.remote?.host ?? ''];

/**
 * The rows shown: roots sorted, each followed by its lanes (sorted the same way) unless
 * collapsed. With a filter, a root stays when it or one of its lanes matches; of its lanes, only
 * the matching ones are listed (all of them when the root itself matches). A new array (see
 * {@link treeRowList} for the frame's).
 */
export function treeRows(roots: readonly SessionView[], opts: { sort: SortMode; filter: string; collapsed: ReadonlySet<string> }): TreeRow[] {
  return treeRowList(roots, opts).toArray();
}

/**
 * {@link treeRows} as the frame takes them: an immutable list that shares with the last call's
 * every chunk of rows in which nothing changed (row-list.ts), so a frame that changes a few roots'
 * rows allocates those chunks, not a copy of every row.
 */
export function treeRowList(roots: readonly SessionView[], opts: { sort: SortMode; filter: string; collapsed: ReadonlySet<string> }): RowList {
  const last = lastTree;
  // The places of the roots that are not the last call's objects (null: another number of roots).
  const moved = last === null ? null : changedPlaces(roots, last.roots);
  const cmp = comparator(opts.sort);
  let sorted = opts.sort === 'first-limit' ? roots : [...roots].sort(cmp);
  // Several homes or machines: rows grouped by home (sorted within each), each root labelled. The
  // last call's labels hold while each root at a moved place is of the home its place had.
  const labels = last?.labels && sameHomes(roots, last.roots, moved) ? last.labels : severalHomes(roots, last, moved) ? homeLabels(roots) : null;
  if (labels) sorted = groupByHome(sorted, labels);
  const needle = opts.filter.trim().toLowerCase();
  // The same options and homes as last time: only the roots at `changed` places are looked at
  // (`sorted` is `roots` itself unless another sort is chosen or several homes are grouped).
  const sameHomesAsLast = labels === null ? last?.home !== null : labels === last?.labels;
  const same = last !== null && moved !== null && last.sort === opts.sort && last.needle === needle && last.collapsed === opts.collapsed && sameHomesAsLast;
  const changed = !same ? null : sorted === roots ? moved : changedPlaces(sorted, last.sorted);
  // With `changed`, the memo's own list of each root's rows, updated in place (a new one of
  // ~2 000 entries at every frame was garbage).
  const parts = changed !== null ? last!.parts : new Array<readonly TreeRow[]>(sorted.length);
  // Until this call is done the memo is half updated: none, should anything below throw.
  lastTree = null;
  let resized = changed === null;
  for (const i of changed ?? sorted.keys()) {
    const root = sorted[i]!;
    const was = parts[i];
    parts[i] = rootRows(root, opts.sort, cmp, needle, opts.collapsed.has(root.session), labels ? (labels.get(homeKey(root)) ?? root.home) : undefined);
    // A root whose rows changed in number moves every row after it: all flattened again below.
    if (parts[i]!.length !== was?.length) resized = true;
  }
  let list: RowList;
  let starts: Int32Array;
  if (!resized) {
    // The last list with the changed roots' rows written over their places (a frame at 100
    // appends/s changes a few roots of ~2 000): the chunks they fall in are copied, no others.
    starts = last!.starts;
    const patch = last!.list.patch();
    for (const i of changed!) {
      const p = parts[i]!;
      for (let j = 0, at = starts[i]!; j < p.length; j++) patch.set(at + j, p[j]!);
    }
    list = patch.done();
  } else {
    starts = new Int32Array(parts.length);
    let total = 0;
    for (let i = 0; i < parts.length; i++) {
      starts[i] = total;
      total += parts[i]!.length;
    }
    list = RowList.concat(parts, total);
  }
  lastTree = { roots, home: labels === null && roots.length > 0 ? homeKey(roots[0]!) : null, labels, sorted, sort: opts.sort, needle, collapsed: opts.collapsed, parts, starts, list };
  return list;
}

/**
 * The last call's roots, options and rows, for the next call to copy from. The dashboard calls
 * this for every frame with the snapshot's roots, of which only the changed and the re-timed ones
 * are new objects: the rows of the others are where they were. Rows are patched while the options
 * and the homes are the same; anything else is flattened again.
 */
interface TreeMemo {
  /** The roots as given, and their one home's key (null: several, or none). */
  roots: readonly SessionView[];
  home: string | null;
  /** Several homes: their labels (the same object while the homes at every place are the same). */
  labels: ReadonlyMap<string, string> | null;
  sorted: readonly SessionView[];
  sort: SortMode;
  needle: string;
  collapsed: ReadonlySet<string>;
  /** The memo's own: updated in place by the next call. */
  parts: (readonly TreeRow[])[];
  /** Where each root's rows start in `list`. */
  starts: Int32Array;
  /** The rows handed out (immutable: the next call patches a copy of the chunks it changes). */
  list: RowList;
}
let lastTree: TreeMemo | null = null;

/**
 * Each root at a `moved` place is of the home (and, from another machine, the host) that `was` had
 * there: the homes, and so their labels, are the same.
 */
function sameHomes(roots: readonly SessionView[], was: readonly SessionView[], moved: readonly number[] | null): boolean {
  if (moved === null) return false;
  for (const i of moved) {
    const r = roots[i]!;
    const w = was[i]!;
    if (homeKey(r) !== homeKey(w) || r.remote?.host !== w.remote?.host) return false;
  }
  return true;
}

/**
 * {@link hasSeveralHomes}, reading only the roots at `moved` places when the last call's were of
 * one home (see changed-places.ts).
 */
function severalHomes(roots: readonly SessionView[], last: TreeMemo | null, moved: readonly number[] | null): boolean {
  if (last === null || last.home === null || moved === null) return hasSeveralHomes(roots);
  for (const i of moved) if (homeKey(roots[i]!) !== last.home) return hasSeveralHomes(roots);
  return false;
}

/**
 * A root's rows — it and its lanes, sorted, filtered, folded — kept per root view while the sort,
 * the filter, its folding and its label are the same. A root is a new object whenever it or one of
 * its lanes changed (snapshot.ts), so at 100 appends/s the rows of the ~190 other roots are not
 * filtered and sorted again on every frame.
 */
interface RootRowsMemo {
  sort: SortMode;
  needle: string;
  collapsed: boolean;
  label: string | undefined;
  rows: readonly TreeRow[];
}
const rootRowsMemo = new WeakMap<SessionView, RootRowsMemo>();

function rootRows(root: SessionView, sort: SortMode, cmp: (a: SessionView, b: SessionView) => number, needle: string, collapsed: boolean, label: string | undefined): readonly TreeRow[] {
  const m = rootRowsMemo.get(root);
  if (m && m.sort === sort && m.needle === needle && m.collapsed === collapsed && m.label === label) return m.rows;
  const rows = rootRowsOf(root, sort, cmp, needle, collapsed, label);
  rootRowsMemo.set(root, { sort, needle, collapsed, label, rows });
  return rows;
}

function rootRowsOf(root: SessionView, sort: SortMode, cmp: (a: SessionView, b: SessionView) => number, needle: string, collapsed: boolean, label: string | undefined): TreeRow[] {
  const rootMatches = matchesNeedle(root, needle);
  const lanes = (sort === 'first-limit' ? root.lanes : [...root.lanes].sort(cmp)).filter((l) => rootMatches || matchesNeedle(l, needle));
  if (!rootMatches && lanes.length === 0) return [];
  const rows: TreeRow[] = [{ id: root.session, view: root, depth: 0, parent: null, last: false, laneCount: root.lanes.length, collapsed, ...(label !== undefined ? { home: label } : {}) }];
  if (collapsed) return rows;
  lanes.forEach((lane, i) => {
    rows.push({ id: lane.session, view: lane, depth: 1, parent: root.session, last: i === lanes.length - 1, laneCount: 0, collapsed: false, rootName: root.name });
  });
  return rows;
}

/** Every session (roots and lanes) by id. */
export function findSession(roots: readonly SessionView[], id: string | null): SessionView | null {
  if (id === null) return null;
  for (const r of roots) {
    if (r.session === id) return r;
    for (const l of r.lanes) if (l.session === id) return l;
  }
  return null;
}
