/**
 * Timing marks for the benchmark (`npm run bench`): with `LOOP_DASH_TIMING=<file>` in the
 * environment the dashboard appends one JSON line per mark to that file — each model change (with
 * the session sizes it brought in), each Ink render pass (with the model version and key count it
 * drew) and each write to the terminal. Without the variable every call is a no-op.
 *
 * Also one mark per garbage collection (`gc`: its pause and V8's kind, 1 a scavenge) from `ready`
 * on, so the benchmark counts collections per window: a figure the host's load does not move,
 * unlike CPU. Before `ready` a model mark names no files (their count only): the start's marks are
 * kept to what the benchmark reads of a start, so they cost it next to nothing.
 *
 * Times are epoch ms with sub-ms precision (`performance.timeOrigin + performance.now()`), so the
 * benchmark can put them beside its own clock (appends, key presses, exec).
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { performance, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import type { ReaderEvent } from '../model/types.js';
import { codeCacheState } from './launcher.js';
import { fastAcceptMisses } from '../readers/fast-accept.js';

/** What the last render drew: the model version, keys handled, how many roots it listed, and whether every home had been read. */
interface Rendered {
  version: number;
  keys: number;
  roots: number;
  populated: boolean;
  /** Time spent building this frame (snapshot, rows, lines) before it was drawn. */
  renderMs?: number;
}

/** The benchmark's marks; all no-ops when timing is off. */
export interface Timing {
  readonly enabled: boolean;
  /** A model change: its version and the session files (with sizes) it carried. */
  model(version: number, events: readonly ReaderEvent[]): void;
  /** Every home has been read once; `version` is the model version at that moment. */
  ready(version: number): void;
  /** A named moment (`background`: the readers' one-time background work is done; `audit`: the bounds audit ran). */
  mark(name: string): void;
  /** Called while rendering the dashboard: what this frame shows. */
  rendered(info: Rendered): void;
  /**
   * A render pass finished (the frame is computed; it is written if it changed); `ms`: its own
   * time; `drawn`: the bytes it wrote to the terminal (0: nothing on screen changed) and, on a
   * frame after a key, how many of its lines show a session `requesting` (the bench checks that
   * its countdowns are on screen).
   */
  frame(ms?: number, drawn?: { bytes: number; requesting?: number }): void;
  /** Bytes went to the terminal. */
  write(bytes: number): void;
  /** The keys handled as of the last frame rendered. */
  keysRendered(): number;
  close(): void;
}

const now = () => performance.timeOrigin + performance.now();

const OFF: Timing = {
  enabled: false,
  model: () => undefined,
  ready: () => undefined,
  mark: () => undefined,
  rendered: () => undefined,
  frame: () => undefined,
  write: () => undefined,
  keysRendered: () => 0,
  close: () => undefined,
};

function fileTiming(file: string): Timing {
  let fd: number | null = openSync(file, 'a');
  let last: Rendered = { version: -1, keys: 0, roots: 0, populated: false };
  const put = (mark: Record<string, unknown>) => {
    if (fd === null) return;
    try {
      writeSync(fd, JSON.stringify({ t: now(), ...mark }) + '\n');
    } catch {
      /* timing is best effort */
    }
  };
  // `mono`: the monotonic clock's reading (ms) at the time origin, so a CPU profile's sample times
  // (V8's monotonic µs) can be put on the marks' clock: epoch = origin + µs / 1000 - mono.
  put({ ev: 'start', pid: process.pid, origin: performance.timeOrigin, mono: Number(process.hrtime.bigint()) / 1e6 - performance.now(), code: codeCacheState() });
  // With LOOP_DASH_TIMING_LAG=<ms>: a mark for each event-loop stall longer than that (a 5 ms
  // ticker), to find what holds a key press up. Off by default: the ticker costs idle CPU.
  const lagMs = Number(process.env.LOOP_DASH_TIMING_LAG ?? 0);
  if (lagMs > 0) {
    let expected = performance.now() + 5;
    setInterval(() => {
      const t = performance.now();
      if (t - expected > lagMs) put({ ev: 'lag', ms: Math.round(t - expected) });
      expected = t + 5;
    }, 5).unref();
  }
  const collections = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) put({ ev: 'gc', ms: Math.round(e.duration * 100) / 100, kind: (e as { detail?: { kind?: number } }).detail?.kind ?? null });
  });
  // Observed from `ready` on: the benchmark counts collections in its CPU windows, after the start.
  // During a start they cost a write each (~100 on the big bench home's warm start: ~6 ms of it).
  let afterReady = false;
  // With LOOP_DASH_TIMING_MEM=<ms>: a mark with the process's memory (RSS, V8 heap, external and
  // array buffers) every that many ms, to tell heap growth from buffers and native memory.
  const memMs = Number(process.env.LOOP_DASH_TIMING_MEM ?? 0);
  if (memMs > 0) {
    setInterval(() => {
      const m = process.memoryUsage();
      const mb = (n: number) => Math.round(n / 1e5) / 10;
      const spaces = Object.fromEntries(getHeapSpaceStatistics().map((sp) => [sp.space_name.replace(/_space$/, ''), mb(sp.space_used_size)]));
      put({ ev: 'mem', rss: mb(m.rss), heapTotal: mb(m.heapTotal), heapUsed: mb(m.heapUsed), external: mb(m.external), arrayBuffers: mb(m.arrayBuffers), spaces });
    }, memMs).unref();
  }
  return {
    enabled: true,
    model(version, events) {
      // The files and sizes are what append → model latencies are matched on, appends come after
      // the start; before `ready` only their count (the big bench home's 1 213 paths and sizes
      // cost ~6 ms of its warm start in writes that a user's start does not make).
      const sessions: [string, number][] = [];
      let files = 0;
      // Indexed, as the reducer's loop: a start's ~10 000 events, interpreted (a cost of the marks
      // alone, which a user's start does not pay; docs/PERFORMANCE.md, "Indexed loops on the
      // start's path").
      for (let i = 0; i < events.length; i++) {
        const e = events[i]!;
        if (e.type !== 'session-file') continue;
        files++;
        if (afterReady) sessions.push([e.facts.file, e.facts.size]);
      }
      put({ ev: 'model', v: version, n: events.length, s: sessions, ...(afterReady ? {} : { files }) });
    },
    ready(version) {
      if (!afterReady) collections.observe({ entryTypes: ['gc'] });
      afterReady = true;
      // `zod`: values the fast accept path left to zod so far (0 on a home of valid files).
      put({ ev: 'ready', v: version, zod: fastAcceptMisses() });
    },
    mark(name) {
      put({ ev: name });
    },
    rendered(info) {
      last = info;
    },
    frame(ms, drawn) {
      put({
        ev: 'frame',
        v: last.version,
        k: last.keys,
        r: last.roots,
        p: last.populated,
        ...(ms === undefined ? {} : { ms: Math.round(ms * 100) / 100 }),
        ...(last.renderMs === undefined ? {} : { build: Math.round(last.renderMs * 100) / 100 }),
        ...(drawn === undefined ? {} : { w: drawn.bytes, ...(drawn.requesting === undefined ? {} : { q: drawn.requesting }) }),
      });
    },
    write(bytes) {
      put({ ev: 'write', b: bytes });
    },
    keysRendered: () => last.keys,
    close() {
      collections.disconnect();
      if (fd !== null) closeSync(fd);
      fd = null;
    },
  };
}

/** The process-wide timing, from `LOOP_DASH_TIMING`. */
export const timing: Timing = process.env.LOOP_DASH_TIMING ? fileTiming(process.env.LOOP_DASH_TIMING) : OFF;
