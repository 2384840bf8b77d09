/**
 * `--remote URL`: fetches another machine's `/api/status` periodically (one request in flight per
 * feed, a timeout below the interval, no redirects followed: only the URLs the user gave are ever
 * fetched). A failed fetch keeps the last good document and records the error, so the dashboard
 * shows old rows as stale rather than losing them.
 */
import { parseStatusDoc, type RemoteStatusDoc } from './status-doc.js';

/** Default refresh interval and fetch timeout. */
export const REMOTE_INTERVAL_MS = 5_000;
export const REMOTE_TIMEOUT_MS = 4_000;
/** A response larger than this is refused (a status document of thousands of sessions is a few MB). */
export const MAX_DOC_BYTES = 32 * 1024 * 1024;

/** One feed as last fetched. */
export interface RemoteFeedState {
  url: string;
  /** The last good document (kept when a later fetch fails). */
  doc: RemoteStatusDoc | null;
  /** When the last good document arrived (local clock). */
  fetchedAt: number | null;
  /** The last fetch's error; null once a fetch succeeds. */
  error: string | null;
  errorAt: number | null;
  /** The remote clock minus ours, when the difference is larger than the fetch can explain. */
  skewMs: number | null;
  /**
   * The server's entity tag for `doc` (its `ETag`), sent back as `If-None-Match`: a `304` means
   * nothing changed but what is counted from `now`, and the document is kept (fetched again, as
   * of that answer). Absent when the server sent none.
   */
  etag?: string | null;
}

/** The feeds, as a store the dashboard subscribes to. */
export interface RemoteFeeds {
  /** The same array until something changes (for React's useSyncExternalStore). */
  get(): readonly RemoteFeedState[];
  subscribe(listener: () => void): () => void;
  /** Fetches every feed now (at most one fetch per feed at a time). */
  refresh(): Promise<void>;
  /** Fetch now, then every interval. */
  start(): void;
  stop(): void;
  readonly intervalMs: number;
}

/**
 * The URL to fetch for a `--remote` value: `http(s)://host:port` means its `/api/status`; a URL
 * with a path is fetched as given.
 */
export function statusUrl(input: string): { url: string } | { error: string } {
  let u: URL;
  try {
    u = new URL(input);
  } catch {
    return { error: `--remote: "${input}" is not a URL (e.g. http://127.0.0.1:9464 for a loop-dash serve there)` };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { error: `--remote: "${input}" must be an http:// or https:// URL` };
  if (u.username || u.password) return { error: `--remote: "${input}": credentials in the URL are not supported` };
  if (u.pathname === '/' || u.pathname === '') u.pathname = '/api/status';
  u.hash = '';
  return { url: u.toString() };
}

/** Short words for a fetch failure. */
function describeError(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e?.code ?? e?.message ?? String(err);
}

/**
 * One GET without keep-alive (a one-shot `loop-dash --remote … | cat` must not wait for an idle
 * socket to close) and without following redirects: only the URL given is fetched.
 */
async function httpGet(url: string, opts: { timeoutMs: number; maxBytes: number; signal?: AbortSignal; etag?: string | null }): Promise<{ status: number; body: string; etag: string | null }> {
  const u = new URL(url);
  // Loaded on the first fetch, not with the CLI: node:https (with http, tls and net) is ~10 ms of
  // every start's module loading, and most dashboards never fetch a remote feed.
  const { get } = u.protocol === 'https:' ? await import('node:https') : await import('node:http');
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: 'application/json', ...(opts.etag ? { 'if-none-match': opts.etag } : {}) };
    const req = get(u, { agent: false, headers, ...(opts.signal ? { signal: opts.signal } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > opts.maxBytes) {
          req.destroy(new Error(`response too large (over ${opts.maxBytes} bytes)`));
          return;
        }
        chunks.push(c);
      });
      const tag = res.headers.etag;
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), etag: typeof tag === 'string' && tag !== '' ? tag : null }));
      res.on('error', reject);
    });
    req.setTimeout(opts.timeoutMs, () => req.destroy(Object.assign(new Error(`no answer in ${Math.round(opts.timeoutMs / 100) / 10} s`), { code: undefined })));
    req.on('error', reject);
  });
}

/** One fetch of one feed. */
export async function fetchStatusDoc(
  url: string,
  opts: { timeoutMs?: number; clock?: () => number; signal?: AbortSignal; etag?: string | null } = {},
): Promise<{ doc: RemoteStatusDoc; fetchedAt: number; skewMs: number | null; etag: string | null } | { notModified: true; fetchedAt: number } | { error: string; at: number }> {
  const clock = opts.clock ?? (() => Date.now());
  const timeoutMs = opts.timeoutMs ?? REMOTE_TIMEOUT_MS;
  const t0 = clock();
  try {
    const res = await httpGet(url, { timeoutMs, maxBytes: MAX_DOC_BYTES, ...(opts.signal ? { signal: opts.signal } : {}), ...(opts.etag ? { etag: opts.etag } : {}) });
    // Asked with the tag of the document we hold, and it still stands.
    if (res.status === 304 && opts.etag) return { notModified: true, fetchedAt: clock() };
    if (res.status !== 200) {
      const hint = res.status === 404 ? ' (is it a loop-dash serve? try its base URL)' : res.status >= 300 && res.status < 400 ? ' (redirects are not followed)' : '';
      return { error: `HTTP ${res.status}${hint}`, at: clock() };
    }
    let json: unknown;
    try {
      json = JSON.parse(res.body);
    } catch {
      return { error: 'the answer is not JSON', at: clock() };
    }
    const parsed = parseStatusDoc(json);
    const t1 = clock();
    if ('error' in parsed) return { error: parsed.error, at: t1 };
    // The remote's `now` was taken somewhere between our request and its answer.
    const skew = parsed.doc.now - (t0 + t1) / 2;
    const explained = Math.max(2_000, (t1 - t0) / 2);
    return { doc: parsed.doc, fetchedAt: t1, skewMs: Math.abs(skew) > explained ? skew : null, etag: res.etag };
  } catch (err) {
    return { error: describeError(err), at: clock() };
  }
}

/** Feeds for the given URLs (each already passed through {@link statusUrl}). */
export function createRemoteFeeds(urls: readonly string[], opts: { intervalMs?: number; timeoutMs?: number; clock?: () => number } = {}): RemoteFeeds {
  const intervalMs = opts.intervalMs ?? REMOTE_INTERVAL_MS;
  const timeoutMs = Math.min(opts.timeoutMs ?? REMOTE_TIMEOUT_MS, intervalMs);
  const clock = opts.clock ?? (() => Date.now());
  let states: readonly RemoteFeedState[] = urls.map((url) => ({ url, doc: null, fetchedAt: null, error: null, errorAt: null, skewMs: null }));
  const listeners = new Set<() => void>();
  const inFlight = new Map<string, Promise<void>>();
  const abort = new AbortController();
  let timer: NodeJS.Timeout | null = null;
  let started = false;
  let stopped = false;

  const update = (url: string, patch: Partial<RemoteFeedState>) => {
    states = states.map((s) => (s.url === url ? { ...s, ...patch } : s));
    for (const l of listeners) l();
  };
  const fetchOne = (url: string): Promise<void> => {
    const running = inFlight.get(url);
    if (running) return running;
    const held = states.find((s) => s.url === url);
    const etag = held?.doc ? (held.etag ?? null) : null;
    const p = fetchStatusDoc(url, { timeoutMs, clock, signal: abort.signal, etag })
      .then((r) => {
        if (stopped) return;
        if ('doc' in r) update(url, { doc: r.doc, fetchedAt: r.fetchedAt, error: null, errorAt: null, skewMs: r.skewMs, etag: r.etag });
        // The document held is the server's still: as of this answer (its skew as measured with it).
        else if ('notModified' in r) update(url, { fetchedAt: r.fetchedAt, error: null, errorAt: null });
        else update(url, { error: r.error, errorAt: r.at });
      })
      .finally(() => inFlight.delete(url));
    inFlight.set(url, p);
    return p;
  };
  const refresh = async () => {
    await Promise.all(urls.map(fetchOne));
  };
  const loop = () => {
    if (stopped) return;
    void refresh().finally(() => {
      if (stopped) return;
      timer = setTimeout(loop, intervalMs);
      timer.unref();
    });
  };
  return {
    get: () => states,
    subscribe(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    refresh,
    start() {
      if (started || stopped) return;
      started = true;
      loop();
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      abort.abort();
    },
    intervalMs,
  };
}
