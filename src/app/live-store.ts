/**
 * The live model behind the dashboard: one HomeReader per home feeding one reducer. Listeners are
 * told at most once per batch, so a burst of appends costs one render.
 */
import { initialModelState, reduceEvents, type ModelState } from '../model/reducer.js';
import type { ReaderEvent } from '../model/types.js';
import { HomeReader, type HomeReaderOptions } from '../readers/home-reader.js';
import { timing } from './timing.js';

export interface LiveStore {
  getState(): ModelState;
  subscribe(listener: () => void): () => void;
  /** Starts every home reader; resolves when each home has been read once (`afterList`: see HomeReader.start). */
  start(opts?: { afterList?: Promise<unknown> }): Promise<void>;
  stop(): Promise<void>;
  /** Events folded in so far (for diagnostics and benchmarks). */
  readonly eventsSeen: number;
  /** Resolves when the readers' one-time background work after the start is done (or stopped). */
  background(): Promise<void>;
}

export type LiveStoreOptions = Omit<HomeReaderOptions, 'home' | 'emit'>;

export function createLiveStore(homes: string[], opts: LiveStoreOptions = {}): LiveStore {
  let state = initialModelState();
  let eventsSeen = 0;
  const listeners = new Set<() => void>();
  const emit = (events: ReaderEvent[]) => {
    eventsSeen += events.length;
    state = reduceEvents(state, events);
    if (timing.enabled) timing.model(state.version, events);
    for (const l of listeners) l();
  };
  // The benchmark's marks of the start-up stages (one home: its stages; several: each home's).
  const onStage = opts.onStage ?? (timing.enabled ? (stage: string) => timing.mark(stage) : undefined);
  const readers = homes.map((home) => new HomeReader({ ...opts, ...(onStage ? { onStage } : {}), home, emit }));
  return {
    getState: () => state,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async start(startOpts) {
      await Promise.all(readers.map((r) => r.start(startOpts)));
      if (timing.enabled) timing.ready(state.version);
    },
    async stop() {
      await Promise.all(readers.map((r) => r.stop()));
    },
    get eventsSeen() {
      return eventsSeen;
    },
    async background() {
      await Promise.all(readers.map((r) => r.background()));
    },
  };
}
