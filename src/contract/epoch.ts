/**
 * The instants a pi home's files may carry: epoch milliseconds from 1970 to the end of year 9999.
 * JavaScript's `Date` ends at ±8.64e15 ms, and an instant beyond it (`1e300`, `9e15`) threw
 * `RangeError: Invalid time value` in every `toISOString` (the one-shot commands and `serve` exited
 * or answered 500) and drew `NaN-NaN` on screen. Any instant outside this range is unreadable, as
 * a string that is not a time is; a limit added to one (at most 2^31 − 1 ms) stays within `Date`.
 */
export const MAX_EPOCH_MS = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z

/** A finite number of epoch ms within {@link MAX_EPOCH_MS} (1970 onwards). */
export function isEpochMs(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= MAX_EPOCH_MS;
}
