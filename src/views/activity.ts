/**
 * Model-event activity as the dashboard saw it: each time a session's checkpoint shows a new
 * `request.modelEvents` count, the increase is recorded at that instant. The detail pane draws it
 * as a sparkline of events per 10 s over the last 15 min. View state only: nothing is persisted,
 * so the line starts empty when the dashboard starts (a past we did not see is not made up).
 */
import type { SessionView } from '../model/snapshot.js';

export const ACTIVITY_WINDOW_MS = 15 * 60_000;
export const ACTIVITY_BUCKET_MS = 10_000;
/** 15 min of 10 s buckets. */
export const ACTIVITY_BUCKETS = ACTIVITY_WINDOW_MS / ACTIVITY_BUCKET_MS;

/** Model events first seen at `at` (the increase since the previous observation). */
export interface ActivitySample {
  at: number;
  events: number;
}

/** What we last saw of one session, and the increases seen within the window. */
export interface ActivityTrack {
  turn: number | null;
  count: number;
  samples: readonly ActivitySample[];
}

export type ActivityLog = ReadonlyMap<string, ActivityTrack>;

/** A session's in-flight request counter as the snapshot shows it. */
export interface ActivityObservation {
  session: string;
  turn: number | null;
  count: number;
}

/** The request counters of every session (roots and lanes) that has a request in its checkpoint. */
export function observationsOf(roots: readonly SessionView[]): ActivityObservation[] {
  const out: ActivityObservation[] = [];
  for (const r of roots) {
    let mine = observed.get(r);
    if (!mine) {
      mine = [];
      for (const v of [r, ...r.lanes]) {
        const req = v.checkpoint?.request;
        if (req) mine.push({ session: v.session, turn: req.turn, count: req.modelEvents });
      }
      observed.set(r, mine);
    }
    for (const o of mine) out.push(o);
  }
  return out;
}

/** Per root row (with its lanes): unchanged rows are the same objects between snapshots. */
const observed = new WeakMap<SessionView, ActivityObservation[]>();

/**
 * Do two observation lists say the same (the same sessions, turns and counts, in order)? Then
 * folding the second into a log that holds the first changes nothing: most model changes (an
 * append, a probe) move no request counter.
 */
export function sameObservations(a: readonly ActivityObservation[], b: readonly ActivityObservation[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x !== y && (x.session !== y.session || x.turn !== y.turn || x.count !== y.count)) return false;
  }
  return true;
}

/**
 * Fold observations made at `at` into the log. A new turn (or a counter that went down) starts
 * from zero, so its whole count is new. The first sight of a session records no events: we do not
 * know when those happened. Returns the same log object when nothing changed.
 */
export function recordActivity(log: ActivityLog, observations: readonly ActivityObservation[], at: number): ActivityLog {
  let next: Map<string, ActivityTrack> | null = null;
  const edit = () => (next ??= new Map(log));
  for (const o of observations) {
    const prev = log.get(o.session);
    if (!prev) {
      edit().set(o.session, { turn: o.turn, count: o.count, samples: [] });
      continue;
    }
    if (prev.turn === o.turn && prev.count === o.count) continue;
    const sameRequest = prev.turn === o.turn && o.count >= prev.count;
    const events = sameRequest ? o.count - prev.count : o.count;
    const kept = prev.samples.filter((s) => at - s.at < ACTIVITY_WINDOW_MS);
    edit().set(o.session, { turn: o.turn, count: o.count, samples: events > 0 ? [...kept, { at, events }] : kept });
  }
  return next ?? log;
}

/** Events per bucket, oldest first, the last bucket ending at `now`. */
export function activityBuckets(track: ActivityTrack | undefined, now: number, buckets = ACTIVITY_BUCKETS, bucketMs = ACTIVITY_BUCKET_MS): number[] {
  const out = new Array<number>(buckets).fill(0);
  if (!track) return out;
  for (const s of track.samples) {
    const age = now - s.at;
    if (age < 0 || age >= buckets * bucketMs) continue;
    const i = buckets - 1 - Math.floor(age / bucketMs);
    out[i] = out[i]! + s.events;
  }
  return out;
}

/** Sum neighbouring values so the series fits in `width` characters (keeps the newest end aligned). */
export function squeeze(values: readonly number[], width: number): number[] {
  if (width <= 0) return [];
  if (values.length <= width) return [...values];
  const per = Math.ceil(values.length / width);
  const out: number[] = [];
  for (let end = values.length; end > 0 && out.length < width; end -= per) {
    let sum = 0;
    for (let i = Math.max(0, end - per); i < end; i++) sum += values[i]!;
    out.unshift(sum);
  }
  return out;
}

const BARS = '▁▂▃▄▅▆▇█';

/** `▁` for nothing, `▂`…`█` scaled to the largest value. */
export function sparkline(values: readonly number[]): string {
  const max = Math.max(0, ...values);
  return values.map((v) => (v <= 0 || max === 0 ? BARS[0] : BARS[1 + Math.min(6, Math.floor((v / max) * 6.999))])).join('');
}
