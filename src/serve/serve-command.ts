/**
 * `loop-dash serve`: the headless exporter. The same readers and model as the dashboard (a live
 * store), the metrics of `metrics.ts` and the routes of `server.ts`. Runs until SIGINT/SIGTERM.
 */
import os from 'node:os';
import { createLiveStore, type LiveStore, type LiveStoreOptions } from '../app/live-store.js';
import { settleHeapGrowth } from '../app/heap.js';
import { buildSnapshot, createSnapshotCache, type Snapshot } from '../model/snapshot.js';
import { statusJson } from '../model/status-json.js';
import { createExporter, DEFAULT_GRACE_MS, type Exporter } from './metrics.js';
import { DEFAULT_LISTEN, startHttpServer, type ListenAddress, type RunningServer } from './server.js';

export interface ServeOptions {
  homes: string[];
  listen?: ListenAddress;
  /** How long an ended session stays in the metrics (default 10 min). */
  graceMs?: number;
  polling?: boolean;
  clock?: () => number;
  /** This machine's host name (default `os.hostname()`). */
  host?: string;
  version: string;
  /** prom-client's process/nodejs metrics (default true). */
  defaultMetrics?: boolean;
  /** Passed to the home readers (tests shorten intervals). */
  storeOptions?: LiveStoreOptions;
}

/** A running exporter. */
export interface ServeHandle {
  url: string;
  server: RunningServer;
  store: LiveStore;
  exporter: Exporter;
  /** Resolves when every home has been read once. */
  ready: Promise<void>;
  stop(): Promise<void>;
}

/** Binds first (so a port in use fails at once), then reads the homes in the background. */
export async function startServe(opts: ServeOptions): Promise<ServeHandle> {
  const clock = opts.clock ?? (() => Date.now());
  const host = opts.host ?? os.hostname();
  const store = createLiveStore(opts.homes, { polling: !!opts.polling, host, ...opts.storeOptions });
  // One row cache for the metrics and the status document: both build snapshots of this store.
  const snapshotCache = createSnapshotCache();
  const startedAt = clock();
  const statusTags = snapshotTags(`${process.pid}.${startedAt.toString(36)}`);
  let readSeconds: number | null = null;
  let readError: string | null = null;
  const exporter = createExporter({
    getState: store.getState,
    host,
    clock,
    graceMs: opts.graceMs ?? DEFAULT_GRACE_MS,
    version: opts.version,
    homes: opts.homes,
    defaultMetrics: opts.defaultMetrics ?? true,
    eventsSeen: () => store.eventsSeen,
    snapshotCache,
    initialReadSeconds: () => readSeconds,
  });
  const server = await startHttpServer(
    {
      metrics: async () => ({ contentType: exporter.contentType, body: await exporter.render() }),
      status: () => {
        const snap = buildSnapshot(store.getState(), clock(), { host, cache: snapshotCache });
        // The tag first: a client that holds it is answered 304 without the document being made.
        // `snap` is a re-time of the cache's last snapshot (SnapshotCache.last): the tag is that one's.
        return { etag: statusTags.of(snapshotCache.last?.snapshot ?? snap), doc: () => ({ ...statusJson(snap, opts.homes), host, generator: `loop-dash serve ${opts.version}` }) };
      },
      health: () => {
        const state = store.getState();
        const ready = readSeconds !== null;
        const degraded = state.watchMode.mode === 'degraded';
        return {
          ready,
          body: {
            status: !ready ? 'starting' : degraded ? 'degraded' : 'ok',
            version: opts.version,
            host,
            homes: opts.homes,
            watchMode: state.watchMode,
            // Sessions, not files: most have both a session file and a checkpoint.
            sessions: distinctSessions(state),
            uptimeSeconds: (clock() - startedAt) / 1000,
            ...(readError ? { readError } : {}),
          },
        };
      },
    },
    opts.listen ?? DEFAULT_LISTEN,
  );
  const t0 = clock();
  const ready = store.start().then(
    () => {
      readSeconds = (clock() - t0) / 1000;
      void store.background().then(() => settleHeapGrowth());
    },
    (err: unknown) => {
      readError = err instanceof Error ? err.message : String(err);
      readSeconds = (clock() - t0) / 1000;
    },
  );
  return {
    url: server.url,
    server,
    store,
    exporter,
    ready,
    async stop() {
      await server.close();
      await ready;
      await store.stop();
    },
  };
}

export interface RunServeIo {
  out: (s: string) => void;
  err: (s: string) => void;
}

/** The command: serve until SIGINT/SIGTERM; resolves to the exit code. */
export async function runServe(opts: ServeOptions, io: RunServeIo): Promise<number> {
  const listen = opts.listen ?? DEFAULT_LISTEN;
  let handle: ServeHandle;
  try {
    handle = await startServe({ ...opts, listen });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    io.err(`loop-dash serve: cannot listen on ${listen.host}:${listen.port}: ${e.code ?? ''} ${e.message}\n`.replace(/: {2}/, ': '));
    return 1;
  }
  if (!handle.server.loopback) {
    io.err(
      `loop-dash serve: warning: listening on ${handle.url}, not a loopback address: anyone who can reach it can read session names, working directories and models.\n`,
    );
  }
  io.out(`loop-dash serve: listening on ${handle.url} (GET /metrics, /api/status, /healthz) for ${opts.homes.join(', ')}\n`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    const on = (s: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(s);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
  await handle.stop();
  io.err(`loop-dash serve: stopped (${signal})\n`);
  return 0;
}

/**
 * The status document's entity tag: one per snapshot the cache re-times (SnapshotCache.last). A
 * document built from a re-time of the same snapshot differs only in `now`, the remaining times and
 * the checkpoint ages, which a client counts from the instants it already has; it is answered
 * `304 Not Modified` (a big home's document is ~4 MB that a `--remote` dashboard would fetch,
 * parse and make rows of every 5 s). `boot` names the server's run (its pid and start time), so
 * a restarted server does not repeat a tag. The cache only moves on to a newer snapshot, so the
 * last one and its number are all there is to remember.
 */
export function snapshotTags(boot: string): { of(base: Snapshot): string } {
  let last: Snapshot | null = null;
  let id = 0;
  return {
    of(base) {
      if (base !== last) {
        last = base;
        id++;
      }
      return `"${boot}.${id}"`;
    },
  };
}

/** How many sessions the model knows: session ids from session files and checkpoints, each once. */
function distinctSessions(state: { sessionFiles: ReadonlyMap<string, { sessionId: string | null }>; checkpoints: ReadonlyMap<string, { session: string }> }): number {
  const ids = new Set<string>();
  for (const f of state.sessionFiles.values()) if (f.sessionId) ids.add(f.sessionId);
  for (const c of state.checkpoints.values()) ids.add(c.session);
  return ids.size;
}
