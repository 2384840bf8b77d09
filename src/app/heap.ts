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
 * when a full collection sets the next limit, so one incremental (non-blocking) full collection
 * is asked for right away; it also frees the start's garbage.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** The heap may grow by this share of what survived the last full collection. */
export const HEAP_GROWING_PERCENT = 50;

type Gc = (options: { type: 'major'; execution: 'async' }) => Promise<void>;

let settled = false;

/** Once per process: from now on the heap grows by at most `HEAP_GROWING_PERCENT` between full collections. */
export function settleHeapGrowth(): void {
  if (settled) return;
  settled = true;
  try {
    setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
    // V8 installs `gc` in contexts created while --expose-gc is on; only this one gets it.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as Gc;
    setFlagsFromString('--no-expose-gc');
    void gc({ type: 'major', execution: 'async' }).catch(() => undefined);
  } catch {
    /* memory tuning is best effort */
  }
}
