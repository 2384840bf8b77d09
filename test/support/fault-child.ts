/** Starts fault-child-main.ts (a live store in its own process) and follows what it reports. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** What the child store runs with. */
export interface ChildConfig {
  homes: string[];
  /** Absent: the reader decides (`CHOKIDAR_USEPOLLING`). */
  polling?: boolean;
  reconcileMs?: number;
  pollMs?: number;
  incompleteGraceMs?: number;
  batchMs?: number;
  /** Paths whose facts and warnings each state line carries. */
  focus?: string[];
  /** How often the child samples its open fds (default 5 ms). */
  sampleMs?: number;
}

/** Process figures of the child. */
export interface ChildStats {
  rss: number;
  /** VmHWM: the peak RSS since start or the last `reset-peak`. */
  peakRss: number;
  fds: number;
  /** The most fds seen open by the sampler. */
  maxFds: number;
  /** inotify watches held. */
  watches: number;
  /** `Max open files` soft limit. */
  fdLimit: number;
  /** CPU time used so far (user + system), µs. */
  cpuUs: number;
  /** When these figures were taken (epoch ms). */
  at: number;
}

/** One state line. */
export interface ChildState {
  started: boolean;
  sessions: number;
  progressDone: boolean;
  progressRead: number;
  progressTotal: number;
  watchMode: string;
  watchDetail: string | null;
  /** Warnings shown, all files. */
  warnings: number;
  focus: Record<string, { known: boolean; size: number | null; history: string[]; warnings: string[] }>;
  /** Process probes the store made (the dashboard's liveness checks). */
  probes: { pid: number; status: string; detail: string | null }[];
  stats: ChildStats;
}

export interface ChildStore {
  readonly child: ChildProcess;
  /** Milliseconds the child's `store.start()` took, once it has started. */
  startMs(): number | null;
  latest(): ChildState | null;
  /** Resolves with the first state line (from now on, or the latest) for which `pred` holds. */
  until(pred: (s: ChildState) => unknown, what: string, timeoutMs?: number): Promise<ChildState>;
  /** `quiet` stops the child's fd sampler (for an idle measurement) and answers like `stats`. */
  command(cmd: 'stats' | 'reset-peak' | 'quiet'): Promise<ChildStats>;
  command(cmd: 'state'): Promise<ChildState>;
  /** Stops the store and the process; resolves with its last figures. */
  stop(): Promise<ChildStats | null>;
}

const MAIN = fileURLToPath(new URL('./fault-child-main.js', import.meta.url));

/** Spawn options for the child: another user, or a file-descriptor limit set by the shell. */
export interface ChildSpawn {
  uid?: number;
  gid?: number;
  /** `ulimit -n` for the child (through bash, at exec). */
  ulimitFiles?: number;
  /**
   * Run the child as one esbuild bundle, as the product runs (`bin/loop-dash.js` runs the CLI's
   * bundle): unbundled, Node 20's ESM loader opens zod's ~45 locale modules at once and fails with
   * EMFILE under `ulimit -n 64` before any loop-dash code runs.
   */
  bundled?: boolean;
  /** Extra environment. */
  env?: Record<string, string>;
  /**
   * A kernel limit of inotify watches for the child (RELIABILITY C1): it runs in a user namespace
   * of its own (`unshare -U -r`) whose `max_inotify_watches` is set to this, so the kernel's own
   * ENOSPC comes at that count, and nothing outside the namespace is touched.
   */
  watchLimit?: number;
}

let bundled: Promise<string> | null = null;
/** Bundles fault-child-main.js once per test process, beside it (esbuild, like scripts/bundle.mjs). */
function bundledMain(): Promise<string> {
  bundled ??= (async () => {
    const esbuild = await import('esbuild');
    const outfile = MAIN.replace(/\.js$/, '.bundle.mjs');
    await esbuild.build({
      entryPoints: [MAIN],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      banner: { js: "import { createRequire as __ldCreateRequire } from 'node:module'; const require = __ldCreateRequire(import.meta.url);" },
      logLevel: 'warning',
    });
    return outfile;
  })();
  return bundled;
}

export async function runChildStore(cfg: ChildConfig, how: ChildSpawn = {}): Promise<ChildStore> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...how.env, LD_CHILD: JSON.stringify(cfg) };
  if (!how.env?.CHOKIDAR_USEPOLLING) delete env.CHOKIDAR_USEPOLLING;
  const args = [how.bundled ? await bundledMain() : MAIN];
  const child =
    how.watchLimit !== undefined
      ? spawn('unshare', ['-U', '-r', 'bash', '-c', `echo ${how.watchLimit} > /proc/sys/user/max_inotify_watches && exec "$0" "$@"`, process.execPath, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] })
      : how.ulimitFiles !== undefined
      ? spawn('bash', ['-c', `ulimit -n ${how.ulimitFiles} && exec "$0" "$@"`, process.execPath, ...args], { env, uid: how.uid, gid: how.gid, stdio: ['pipe', 'pipe', 'pipe'] })
      : spawn(process.execPath, args, { env, uid: how.uid, gid: how.gid, stdio: ['pipe', 'pipe', 'pipe'] });
  let latest: ChildState | null = null;
  let started: number | null = null;
  let stderr = '';
  let exited: string | null = null;
  let nextId = 1;
  const replies = new Map<number, (data: unknown) => void>();
  const waiters: { pred: (s: ChildState) => unknown; resolve: (s: ChildState) => void }[] = [];
  let out = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => {
    out += d;
    let nl: number;
    while ((nl = out.indexOf('\n')) >= 0) {
      const msg = JSON.parse(out.slice(0, nl)) as { type: string; state?: ChildState; id?: number; data?: unknown; ms?: number };
      out = out.slice(nl + 1);
      if (msg.type === 'started') started = msg.ms ?? null;
      if (msg.type === 'reply') replies.get(msg.id!)?.(msg.data);
      if (msg.type === 'state') {
        latest = msg.state!;
        for (let i = waiters.length - 1; i >= 0; i--) {
          if (waiters[i]!.pred(latest)) waiters.splice(i, 1)[0]!.resolve(latest);
        }
      }
    }
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const ended = new Promise<void>((resolve) =>
    child.on('exit', (code, signal) => {
      exited = `exited ${code ?? signal}: ${stderr.trim().split('\n').slice(-5).join(' / ')}`;
      resolve();
    }),
  );
  const command = (cmd: string): Promise<unknown> =>
    new Promise((resolve, reject) => {
      if (exited) return reject(new Error(`child store ${exited}`));
      const id = nextId++;
      replies.set(id, resolve);
      void ended.then(() => reject(new Error(`child store ${exited}`)));
      child.stdin!.write(JSON.stringify({ id, cmd }) + '\n');
    });
  return {
    child,
    startMs: () => started,
    latest: () => latest,
    until(pred, what, timeoutMs = 10_000) {
      if (latest && pred(latest)) return Promise.resolve(latest);
      return new Promise<ChildState>((resolve, reject) => {
        const w = { pred, resolve: (s: ChildState) => (clearTimeout(timer), resolve(s)) };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`child store: timed out after ${timeoutMs} ms waiting for ${what}; ${exited ?? ''} latest ${JSON.stringify(latest)?.slice(0, 1500)}`));
        }, timeoutMs);
        waiters.push(w);
        void ended.then(() => {
          if (waiters.includes(w)) {
            clearTimeout(timer);
            waiters.splice(waiters.indexOf(w), 1);
            reject(new Error(`child store ${exited} while waiting for ${what}`));
          }
        });
      });
    },
    command: command as ChildStore['command'],
    async stop() {
      if (exited) return null;
      const last = (await Promise.race([command('stop'), ended.then(() => null)]).catch(() => null)) as ChildStats | null;
      if (!exited) child.kill('SIGKILL');
      await ended;
      return last;
    },
  };
}
