/**
 * How much V8 lets the heap grow between full collections, for a process that stays open.
 *
 * By default V8 lets the old generation grow to several times what survived the last full
 * collection before it collects again. Under a steady stream of appends (each one parsed,
 * validated, turned into rows and a frame) the objects that outlive a young-generation collection
 * pile up in the old generation as garbage: measured on the big benchmark home, resident memory
 * rose by 8–27 MB a second through a 10 000 lines/s flood, to 258–303 MB, although ~45 MB was
 * live. With a growth of 50 % it peaked at 181 MB, at no CPU cost measurable at 100 appends/s
 * (15.0–15.5 % without, 14.2–15.6 % with, interleaved runs).
 *
 * It is set once the start's work is done (the first read and the one-time background search):
 * during the start the extra full collections cost ~50 ms of a warm start. V8 applies the flag
 * when a full collection sets the next limit, so one full collection is asked for; it also frees
 * the start's garbage. That collection holds the event loop for as long as it runs (110–180 ms on
 * the ~200 MB heap of a home of 12 000 sessions), so the dashboard asks for it once the keyboard
 * has been quiet for `QUIET_MS`, not while the user is typing — and at the latest `MAX_DEFER_MS`
 * after the start's work is done.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** The heap may grow by this share of what survived the last full collection. */
export const HEAP_GROWING_PERCENT = 50;
/** The start's full collection waits for the keyboard to be quiet this long… */
export const QUIET_MS = 1000;
/** …but not longer than this after the start's work is done. */
export const MAX_DEFER_MS = 30_000;

type Gc = (options: { type: 'major'; execution: 'async' }) => Promise<void>;

/**
 * How long the start's full collection is still to wait (0: now), the start's work done at
 * `settledAt` and the last key read at `lastInputAt` (`-Infinity`: none), all on one clock.
 */
export function collectionDelay(settledAt: number, lastInputAt: number, now: number): number {
  const latest = settledAt + MAX_DEFER_MS;
  const quietAt = lastInputAt + QUIET_MS;
  if (now >= latest || now >= quietAt) return 0;
  return Math.min(quietAt, latest) - now;
}

export interface SettleOptions {
  /** When the last key was read, on `now`'s clock (default: never, the collection runs at once). */
  lastInput?: () => number;
  /** A monotonic clock in ms (default `performance.now`). */
  now?: () => number;
}

let settled = false;

/**
 * Once per process: from now on the heap grows by at most `HEAP_GROWING_PERCENT` between full
 * collections; the full collection that applies it runs when `collectionDelay` says.
 */
export function settleHeapGrowth(opts: SettleOptions = {}): void {
  if (settled) return;
  settled = true;
  let gc: Gc;
  try {
    setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
    // V8 installs `gc` in contexts created while --expose-gc is on; only this one gets it.
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as Gc;
    setFlagsFromString('--no-expose-gc');
  } catch {
    return; /* memory tuning is best effort */
  }
  const collect = () => void gc({ type: 'major', execution: 'async' }).catch(() => undefined);
  collectWhenQuiet(collect, opts.lastInput ?? (() => -Infinity), opts.now ?? (() => performance.now()));
}

/** Runs `fn` in `ms`, never keeping the process up for it. */
function unrefTimeout(fn: () => void, ms: number): void {
  setTimeout(fn, ms).unref();
}

/** Runs `collect` once `collectionDelay` is 0, looking again (`later`) when it said to. */
export function collectWhenQuiet(collect: () => void, lastInput: () => number, now: () => number, later: (fn: () => void, ms: number) => void = unrefTimeout): void {
  const settledAt = now();
  const check = () => {
    const wait = collectionDelay(settledAt, lastInput(), now());
    if (wait <= 0) collect();
    else later(check, wait);
  };
  check();
}
