/** Reads homes once and builds a snapshot: the shared path of `status`, `incidents` and scripts. */
import os from 'node:os';
import { reduceEvents, initialModelState, type ModelState } from '../model/reducer.js';
import { buildSnapshot, type Snapshot } from '../model/snapshot.js';
import { loadHomeOnce } from '../readers/home-reader.js';

/**
 * `cacheDir`: read with the session cache the dashboard keeps there (and leave it as the read
 * found the home), so a command run again and again on a big home reads what changed, not every
 * session's tail (docs/PERFORMANCE.md, "One-shot commands read with the session cache").
 */
export interface LoadOptions {
  cacheDir?: string;
}

export async function loadState(homes: string[], opts: LoadOptions = {}): Promise<ModelState> {
  let state = initialModelState();
  for (const home of homes) state = reduceEvents(state, await loadHomeOnce(home, opts.cacheDir ? { cacheDir: opts.cacheDir } : {}));
  return state;
}

/**
 * `now`: the instant to evaluate at, or the clock to read it from once the homes are read. Read
 * before, a checkpoint written during the read was newer than `now`: a countdown a second over its
 * limit (`15:01`), an age of `-0s`.
 */
export async function loadSnapshot(homes: string[], now: number | (() => number), opts: LoadOptions = {}): Promise<Snapshot> {
  const state = await loadState(homes, opts);
  return buildSnapshot(state, typeof now === 'number' ? now : now(), { host: os.hostname() });
}
