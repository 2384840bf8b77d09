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
}

/** `now`, refreshed on every period boundary of the given clock. */
export function useClock({ clock, tick = true, periodMs = 1000 }: ClockOptions): number {
  const [now, setNow] = useState(clock);
  const mounted = useRef(false);

  useEffect(() => {
    // A new clock (or ticking turned on/off) is read at once; the first mount already read it.
    if (mounted.current) setNow(clock());
    mounted.current = true;
    if (!tick) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const schedule = () => {
      const t = clock();
      // Wake just after the next boundary, so the value read there is already on the new second.
      const wait = periodMs - (((t % periodMs) + periodMs) % periodMs) + 1;
      timer = setTimeout(() => {
        // Snap to the boundary: a timer that fires late still shows the second it stands for.
        setNow(Math.floor(clock() / periodMs) * periodMs);
        schedule();
      }, wait);
      // A ticking display never keeps the process alive on its own.
      timer.unref?.();
    };
    schedule();
    return () => {
      if (timer) clearTimeout(timer);
    };
  }, [clock, tick, periodMs]);

  return now;
}
