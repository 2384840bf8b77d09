/**
 * Fault-injecting watch backends for the HomeReader seam (`watchFactory`): the real backend
 * underneath, with its hints dropped, held back, or its native watches refused with an errno.
 */
import { createWatchBackend, type WatchBackend, type WatchFactory, type WatchSink } from '../../src/readers/watch-backend.js';

/** A switch the test flips while the store runs. */
export interface Gate {
  /** true: hints are dropped (drop) or queued (hold). */
  closed: boolean;
  /** Hints dropped or held so far. */
  count: number;
}

/** Drops every hint while `gate.closed` (RELIABILITY C2: the watcher goes deaf). */
export function droppingFactory(gate: Gate): WatchFactory {
  return (sink, opts) =>
    createWatchBackend(
      {
        changed: (file) => {
          if (gate.closed) gate.count++;
          else sink.changed(file);
        },
        failed: (err) => sink.failed(err),
      },
      opts,
    );
}

/** Queues hints while `gate.closed`; `release()` delivers them (a check that comes late, B2). */
export function holdingFactory(gate: Gate): { factory: WatchFactory; release: () => void } {
  const held: { sink: WatchSink; file: string }[] = [];
  const factory: WatchFactory = (sink, opts) =>
    createWatchBackend(
      {
        changed: (file) => {
          if (gate.closed) {
            gate.count++;
            held.push({ sink, file });
          } else sink.changed(file);
        },
        failed: (err) => sink.failed(err),
      },
      opts,
    );
  return {
    factory,
    release() {
      gate.closed = false;
      for (const h of held.splice(0)) h.sink.changed(h.file);
    },
  };
}

/**
 * The native backend, except that adding a watch fails with `code` while `gate.closed`
 * (RELIABILITY C1: inotify watches exhausted). The fall-back polling backend is the real one.
 */
export function refusingFactory(code: 'ENOSPC' | 'EMFILE', gate: Gate): WatchFactory {
  return (sink, opts) => {
    const real = createWatchBackend(sink, opts);
    if (opts.polling) return real;
    const wrapped: WatchBackend = {
      mode: real.mode,
      addDir(dir, ino) {
        if (gate.closed && !real.has(dir)) {
          gate.count++;
          const message = code === 'ENOSPC' ? `ENOSPC: System limit for number of file watchers reached, watch '${dir}'` : `EMFILE: too many open files, watch '${dir}'`;
          sink.failed(Object.assign(new Error(message), { code, syscall: 'watch', path: dir }));
          return;
        }
        real.addDir(dir, ino);
      },
      removeDir: (dir) => real.removeDir(dir),
      dirs: () => real.dirs(),
      has: (dir) => real.has(dir),
      close: () => real.close(),
    };
    return wrapped;
  };
}
