/**
 * Adds the rows of the `--remote` feeds to a local snapshot, for one `now`: remote roots (with
 * their lanes) after the local ones, their incidents among ours, and a status per feed for the
 * header. A session read both locally and remotely is shown once, as the local row (fresher, and
 * the one owner actions can reach).
 */
import type { IncidentRecord } from '../model/types.js';
import { retimeRoot, type RemoteFeedStatus, type RemoteOrigin, type SessionView, type Snapshot } from '../model/snapshot.js';
import type { RemoteFeedState } from './remote-feeds.js';
import { createRemoteFeeds, REMOTE_INTERVAL_MS } from './remote-feeds.js';
import { remoteIncidents, remoteViews, type RemoteStatusDoc } from './status-doc.js';

export interface MergeOptions {
  /** Rows older than this are stale (default three refresh intervals). */
  staleAfterMs?: number;
}

/** The host a feed is shown under: the document's, else the URL's. */
export function feedHost(feed: Pick<RemoteFeedState, 'url' | 'doc'>): string {
  if (feed.doc?.host) return feed.doc.host;
  try {
    return new URL(feed.url).host;
  } catch {
    return feed.url;
  }
}

/**
 * What a fetched document gives every frame until the next fetch: its rows, built once and
 * re-timed per frame (only those with a running clock are copied), and its incidents. The
 * dashboard merges at every frame (each second while a countdown runs); building the rows and
 * incidents of a big home's document afresh each time (212 roots, 1 000 lanes and 5 014
 * incidents) kept ~15 % of a core busy with nothing changing (docs/PERFORMANCE.md).
 */
interface DocMemo {
  url: string;
  host: string;
  fetchedAt: number;
  stale: boolean;
  /** The rows as built, or as last re-timed (each frame starts from the last frame's). */
  roots: SessionView[];
  incidents: readonly IncidentRecord[];
}
const docMemos = new WeakMap<RemoteStatusDoc, DocMemo>();

function docRows(doc: RemoteStatusDoc, origin: RemoteOrigin, now: number, stale: boolean): DocMemo {
  const m = docMemos.get(doc);
  if (m && m.url === origin.url && m.host === origin.host && m.fetchedAt === origin.fetchedAt && m.stale === stale) {
    for (let i = 0; i < m.roots.length; i++) m.roots[i] = retimeRoot(m.roots[i]!, now);
    return m;
  }
  // The incidents depend on the document and the feed alone: kept when only the fetch time or staleness moved.
  const incidents = m && m.url === origin.url && m.host === origin.host ? m.incidents : remoteIncidents(doc, origin);
  const fresh: DocMemo = { url: origin.url, host: origin.host, fetchedAt: origin.fetchedAt, stale, roots: remoteViews(doc, origin, now, stale), incidents };
  docMemos.set(doc, fresh);
  return fresh;
}

/**
 * The last merged incident list, kept while the local list and every feed's are the same arrays:
 * a frame then neither copies nor sorts them again.
 */
let lastIncidents: { local: readonly IncidentRecord[]; remote: (readonly IncidentRecord[])[]; merged: IncidentRecord[] } | null = null;

function mergedIncidents(local: readonly IncidentRecord[], remote: (readonly IncidentRecord[])[]): IncidentRecord[] {
  const last = lastIncidents;
  if (last && last.local === local && last.remote.length === remote.length && last.remote.every((r, i) => r === remote[i])) return last.merged;
  const merged = [...local];
  for (const r of remote) merged.push(...r);
  merged.sort((a, b) => (b.at ?? 0) - (a.at ?? 0) || a.file.localeCompare(b.file));
  lastIncidents = { local, remote, merged };
  return merged;
}

/** A feed's incidents less those of its sessions read here too, kept per list and set of sessions. */
const withoutMemo = new WeakMap<readonly IncidentRecord[], { key: string; list: readonly IncidentRecord[] }>();

/**
 * The incidents of a feed less those of the sessions it shares with what is shown already (a serve
 * of a home also read locally): those are the local incidents again, and were counted twice (the
 * CLI review: 28 incidents for 14). Kept while the list and the sessions are the same, so a frame
 * neither filters nor re-sorts them again.
 */
function withoutSessions(list: readonly IncidentRecord[], sessions: string[]): readonly IncidentRecord[] {
  const key = sessions.join('\0');
  const m = withoutMemo.get(list);
  if (m && m.key === key) return m.list;
  const drop = new Set(sessions);
  const kept = list.filter((i) => i.session === null || !drop.has(i.session));
  withoutMemo.set(list, { key, list: kept });
  return kept;
}

export function mergeRemote(snap: Snapshot, feeds: readonly RemoteFeedState[], now: number, opts: MergeOptions = {}): Snapshot {
  if (feeds.length === 0) return snap;
  const staleAfter = opts.staleAfterMs ?? 3 * REMOTE_INTERVAL_MS;
  const known = new Set<string>();
  for (const r of snap.roots) {
    known.add(r.session);
    for (const l of r.lanes) known.add(l.session);
  }
  const roots = [...snap.roots];
  const remoteIncidentLists: (readonly IncidentRecord[])[] = [];
  const remotes: RemoteFeedStatus[] = [];
  for (const feed of feeds) {
    const host = feedHost(feed);
    const failedSince = feed.error !== null && (feed.fetchedAt === null || (feed.errorAt ?? 0) >= feed.fetchedAt);
    const stale = feed.fetchedAt === null || now - feed.fetchedAt > staleAfter || failedSince;
    let shown = 0;
    let hidden = 0;
    if (feed.doc && feed.fetchedAt !== null) {
      const memo = docRows(feed.doc, { url: feed.url, host, fetchedAt: feed.fetchedAt }, now, stale);
      let hiddenSessions: string[] | null = null;
      for (const root of memo.roots) {
        if (known.has(root.session) || root.lanes.some((l) => known.has(l.session))) {
          hidden++;
          (hiddenSessions ??= []).push(root.session, ...root.lanes.map((l) => l.session));
          continue;
        }
        known.add(root.session);
        for (const l of root.lanes) known.add(l.session);
        roots.push(root);
        shown++;
      }
      remoteIncidentLists.push(hiddenSessions ? withoutSessions(memo.incidents, hiddenSessions) : memo.incidents);
    }
    remotes.push({ url: feed.url, host, fetchedAt: feed.fetchedAt, stale, error: failedSince ? feed.error : null, roots: shown, hidden, skewMs: feed.skewMs });
  }
  return { ...snap, roots, incidents: mergedIncidents(snap.incidents, remoteIncidentLists), remotes };
}

/** Fetches every feed once (for the plain table when stdout is not a terminal). */
export async function fetchRemotesOnce(urls: readonly string[], opts: { clock?: () => number; timeoutMs?: number } = {}): Promise<RemoteFeedState[]> {
  const feeds = createRemoteFeeds(urls, { ...opts, intervalMs: Math.max(opts.timeoutMs ?? 0, REMOTE_INTERVAL_MS) });
  await feeds.refresh();
  feeds.stop();
  return [...feeds.get()];
}
