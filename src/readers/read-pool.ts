/**
 * A second reader for a big start (src/readers/read-worker.ts): a cold start of a big home has a
 * thousand session tails (~1 ms each: reading, parsing, validating) and thousands of incidents and
 * lane statuses (~40 µs each) to read, and this machine has two cores. A worker thread reads part
 * of them while the main thread reads the rest. Its results are what the same readers return on
 * the main thread (a session as the cache entry a warm start resumes from); when the worker cannot
 * start or fails, the result is null and the caller reads everything itself.
 */
import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { runsFromBundle } from '../app/launcher.js';
import type { SmallFileRead } from './json-file.js';
import type { CachedSessionFile } from './session-file.js';
import type { SmallFileKind } from './small-file-kinds.js';

/** What the worker is given. */
export interface ReadJobInput {
  home: string;
  items: [SmallFileKind | 'session', string][];
  /** As the main thread's session readers: how far a start searches before a tail window. */
  scanMaxBytes: number;
  incompleteGraceMs: number;
  /** More items will follow (`ReadJob.add`): the worker waits for them after these. */
  more?: boolean;
  /**
   * Items both threads may read, so neither waits while the other has work: a slot per item of
   * `items`, taken once (read-claims.ts); the worker reads an item only if it takes its slot.
   * Without it, every item is the worker's.
   */
  claims?: SharedArrayBuffer;
}

/** One item's result: a record file's read, or a session file's cache entry (null: read it here). */
export type ReadJobResult = SmallFileRead<unknown> | { entry: CachedSessionFile | null };

/**
 * A read in progress; `result` resolves to one result per item (in order, the added ones after
 * the first), or null on failure.
 */
export interface ReadJob {
  result: Promise<ReadJobResult[] | null>;
  /** For a job started with `more`: items read after those given so far (with their slots); `last`: nothing follows. */
  add(items: ReadJobInput['items'], last: boolean, claims?: SharedArrayBuffer): void;
  stop(): void;
  /**
   * Resolves once the worker thread is gone. Its exit (the isolate and heap of a few thousand
   * reads torn down: 15-20 ms of CPU here, later at its lower priority on a busy machine) is part
   * of the start: the start reports done after it, not in the first seconds of an idle dashboard.
   */
  exited?: Promise<void>;
}

/** What the worker posts: results with their items' indices, in batches. */
export type IndexedResult = [number, ReadJobResult];

/** What the main thread posts to a worker started with `more`. */
export interface ReadJobMore {
  items: ReadJobInput['items'];
  last: boolean;
  claims?: SharedArrayBuffer;
}

/**
 * The worker's file: the bundle (one file to load, dist/src/cli/read-worker.bundle.mjs) when this
 * code runs from the CLI's bundle, or when it is at least as new as the compiled worker module;
 * else the module (whose ~100 imports the ESM loader opens concurrently: a burst of descriptors).
 */
function workerFile(): string {
  const here = import.meta.url;
  if (runsFromBundle(here)) return fileURLToPath(new URL('./read-worker.bundle.mjs', here));
  const module = fileURLToPath(new URL('./read-worker.js', here));
  const bundle = fileURLToPath(new URL('../cli/read-worker.bundle.mjs', here));
  try {
    if (statSync(bundle).mtimeMs >= statSync(module).mtimeMs) return bundle;
  } catch {
    /* no bundle (or no module): the module */
  }
  return module;
}

export function readInWorker(input: ReadJobInput): ReadJob {
  let worker: Worker;
  try {
    // worker_threads is loaded here, not imported at the top: every module the bundle imports is
    // loaded before the dashboard's first line, and this one cost ~2–3 ms of that on every start
    // (a fresh node that loads the built-ins a start loads: +2.6 ms, 12 pairs, 2026-12-06), though
    // only a cold start of a big home runs a worker. `process.getBuiltinModule` is Node ≥ 20.16
    // (package.json: ≥ 20.19); without it the start reads everything on this thread.
    const { Worker: Thread } = process.getBuiltinModule('node:worker_threads');
    // No timing file in the worker: its marks would interleave with the dashboard's.
    worker = new Thread(workerFile(), { workerData: input, env: { ...process.env, LOOP_DASH_TIMING: '' } });
  } catch {
    return { result: Promise.resolve(null), add: () => undefined, stop: () => undefined, exited: Promise.resolve() };
  }
  // The worker answers in the order it reads (its own items before shared ones): each result
  // comes with its item's index.
  const results: ReadJobResult[] = [];
  let answered = 0;
  let expected = input.items.length;
  const complete = () => (answered === expected ? results : null);
  const result = new Promise<ReadJobResult[] | null>((resolve) => {
    worker.on('message', (batch: IndexedResult[] | null) => {
      if (batch === null) return resolve(complete());
      for (const [i, r] of batch) {
        if (results[i] === undefined) answered++;
        results[i] = r;
      }
    });
    worker.on('error', () => resolve(null));
    worker.on('exit', () => resolve(complete()));
  });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    result,
    add: (items, last, claims) => {
      expected += items.length;
      worker.postMessage({ items, last, ...(claims ? { claims } : {}) } satisfies ReadJobMore);
    },
    stop: () => void worker.terminate(),
    exited,
  };
}
