/**
 * Background jobs (probes, re-checks, cache saves) on one timer that sleeps until the next job is
 * due — not a fixed tick. On this machine every wake-up of an idle process costs ~1–2.5 ms of CPU,
 * most of what an idle dashboard spends, so a job with nothing to do must not wake it.
 */

export interface PeriodicJob {
  /**
   * When the job is next due (performance.now() ms), given when it last ran; null while it has
   * nothing to do. Asked at every wake-up and every `poke`: cheap, no I/O.
   */
  dueAt(lastRun: number): number | null;
  run(): Promise<void>;
}

/** A job due within this long after a wake-up runs in it: one wake-up instead of two. */
export const COALESCE_MS = 1_000;

/** The earliest of the jobs' due times, or null when none has anything to do. */
export function nextWake(dues: readonly (number | null)[]): number | null {
  let at: number | null = null;
  for (const d of dues) if (d !== null && (at === null || d < at)) at = d;
  return at;
}

/** Which jobs a wake-up at `now` runs: every one due by `now + COALESCE_MS`. */
export function dueJobs(dues: readonly (number | null)[], now: number): number[] {
  const out: number[] = [];
  dues.forEach((d, i) => {
    if (d !== null && d <= now + COALESCE_MS) out.push(i);
  });
  return out;
}

export interface PeriodicClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(t: unknown): void;
}

const realClock: PeriodicClock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (t) => clearTimeout(t as NodeJS.Timeout),
};

export class Periodic {
  private readonly last: number[];
  private readonly running: boolean[];
  private timer: unknown = null;
  private armedAt = Infinity;
  private stopped = false;
  /** Wake-ups so far (diagnostics and tests). */
  wakeUps = 0;

  constructor(
    private readonly jobs: readonly PeriodicJob[],
    private readonly clock: PeriodicClock = realClock,
  ) {
    const t = clock.now();
    this.last = jobs.map(() => t);
    this.running = jobs.map(() => false);
    this.poke();
  }

  /** Something may have made a job due sooner (a new pid, a file that changed): re-arm if so. */
  poke(): void {
    if (this.stopped) return;
    const at = nextWake(this.dues());
    if (at === null || at >= this.armedAt) return;
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.armedAt = at;
    this.timer = this.clock.setTimeout(() => this.wake(), Math.max(0, at - this.clock.now()));
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private dues(): (number | null)[] {
    return this.jobs.map((job, i) => (this.running[i] ? null : job.dueAt(this.last[i]!)));
  }

  private wake(): void {
    this.timer = null;
    this.armedAt = Infinity;
    if (this.stopped) return;
    this.wakeUps++;
    const now = this.clock.now();
    for (const i of dueJobs(this.dues(), now)) {
      this.last[i] = now;
      this.running[i] = true;
      void this.jobs[i]!.run()
        .catch(() => undefined)
        .finally(() => {
          this.running[i] = false;
          this.poke();
        });
    }
    this.poke();
  }
}
