/**
 * Fault-injecting watch backends for the HomeReader seam (`watchFactory`): the real backend
 * underneath, with its hints dropped, held back, or its native watches refused with an errno.
 */
import { createWatchBackend, type WatchBackend, type WatchBackendOptions, type WatchFactory, type WatchSink } from '../../src/readers/watch-backend.js';

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
        failed: (err, dir) => sink.failed(err, dir),
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
        failed: (err, dir) => sink.failed(err, dir),
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
  return refusing(code, () => gate.closed, () => gate.count++);
}

/** What `limitedFactory` made: the options and backends of the polling sweeps. */
export interface Made {
  polling: WatchBackendOptions[];
  pollers: WatchBackend[];
}

/**
 * The native backend, except that a new watch is refused with ENOSPC once `limit.n` are held, as
 * the kernel does at its inotify limit (`limit.refused` counts the refusals); `made` records the
 * polling sweeps built, which are the real ones.
 */
export function limitedFactory(limit: { n: number; refused: number }, made?: Made): WatchFactory {
  return refusing('ENOSPC', (real) => real.dirs().length >= limit.n, () => limit.refused++, made);
}

function refusing(code: 'ENOSPC' | 'EMFILE', refuse: (real: WatchBackend) => boolean, counted: () => void, made?: Made): WatchFactory {
  return (sink, opts) => {
    const real = createWatchBackend(sink, opts);
    if (opts.polling) {
      made?.polling.push(opts);
      made?.pollers.push(real);
      return real;
    }
    const wrapped: WatchBackend = {
      mode: real.mode,
      addDir(dir, ino) {
        if (!real.has(dir) && refuse(real)) {
          counted();
          const message = code === 'ENOSPC' ? `ENOSPC: System limit for number of file watchers reached, watch '${dir}'` : `EMFILE: too many open files, watch '${dir}'`;
          sink.failed(Object.assign(new Error(message), { code, syscall: 'watch', path: dir }), dir);
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
