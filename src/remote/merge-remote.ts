/**
 * Adds the rows of the `--remote` feeds to a local snapshot, for one `now`: remote roots (with
 * their lanes) after the local ones, their incidents among ours, and a status per feed for the
 * header. A session read both locally and remotely is shown once, as the local row (fresher, and
 * the one owner actions can reach).
 */
import type { RemoteFeedStatus, RemoteOrigin, Snapshot } from '../model/snapshot.js';
import type { RemoteFeedState } from './remote-feeds.js';
import { createRemoteFeeds, REMOTE_INTERVAL_MS } from './remote-feeds.js';
import { remoteIncidents, remoteViews } from './status-doc.js';

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

export function mergeRemote(snap: Snapshot, feeds: readonly RemoteFeedState[], now: number, opts: MergeOptions = {}): Snapshot {
  if (feeds.length === 0) return snap;
  const staleAfter = opts.staleAfterMs ?? 3 * REMOTE_INTERVAL_MS;
  const known = new Set<string>();
  for (const r of snap.roots) {
    known.add(r.session);
    for (const l of r.lanes) known.add(l.session);
  }
  const roots = [...snap.roots];
  const incidents = [...snap.incidents];
  const remotes: RemoteFeedStatus[] = [];
  for (const feed of feeds) {
    const host = feedHost(feed);
    const failedSince = feed.error !== null && (feed.fetchedAt === null || (feed.errorAt ?? 0) >= feed.fetchedAt);
    const stale = feed.fetchedAt === null || now - feed.fetchedAt > staleAfter || failedSince;
    let shown = 0;
    let hidden = 0;
    if (feed.doc && feed.fetchedAt !== null) {
      const origin: RemoteOrigin = { url: feed.url, host, fetchedAt: feed.fetchedAt };
      for (const root of remoteViews(feed.doc, origin, now, stale)) {
        if (known.has(root.session) || root.lanes.some((l) => known.has(l.session))) {
          hidden++;
          continue;
        }
        known.add(root.session);
        for (const l of root.lanes) known.add(l.session);
        roots.push(root);
        shown++;
      }
      incidents.push(...remoteIncidents(feed.doc, origin));
    }
    remotes.push({ url: feed.url, host, fetchedAt: feed.fetchedAt, stale, error: failedSince ? feed.error : null, roots: shown, hidden, skewMs: feed.skewMs });
  }
  incidents.sort((a, b) => (b.at ?? 0) - (a.at ?? 0) || a.file.localeCompare(b.file));
  return { ...snap, roots, incidents, remotes };
}

/** Fetches every feed once (for the plain table when stdout is not a terminal). */
export async function fetchRemotesOnce(urls: readonly string[], opts: { clock?: () => number; timeoutMs?: number } = {}): Promise<RemoteFeedState[]> {
  const feeds = createRemoteFeeds(urls, { ...opts, intervalMs: Math.max(opts.timeoutMs ?? 0, REMOTE_INTERVAL_MS) });
  await feeds.refresh();
  feeds.stop();
  return [...feeds.get()];
}
