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
import { checkpointStaleAfter, type SessionView, type Snapshot } from '../model/snapshot.js';
import { RowList, type RowSeq } from './row-list.js';
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

/**
 * Whether one of the row's countdowns runs (it moves every second, whatever the time). Spelled out
 * rather than a loop over a list of the five: the list was an array per row looked at, ~27 KB of
 * garbage per frame at 100 appends/s on the bench's homes (a sampling heap profile, 12-05).
 */
function runs(v: SessionView): boolean {
  const c = v.clocks;
  return running(c.inactivity) || running(c.absolute) || running(c.episode) || running(c.nextRetry) || running(c.nextResume);
}

const running = (d: { remainingMs: number } | null | undefined): boolean => !!d && Number.isFinite(d.remainingMs);

function rowChangeAt(v: SessionView, now: number): number {
  return runs(v) ? now + SECOND : stillRowChangeAt(v, now);
}

/** The next change of a row none of whose countdowns runs: an age, a staleness or a timer's edge. */
function stillRowChangeAt(v: SessionView, now: number): number {
  let at = Infinity;
  if (v.source.checkpoint && v.source.checkpointUpdatedAt !== null) {
    const updated = v.source.checkpointUpdatedAt;
    at = Math.min(at, ageChangeAt(updated, now));
    // A checkpoint turns stale (and another host's process `remote-stale`) by its age alone.
    // (A lost session is never stale: no edge to wake for.)
    const staleAfter = v.checkpoint && v.state !== 'lost' ? checkpointStaleAfter(v.checkpoint.state) : null;
    const stale = staleAfter === null ? Infinity : updated + staleAfter + 1;
    const remoteStale = updated + REMOTE_STALE_MS + 1;
    if (stale > now) at = Math.min(at, stale);
    if (remoteStale > now) at = Math.min(at, remoteStale);
  } else if (v.lastActivityAt !== null) {
    // A session file's time ahead of ours reads ~0s until it has passed by a second (cells.ageText).
    at = Math.min(at, v.lastActivityAt > now ? v.lastActivityAt + SECOND : ageChangeAt(v.lastActivityAt, now));
  }
  // `waiting` lasts until the first timer ahead of now fires.
  for (let i = 0; i < v.timers.length; i++) {
    const t = v.timers[i]!;
    if (t.at !== null && t.at > now) at = Math.min(at, t.at);
  }
  if (v.deadline !== null && v.deadline > now) at = Math.min(at, v.deadline);
  return at;
}

/** Whether anything on screen may move every second whatever the time (see {@link nextFrameChange}). */
function everySecondView(input: { snapshot: Snapshot; view: ViewState }): boolean {
  const { snapshot, view } = input;
  if (view.mode !== 'main' || view.help || view.detailOpen || view.confirm !== null || view.pending.length > 0) return true;
  return (snapshot.remotes?.length ?? 0) > 0;
}

/** The header clock shows hours and minutes: its next change after `now`. */
const nextMinute = (now: number) => Math.floor(now / MINUTE) * MINUTE + MINUTE;

/** Whole seconds (the clock's `now` is always on one), and never later than the backstop. */
const wakeAt = (at: number, now: number) => Math.min(Math.ceil(at / SECOND) * SECOND, now + MAX_SLEEP_MS);

/**
 * The epoch ms at (or after) which the frame built for `now` may look different with no new data;
 * `now + 1000` when it may change every second.
 */
export function nextFrameChange(input: { snapshot: Snapshot; rows: RowSeq; view: ViewState; now: number }): number {
  // A render for new data comes between ticks: the next tick is still on the next whole second.
  const now = Math.floor(input.now / SECOND) * SECOND;
  const everySecond = now + SECOND;
  if (everySecondView(input)) return everySecond;
  let at = nextMinute(now);
  for (const r of input.rows) {
    at = Math.min(at, rowChangeAt(r.view, now));
    if (at <= everySecond) return everySecond;
  }
  return wakeAt(at, now);
}

/** A row whose countdown runs: it moves every second for as long as it is on the list. */
const MOVING = -1;

/**
 * {@link nextFrameChange} for a dashboard's frames, with a memo of the last call's rows: only rows
 * that are other objects than last time are looked at again, and rows whose next change is still
 * ahead keep it. Rows never change once built, and a row's next change after an instant is still
 * its next change at any later instant before it (nothing of the row changes in between), so the
 * answer is always that of `nextFrameChange` (test/snapshot-cache.test.ts checks it after every
 * tick and model change). Why: with no countdown running anywhere, a look over every row took
 * 1.15–4.16 ms a frame on a home of 12 013 sessions, and the dashboard 21.7–25.6 % of a core at
 * 100 appends/s against 8.8–12.2 % with this (docs/PERFORMANCE.md).
 */
export function createNextFrameChange(): (input: { snapshot: Snapshot; rows: RowList; view: ViewState; now: number }) => number {
  let rows = RowList.EMPTY;
  /** Each row's next change as of when it was looked at (MOVING: every second). */
  let next = new Float64Array(0);
  let moving = 0;
  /** The latest instant asked about: a call for an earlier one starts afresh. */
  let latest = -Infinity;
  // A running countdown is the row's own (its clocks), not the instant's: it lasts as long as the row.
  const look = (r: TreeRow, now: number) => (runs(r.view) ? MOVING : stillRowChangeAt(r.view, now));
  return (input) => {
    const now = Math.floor(input.now / SECOND) * SECOND;
    const everySecond = now + SECOND;
    if (everySecondView(input)) return everySecond;
    const given = input.rows;
    // The places of rows that are new objects; null (another number of rows, or the clock set
    // back): every row looked at afresh.
    // (The lists of two frames: only the chunks they do not share are compared, row-list.ts.)
    const changed = now < latest ? null : given.changedSince(rows);
    if (changed === null) {
      next = new Float64Array(given.length);
      moving = 0;
    }
    const count = changed === null ? given.length : changed.length;
    for (let k = 0; k < count; k++) {
      const i = changed === null ? k : changed[k]!;
      if (next[i] === MOVING) moving--;
      const at = look(given.at(i)!, now);
      next[i] = at;
      if (at === MOVING) moving++;
    }
    rows = given;
    latest = now;
    if (moving > 0) return everySecond;
    let at = nextMinute(now);
    for (let i = 0; i < next.length; i++) {
      let row = next[i]!;
      // Passed: the row's next change after this instant.
      if (row <= now) next[i] = row = look(given.at(i)!, now);
      if (row < at) at = row;
    }
    return at <= everySecond ? everySecond : wakeAt(at, now);
  };
}
