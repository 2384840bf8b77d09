/**
 * Work done in time slices on the event loop: long synchronous loops (a walk, a start's reads)
 * check `due()` — one clock read — and give the loop a turn only when a slice is over, so keys and
 * frames are served meanwhile.
 */

/** How long a slice of synchronous work may run before the event loop gets a turn. */
export const SLICE_MS = 8;

/** Resolves on the event loop's next turn (after pending I/O callbacks). */
export function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * Runs `fn` once the event loop has polled for I/O again: two turns, because from an I/O callback
 * a single `setImmediate` runs in the same iteration, before the next poll.
 */
export function afterInput(fn: () => void): void {
  setImmediate(() => setImmediate(fn));
}

export class TimeSlices {
  private start = performance.now();

  constructor(private readonly ms = SLICE_MS) {}

  /** This slice has run its time. */
  due(): boolean {
    return performance.now() - this.start >= this.ms;
  }

  /** Gives the event loop a turn now; a new slice starts after it. */
  async pause(): Promise<void> {
    await nextTurn();
    this.restart();
  }

  /** Gives the event loop a turn if this slice is over. */
  async breathe(): Promise<void> {
    if (this.due()) await this.pause();
  }

  /** Starts a new slice (after work that waited anyway). */
  restart(): void {
    this.start = performance.now();
  }
}
