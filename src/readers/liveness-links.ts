/**
 * Links to pi processes' liveness sockets (docs/CONTRACT.md §5). A linked process's death is
 * known the moment the kernel closes the connection, so it needs no probe every few seconds: an
 * idle dashboard beside live pi processes then sleeps instead of waking 24 times a minute. A
 * process without a socket (an older extension, another user's, a path too long) is probed as
 * before. Nothing is ever written on a link.
 */
import net from 'node:net';

/**
 * Sockets held at once (links up or connecting); the processes beyond are probed (each is one
 * socket fd). A failed attempt holds none: it does not count.
 */
export const MAX_LINKS = 256;
/** A process whose socket could not be reached is tried again no sooner than this. */
const RETRY_MS = 30_000;

interface Link {
  socket: net.Socket | null;
  /** Connected: its close means the process ended (or closed its socket: `onClosed` probes). */
  up: boolean;
  /** performance.now() of the last attempt. */
  triedAt: number;
}

export class LivenessLinks {
  private readonly links = new Map<number, Link>();
  private stopped = false;

  /**
   * @param onChange called when a link comes up (fewer probes needed) or goes down (probe that
   * pid now); `closed` is true for a connection that was up.
   */
  constructor(private readonly onChange: (pid: number, closed: boolean) => void) {}

  /** True when `pid`'s death will be reported by its link. */
  isLinked(pid: number): boolean {
    return this.links.get(pid)?.up === true;
  }

  /** How many sockets are held (links connecting or up): what MAX_LINKS bounds. */
  get held(): number {
    let n = 0;
    for (const l of this.links.values()) if (l.socket) n++;
    return n;
  }

  /** How many links are up. */
  get size(): number {
    let n = 0;
    for (const l of this.links.values()) if (l.up) n++;
    return n;
  }

  /**
   * Connects to `pid`'s socket (its path from `fileOf`, asked only when a connection is tried)
   * unless linked, connecting, or tried in the last RETRY_MS.
   */
  link(pid: number, fileOf: () => string | null): void {
    if (this.stopped) return;
    const had = this.links.get(pid);
    if (had && (had.up || had.socket || performance.now() - had.triedAt < RETRY_MS)) return;
    // Only sockets count: processes whose sockets could not be reached (an older extension) are
    // remembered until they end, and must not keep later processes from linking. (Counted only
    // when a connection is about to be tried, not at every checkpoint rewrite.)
    if (this.held >= MAX_LINKS) return;
    const file = fileOf();
    if (file === null) return;
    const link: Link = { socket: null, up: false, triedAt: performance.now() };
    this.links.set(pid, link);
    const socket = net.connect({ path: file });
    link.socket = socket;
    socket.unref();
    socket.on('connect', () => {
      if (this.links.get(pid) !== link) return void socket.destroy();
      link.up = true;
      this.onChange(pid, false);
    });
    // A liveness socket never speaks; anything that arrives is dropped.
    socket.on('data', () => {});
    socket.on('error', () => {});
    socket.on('close', () => {
      link.socket = null;
      const wasUp = link.up;
      link.up = false;
      if (this.links.get(pid) === link && wasUp && !this.stopped) this.onChange(pid, true);
    });
  }

  /** Drops `pid`'s link (its process is gone, or another process now holds the pid). */
  forget(pid: number): void {
    const link = this.links.get(pid);
    if (!link) return;
    this.links.delete(pid);
    link.up = false;
    link.socket?.destroy();
  }

  stop(): void {
    this.stopped = true;
    for (const pid of [...this.links.keys()]) this.forget(pid);
  }
}
