/**
 * The live model behind the dashboard: one HomeReader per home feeding one reducer. Listeners are
 * told at most once per turn of the event loop, so a burst of appends costs one render.
 */
import { initialModelState, reduceEvents, type ModelState } from '../model/reducer.js';
import type { ReaderEvent } from '../model/types.js';
import { HomeReader, type HomeReaderOptions } from '../readers/home-reader.js';
import { timing } from './timing.js';
import { afterInput, nextTurn } from '../readers/time-slices.js';
import { restoreInterruptBudget } from './tiering.js';

export interface LiveStore {
  getState(): ModelState;
  subscribe(listener: () => void): () => void;
  /**
   * Starts every home reader; resolves when each home has been read once and that is published
   * (`afterList`: see HomeReader.start). Each reader's start goes on past its list once the list
   * is published (HomeReader's `listShown`). The readers' background work begins after that, and
   * V8's default interrupt budget comes back (tiering.ts).
   */
  start(opts?: { afterList?: Promise<unknown> }): Promise<void>;
  stop(): Promise<void>;
  /** Events folded in so far (for diagnostics and benchmarks). */
  readonly eventsSeen: number;
  /** Resolves when the readers' one-time background work after the start is done (or stopped). */
  background(): Promise<void>;
  /** No reader has a read, a re-check after a read, or a batch pending (HomeReader.settled). */
  settled(): boolean;
  /** What the frame of the last published change cost to build (ms): spaces the start's changes (START_PACE). */
  frameCost(ms: number): void;
  /**
   * Work done on each state before it is published, resolving with the time it worked (ms): the
   * dashboard's snapshot built in slices (views/first-frame.ts prepareFrameSnapshot), so the
   * render that shows the state does not build it in one block. A change that comes meanwhile is
   * published after it, prepared in turn. Its time counts in the frame's cost (START_PACE).
   */
  setPrepare(prepare: ((state: ModelState) => Promise<number>) | null): void;
}

export type LiveStoreOptions = Omit<HomeReaderOptions, 'home' | 'emit'>;

/**
 * While the homes are first read, a change is published no sooner than this many times the last
 * frame's cost after the one before: a start of a home of 12 000 sessions drew a frame from
 * scratch every ~250 ms at 100–250 ms each (a third of the main thread, which the reads need).
 * Frames of a big home's start (10–30 ms) are not held: the batches come further apart.
 */
const START_PACE = 5;
/** … and only frames that cost at least this (ms) space the changes. */
const START_PACE_FROM_MS = 40;

/** How long (ms) a change made `now` waits before it is published: 0 unless the start's pacing holds it. */
export function startPaceDelay(p: { starting: boolean; toldAt: number; lastFrameMs: number; now: number }): number {
  if (!p.starting || p.lastFrameMs < START_PACE_FROM_MS) return 0;
  return Math.max(0, p.toldAt + START_PACE * p.lastFrameMs - p.now);
}

export function createLiveStore(homes: string[], opts: LiveStoreOptions = {}): LiveStore {
  let state = initialModelState();
  let eventsSeen = 0;
  const listeners = new Set<() => void>();
  // The state is published, and listeners told, in the next turn of the event loop, once for
  // every batch of that turn. A batch's reduction and the render it causes are then two blocks
  // with input read between them, and a key read there renders with the state already on screen
  // (the batch that completes a big start, ~12 000 events reduced in ~15 ms and a snapshot built
  // from scratch in ~30–60 ms, held a key pressed meanwhile for both).
  let published = state;
  let told = true;
  // The start's pacing (START_PACE): when the last change was published, what its frame cost.
  let starting = false;
  let toldAt = -Infinity;
  let lastFrameMs = 0;
  let paced: NodeJS.Timeout | null = null;
  let prepare: ((state: ModelState) => Promise<number>) | null = null;
  // A state being prepared (published when that is done), and what preparing the published one cost.
  let preparing: Promise<void> | null = null;
  let preparedMs = 0;
  // Who waits for a version to be published (untilPublished).
  let publishWaits: { version: number; resolve: () => void }[] = [];
  const publish = (next: ModelState) => {
    toldAt = performance.now();
    published = next;
    // Before the listeners: one that throws must not leave a waiter waiting.
    if (publishWaits.length > 0) {
      const due = publishWaits.filter((w) => w.version <= next.version);
      publishWaits = publishWaits.filter((w) => w.version > next.version);
      for (const w of due) w.resolve();
    }
    for (const l of listeners) l();
  };
  const tell = () => {
    // Told again when the preparation is done (told is still false then).
    if (told || preparing) return;
    told = true;
    const next = state;
    if (!prepare) {
      preparedMs = 0;
      publish(next);
      return;
    }
    const fn = prepare;
    // Published when prepared, whatever the preparation did (a failure leaves the frame to build
    // it); a change made meanwhile is scheduled after it.
    preparing = Promise.resolve()
      .then(() => fn(next))
      .catch(() => 0)
      .then((ms) => {
        preparing = null;
        preparedMs = ms;
        publish(next);
        if (!told) schedule();
      });
  };
  const schedule = () => {
    // A held change is already on its way (a change made while one was being prepared).
    if (paced) return;
    const wait = startPaceDelay({ starting, toldAt, lastFrameMs, now: performance.now() });
    if (wait <= 0) return afterInput(tell);
    paced = setTimeout(() => {
      paced = null;
      afterInput(tell);
    }, wait);
  };
  const emit = (events: ReaderEvent[]) => {
    eventsSeen += events.length;
    state = reduceEvents(state, events);
    if (timing.enabled) timing.model(state.version, events);
    if (told) {
      told = false;
      schedule();
    }
  };
  /** Drops the pacing's timer; true when a change was held by it. */
  const cancelPace = (): boolean => {
    if (!paced) return false;
    clearTimeout(paced);
    paced = null;
    return true;
  };
  /**
   * Resolves once every change made so far is published (prepared first, if it is to be). A change
   * the start's pacing holds goes out now: the pacing gives the reads the main thread, and the
   * reader that asks is waiting for this change, not reading.
   */
  const untilPublished = (): Promise<void> => {
    const version = state.version;
    if (published.version >= version) return Promise.resolve();
    if (cancelPace()) afterInput(tell);
    return new Promise((resolve) => publishWaits.push({ version, resolve }));
  };
  /** The start is read: nothing is held any more, and a held change goes out now (after pending input). */
  const endStart = () => {
    starting = false;
    if (cancelPace()) afterInput(tell);
  };
  // The benchmark's marks of the start-up stages (one home: its stages; several: each home's).
  const onStage = opts.onStage ?? (timing.enabled ? (stage: string) => timing.mark(stage) : undefined);
  const readers = homes.map((home) => new HomeReader({ ...opts, ...(onStage ? { onStage } : {}), home, emit }));
  return {
    getState: () => published,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    frameCost(ms) {
      lastFrameMs = preparedMs + ms;
    },
    setPrepare(fn) {
      prepare = fn;
    },
    async start(startOpts) {
      // The readers' background work (the incident directories' bundles, a whole cache write, the
      // first chunks of the search) waits until the start is published: it came before the frame
      // that shows the home read (and its reads were counted in the start's).
      let startPublished: () => void = () => undefined;
      const beforeBackground = new Promise<void>((resolve) => (startPublished = resolve));
      starting = true;
      // Each home is being listed from now on, and is published as such at once: a frame drawn
      // before a home's list (a walk of 10 000 sessions takes a second or more) says so, and
      // names the home, instead of "no sessions found".
      const listing = readers.flatMap((r): ReaderEvent[] => (state.progress.has(r.home) ? [] : [{ type: 'progress', home: r.home, read: 0, total: 0, done: false, listing: true }]));
      if (listing.length > 0) {
        emit(listing);
        published = state;
      }
      try {
        await Promise.all(readers.map((r) => r.start({ ...startOpts, listShown: untilPublished, beforeBackground })));
        // Resolves once what was read is published (the pending turns come first), at once.
        endStart();
        // Turns, not `untilPublished` (which resolves at the publish): the render of what is
        // published comes in a later turn, and what waits for the start (its background work, the
        // `ready` mark) should come after it. With `untilPublished`, `ready` came 6–50 ms before
        // the big home's populated frame (2026-12-06).
        while (!told || preparing !== null) await nextTurn();
        if (timing.enabled) timing.ready(state.version);
      } finally {
        endStart();
        startPublished();
        // The start's reads are done: V8 optimises as usual from now on (tiering.ts).
        restoreInterruptBudget();
      }
    },
    async stop() {
      await Promise.all(readers.map((r) => r.stop()));
      cancelPace();
      // The state being prepared is published first; then the last one, if it is newer.
      await preparing;
      tell();
      await preparing;
    },
    get eventsSeen() {
      return eventsSeen;
    },
    settled: () => readers.every((r) => r.settled()),
    async background() {
      await Promise.all(readers.map((r) => r.background()));
    },
  };
}
