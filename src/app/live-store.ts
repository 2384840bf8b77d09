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
   * (`afterList`: see HomeReader.start). The readers' background work begins after that, and V8's
   * default interrupt budget comes back (tiering.ts).
   */
  start(opts?: { afterList?: Promise<unknown> }): Promise<void>;
  stop(): Promise<void>;
  /** Events folded in so far (for diagnostics and benchmarks). */
  readonly eventsSeen: number;
  /** Resolves when the readers' one-time background work after the start is done (or stopped). */
  background(): Promise<void>;
  /** No reader has a read, a re-check after a read, or a batch pending (HomeReader.settled). */
  settled(): boolean;
}

export type LiveStoreOptions = Omit<HomeReaderOptions, 'home' | 'emit'>;

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
  const tell = () => {
    if (told) return;
    told = true;
    published = state;
    for (const l of listeners) l();
  };
  const emit = (events: ReaderEvent[]) => {
    eventsSeen += events.length;
    state = reduceEvents(state, events);
    if (timing.enabled) timing.model(state.version, events);
    if (told) {
      told = false;
      afterInput(tell);
    }
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
    async start(startOpts) {
      // The readers' background work (a whole cache write, the first chunks of the search) waits
      // until the start is published: it came before the frame that shows the home read (and its
      // reads were counted in the start's).
      let published: () => void = () => undefined;
      const beforeBackground = new Promise<void>((resolve) => (published = resolve));
      try {
        await Promise.all(readers.map((r) => r.start({ ...startOpts, beforeBackground })));
        // Resolves once what was read is published (the pending turns come first).
        while (!told) await nextTurn();
        if (timing.enabled) timing.ready(state.version);
      } finally {
        published();
        // The start's reads are done: V8 optimises as usual from now on (tiering.ts).
        restoreInterruptBudget();
      }
    },
    async stop() {
      await Promise.all(readers.map((r) => r.stop()));
      tell();
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
