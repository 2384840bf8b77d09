/**
 * The start-up's second reader (see read-pool.ts): on a worker thread it reads the session files
 * and small record files (incidents, lane statuses, loop-wait receipts) the main thread hands it,
 * while the main thread reads the rest. A session file comes back as the reader's cache entry —
 * what a later start would resume from — so the main thread takes it as a warm start does,
 * without reading the file again; a record file comes back as its reader's result.
 *
 * Input (`workerData`): {@link ReadJobInput}, and with `more` further items posted as
 * {@link ReadJobMore} until one says `last`. Output: one result per item with its index
 * ({@link IndexedResult}), posted in batches in the order read — the other items as they come,
 * the session files given first between; an item whose slot the main thread took (`claims`,
 * read-claims.ts) is answered `{ entry: null }` unread; `null` once all are sent.
 */
import { readlinkSync } from 'node:fs';
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { IndexedResult, ReadJobInput, ReadJobMore } from './read-pool.js';
import { claimForWorker } from './read-claims.js';
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
// Each item's slot (read-claims.ts), or null: the item is ours alone.
const slotArray: (Int32Array | null)[] = [];
const slotIndex: number[] = [];
const addSlots = (count: number, buffer: SharedArrayBuffer | undefined) => {
  const claims = buffer ? new Int32Array(buffer) : null;
  for (let j = 0; j < count; j++) {
    // An item past the buffer's slots is ours alone.
    slotArray.push(claims && j < claims.length ? claims : null);
    slotIndex.push(j);
  }
};
addSlots(queue.length, input.claims);
// The session files given at the start come first (oldest first): read after the other items,
// which are read as they come — the main thread reads sessions from the newest down meanwhile.
let sessions = 0;
while (sessions < queue.length && queue[sessions]![0] === 'session') sessions++;
let ended = !input.more;
let wake: (() => void) | null = null;
const onMore = (m: ReadJobMore) => {
  // One by one: a home's tens of thousands of incidents are too many arguments for one push.
  for (const item of m.items) queue.push(item);
  addSlots(m.items.length, m.claims);
  if (m.last) ended = true;
  wake?.();
};
if (!ended) parentPort?.on('message', onMore);
let batch: IndexedResult[] = [];
const send = () => {
  if (batch.length > 0) parentPort?.postMessage(batch);
  batch = [];
};
for (let nextSession = 0, nextOther = sessions; ; ) {
  let i: number;
  if (nextOther < queue.length) i = nextOther++;
  else if (nextSession < sessions) i = nextSession++;
  else {
    // Nothing left to read: what was read so far goes back now, then wait for more (or stop).
    send();
    if (ended) break;
    await new Promise<void>((resolve) => (wake = resolve));
    wake = null;
    continue;
  }
  const claims = slotArray[i] ?? null;
  if (claims !== null && !claimForWorker(claims, slotIndex[i]!)) {
    // The main thread took it (and reads it).
    batch.push([i, { entry: null }]);
    continue;
  }
  const [kind, file] = queue[i]!;
  if (kind === 'session') {
    const reader = new SessionFileReader(input.home, file, { now: () => Date.now(), scanMaxBytes: input.scanMaxBytes, incompleteGraceMs: input.incompleteGraceMs });
    const r = await reader.update();
    // A file with anything to report is left to the main thread, which reports it as it always does.
    batch.push([i, { entry: r.gone || r.error !== null || r.warnings.length > 0 ? null : await reader.cacheEntry() }]);
  } else {
    batch.push([i, await SMALL_FILE_READERS[kind](input.home, file)]);
  }
  if (batch.length >= BATCH) send();
}
parentPort?.off('message', onMore);
parentPort?.postMessage(null);
