/**
 * The process's liveness socket (docs/CONTRACT.md §5): a Unix socket the extension listens on while
 * a session runs. Nothing is ever sent on it. A dashboard connects once; when this process ends —
 * exit, crash, `kill -9` — the kernel closes the connection and the dashboard knows at once, where
 * without it it finds out at its next probe (every 2.5 s, a wake-up each time).
 *
 * It never holds pi up: the server and every connection are unref'd, and a failure (a path too
 * long for a socket address, a read-only home, something else at the path) is logged and the
 * session goes on without it — dashboards then probe as before.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { aliveSocketPath, aliveSocketPid, homePaths } from '../contract/paths.js';
import { processStartIdentity } from '../readers/process-probe.js';
import { ensureDir } from './atomic-file.js';
import type { ExtensionLog } from './extension-log.js';

/** Connections one process accepts at once (a few dashboards each); more are closed on arrival. */
const MAX_CONNECTIONS = 64;

export class LivenessSocket {
  private server: net.Server | null = null;
  private file: string | null = null;

  constructor(private readonly log: ExtensionLog) {}

  /** The path listened on, or null when there is none (not started, failed, or stopped). */
  get path(): string | null {
    return this.server ? this.file : null;
  }

  /** Listens for `pid` (this process) of `host` in `home`; a no-op when already listening there. */
  start(home: string, host: string, pid: number, pidStart: string | null): void {
    const file = aliveSocketPath(home, host, pid, pidStart);
    if (file === null) {
      this.log(pidStart === null ? 'no liveness socket: the process start identity is unknown' : 'no liveness socket: the path would not fit a socket address');
      return;
    }
    if (this.server && this.file === file) return;
    this.stop();
    try {
      ensureDir(path.dirname(file));
      removeStaleSocket(file);
      sweepDeadSockets(home, host);
    } catch (err) {
      this.log(`no liveness socket at ${file}`, err);
      return;
    }
    const server = net.createServer((conn) => {
      conn.unref();
      conn.on('error', () => conn.destroy());
      // A dashboard never writes; anything it does send is read and dropped.
      conn.resume();
    });
    server.maxConnections = MAX_CONNECTIONS;
    server.on('error', (err) => {
      this.log(`liveness socket ${file} failed`, err);
      if (this.server === server) this.stop();
    });
    server.listen(file, () => {
      try {
        fs.chmodSync(file, 0o600);
      } catch {
        // The directory is owner-only already.
      }
    });
    server.unref();
    this.server = server;
    this.file = file;
  }

  /** Stops listening and removes the socket file (connected dashboards see it close). */
  stop(): void {
    const server = this.server;
    const file = this.file;
    this.server = null;
    this.file = null;
    if (!server || !file) return;
    server.close();
    try {
      removeStaleSocket(file);
    } catch {
      // Gone already, or not ours any more.
    }
  }
}

/** Removes `file` if it is a socket (a previous process's); anything else there is left alone. */
function removeStaleSocket(file: string): void {
  const st = fs.lstatSync(file, { throwIfNoEntry: false });
  if (!st) return;
  if (!st.isSocket()) throw new Error(`${file} exists and is not a socket`);
  fs.unlinkSync(file);
}

/**
 * Removes this host's sockets whose process is gone (a crash or `kill -9` leaves its socket file
 * behind): a pid that no longer exists, or exists with another start identity. Other hosts'
 * sockets are left alone.
 */
function sweepDeadSockets(home: string, host: string): void {
  const dir = homePaths(home).alive;
  for (const name of fs.readdirSync(dir)) {
    const pid = aliveSocketPid(name, host);
    if (pid === null) continue;
    const file = path.join(dir, name);
    if (stillRunning(home, host, pid, file)) continue;
    try {
      removeStaleSocket(file);
    } catch {
      // Not a socket, or gone already: left alone.
    }
  }
}

/**
 * Whether the process the socket `file` was made for still runs. On Linux its start identity is
 * one read of `/proc`; elsewhere it costs a `ps` per pid, too slow inside pi's event loop at every
 * session start, so there a pid that still exists counts as running.
 */
function stillRunning(home: string, host: string, pid: number, file: string): boolean {
  if (process.platform === 'linux') return aliveSocketPath(home, host, pid, processStartIdentity(pid)) === file;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
