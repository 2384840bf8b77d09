import { isEpochMs } from '../contract/epoch.js';

/**
 * Times as they appear in loop-pi / pi files: ISO-8601 strings or epoch numbers. Parsed once,
 * here at the boundary, into epoch ms (or null when absent or unreadable).
 */

// Below this a number cannot be epoch ms of any real file (it would be before March 1973), so
// it is taken as epoch seconds; as seconds it would reach the year 5138.
const SECONDS_BELOW = 1e11;

const ISO = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?(?:Z|[+-]\d{2}:?\d{2})?$/;

/** Epoch ms from an ISO string or an epoch-ms number, 1970 to 9999 (contract/epoch.ts); null otherwise. */
export function epochMsFrom(value: unknown): number | null {
  if (typeof value === 'number') return isEpochMs(value) ? value : null;
  if (typeof value === 'string') {
    const s = value.trim();
    if (!ISO.test(s)) return null;
    const ms = Date.parse(s);
    return isEpochMs(ms) ? ms : null;
  }
  return null;
}

/** Like {@link epochMsFrom}, but a small number is read as epoch seconds (watcher receipts). */
export function epochMsOrSecondsFrom(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0 && value < SECONDS_BELOW) return value * 1000;
  return epochMsFrom(value);
}

/** SPEC §3.2 `<UTC>` stamp in a file name (ISO with `:` and `.` turned into `-`) → epoch ms. */
export const UTC_STAMP = /(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})(?:-(\d{1,9}))?Z/;

/** Epoch ms of the first `<UTC>` stamp in `name`, or null. */
export function epochMsFromStamp(name: string): number | null {
  const m = UTC_STAMP.exec(name);
  if (!m) return null;
  const frac = m[5] ? `.${m[5]}` : '';
  const ms = Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}${frac}Z`);
  return Number.isFinite(ms) ? ms : null;
}

const NS_PER_S = 1_000_000_000n;

/**
 * Epoch ms of a nanosecond stat time (`fs.*Sync(…, { bigint: true })`), computed as Node computes
 * `mtimeMs` for a plain stat (seconds × 1e3 + nanoseconds / 1e6). `Number(ns) / 1e6` rounds the
 * 19-digit nanoseconds first and differs from it in the last bits, so a file's mtime read by a
 * walk and by a descriptor's bigint stat compared unequal.
 */
export function msFromNs(ns: bigint): number {
  return Number(ns / NS_PER_S) * 1e3 + Number(ns % NS_PER_S) / 1e6;
}
