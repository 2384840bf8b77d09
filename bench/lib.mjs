/**
 * Benchmark plumbing: the dashboard in a real pty (util-linux `script`), its timing marks
 * (LOOP_DASH_TIMING, see src/app/timing.ts), and what /proc says about the process.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Epoch ms, sub-ms precision: the same clock the app's marks use. */
export const now = () => performance.timeOrigin + performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits until `fn()` is truthy (polled; an answer that is a promise awaited first), or throws after `timeoutMs`. */
export async function waitFor(fn, what, timeoutMs = 30_000, everyMs = 5) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

// ---- statistics -----------------------------------------------------------------------------

export function quantile(values, q) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const i = Math.min(v.length - 1, Math.max(0, Math.ceil(q * v.length) - 1));
  return v[i];
}
/** The middle value; of an even count the mean of the two middle ones (the lower one leaned an A/B's paired differences towards the new build). */
export function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 === 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

// ---- /proc ------------------------------------------------------------------------------------

export function procIo(pid) {
  try {
    const t = fs.readFileSync(`/proc/${pid}/io`, 'utf8');
    const get = (k) => Number(new RegExp(`^${k}: (\\d+)`, 'm').exec(t)?.[1] ?? NaN);
    return { rchar: get('rchar'), readBytes: get('read_bytes') };
  } catch {
    return { rchar: NaN, readBytes: NaN };
  }
}

/** Peak and current RSS in bytes (VmHWM, VmRSS). */
export function procMem(pid) {
  try {
    const t = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(t)?.[1] ?? NaN) * 1024;
    return { hwm: kb('VmHWM'), rss: kb('VmRSS') };
  } catch {
    return { hwm: NaN, rss: NaN };
  }
}

/** Open file descriptors that are regular files, and inotify watches (from fdinfo). */
export function procFds(pid) {
  let regular = 0;
  let watches = 0;
  let names;
  try {
    names = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return { regular: NaN, watches: NaN };
  }
  for (const n of names) {
    let target;
    try {
      target = fs.readlinkSync(`/proc/${pid}/fd/${n}`);
    } catch {
      continue;
    }
    if (target.startsWith('anon_inode:inotify')) {
      try {
        const info = fs.readFileSync(`/proc/${pid}/fdinfo/${n}`, 'utf8');
        watches += info.split('\n').filter((l) => l.startsWith('inotify wd:')).length;
      } catch {
        /* gone */
      }
    } else if (target.startsWith('/') && !target.startsWith('/dev/')) {
      try {
        if (fs.statSync(`/proc/${pid}/fd/${n}`).isFile()) regular++;
      } catch {
        /* closed meanwhile */
      }
    }
  }
  return { regular, watches };
}

/**
 * CPU time (ms) of the whole process so far, threads that ended included (the start's read
 * worker): `/proc/<pid>/stat` utime + stime, in clock ticks (100 a second on Linux).
 */
export function processCpuMs(pid) {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}
const CLOCK_TICKS = 100;

/**
 * The process's main thread (its tid is its pid) from its `schedstat`, in ms: its CPU time so far
 * (`cpu`) and how long it has waited on a run queue for a core (`wait`: time the host or the
 * bench's other processes took from it). NaN when the process is gone.
 */
export function mainThreadSchedMs(pid) {
  try {
    const [cpu, wait] = fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ');
    return { cpu: Number(cpu) / 1e6, wait: Number(wait) / 1e6 };
  } catch {
    return { cpu: NaN, wait: NaN };
  }
}

/** CPU time (ms) of the process's main thread. */
export function mainThreadCpuMs(pid) {
  return mainThreadSchedMs(pid).cpu;
}

/**
 * The host's CPU pressure so far (Linux PSI, `/proc/pressure/cpu`): the µs in which some runnable
 * task waited for a core, or null where the kernel does not expose it. Its growth over a span of
 * wall time, as a share of it, says how loaded the host was meanwhile.
 */
export function cpuPressureUs() {
  try {
    const some = fs.readFileSync('/proc/pressure/cpu', 'utf8').split('\n').find((l) => l.startsWith('some '));
    const total = some?.match(/total=(\d+)/)?.[1];
    return total === undefined ? null : Number(total);
  } catch {
    return null;
  }
}

/** CPU time of every thread of the process, in ms (schedstat: ns on CPU). */
export function procCpuMs(pid) {
  let ns = 0;
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        /* thread ended */
      }
    }
  } catch {
    return NaN;
  }
  return ns / 1e6;
}

/**
 * Before a cold start: what loop-dash remembers of the homes (the session caches in `cacheDir`,
 * its `loop-dash` cache directory) goes; what it remembers of its own code (V8's code cache in
 * `code/`, written by a build's first start: see bin/loop-dash.js) stays, as for a user opening a
 * new home with a loop-dash they have run before. A build's first start is measured on its own.
 */
export function clearHomeCaches(cacheDir) {
  let names = [];
  try {
    names = fs.readdirSync(cacheDir);
  } catch {
    return;
  }
  for (const name of names) if (name !== 'code') fs.rmSync(path.join(cacheDir, name), { recursive: true, force: true });
}

// ---- the dashboard in a pty -------------------------------------------------------------------

/**
 * Starts `loop-dash --home <home>` in a pty of `rows`×`cols` via `script`, with timing marks.
 * Returns a handle: output chunks with times, marks, keys, quit. The bin is run as the installed
 * command runs (executed: its first lines exec node with its own flags), with this process's node
 * first on PATH; `nodeArgs` runs `node <nodeArgs> bin/loop-dash.js` instead (those flags only).
 */
export function startApp({ home, rows = 60, cols = 200, env = {}, args = [], nodeArgs = [], marksFile, watchLimit = null }) {
  fs.rmSync(marksFile, { force: true });
  const bin = shq(path.join(repo, 'bin', 'loop-dash.js'));
  const launch = nodeArgs.length > 0 ? `${shq(process.execPath)} ${nodeArgs.map(shq).join(' ')} ${bin}` : bin;
  // With `watchLimit`: a kernel limit of inotify watches, in a user namespace of the app's own
  // (`unshare -U -r`; its max_inotify_watches), nothing outside it touched.
  const limit = watchLimit === null ? '' : `echo ${Number(watchLimit)} > /proc/sys/user/max_inotify_watches; `;
  const cmd = `${limit}stty rows ${rows} cols ${cols}; exec ${launch} --home ${shq(home)} ${args.map(shq).join(' ')}`;
  const t0 = now();
  const child = spawn(watchLimit === null ? 'script' : 'unshare', [...(watchLimit === null ? [] : ['-U', '-r', 'script']), '-qfec', cmd, '/dev/null'], {
    cwd: repo,
    env: { ...process.env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`, CI: '0', TERM: 'xterm-256color', LOOP_DASH_TIMING: marksFile, LOOP_DASH_BUNDLE: '1', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out = [];
  let text = '';
  child.stdout.on('data', (b) => {
    const t = now();
    const s = b.toString('utf8');
    out.push({ t, bytes: b.length });
    if (text.length < 1_000_000) text += s;
  });
  child.stderr.on('data', () => undefined);
  let exited = null;
  child.on('exit', (code, signal) => (exited = { code, signal, t: now() }));
  const marksCache = [];
  let marksFd = null;
  let marksPos = 0;
  let partial = '';
  const handle = {
    t0,
    child,
    out,
    get text() {
      return text;
    },
    get exited() {
      return exited;
    },
    /** Parsed marks so far (reads only what was added to the marks file since the last call). */
    marks() {
      if (marksFd === null) {
        try {
          marksFd = fs.openSync(marksFile, 'r');
        } catch {
          return marksCache;
        }
      }
      const buf = Buffer.allocUnsafe(1 << 20);
      for (;;) {
        const n = fs.readSync(marksFd, buf, 0, buf.length, marksPos);
        if (n <= 0) break;
        marksPos += n;
        const lines = (partial + buf.subarray(0, n).toString('utf8')).split('\n');
        partial = lines.pop();
        for (const line of lines) if (line) marksCache.push(JSON.parse(line));
      }
      return marksCache;
    },
    pid() {
      return handle.marks().find((m) => m.ev === 'start')?.pid ?? null;
    },
    /** Sends raw bytes to the terminal; returns the bench time just before the write. */
    send(s) {
      const t = now();
      child.stdin.write(s);
      return t;
    },
    /** First output chunk time whose accumulated text matches `re`. */
    async waitOutput(re, timeoutMs = 30_000) {
      await waitFor(() => re.test(text), `output ${re}`, timeoutMs, 2);
      return now();
    },
    async quit(timeoutMs = 8_000) {
      if (exited) return exited;
      try {
        child.stdin.write('q');
      } catch {
        /* closed */
      }
      try {
        await waitFor(() => exited, 'exit after q', timeoutMs, 20);
      } catch {
        const pid = handle.pid();
        if (pid) {
          try {
            process.kill(pid, 'SIGTERM');
          } catch {
            /* gone */
          }
        }
        try {
          await waitFor(() => exited, 'exit after SIGTERM', 3_000, 20);
        } catch {
          child.kill('SIGKILL');
        }
      }
      if (marksFd !== null) fs.closeSync(marksFd);
      marksFd = null;
      return exited;
    },
  };
  return handle;
}

function shq(s) {
  return `'${String(s).replace(/'/g, `'\\''`)}'`;
}

/**
 * A long-lived helper process whose pid the live checkpoints name (so they count as alive). Like a
 * pi process running the loop-dash extension, it listens on its liveness socket in each of `homes`
 * (the extension's own code, docs/CONTRACT.md §5); `LOOP_DASH_BENCH_NO_SOCKET=1` leaves that out,
 * to measure a dashboard beside pi processes without the extension's socket.
 */
export function startSleeper(homes = []) {
  const listen = process.env.LOOP_DASH_BENCH_NO_SOCKET === '1' ? [] : homes;
  return spawn(process.execPath, [path.join(repo, 'scripts', 'liveness-listener.mjs'), ...listen], { stdio: 'ignore' });
}

/**
 * The V8 flags the bin execs node with (its second line: `':' //; exec node <flags> "$0" "$@"`),
 * for whatever runs node as the dashboard does: the warm floor (bench/floor.mjs; under V8's
 * defaults until 12-05 15:40, its garbage collection cost the big home ~50 ms more than the
 * dashboard's start would) and the profiled starts (bench/profile-start.mjs).
 */
export function binNodeFlags() {
  const second = fs.readFileSync(path.join(repo, 'bin', 'loop-dash.js'), 'utf8').split('\n')[1] ?? '';
  const flags = /exec node (.*) "\$0"/.exec(second)?.[1];
  if (flags === undefined) throw new Error(`bin/loop-dash.js: no "exec node <flags>" on its second line: ${second}`);
  return flags.split(/\s+/).filter(Boolean);
}

export function hasScript() {
  return spawnSync('script', ['--version']).status === 0;
}

// ---- reading the marks ------------------------------------------------------------------------

/** The first mark matching `pred` at or after time `from`. */
export function firstMark(marks, pred, from = -Infinity) {
  for (const m of marks) if (m.t >= from && pred(m)) return m;
  return null;
}

/** Index: for each session file, its [size, t, version] model marks in order. */
/**
 * A start's frames from its marks: the first frame listing sessions, and the first frame drawn
 * from a model holding every checkpoint (the reader marks `checkpoints` just before it sends
 * them); null when not (yet) drawn.
 */
export function startFrames(marks) {
  const list = firstMark(marks, (m) => m.ev === 'frame' && m.r > 0);
  const cp = firstMark(marks, (m) => m.ev === 'checkpoints');
  const cpModel = cp ? firstMark(marks, (m) => m.ev === 'model', cp.t) : null;
  const withCheckpoints = cpModel ? firstMark(marks, (m) => m.ev === 'frame' && m.v >= cpModel.v, cpModel.t) : null;
  return { list, withCheckpoints };
}

export function modelIndex(marks) {
  const byFile = new Map();
  for (const m of marks) {
    if (m.ev !== 'model') continue;
    for (const [file, size] of m.s) {
      let list = byFile.get(file);
      if (!list) byFile.set(file, (list = []));
      list.push({ size, t: m.t, v: m.v });
    }
  }
  return byFile;
}

/** When the model first held `size` bytes of `file` (at or after `from`): { t, v } or null. */
export function modelAt(index, file, size, from) {
  for (const e of index.get(file) ?? []) if (e.t >= from - 1 && e.size >= size) return e;
  return null;
}

/** The first render pass (frame mark) drawing model version ≥ v at or after `from`. */
/**
 * The first frame rendered from model version `v` or later: the screen shows what that version
 * changed. Its `w` is the bytes it wrote (0: nothing that version changed is on screen — an
 * append to a row whose cells do not move, such as a live root's, whose age is its checkpoint's).
 */
export function frameAt(marks, v, from) {
  return firstMark(marks, (m) => m.ev === 'frame' && m.v >= v, from);
}
