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

export async function loadSnapshot(homes: string[], now: number, opts: LoadOptions = {}): Promise<Snapshot> {
  return buildSnapshot(await loadState(homes, opts), now, { host: os.hostname() });
}
