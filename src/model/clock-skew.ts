/**
 * A checkpoint written by a clock that runs ahead of this machine's (another host sharing the
 * home, a VM whose clock drifted): its times lie in our future. Taken as they are, a request
 * shows more time left than its limit allows, the checkpoint a negative age, and another host's
 * dead process looks alive until our clock catches up with its last `updatedAt` (RELIABILITY C6).
 *
 * The file's mtime tells when it was written by the file system's clock — this machine's, or a
 * file server's near it — so `updatedAt − mtime` is how far the writer's clock is ahead, and every
 * time of the checkpoint is moved back by that much. With no usable mtime (unknown), or one as far
 * ahead as `updatedAt` (the file system keeps the writer's clock: `updatedAt − mtime` is then
 * small), nothing is moved — there is nothing of ours to measure against, and a move by `now`
 * would make a dead writer look alive for ever — so its times stay as written (an age below zero
 * shows as such). The mtime must be the content's: the reader stats the file again when it
 * suspects a skew (checkpoint-file.ts). A writer whose clock is *behind* is left
 * as it is: its checkpoint then looks old (stale, or another host's process lost), which alarms
 * rather than reassures — and an mtime newer than the content (a `touch`, a copy) must never make
 * an old checkpoint look fresh.
 *
 * Pure: a function of the record alone.
 */
import type { Checkpoint } from '../contract/checkpoint.js';
import type { CheckpointRecord } from './types.js';

/** Skews up to this are write latency and mtime granularity, not a clock ahead. */
export const SKEW_TOLERANCE_MS = 2_000;

/**
 * How far ahead of ours the checkpoint's clock runs (ms), or 0: `updatedAt − mtime`, when the
 * mtime is usable. Not a function of `now`, so a row stays the same while only time passes.
 */
export function checkpointSkewMs(record: Pick<CheckpointRecord, 'checkpoint' | 'mtimeMs'>): number {
  const mtime = record.mtimeMs;
  if (!(Number.isFinite(mtime) && mtime > 0)) return 0;
  const skew = record.checkpoint.updatedAt - mtime;
  return Number.isFinite(skew) && skew > SKEW_TOLERANCE_MS ? skew : 0;
}

const shiftedMemo = new WeakMap<Checkpoint, { skew: number; checkpoint: Checkpoint }>();

/** The checkpoint with every time moved back by `skew` ms (the same object when `skew` is 0). */
export function shiftCheckpoint(cp: Checkpoint, skew: number): Checkpoint {
  if (skew === 0) return cp;
  const memo = shiftedMemo.get(cp);
  if (memo && memo.skew === skew) return memo.checkpoint;
  const t = (v: number | null): number | null => (v === null ? null : v - skew);
  const out: Checkpoint = {
    ...cp,
    updatedAt: cp.updatedAt - skew,
    request: cp.request ? { ...cp.request, startedAt: cp.request.startedAt - skew, lastModelEventAt: t(cp.request.lastModelEventAt), lastTransportEventAt: t(cp.request.lastTransportEventAt) } : null,
    episode: cp.episode ? { ...cp.episode, startedAt: cp.episode.startedAt - skew, nextRetryAt: t(cp.episode.nextRetryAt) } : null,
    recovery: cp.recovery ? { ...cp.recovery, stoppedAt: cp.recovery.stoppedAt - skew, nextResumeAt: t(cp.recovery.nextResumeAt) } : null,
    lastStop: cp.lastStop ? { ...cp.lastStop, at: cp.lastStop.at - skew } : null,
    held: cp.held ? { ...cp.held, since: cp.held.since - skew } : null,
    ownerAbort: cp.ownerAbort ? { ...cp.ownerAbort, at: cp.ownerAbort.at - skew } : null,
  };
  // The producer's extra (the request that ended last, an abort's target while tools run).
  const last = (cp as { lastRequest?: unknown }).lastRequest;
  if (last && typeof last === 'object') {
    const l = last as { startedAt?: unknown; endedAt?: unknown };
    (out as { lastRequest?: unknown }).lastRequest = {
      ...l,
      ...(typeof l.startedAt === 'number' ? { startedAt: l.startedAt - skew } : {}),
      ...(typeof l.endedAt === 'number' ? { endedAt: l.endedAt - skew } : {}),
    };
  }
  shiftedMemo.set(cp, { skew, checkpoint: out });
  return out;
}
