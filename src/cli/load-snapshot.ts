/** Reads homes once and builds a snapshot: the shared path of `status`, `incidents` and scripts. */
import os from 'node:os';
import { reduceEvents, initialModelState, type ModelState } from '../model/reducer.js';
import { buildSnapshot, type Snapshot } from '../model/snapshot.js';
import { loadHomeOnce } from '../readers/home-reader.js';

export async function loadState(homes: string[]): Promise<ModelState> {
  let state = initialModelState();
  for (const home of homes) state = reduceEvents(state, await loadHomeOnce(home));
  return state;
}

export async function loadSnapshot(homes: string[], now: number): Promise<Snapshot> {
  return buildSnapshot(await loadState(homes), now, { host: os.hostname() });
}
