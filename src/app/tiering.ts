/**
 * When V8 optimises: `bin/loop-dash.js` raises V8's interrupt budget (how much bytecode a function
 * runs before it is handed to the optimising compiler) for the start, and this puts it back once
 * the start's reads are done (the live store calls it once its start is published).
 *
 * A start of a big home runs thousands of functions a few thousand times each; with the default
 * budget TurboFan compiled them on V8's background threads for ~1.2 s of CPU during a cold start
 * of the benchmark's big home (perf, 2026-12-01), on two cores the readers needed. With the start's
 * budget only what stays hot is compiled. Kept after the start, the live path (a batch of appends
 * parsed, reduced and drawn) stayed unoptimised for longer: 100 appends/s in the first minute cost
 * the main thread more (interleaved runs in docs/PERFORMANCE.md), so the default comes back.
 */
import { setFlagsFromString } from 'node:v8';
import { startComplete } from './launcher.js';

/** The start's budget (bin/loop-dash.js sets it before anything is loaded). */
export const START_INTERRUPT_BUDGET = 1_000_000;
/** After the start: V8's default in Node 20 (66 KiB of bytecode). */
export const LIVE_INTERRUPT_BUDGET = 66 * 1024;

let restored = false;

/** Once per process, unless a budget was given on the command line: the default budget from now on. */
export function restoreInterruptBudget(): void {
  if (restored) return;
  restored = true;
  // V8's code cache of what the start compiled (bin/loop-dash.js) is made before the flags
  // change: V8 rejects a cache made under other flags than those it is loaded with.
  startComplete();
  if (process.execArgv.some((a) => a.startsWith('--interrupt-budget'))) return;
  try {
    setFlagsFromString(`--interrupt-budget=${LIVE_INTERRUPT_BUDGET}`);
  } catch {
    /* tuning is best effort */
  }
}
