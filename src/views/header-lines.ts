/**
 * The lines above the table: homes and counts, the degraded-watching banner, and the loading
 * progress (so the first frame is never blank while sessions are still being read).
 */
import { retimeBase, type RemoteFeedStatus, type SessionView, type Snapshot } from '../model/snapshot.js';
import { formatAge } from './cells.js';
import { changedPlaces } from './changed-places.js';
import { plainLine, span, type Line } from './line.js';
import { SORT_LABELS, type SortMode } from './session-rows.js';
import { formatClockMinute } from './time-format.js';
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

interface RootCounts {
  lanes: number;
  live: number;
  lost: number;
}

/**
 * The last frame's roots, each one's counts and their sums. This runs at every frame: only the
 * roots that are not the last frame's objects (changed or re-timed) are looked at, their counts'
 * difference added to the sums.
 */
let lastCounts: { roots: readonly SessionView[]; each: RootCounts[]; totals: RootCounts } | null = null;

function rowCounts(roots: readonly SessionView[]): RootCounts {
  // The last frame's counts when the lists line up (then `changed` are the places to look at).
  const changed = lastCounts === null ? null : changedPlaces(roots, lastCounts.roots);
  const kept = changed === null ? null : lastCounts;
  // Until this call is done the memo is half updated: none, should anything below throw.
  lastCounts = null;
  const each = kept?.each ?? new Array<RootCounts>(roots.length);
  const totals = kept ? { ...kept.totals } : { lanes: 0, live: 0, lost: 0 };
  for (const i of changed ?? roots.keys()) {
    const was = kept ? each[i] : undefined;
    const c = (each[i] = rootCounts(roots[i]!));
    totals.lanes += c.lanes - (was?.lanes ?? 0);
    totals.live += c.live - (was?.live ?? 0);
    totals.lost += c.lost - (was?.lost ?? 0);
  }
  lastCounts = { roots, each, totals };
  return totals;
}

/**
 * A root's lanes, and its and its lanes' live and lost rows, per root row. A root row is never
 * changed once built (a change or a re-time makes a new object), and a re-timed copy has its
 * base's states and lanes (only its clocks differ), so the copies the frames re-time at every
 * second share their base's counts.
 */
const countsMemo = new WeakMap<SessionView, RootCounts>();
function rootCounts(root: SessionView): RootCounts {
  // Most roots are the same objects frame after frame: one lookup; a re-timed copy is looked up
  // by its base.
  const own = countsMemo.get(root);
  if (own !== undefined) return own;
  const key = retimeBase(root);
  let c = countsMemo.get(key);
  if (c === undefined) {
    c = { lanes: root.lanes.length, live: 0, lost: 0 };
    // The root, then its lanes; indexed (run for every root at a start's frames, interpreted:
    // docs/PERFORMANCE.md, "Indexed loops on the start's path").
    for (let i = -1; i < root.lanes.length; i++) {
      const v = i < 0 ? root : root.lanes[i]!;
      // A held session's request runs on (a disarm does not cut it): live all the same.
      if (LIVE.has(v.state) || (v.state === 'held' && v.checkpoint !== null && LIVE.has(v.checkpoint.state))) c.live++;
      if (v.state === 'lost') c.lost++;
    }
    countsMemo.set(key, c);
  }
  return c;
}

export function headerLines({ snapshot: s, sort, filter, filterEditing, readOnly, audits }: HeaderInput): Line[] {
  const { lanes, live, lost } = rowCounts(s.roots);
  const remotes = s.remotes ?? [];
  const homes =
    (s.homes.length === 0 ? (remotes.length ? 'no local home' : 'no home yet') : s.homes.length === 1 ? s.homes[0]! : `${s.homes.length} homes`) +
    (remotes.length ? ` + ${remotes.length} remote${remotes.length === 1 ? '' : 's'}` : '');
  const lines: Line[] = [
    [
      span('loop-dash', { bold: true }),
      span(` ${formatClockMinute(s.now)}  `),
      span(`${s.roots.length} root${s.roots.length === 1 ? '' : 's'} · ${lanes} lane${lanes === 1 ? '' : 's'} · ${live} live`),
      ...(lost ? [span(` · ${lost} lost`, { color: 'red' })] : []),
      span(` · ${s.incidents.length} incident${s.incidents.length === 1 ? '' : 's'}`, s.incidents.length ? { color: 'red' } : {}),
      span(` · ${s.warnings.length} warning${s.warnings.length === 1 ? '' : 's'}`, s.warnings.length ? { color: 'yellow' } : {}),
      ...(readOnly ? [span('  read-only', { color: 'yellow' })] : []),
      span(`  ${homes}`, { dim: true }),
    ],
  ];
  for (const f of remotes.slice(0, MAX_REMOTE_LINES)) lines.push(remoteLine(f, s.now));
  if (remotes.length > MAX_REMOTE_LINES) lines.push(plainLine(`+${remotes.length - MAX_REMOTE_LINES} more remotes`, { dim: true }));
  if (s.watchMode.mode !== 'native') {
    lines.push(plainLine(`⚠ file watching degraded - polling every ${formatEvery(s.watchMode.everyMs)}${s.watchMode.detail ? ` (${s.watchMode.detail})` : ''}`, { color: 'yellow', bold: true }));
  }
  for (const a of audits ?? []) {
    const warning = auditHeaderWarning(a);
    if (warning) lines.push(plainLine(`⚠ ${warning} (b: bounds audit)`, { color: 'red', bold: true }));
  }
  if (!s.progress.done) {
    // Until every home's sessions are listed, how many there are is not known yet.
    const text = s.progress.listing ? (s.progress.total > 0 ? `reading ${s.progress.read}/${s.progress.total}+ sessions… (still listing)` : 'listing sessions…') : `reading ${s.progress.read}/${s.progress.total} sessions…`;
    lines.push(plainLine(text, { color: 'cyan' }));
  } else if (s.progress.searching > 0) {
    // The first start of a home searches long files' middles for older state entries in the background;
    // until a file is searched, its loop state is the newest found in its head and tail (which can
    // be older than one in the middle).
    const n = s.progress.searching;
    lines.push(plainLine(`searching further back in ${n} session${n === 1 ? '' : 's'} for their state (what they show may still change)…`, { color: 'cyan', dim: true }));
  }
  const sortText = `sort: ${SORT_LABELS[sort]}`;
  if (filterEditing || filter) {
    lines.push([span(`filter: `, { bold: true }), span(filter), span(filterEditing ? '▏' : ''), span(`  (${filterEditing ? 'Enter keeps, Esc clears' : 'Esc clears'}) · ${sortText}`, { dim: true })]);
  } else if (sort !== 'first-limit') {
    lines.push(plainLine(sortText, { dim: true }));
  }
  return lines;
}

/** Remote feeds get a line each, up to this many. */
const MAX_REMOTE_LINES = 3;

/** The sweep's interval as the banner says it: whole seconds as "1 s", the rest as "1.5 s" or "250 ms". */
export function formatEvery(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  const s = ms / 1_000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}

/** One `--remote` feed: how old its rows are, and why when they are stale. */
function remoteLine(f: RemoteFeedStatus, now: number): Line {
  const where = `remote ${f.host}`;
  const skew = f.skewMs !== null ? span(` · its clock is ${formatAge(Math.abs(f.skewMs))} ${f.skewMs > 0 ? 'ahead' : 'behind'}`, { color: 'yellow' }) : null;
  if (f.fetchedAt === null) {
    return [span(`⚠ ${where}: no data yet`, { color: 'red', bold: true }), span(` (${f.url}${f.error ? `: ${f.error}` : ''})`, { color: 'red' })];
  }
  const age = formatAge(now - f.fetchedAt);
  if (f.stale || f.error) {
    return [
      span(`⚠ ${where}: rows are ${age} old`, { color: 'yellow', bold: true }),
      span(f.error ? ` · last fetch failed: ${f.error}` : ' · no fresh answer', { color: 'yellow' }),
      span(` (${f.url})`, { dim: true }),
      ...(skew ? [skew] : []),
    ];
  }
  return [
    span(`${where}`, { color: 'cyan' }),
    span(`: ${f.roots} root${f.roots === 1 ? '' : 's'} · fetched ${age} ago · read-only here${f.hidden ? ` · ${f.hidden} also read locally` : ''}`, { dim: true }),
    ...(skew ? [skew] : []),
  ];
}
