/**
 * The files a big start's two readers share (ReadJobInput.claims): a slot per file in a
 * SharedArrayBuffer, taken once with a compare-exchange from 0, so every file is read once and
 * neither thread waits while the other has work. The session files: the worker takes them from
 * the oldest up, the main thread from the newest down. The small record files (incidents, lane
 * statuses, receipts): the worker from the first up, as they come, the main thread from the last
 * down once its sessions are done. Each ordered so, a thread that finds a slot taken knows the
 * other has every one beyond it. Its own module: the worker's bundle takes this, not the pool
 * (which loads the launcher).
 */

/** A shared file the worker took (and reads). */
export const CLAIMED_BY_WORKER = 1;
/** A shared file the main thread took (the worker's result for it is `{ entry: null }`). */
export const CLAIMED_BY_MAIN = 2;

/** Takes shared file `i` for the worker: false when the main thread has it (and every later one). */
export function claimForWorker(claims: Int32Array, i: number): boolean {
  return Atomics.compareExchange(claims, i, 0, CLAIMED_BY_WORKER) === 0;
}

/** Takes shared file `i` for the main thread: false when the worker has it (and every earlier one). */
export function claimForMain(claims: Int32Array, i: number): boolean {
  return Atomics.compareExchange(claims, i, 0, CLAIMED_BY_MAIN) === 0;
}
