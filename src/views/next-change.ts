/**
 * When the frame next changes with time alone (no new data, no key): the shared clock sleeps until
 * then instead of waking every second, so a dashboard showing nothing that moves costs nothing.
 *
 * Conservative by construction: anything that may move every second (a running countdown, an age
 * under a minute, the detail pane, another view, a pending action, remote feeds) gives the next
 * second; otherwise the earliest boundary at which an age, a `waiting` timer or a checkpoint's
 * staleness changes its text; and never later than `MAX_SLEEP_MS` (a backstop for a time rule
 * this does not know about).
 */
import { REMOTE_STALE_MS } from '../model/liveness.js';
import { CHECKPOINT_STALE_MS, type SessionView, type Snapshot } from '../model/snapshot.js';
import type { TreeRow } from './session-rows.js';
import type { ViewState } from './view-state.js';

/**
 * The longest the clock sleeps while nothing on screen moves: a minute, as the header's clock (so
 * an idle dashboard draws once a minute; with 30 s it also drew at :30, a frame that changed
 * nothing — measured 2026-12-01).
 */
export const MAX_SLEEP_MS = 60_000;

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The first instant after `now`, on a whole second, at which `formatAge(t - from)` changes. */
function ageChangeAt(from: number, now: number): number {
  const age = now - from;
  if (age < MINUTE) return now + SECOND; // seconds (and a clock ahead of ours) move every second
  const unit = age < HOUR ? MINUTE : age < DAY ? HOUR : DAY;
  return from + (Math.floor(age / unit) + 1) * unit;
}

function rowChangeAt(v: SessionView, now: number): number {
  const c = v.clocks;
  for (const d of [c.inactivity, c.absolute, c.episode, c.nextRetry, c.nextResume]) {
    if (d && Number.isFinite(d.remainingMs)) return now + SECOND;
  }
  let at = Infinity;
  if (v.source.checkpoint && v.source.checkpointUpdatedAt !== null) {
    const updated = v.source.checkpointUpdatedAt;
    at = Math.min(at, ageChangeAt(updated, now));
    // A checkpoint turns stale (and another host's process `remote-stale`) by its age alone.
    for (const edge of [updated + CHECKPOINT_STALE_MS + 1, updated + REMOTE_STALE_MS + 1]) if (edge > now) at = Math.min(at, edge);
  } else if (v.lastActivityAt !== null) {
    at = Math.min(at, ageChangeAt(v.lastActivityAt, now));
  }
  // `waiting` lasts until the first timer ahead of now fires.
  for (const t of v.timers) if (t.at !== null && t.at > now) at = Math.min(at, t.at);
  if (v.deadline !== null && v.deadline > now) at = Math.min(at, v.deadline);
  return at;
}

/**
 * The epoch ms at (or after) which the frame built for `now` may look different with no new data;
 * `now + 1000` when it may change every second.
 */
export function nextFrameChange(input: { snapshot: Snapshot; rows: readonly TreeRow[]; view: ViewState; now: number }): number {
  const { snapshot, rows, view } = input;
  // A render for new data comes between ticks: the next tick is still on the next whole second.
  const now = Math.floor(input.now / SECOND) * SECOND;
  const everySecond = now + SECOND;
  if (view.mode !== 'main' || view.help || view.detailOpen || view.confirm !== null || view.pending.length > 0) return everySecond;
  if (snapshot.remotes && snapshot.remotes.length > 0) return everySecond;
  // The header clock shows hours and minutes.
  let at = Math.floor(now / MINUTE) * MINUTE + MINUTE;
  for (const r of rows) {
    at = Math.min(at, rowChangeAt(r.view, now));
    if (at <= everySecond) return everySecond;
  }
  // Whole seconds: the clock's `now` is always on one.
  return Math.min(Math.ceil(at / SECOND) * SECOND, now + MAX_SLEEP_MS);
}
