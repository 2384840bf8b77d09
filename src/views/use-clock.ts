/**
 * The one shared clock of the dashboard: a single timer, aligned to the wall-clock second, that
 * hands every view the same `now`, so all countdowns change together and no row owns an interval.
 */
import { useEffect, useRef, useState } from 'react';

/** How the clock is driven. */
export interface ClockOptions {
  /** The time source (epoch ms); injected so tests fix it. Keep it stable: a new function is read at once. */
  clock: () => number;
  /** false: read the clock once (and again when `clock` changes) but never tick. */
  tick?: boolean;
  /** Tick period in ms (1000). */
  periodMs?: number;
  /**
   * The caller's latest "nothing on screen changes before" instant (epoch ms, see next-change.ts),
   * set while rendering: the clock sleeps until then instead of waking at every boundary, and
   * wakes sooner again as soon as a render asks for it.
   */
  wakeAt?: { current: number | undefined };
}

/** `now`, refreshed on every period boundary of the given clock (or at `wakeAt`, when later). */
export function useClock({ clock, tick = true, periodMs = 1000, wakeAt }: ClockOptions): number {
  const [now, setNow] = useState(clock);
  const mounted = useRef(false);
  const pending = useRef<{ timer: ReturnType<typeof setTimeout>; due: number } | null>(null);
  const reschedule = useRef<((from: number) => void) | null>(null);
  // When this render read the time: its frame's next change is reckoned from here, not from when
  // its effect runs (a render that ends past a boundary must not move the wake-up past that tick).
  const renderedAt = useRef(0);
  renderedAt.current = clock();

  /** When to wake: just after the next boundary, or just after `wakeAt` when that is later. */
  const dueAfter = (t: number): number => {
    const boundary = t + periodMs - (((t % periodMs) + periodMs) % periodMs) + 1;
    const target = wakeAt?.current;
    return target !== undefined && Number.isFinite(target) && target + 1 > boundary ? target + 1 : boundary;
  };

  useEffect(() => {
    // A new clock (or ticking turned on/off) is read at once; the first mount already read it.
    if (mounted.current) setNow(clock());
    mounted.current = true;
    if (!tick) return;
    /** The next wake-up for a frame drawn at `from` (a due already past fires at once). */
    const schedule = (from = clock()) => {
      const due = dueAfter(from);
      const timer = setTimeout(() => {
        pending.current = null;
        // Snap to the boundary: a timer that fires late still shows the second it stands for.
        setNow(Math.floor(clock() / periodMs) * periodMs);
        schedule();
      }, Math.max(0, due - clock()));
      // A ticking display never keeps the process alive on its own.
      timer.unref?.();
      pending.current = { timer, due };
    };
    reschedule.current = (from: number) => {
      if (pending.current) clearTimeout(pending.current.timer);
      schedule(from);
    };
    schedule();
    return () => {
      if (pending.current) clearTimeout(pending.current.timer);
      pending.current = null;
      reschedule.current = null;
    };
  }, [clock, tick, periodMs]);

  // After every render the wake-up follows what that frame asks for: sooner when it now moves
  // sooner (new data brought a countdown), later when it moves later. A tick schedules the next
  // one before its own render has said when that is (with the previous frame's instant), which
  // woke the clock a second after every sleep for a render that changed nothing.
  useEffect(() => {
    const p = pending.current;
    if (p && Math.abs(dueAfter(renderedAt.current) - p.due) > 1) reschedule.current?.(renderedAt.current);
  });

  return now;
}
