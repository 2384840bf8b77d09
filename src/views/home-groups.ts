/**
 * Several homes (and machines) in one table: the key a row is grouped by, the order of the groups,
 * and short labels that tell the homes apart — the shortest trailing part of the paths that is
 * unique, prefixed with the machine's host name once rows from another machine (`--remote`) are
 * shown. Pure; shared by the TUI table and the plain `status` table.
 */
import type { SessionView } from '../model/snapshot.js';
import { compareText } from '../model/text-order.js';

/** The label of this machine's homes next to remote ones. */
export const LOCAL = 'local';

/** The group of a row: its home, or for a remote row the feed and the home over there. */
export function homeKey(v: Pick<SessionView, 'home' | 'remote'>): string {
  return v.remote ? `${v.remote.url}\u0000${v.home}` : v.home;
}

/** More than one group among these roots (then rows are grouped and labelled). */
export function hasSeveralHomes(roots: readonly SessionView[]): boolean {
  const first = roots[0];
  if (!first) return false;
  const key = homeKey(first);
  return roots.some((r) => homeKey(r) !== key);
}

/**
 * Roots grouped by home: local homes first, then remote ones, each in label order; the order within
 * a group is kept. The groups are ordered once and the roots put in their group's bucket (a sort
 * of every root by its group made an object per root at every frame of a table of several homes).
 */
export function groupByHome<T extends SessionView>(roots: readonly T[], labels: ReadonlyMap<string, string>): T[] {
  const buckets = new Map<string, { remote: number; label: string; key: string; roots: T[] }>();
  for (let i = 0; i < roots.length; i++) {
    const r = roots[i]!;
    const key = homeKey(r);
    let b = buckets.get(key);
    if (!b) buckets.set(key, (b = { remote: r.remote ? 1 : 0, label: labels.get(key) ?? key, key, roots: [] }));
    b.roots.push(r);
  }
  const groups = [...buckets.values()].sort((x, y) => x.remote - y.remote || compareText(x.label, y.label) || (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
  const out: T[] = [];
  for (const g of groups) for (let i = 0; i < g.roots.length; i++) out.push(g.roots[i]!);
  return out;
}

/** The last `n` segments of a path (`~` for the user's home directory is not assumed). */
function tail(p: string, n: number): string {
  const parts = p.split(/[\\/]+/).filter(Boolean);
  return parts.slice(-n).join('/') || p;
}

/**
 * A short, distinct label per home key. Local homes only: the shortest path tail that is unique
 * (`laptop/home`, `studio/home`). With remote rows: `local` for this machine's homes (where owner
 * actions work) and the host name for the others (`studio`), `host:tail` when a host has several.
 */
export function homeLabels(views: readonly Pick<SessionView, 'home' | 'remote'>[]): Map<string, string> {
  const entries = new Map<string, { host: string | null; home: string }>();
  const anyRemote = views.some((v) => v.remote);
  for (const v of views) {
    const key = homeKey(v);
    if (!entries.has(key)) entries.set(key, { host: anyRemote ? (v.remote?.host ?? LOCAL) : null, home: v.home });
  }
  const list = [...entries];
  const unique = (labels: string[]) => new Set(labels).size === labels.length;
  const maxDepth = Math.max(1, ...list.map(([, e]) => e.home.split(/[\\/]+/).filter(Boolean).length));
  // Level 0 is the host alone (remote rows present); level n adds the last n path segments.
  for (let n = anyRemote ? 0 : 1; n <= maxDepth; n++) {
    const labels = list.map(([, e]) => {
      const t = n === 0 ? '' : tail(e.home, n);
      return e.host === null ? t : t ? `${e.host}:${t}` : e.host;
    });
    if (unique(labels)) return new Map(list.map(([k], i) => [k, labels[i]!]));
  }
  // Same host and same path from two feeds (or a feed and this machine): say where each came from.
  return new Map(list.map(([k, e]) => [k, `${e.host ?? ''}${e.host ? ':' : ''}${tail(e.home, maxDepth)}${k.includes('\u0000') ? ` @${hostOfUrl(k.split('\u0000')[0]!)}` : ''}`]));
}

function hostOfUrl(u: string): string {
  try {
    return new URL(u).host;
  } catch {
    return u;
  }
}
