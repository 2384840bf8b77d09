/**
 * The start-up's second reader (see read-pool.ts): on a worker thread it reads the session files
 * and small record files (incidents, lane statuses, loop-wait receipts) the main thread hands it,
 * while the main thread reads the rest. A session file comes back as the reader's cache entry —
 * what a later start would resume from — so the main thread takes it as a warm start does,
 * without reading the file again; a record file comes back as its reader's result.
 *
 * Input (`workerData`): {@link ReadJobInput}, and with `more` further items posted as
 * {@link ReadJobMore} until one says `last`. Output: one result per item, in order, posted in
 * batches; `null` once all are sent.
 */
import { readlinkSync } from 'node:fs';
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { ReadJobInput, ReadJobMore, ReadJobResult } from './read-pool.js';
import { SessionFileReader } from './session-file.js';
import { SMALL_FILE_READERS } from './small-file-kinds.js';

/** The worker thread's nice value (the main thread keeps 0). */
const WORKER_NICE = 10;
// Below the dashboard's own thread: keys and frames come first on a busy machine (on Linux a
// thread has its own nice value; elsewhere this is skipped).
try {
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (tid > 0) os.setPriority(tid, WORKER_NICE);
} catch {
  /* not Linux, or not allowed: the default priority */
}

const input = workerData as ReadJobInput;
const BATCH = 200;
// The items in order: those given at the start, then (`more`) those posted after, until `last`.
const queue = [...input.items];
let ended = !input.more;
let wake: (() => void) | null = null;
const onMore = (m: ReadJobMore) => {
  // One by one: a home's tens of thousands of incidents are too many arguments for one push.
  for (const item of m.items) queue.push(item);
  if (m.last) ended = true;
  wake?.();
};
if (!ended) parentPort?.on('message', onMore);
let batch: ReadJobResult[] = [];
for (let next = 0; ; ) {
  if (next === queue.length) {
    // Nothing left to read: what was read so far goes back now, then wait for more (or stop).
    if (batch.length > 0) parentPort?.postMessage(batch);
    batch = [];
    if (ended) break;
    await new Promise<void>((resolve) => (wake = resolve));
    wake = null;
    continue;
  }
  const [kind, file] = queue[next++]!;
  if (kind === 'session') {
    const reader = new SessionFileReader(input.home, file, { now: () => Date.now(), scanMaxBytes: input.scanMaxBytes, incompleteGraceMs: input.incompleteGraceMs });
    const r = await reader.update();
    // A file with anything to report is left to the main thread, which reports it as it always does.
    batch.push({ entry: r.gone || r.error !== null || r.warnings.length > 0 ? null : await reader.cacheEntry() });
  } else {
    batch.push(await SMALL_FILE_READERS[kind](input.home, file));
  }
  if (batch.length >= BATCH) {
    parentPort?.postMessage(batch);
    batch = [];
  }
}
parentPort?.off('message', onMore);
parentPort?.postMessage(null);
