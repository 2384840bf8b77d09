#!/usr/bin/env node
/**
 * `npm run bench`: how loop-dash behaves on a big pi home, measured side by side in one run.
 *
 *   node bench/run.mjs [--quick] [--10g] [--runs N] [--only floor,start,keys,live,scale,remote,status,degraded]
 *
 * --quick (or CI=true): fewer runs, a smaller big home, 10 s idle windows. --10g: also generate a
 * 10 GB home (disk permitting) and compare peak RSS. Figures are medians (and p50/p99 for
 * latencies); ratios are taken within this run. Homes are cached in ~/.cache/loop-dash-bench/.
 * See docs/PERFORMANCE.md for the method.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cacheRoot, ensureHome, refreshLiveCheckpoints, SHAPES } from './gen-home.mjs';
import {
  binNodeFlags,
  clearHomeCaches,
  firstMark,
  frameAt,
  median,
  modelAt,
  modelIndex,
  now,
  mainThreadCpuMs,
  mainThreadSchedMs,
  cpuPressureUs,
  processCpuMs,
  procCpuMs,
  procFds,
  procIo,
  procMem,
  quantile,
  repo,
  sleep,
  startApp,
  startFrames,
  startSleeper,
  waitFor,
} from './lib.mjs';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const opt = (name) => {
  const i = argv.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i < 0) return null;
  return argv[i].includes('=') ? argv[i].split('=').slice(1).join('=') : argv[i + 1];
};
const quick = flag('--quick') || /^(1|true)$/i.test(process.env.CI ?? '');
const withHuge = flag('--10g');
const only = opt('--only')?.split(',') ?? null;
const RUNS = Number(opt('--runs') ?? (quick ? 3 : 5));
const IDLE_S = quick ? 10 : 60;
const APPENDS = quick ? 300 : 1000;
const CPU_S = quick ? 5 : 20;
const CPU_WINDOWS = quick ? 1 : 3;
const FLOOD_S = quick ? 3 : 10;
const SETTLE_S = quick ? 5 : 60;
const BIG = quick ? 'quick' : 'big';
const want = (section) => !only || only.includes(section);

const MB = 1024 * 1024;
const log = (...a) => process.stderr.write(`${a.join(' ')}\n`);
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-bench-'));
const appCache = path.join(scratch, 'xdg-cache');
const appEnv = { XDG_CACHE_HOME: appCache, XDG_STATE_HOME: path.join(scratch, 'xdg-state') };
const results = { machine: machine(), quick, runs: RUNS, at: new Date().toISOString(), sections: {} };
const rows = [];

function machine() {
  const cpus = os.cpus();
  return { cpu: cpus[0]?.model ?? '?', cores: cpus.length, memGB: Math.round(os.totalmem() / 2 ** 30), node: process.version, kernel: os.release() };
}

/** One reported figure: name, value, unit, target text, verdict. */
function row(section, name, value, unit, target = '', ok = null) {
  rows.push({ section, name, value, unit, target, ok });
  results.sections[section] ??= {};
  results.sections[section][name] = { value, unit, target, ok };
}

const fmt = (v, unit) => {
  if (typeof v !== 'number' || !Number.isFinite(v)) return String(v);
  if (unit === 'ms') return v >= 100 ? v.toFixed(0) : v.toFixed(1);
  if (unit === '%') return v < 1 ? v.toFixed(3) : v.toFixed(2);
  if (unit === 'MB') return v.toFixed(1);
  if (unit === '×') return v.toFixed(2);
  return String(Math.round(v * 100) / 100);
};

/**
 * The host's CPU pressure over a section, given as a row of it when the section is done: the
 * share of its wall time in which some task waited for a core (Linux PSI "some"). The bench's own
 * processes count too (a dashboard and the bench on two cores), so a quiet host reads low, not 0.
 */
function pressureOver(section) {
  const t0 = performance.now();
  const p0 = cpuPressureUs();
  return () => {
    const p1 = cpuPressureUs();
    if (p0 === null || p1 === null) return;
    row(section, 'host CPU pressure during this section (PSI some: share of the time a task waited for a core)', ((p1 - p0) / 1000 / (performance.now() - t0)) * 100, '%');
  };
}

/** Before a cold start (the code cache stays: clearHomeCaches). */
function clearAppCache() {
  clearHomeCaches(path.join(appCache, 'loop-dash'));
}

// ---- remote -----------------------------------------------------------------------------------

/**
 * `--remote`: each home served by a `loop-dash serve` of its own (left running); per round a
 * dashboard with an empty home of its own and `--remote <that serve>`, exec → the first frame
 * showing as many roots as the home has (its own rows and those fetched). Then, on the big home's
 * serve, one dashboard left attached: its idle CPU and the server's, nothing changing but the
 * countdowns and the fetch every 5 s.
 */
async function remoteSection(homes) {
  const out = {};
  const servers = [];
  const empty = path.join(scratch, 'remote-empty-home');
  fs.mkdirSync(empty, { recursive: true });
  try {
    for (const h of homes) {
      const child = spawn(process.execPath, [...binNodeFlags(), path.join(repo, 'bin', 'loop-dash.js'), 'serve', '--home', h.home, '--listen', '127.0.0.1:0'], { env: { ...process.env, ...appEnv }, stdio: ['ignore', 'pipe', 'ignore'] });
      servers.push(child);
      let said = '';
      child.stdout.on('data', (b) => (said += b.toString('utf8')));
      const base = await waitFor(() => /listening on (http:\/\/[^\s]+)/.exec(said)?.[1], `${h.name}: serve listening`, 60_000, 20);
      // Ready (`/healthz` 200) once it has read the home; its document then has every root.
      await waitFor(async () => (await fetch(`${base}/healthz`).catch(() => null))?.ok, `${h.name}: serve ready`, 120_000, 100);
      const body = await (await fetch(`${base}/api/status`)).text();
      const doc = JSON.parse(body);
      out[h.name] = { url: base, roots: doc.roots.length, docBytes: Buffer.byteLength(body), attach: [], server: child };
    }
    const attachEnv = { XDG_CACHE_HOME: path.join(scratch, 'remote-cache'), XDG_STATE_HOME: path.join(scratch, 'remote-state') };
    for (let r = 0; r <= RUNS; r++) {
      for (const h of r % 2 ? [...homes].reverse() : homes) {
        const o = out[h.name];
        const app = startApp({ home: empty, args: ['--remote', o.url], env: attachEnv, marksFile: path.join(scratch, `remote-${h.name}-marks.jsonl`) });
        try {
          const shown = await waitFor(() => firstMark(app.marks(), (m) => m.ev === 'frame' && m.r >= o.roots), `${h.name}: every remote root shown`, 60_000, 5);
          if (r > 0) o.attach.push(shown.t - app.t0);
        } finally {
          await app.quit();
        }
      }
    }
    const o = out.big;
    const app = startApp({ home: empty, args: ['--remote', o.url], env: attachEnv, marksFile: path.join(scratch, 'remote-idle-marks.jsonl') });
    try {
      await waitFor(() => firstMark(app.marks(), (m) => m.ev === 'frame' && m.r >= o.roots), 'big: every remote root shown', 60_000, 5);
      await sleep(10_000);
      const s0 = procCpuMs(o.server.pid);
      const t0 = now();
      o.idleDashboard = await cpuOver(app.pid(), IDLE_S);
      o.idleServer = ((procCpuMs(o.server.pid) - s0) / (now() - t0)) * 100;
      log(`  idle with a remote feed of the big home: dashboard ${o.idleDashboard.toFixed(2)} %, serve ${o.idleServer.toFixed(2)} %`);
    } finally {
      await app.quit();
    }
  } finally {
    for (const child of servers) child.kill();
  }
  for (const h of homes) delete out[h.name].server;
  return out;
}

/**
 * `loop-dash status --json` as a script runs it, once per call: exec → exit and the bytes the
 * process read (`rchar`, printed by a preload as the process exits; a read worker's exit prints
 * it too, and the largest is the process's), the first run with no session cache, then `RUNS`
 * runs with the cache it left (the dashboard's, which a one-shot read uses since 12-07).
 */
function statusSection(home) {
  const cacheDir = path.join(scratch, 'status-cache');
  const preload = path.join(scratch, 'rchar-at-exit.cjs');
  fs.writeFileSync(preload, "process.on('exit', () => { const io = require('fs').readFileSync('/proc/self/io', 'utf8'); process.stderr.write(`rchar=${/^rchar: (\\d+)/m.exec(io)[1]}\\n`); });\n");
  const once = () => {
    const t0 = now();
    const r = spawnSync(process.execPath, [...binNodeFlags(), '-r', preload, path.join(repo, 'bin', 'loop-dash.js'), 'status', '--json', '--home', home], {
      env: { ...process.env, LOOP_DASH_CACHE_DIR: cacheDir },
      encoding: 'utf8',
      maxBuffer: 256 * MB,
    });
    const ms = now() - t0;
    if (r.status !== 0) throw new Error(`loop-dash status exited ${r.status}: ${r.stderr}`);
    const rchar = Math.max(...[...r.stderr.matchAll(/rchar=(\d+)/g)].map((m) => Number(m[1])));
    if (!Number.isFinite(rchar)) throw new Error(`loop-dash status: no rchar= at its exit: ${r.stderr}`);
    return { ms, rchar, bytes: Buffer.byteLength(r.stdout) };
  };
  const first = once();
  const again = Array.from({ length: RUNS }, once);
  return { first, again };
}

/**
 * Past the inotify limit (RELIABILITY C1): a warm dashboard on `home` idle (its live countdowns
 * running) natively, with a kernel limit of watches at half its directories (a user namespace of
 * its own: the kernel's ENOSPC, `FallbackBackend`), and with every directory polled (`--poll`,
 * the sweep the dashboard fell back to for the whole home at the first ENOSPC until 12-07):
 * CPU over `IDLE_S` after a 10 s settle, and the inotify watches it held. Natively it watches
 * every directory of the home: the limit is half the watches of that first run. With `wide` (not
 * in a quick run), the wide home too, with the old kernels' default of 8 192 watches and with
 * `--poll`: its ~60 000 files and directories are where the polling sweep's quiet entries take
 * turns (since session 16).
 */
async function degradedSection(home, wide) {
  const out = {};
  const runs = [
    ['native', home, () => ({})],
    ['limited', home, () => ({ watchLimit: out.limit })],
    ['polled', home, () => ({ args: ['--poll'] })],
    ...(wide ? [['wideLimited', wide, () => ({ watchLimit: WIDE_WATCH_LIMIT })], ['widePolled', wide, () => ({ args: ['--poll'] })]] : []),
  ];
  for (const [mode, dir, opts] of runs) {
    const app = startApp({ home: dir, env: appEnv, marksFile: path.join(scratch, `degraded-${mode}-marks.jsonl`), ...opts() });
    try {
      await untilOneTimeWorkDone(app);
      await sleep(10_000);
      const idle = await cpuOver(app.pid(), IDLE_S);
      out[mode] = { idle, watches: procFds(app.pid()).watches };
      log(`  ${mode}: idle ${idle.toFixed(2)} %, ${out[mode].watches} watches`);
    } finally {
      await app.quit();
    }
    if (mode === 'native') {
      out.dirs = out.native.watches;
      out.limit = Math.floor(out.dirs / 2);
    }
  }
  return out;
}

/** The old kernels' default of inotify watches per user (`fs.inotify.max_user_watches`). */
const WIDE_WATCH_LIMIT = 8_192;

// ---- floor ------------------------------------------------------------------------------------

/** Where the dashboard keeps a home's session cache (from the build, set in main). */
let sessionCacheFile;

/**
 * The plain floor (a fresh node listing and stat-ing every file), or with a cache the warm floor,
 * under the bin's flags: exec → the end of its work (`done=`, printed by bench/floor.mjs), and
 * exec → its exit. The work is the floor; the exit (closing the watches, the process's teardown)
 * is nothing a start must do before its populated frame.
 */
function floorOnce(home, cacheFile = null) {
  const t0 = now();
  const flags = cacheFile ? binNodeFlags() : [];
  const out = execFileSync(process.execPath, [...flags, path.join(repo, 'bench', 'floor.mjs'), home, ...(cacheFile ? ['--warm', cacheFile] : [])], { encoding: 'utf8' });
  const exit = now() - t0;
  const done = Number(/ done=([\d.]+)/.exec(out)?.[1]);
  if (!Number.isFinite(done)) throw new Error(`bench/floor.mjs printed no done= mark: ${out.trim()}`);
  return { work: done - t0, exit };
}

// ---- start-up ---------------------------------------------------------------------------------

/**
 * One start: exec → first output, → first frame listing sessions, → populated (first render pass
 * after every home was read); bytes read, peak RSS, fds, watches. With `keys`, '?' is pressed
 * every 50 ms from the first frame until populated (keypress → frame), opening and closing the
 * help. Not '?' and Esc in turn: an Esc and the '?' after it read together (the dashboard held
 * for 50 ms or more) are one key, Alt+?, so the dashboard's count of keys fell behind the
 * presses for good and every later press was matched to a later frame.
 */
async function startOnce(home, { cold, keys = false, sample = false, settleMs = 1500, rows: termRows = 60, noCodeCache = false } = {}) {
  if (cold) clearAppCache();
  const app = startApp({ home, env: { ...appEnv, ...(noCodeCache ? { LOOP_DASH_NO_CODE_CACHE: '1' } : {}) }, rows: termRows, marksFile: path.join(scratch, 'marks.jsonl') });
  let maxRegular = 0;
  let maxWatches = 0;
  let pid = null;
  // The fd sampler (`sample`) reads /proc/<pid>/fdinfo 100 times a second (2 429 inotify lines
  // each on the big home): load the benchmark itself puts on the two cores, worth ~0.5 s of a cold
  // start here. Only the runs that count fds and watches sample; the timed runs do not.
  const sampler = setInterval(() => {
    pid ??= app.pid();
    if (!pid || !sample) return;
    const f = procFds(pid);
    if (f.regular > maxRegular) maxRegular = f.regular;
    if (f.watches > maxWatches) maxWatches = f.watches;
  }, 10);
  try {
    const tOut = await app.waitOutput(/loop-dash/, 30_000);
    const sent = [];
    let keyTimer = null;
    if (keys) {
      keyTimer = setInterval(() => sent.push(app.send('?')), 50);
    }
    const populated = await waitFor(() => firstMark(app.marks(), (m) => m.ev === 'frame' && m.p), 'populated frame', 120_000, 5);
    pid ??= app.pid();
    const ioAtPopulated = procIo(pid);
    // CPU to populated: less moved by the host's load than the wall times (threads that ended, the
    // read worker's, are in the process's utime + stime, in clock ticks).
    // With it, what the host and the bench's other processes took from it: its wait for a core.
    const { cpu: cpuMainPopulated, wait: waitMainPopulated } = mainThreadSchedMs(pid);
    const cpuPopulated = processCpuMs(pid);
    if (keyTimer) {
      await sleep(300);
      clearInterval(keyTimer);
      // An even number of presses leaves the help closed.
      if (sent.length % 2 === 1) sent.push(app.send('?'));
    }
    await sleep(settleMs);
    const ioAfter = procIo(pid);
    const mem = procMem(pid);
    const fds = procFds(pid);
    const marks = app.marks();
    // The first frame listing sessions; the first drawn with every checkpoint (the live requests' clocks).
    const { list: firstList, withCheckpoints } = startFrames(marks);
    const keyLat = [];
    for (let i = 0; i < sent.length; i++) {
      const f = firstMark(marks, (m) => m.ev === 'frame' && m.k >= i + 1, sent[i]);
      keyLat.push(f ? f.t - sent[i] : NaN);
    }
    return {
      firstOutput: tOut - app.t0,
      firstList: firstList ? firstList.t - app.t0 : NaN,
      withCheckpoints: withCheckpoints ? withCheckpoints.t - app.t0 : NaN,
      populated: populated.t - app.t0,
      rcharPopulated: ioAtPopulated.rchar,
      cpuPopulated,
      cpuMainPopulated,
      waitMainPopulated,
      rcharSettled: ioAfter.rchar,
      hwm: mem.hwm,
      maxRegularFds: Math.max(maxRegular, fds.regular),
      watches: Math.max(maxWatches, fds.watches),
      keyLat,
    };
  } finally {
    clearInterval(sampler);
    await app.quit();
  }
}

/**
 * Start-up on both homes, their timed runs interleaved: each round is a cold and a warm start of
 * one home, then of the other (which goes first alternates), so a slow spell of the host lands on
 * both homes' starts of a round and the big ÷ 10 MB ratio is also taken per round (`paired`).
 */
async function startSections(homes) {
  const runs = homes.map(() => ({ cold: [], warm: [], first: [] }));
  for (const [h, { name, home, manifest }] of homes.entries()) {
    log(`start-up on ${name} (${(manifest.totalBytes / MB).toFixed(0)} MB, ${manifest.roots.length} roots, ${manifest.lanes.length} lanes)`);
    // A build's first start (no code cache yet), before the counted runs: it writes the code cache.
    const first = runs[h].first;
    for (let i = 0; i < RUNS; i++) first.push(await startOnce(home, { cold: true, noCodeCache: true }));
    log(`  a build's first start (no code cache), cold: first ${median(first.map((r) => r.firstList)).toFixed(0)} / populated ${median(first.map((r) => r.populated)).toFixed(0)} ms (medians of ${RUNS})`);
    await startOnce(home, { cold: true });
  }
  log(`start-up: ${RUNS} rounds, each a cold/warm pair on each home (the order alternating)`);
  for (let i = 0; i < RUNS; i++) {
    const order = i % 2 === 0 ? [...homes.keys()] : [...homes.keys()].reverse();
    for (const h of order) {
      const { cold, warm } = runs[h];
      cold.push(await startOnce(homes[h].home, { cold: true }));
      warm.push(await startOnce(homes[h].home, { cold: false }));
      log(`  run ${i + 1}, ${homes[h].name}: cold first ${cold[i].firstOutput.toFixed(0)} / list ${cold[i].firstList.toFixed(0)} / checkpoints ${cold[i].withCheckpoints.toFixed(0)} / populated ${cold[i].populated.toFixed(0)} ms (waited for a core ${cold[i].waitMainPopulated.toFixed(0)}); warm ${warm[i].firstOutput.toFixed(0)} / ${warm[i].firstList.toFixed(0)} / ${warm[i].withCheckpoints.toFixed(0)} / ${warm[i].populated.toFixed(0)} ms (${warm[i].waitMainPopulated.toFixed(0)})`);
    }
  }
  const out = [];
  for (const [h, { name, home }] of homes.entries()) {
    const { cold, warm, first } = runs[h];
    const m = (list, k) => median(list.map((r) => r[k]));
    const s = { cold: {}, warm: {}, first: {}, runs: runs[h] };
    for (const [label, list] of [['cold', cold], ['warm', warm], ['first', first]]) {
      for (const k of ['firstOutput', 'firstList', 'withCheckpoints', 'populated', 'rcharPopulated', 'rcharSettled', 'hwm', 'cpuPopulated', 'cpuMainPopulated', 'waitMainPopulated']) s[label][k] = m(list, k);
    }
    // Fds and watches: one more cold/warm pair, sampled every 10 ms (not timed).
    const sampled = { cold: await startOnce(home, { cold: true, sample: true }), warm: await startOnce(home, { cold: false, sample: true }) };
    for (const label of ['cold', 'warm']) {
      s[label].maxRegularFds = sampled[label].maxRegularFds;
      s[label].watches = sampled[label].watches;
    }
    log(`  ${name}: fds/watches pair (sampled, not timed): cold populated ${sampled.cold.populated.toFixed(0)} ms, warm ${sampled.warm.populated.toFixed(0)} ms`);
    // The floor of a warm start (bench/floor.mjs --warm: walk, stat, a watch per directory, the
    // session cache the warm starts left loaded — nothing read, validated or drawn). The 10 MB
    // home's warm start plus the two homes' warm floors' difference is the fastest the big home's
    // warm start could be if everything else cost nothing more there.
    const cacheFile = sessionCacheFile(path.join(appCache, 'loop-dash'), home);
    const floors = [];
    try {
      for (let i = 0; i < RUNS; i++) floors.push(floorOnce(home, cacheFile));
    } catch (err) {
      log(`  warm floor not measured: ${String(err?.message ?? err).split('\n')[0]}`);
    }
    s.warmFloor = floors.length === RUNS ? median(floors.map((f) => f.work)) : NaN;
    s.warmFloorExit = floors.length === RUNS ? median(floors.map((f) => f.exit)) : NaN;
    log(`  ${name}: warm floor (walk, stat, watch, cache load): ${s.warmFloor.toFixed(0)} ms to the end of its work, ${s.warmFloorExit.toFixed(0)} ms to its exit (medians of ${RUNS})`);
    out.push(s);
  }
  return out;
}

/** The median over rounds of the first home's populated time ÷ the second's in the same round. */
function pairedRatio(a, b, label) {
  return median(a.runs[label].map((r, i) => r.populated / b.runs[label][i].populated));
}

// ---- live: appends, bursts, CPU, flood, keys, idle ---------------------------------------------

const ASSISTANT_TEXT = 'Checked the call sites again; the retry options now live in one place and the tests pass. '.repeat(8);

/** One session entry line of `type` at `at` with `fields`, as pi writes it. */
function entryLine(at, type, fields) {
  return JSON.stringify({ type, id: Math.random().toString(16).slice(2, 10), parentId: null, timestamp: new Date(at).toISOString(), ...fields }) + '\n';
}

function appendLine(at) {
  return entryLine(at, 'message', {
    message: { role: 'assistant', content: [{ type: 'text', text: ASSISTANT_TEXT }], api: 'openai-responses', provider: 'openai', model: 'gpt-6.1-sol', usage: { input: 1000, output: 120, cacheRead: 0, cacheWrite: 0, totalTokens: 1120 }, stopReason: 'toolUse', timestamp: Math.round(at) },
  });
}

/**
 * An append that changes a cell on screen: the session renamed (`session_info`), padded to an
 * assistant message's size. An assistant message changes nothing the table shows of these rows
 * (a live root's age is its checkpoint's; the bench's lanes have ended checkpoints): its frame
 * writes nothing, so the latency to the frame is measured with these.
 */
function renameLine(at, n) {
  return entryLine(at, 'session_info', { name: `bench-${String(n).padStart(5, '0')}`, pad: ASSISTANT_TEXT });
}

/** Appends to the home are undone afterwards (size and mtime), so the cached home stays as generated. */
class Restorer {
  constructor() {
    this.files = new Map();
  }
  note(file) {
    if (this.files.has(file)) return;
    const st = fs.statSync(file);
    this.files.set(file, { size: st.size, atime: st.atime, mtime: st.mtime });
  }
  restore() {
    for (const [file, s] of this.files) {
      try {
        fs.truncateSync(file, s.size);
        fs.utimesSync(file, s.atime, s.mtime);
      } catch {
        /* best effort */
      }
    }
    this.files.clear();
  }
}

async function typeFilter(app, text) {
  const marks = app.marks();
  const k0 = marks.filter((m) => m.ev === 'frame').reduce((k, m) => Math.max(k, m.k), 0);
  app.send('\x1b');
  await sleep(60);
  app.send('/');
  await sleep(60);
  app.send(text);
  await sleep(60);
  const t = app.send('\r');
  await waitFor(() => firstMark(app.marks(), (m) => m.ev === 'frame' && m.k >= k0 + 3, t), 'filter applied', 5_000, 10);
}

/**
 * The keys a user presses, not only '?': a tour of the views, each key sent once the frame of the
 * one before is drawn (and 100 ms after it), so no two are read as one. Every key of the tour
 * changes the screen on the bench homes (their roots have lanes, their lists more than a page):
 * move, page, bottom and top; a lane's root, fold and unfold; the four sorts (back to the first);
 * the detail pane and its focus; a filter typed and cleared; the incidents (move, page, a record
 * opened and closed); the bounds audit; the help. Starts and ends on the main list, unfiltered.
 * Returns each key's keypress → frame latency: to the first frame drawn with the key counted, so a
 * key that changed nothing shows as the wait for the next frame drawn for another reason (a
 * countdown's tick: up to a second), and NaN when none came within 2 s (counted apart).
 */
const KEY_TOUR = [
  ...'jjjjjjjjjjkkk'.split(''),
  '\x1b[6~', '\x1b[6~', '\x1b[6~', '\x1b[5~', 'G', 'g',
  'j', 'h', 'h', 'l',
  's', 's', 's', 's',
  '\r', '\t', '\t', '\r',
  '/', 'r', 'o', 'o', '\x1b',
  'i', 'j', 'j', 'j', 'j', 'j', '\x1b[6~', 'G', 'g', '\r', '\x1b', '\x1b',
  'b', 'j', 'j', '\x1b',
  '?', '?',
];

async function keyTour(app) {
  const drawn = () => app.marks().filter((m) => m.ev === 'frame').reduce((k, m) => Math.max(k, m.k), 0);
  const k0 = drawn();
  const lat = [];
  for (let i = 0; i < KEY_TOUR.length; i++) {
    const t = app.send(KEY_TOUR[i]);
    let f = null;
    try {
      f = await waitFor(() => firstMark(app.marks(), (m) => m.ev === 'frame' && m.k >= k0 + i + 1, t), 'frame', 2_000, 2);
    } catch {
      f = null;
    }
    lat.push(f ? f.t - t : NaN);
    await sleep(100);
  }
  return lat;
}

/** p50 / p99 / max of a tour's latencies, and how many keys drew no frame. */
function tourFigures(lat) {
  const drawn = lat.filter(Number.isFinite);
  return { n: lat.length, p50: quantile(drawn, 0.5), p99: quantile(drawn, 0.99), max: Math.max(...drawn), noFrame: lat.length - drawn.length };
}

/** All threads' CPU over `seconds`, % of one core; `split` gets the main thread's share. */
async function cpuOver(pid, seconds, split) {
  const c0 = procCpuMs(pid);
  const m0 = mainThreadCpuMs(pid);
  const t0 = now();
  await sleep(seconds * 1000);
  const dt = now() - t0;
  if (split) split.main = ((mainThreadCpuMs(pid) - m0) / dt) * 100;
  return ((procCpuMs(pid) - c0) / dt) * 100;
}

/** The first output, then the first frame drawn from a model holding every home read: its mark. */
async function untilPopulated(app) {
  await app.waitOutput(/loop-dash/, 30_000);
  return waitFor(() => firstMark(app.marks(), (m) => m.ev === 'frame' && m.p), 'populated', 120_000, 10);
}

/**
 * One-time work after a first start: the search for state entries before the tail windows
 * (cached from then on), and the bounds audit 15 s after start. Steady state comes after.
 */
async function untilOneTimeWorkDone(app) {
  const bg = await waitFor(() => firstMark(app.marks(), (m) => m.ev === 'background'), 'background work done', 600_000, 200);
  const audit = await waitFor(() => firstMark(app.marks(), (m) => m.ev === 'audit'), 'bounds audit done', 120_000, 200);
  return { bg, audit };
}

/** Calls `act(i)` `count` times, the i-th `i × everyMs` after the first; resolves with when it began (now()). */
async function atRate(count, everyMs, act) {
  const t0 = now();
  for (let i = 0; i < count; i++) {
    const wait = t0 + i * everyMs - now();
    if (wait > 1) await sleep(wait);
    act(i);
  }
  return t0;
}

/**
 * CPU at 100 appends/s over `targets`: several windows back to back, the median reported (a single
 * window moved by the host's load by up to 3 points between runs: 11.6-15.5 % for three in a row of
 * the same build). With each window, the app's garbage collections in it (its `gc` marks): the
 * scavenges' count and all pauses' sum — what the work allocates, which the host's load does not
 * move (12-05: 135 scavenges in 40 s on the wide home before 2a9d0d5, 96 after, in runs whose CPU
 * figures overlapped).
 */
async function cpuAt100(app, targets) {
  const pid = app.pid();
  const windows = [];
  for (let w = 0; w < CPU_WINDOWS; w++) {
    const c0 = procCpuMs(pid);
    const m0 = mainThreadCpuMs(pid);
    const t0 = await atRate(CPU_S * 100, 10, (i) => fs.appendFileSync(targets[i % targets.length], appendLine(now())));
    const dt = now() - t0;
    const cpu = ((procCpuMs(pid) - c0) / dt) * 100;
    const main = ((mainThreadCpuMs(pid) - m0) / dt) * 100;
    // The marks are written as the collections end: those of this window are in the file by now.
    const gcs = app.marks().filter((m) => m.ev === 'gc' && m.t >= t0 && m.t <= t0 + dt);
    windows.push({ cpu, main, scavenges: gcs.filter((m) => m.kind === 1).length, gcMs: gcs.reduce((a, m) => a + m.ms, 0) });
  }
  return {
    cpu100Windows: windows,
    cpu100: median(windows.map((w) => w.cpu)),
    cpu100Main: median(windows.map((w) => w.main)),
    scavenges: median(windows.map((w) => w.scavenges)),
    gcMs: median(windows.map((w) => w.gcMs)),
  };
}

/**
 * CPU while 20 lane statuses are rewritten atomically (temp file + rename, as pi-subagents writes
 * them) 10 times a second in all, one window of CPU_S: a running lane's status.json changes at its
 * turns and tools. Each file's contents are put back afterwards.
 */
async function cpuAtLaneStatusRewrites(app, home) {
  const runs = path.join(home, 'tmp', 'async-subagent-runs');
  const files = fs.readdirSync(runs).sort().slice(0, 20).map((d) => path.join(runs, d, 'status.json'));
  const originals = files.map((f) => fs.readFileSync(f, 'utf8'));
  const pid = app.pid();
  try {
    const c0 = procCpuMs(pid);
    const t0 = await atRate(CPU_S * 10, 100, (i) => {
      const k = i % files.length;
      const status = { ...JSON.parse(originals[k]), lastActivityAt: Date.now(), turnCount: i };
      fs.writeFileSync(`${files[k]}.bench-tmp`, JSON.stringify(status));
      fs.renameSync(`${files[k]}.bench-tmp`, files[k]);
    });
    return ((procCpuMs(pid) - c0) / (now() - t0)) * 100;
  } finally {
    files.forEach((f, i) => fs.writeFileSync(f, originals[i]));
  }
}

/**
 * What the number of sessions costs once the home is read: the big home (1 213 sessions) against
 * one of ten times as many small ones (`wide`: 12 013 sessions, 5 000 incidents). Per append, in a
 * fresh node per home (`bench/model-scale.mjs`): the model, snapshot, rows and screen work of one
 * reader batch. Then the dashboard itself on each home (a first start, the one-time background work
 * done): CPU at 100 appends/s over 100 lanes, the same windows as the live section's.
 */
async function scaleSection(homes) {
  const out = {};
  for (const h of homes) {
    const json = execFileSync(process.execPath, [path.join(repo, 'bench', 'model-scale.mjs'), h.home], { encoding: 'utf8', maxBuffer: 1 << 20 });
    out[h.name] = { perAppend: JSON.parse(json.trim().split('\n').pop()) };
    log(`  ${h.name}: ${out[h.name].perAppend.sessions} sessions, ${out[h.name].perAppend.total.toFixed(3)} ms of model and frame work per append`);
  }
  for (const h of homes) {
    log(`  ${h.name}: the dashboard, a first start, then CPU at 100 appends/s over 100 lanes (${CPU_WINDOWS} windows of ${CPU_S} s) …`);
    clearAppCache();
    const app = startApp({ home: h.home, env: appEnv, rows: 60, cols: 200, marksFile: path.join(scratch, `scale-${h.name}-marks.jsonl`) });
    const restorer = new Restorer();
    try {
      out[h.name].populatedCold = (await untilPopulated(app)).t - app.t0;
      await untilOneTimeWorkDone(app);
      await sleep(2000);
      const targets = h.manifest.lanes.slice(0, 100);
      for (const f of targets) restorer.note(f);
      Object.assign(out[h.name], await cpuAt100(app, targets));
      out[h.name].laneStatusCpu = await cpuAtLaneStatusRewrites(app, h.home);
      if (h.sleeper) {
        // Then with nothing live: the home's live pid ends (its liveness socket closes, so the
        // dashboard probes it at once; its probe backstop is 2.5 s), and no countdown runs anywhere.
        log(`  ${h.name}: the live pid ended, CPU at 100 appends/s over the same lanes …`);
        const ended = new Promise((resolve) => h.sleeper.once('exit', resolve));
        h.sleeper.kill('SIGKILL');
        await ended;
        await sleep(3000);
        out[h.name].nothingLive = await cpuAt100(app, targets);
      }
      log(`  ${h.name}: a tour of ${KEY_TOUR.length} keys (move, page, fold, sort, detail, filter, incidents, audit, help) …`);
      out[h.name].keyTour = tourFigures(await keyTour(app));
    } finally {
      await app.quit();
      restorer.restore();
    }
  }
  // A heavy user's start: the wide home warm (its cache written by the first start above), '?'
  // pressed every 50 ms from the first frame until populated, as the keys section does on the big
  // home (our figure, not one of the issue's: its homes are the big and the 10 MB one).
  const wide = homes.find((h) => h.name === 'wide');
  if (wide) {
    const runs = quick ? 2 : RUNS;
    log(`  wide: ${runs} warm starts, ? every 50 ms from the first frame until populated …`);
    const starts = [];
    for (let i = 0; i < runs; i++) starts.push(await startOnce(wide.home, { cold: false, keys: true }));
    out.wide.warmStarts = starts.map((r) => ({ firstList: r.firstList, populated: r.populated, keyLat: r.keyLat }));
  }
  return out;
}

async function liveSection(home, manifest) {
  // Tall enough for every live root with its lanes under the filter (a root that matches lists its
  // lanes): 50 × 6 rows. Until session 20 it was 72 rows, which showed 11 of the 50 (the rest
  // behind "+N more"): the countdown figures were those of 11 countdowns.
  const liveRows = Math.max(72, (manifest.liveCheckpoints?.length ?? 0) * (1 + manifest.lanes.length / manifest.roots.length) + 12);
  log(`live: a first-ever start (no cache) in a ${liveRows}-row terminal, filter "requesting" (the live roots with countdowns, and their lanes)`);
  clearAppCache();
  const app = startApp({ home, env: appEnv, rows: liveRows, cols: 200, marksFile: path.join(scratch, 'live-marks.jsonl') });
  const restorer = new Restorer();
  const out = {};
  try {
    const populated = await untilPopulated(app);
    const pid = app.pid();
    const io0 = procIo(pid).rchar;
    const cpu0 = procCpuMs(pid);
    await typeFilter(app, 'requesting');
    log('  waiting for the one-time background work (deep search, bounds audit) …');
    const { bg, audit } = await untilOneTimeWorkDone(app);
    out.oneTime = {
      backgroundMs: bg.t - populated.t,
      auditAfterMs: audit.t - populated.t,
      rchar: procIo(pid).rchar - io0,
      cpuMs: procCpuMs(pid) - cpu0,
    };
    await sleep(2000);
    // How many lines show a request in flight, as drawn after the filter's last key.
    const keyFrames = app.marks().filter((m) => m.ev === 'frame' && m.q !== undefined);
    out.requestingOnScreen = keyFrames.length > 0 ? keyFrames[keyFrames.length - 1].q : NaN;
    out.liveSessions = manifest.liveCheckpoints?.length ?? 0;

    log(`  idle ${IDLE_S} s with the live countdowns visible (${out.requestingOnScreen} rows requesting on screen) …`);
    out.idleCountdownsSplit = {};
    out.idleCountdowns = await cpuOver(pid, IDLE_S, out.idleCountdownsSplit);

    const visible = manifest.liveRootFiles ?? [];
    // Lanes on screen: those of the live roots (listed under them), one per root first.
    const liveStems = visible.map((f) => f.slice(0, -'.jsonl'.length) + path.sep);
    const perRoot = liveStems.map((stem) => manifest.lanes.filter((l) => l.startsWith(stem)));
    const lanes = [];
    for (let i = 0; lanes.length < 50 && perRoot.some((g) => g.length > i); i++) {
      for (const g of perRoot) if (i < g.length && lanes.length < 50) lanes.push(g[i]);
    }
    const targets = [...visible.slice(0, 50), ...lanes].slice(0, 100);
    for (const f of targets) restorer.note(f);

    log(`  ${APPENDS} appends (each renames its session: a cell on screen changes) over ${targets.length} files at 80/s …`);
    const appends = [];
    const tStart = await atRate(APPENDS, 1000 / 80, (i) => {
      const file = targets[i % targets.length];
      // The clock starts before the write: the app may read the bytes before this process gets
      // to look at the time again.
      const at = now();
      fs.appendFileSync(file, renameLine(at, i));
      appends.push({ file, size: fs.statSync(file).size, t: at });
    });
    await sleep(1500);
    let marks = app.marks();
    let idx = modelIndex(marks);
    const toModel = [];
    const toFrame = [];
    // The appends whose frame wrote to the terminal (a cell of theirs changed on screen).
    const toFrameDrawn = [];
    for (const a of appends) {
      const m = modelAt(idx, a.file, a.size, a.t);
      toModel.push(m ? m.t - a.t : NaN);
      const f = m ? frameAt(marks, m.v, m.t) : null;
      toFrame.push(f ? f.t - a.t : NaN);
      if (f && f.w > 0) toFrameDrawn.push(f.t - a.t);
    }
    out.appendFrameDrawn = { n: toFrameDrawn.length, p50: quantile(toFrameDrawn, 0.5), p99: quantile(toFrameDrawn, 0.99) };
    out.appendModel = { p50: quantile(toModel, 0.5), p99: quantile(toModel, 0.99), missing: toModel.filter((x) => !Number.isFinite(x)).length };
    // An append the model never showed is a correctness failure, not a slow figure: keep what is
    // needed to explain it (the file, its size after the write, every size the model held for it).
    out.appendMissingDetail = appends
      .filter((_, i) => !Number.isFinite(toModel[i]))
      .map((a) => ({
        file: a.file,
        size: a.size,
        atMs: Math.round(a.t - tStart),
        sizeNowOnDisk: fs.statSync(a.file).size,
        modelSizes: (idx.get(a.file) ?? []).map((e) => ({ size: e.size, atMs: Math.round(e.t - tStart), v: e.v })),
      }));
    out.appendFrame = { p50: quantile(toFrame, 0.5), p99: quantile(toFrame, 0.99), missing: toFrame.filter((x) => !Number.isFinite(x)).length };

    log('  bursts: 200 appends back to back to one file, 10 times …');
    const lastOfBurst = [];
    const lastOfBurstFrame = [];
    for (let b = 0; b < 10; b++) {
      const file = targets[b * 7 % targets.length];
      let last = null;
      for (let i = 0; i < 200; i++) {
        const at = now();
        // The last one renames the session: its frame must write.
        fs.appendFileSync(file, i === 199 ? renameLine(at, 10_000 + b) : appendLine(at));
        last = { size: fs.statSync(file).size, t: at };
      }
      await sleep(1200);
      marks = app.marks();
      idx = modelIndex(marks);
      const m = modelAt(idx, file, last.size, last.t);
      lastOfBurst.push(m ? m.t - last.t : NaN);
      const f = m ? frameAt(marks, m.v, m.t) : null;
      lastOfBurstFrame.push(f ? f.t - last.t : NaN);
    }
    out.burstLast = { p50: quantile(lastOfBurst, 0.5), max: Math.max(...lastOfBurst.map((x) => (Number.isFinite(x) ? x : Infinity))) };
    out.burstLastFrame = { p50: quantile(lastOfBurstFrame, 0.5), max: Math.max(...lastOfBurstFrame.map((x) => (Number.isFinite(x) ? x : Infinity))) };

    log(`  CPU at 100 appends/s over ${targets.length} files: ${CPU_WINDOWS} windows of ${CPU_S} s …`);
    Object.assign(out, await cpuAt100(app, targets));
    await sleep(1000);

    log(`  flood: 10 000 lines/s over 10 files for ${FLOOD_S} s …`);
    {
      const files = targets.slice(0, 10);
      const fds = files.map((f) => fs.openSync(f, 'a'));
      const line = appendLine(now());
      const t0 = now();
      let ticks = 0;
      while (now() - t0 < FLOOD_S * 1000) {
        const due = t0 + ticks * 10;
        const wait = due - now();
        if (wait > 1) await sleep(wait);
        for (let f = 0; f < fds.length; f++) fs.writeSync(fds[f], line.repeat(10));
        ticks++;
      }
      const tEnd = now();
      for (const fd of fds) fs.closeSync(fd);
      const finalSizes = files.map((f) => fs.statSync(f).size);
      await sleep(3000);
      marks = app.marks();
      idx = modelIndex(marks);
      let lag = 0;
      let frameLag = 0;
      for (let i = 0; i < files.length; i++) {
        const m = modelAt(idx, files[i], finalSizes[i], t0);
        lag = Math.max(lag, m ? m.t - tEnd : Infinity);
        const f = m ? frameAt(marks, m.v, m.t) : null;
        frameLag = Math.max(frameLag, f ? f.t - tEnd : Infinity);
      }
      out.flood = { lines: ticks * 100, seconds: (tEnd - t0) / 1000, lagModel: lag, lagFrame: frameLag };
    }

    log('  keys: 100 presses of ? every 100 ms …');
    {
      const base = app.marks().filter((m) => m.ev === 'frame').reduce((k, m) => Math.max(k, m.k), 0);
      const sent = [];
      for (let i = 0; i < 100; i++) {
        // '?' alone, the help opened and closed (an Esc and a '?' read together are one key: startOnce).
        sent.push(app.send('?'));
        await sleep(100);
      }
      await sleep(300);
      marks = app.marks();
      const lat = sent.map((t, i) => {
        const f = firstMark(marks, (m) => m.ev === 'frame' && m.k >= base + i + 1, t);
        return f ? f.t - t : NaN;
      });
      out.keys = { p50: quantile(lat, 0.5), p99: quantile(lat, 0.99) };
    }

    // Nothing that moves: a filter no row matches (the header's clock shows minutes). After the
    // flood V8 spends a while shrinking the heap again: measure once that has settled.
    log(`  idle ${IDLE_S} s with nothing changing on screen (a filter no row matches), after ${SETTLE_S} s to settle …`);
    await typeFilter(app, 'zz-no-such-session');
    await sleep(SETTLE_S * 1000);
    out.idleStaticSplit = {};
    out.idleStatic = await cpuOver(pid, IDLE_S, out.idleStaticSplit);
    out.hwm = procMem(pid).hwm;
  } finally {
    await app.quit();
    restorer.restore();
  }
  return out;
}

// ---- main -------------------------------------------------------------------------------------

async function main() {
  if (!fs.existsSync(path.join(repo, 'dist', 'src', 'cli', 'main.js'))) throw new Error('build first: npm run build');
  // The bundle must be at least as new as the compiled modules, or bin/loop-dash.js runs the modules.
  execFileSync(process.execPath, [path.join(repo, 'scripts', 'bundle.mjs')], { stdio: 'inherit' });
  results.bundled = fs.statSync(path.join(repo, 'dist', 'src', 'cli', 'main.bundle.mjs'), { throwIfNoEntry: false }) !== undefined;
  log(`loop-dash bench${quick ? ' (quick)' : ''}: ${results.machine.cpu}, ${results.machine.cores} cores, node ${process.version}`);
  const big = await ensureHome(BIG, log);
  const small = await ensureHome('small', log);
  const same = await ensureHome(quick ? 'small' : 'same', log);
  const sleeper = startSleeper([big.home, small.home, same.home]);
  const { processStartIdentity } = await import(path.join(repo, 'dist', 'src', 'readers', 'process-probe.js'));
  ({ sessionCacheFile } = await import(path.join(repo, 'dist', 'src', 'readers', 'session-cache.js')));
  await sleep(50);
  const pidStart = processStartIdentity(sleeper.pid);
  for (const h of quick ? [big, small] : [big, small, same]) {
    await refreshLiveCheckpoints(h.manifest, sleeper.pid, pidStart, Date.now());
    h.manifest.liveRootFiles = h.manifest.liveCheckpoints.map((cp) => JSON.parse(fs.readFileSync(cp, 'utf8')).sessionFile).filter(Boolean);
  }
  results.homes = Object.fromEntries([['big', big], ['small', small], ...(quick ? [] : [['same', same]])].map(([k, h]) => [k, { dir: h.dir, totalBytes: h.manifest.totalBytes, files: h.manifest.files, roots: h.manifest.roots.length, lanes: h.manifest.lanes.length, largestBytes: h.manifest.largestBytes }]));
  const bigMB = big.manifest.totalBytes / MB;

  try {
    if (want('floor') || want('start')) {
      const fb = [];
      const fs_ = [];
      for (let i = 0; i < RUNS; i++) {
        fb.push(floorOnce(big.home).work);
        fs_.push(floorOnce(small.home).work);
      }
      results.floor = { big: median(fb), small: median(fs_) };
      row('floor', `walk+stat every file, ${bigMB.toFixed(0)} MB home`, results.floor.big, 'ms');
      row('floor', 'walk+stat every file, 10 MB home', results.floor.small, 'ms');
    }

    if (want('start')) {
      const pressure = pressureOver('start');
      // Baseline bytes: the app on a home that does not exist (code loading, terminal).
      const emptyHome = path.join(scratch, 'no-home');
      const empty = startApp({ home: emptyHome, env: appEnv, marksFile: path.join(scratch, 'empty-marks.jsonl') });
      await empty.waitOutput(/loop-dash/, 30_000);
      await sleep(1000);
      const baseRchar = procIo(empty.pid()).rchar;
      await empty.quit();

      const [sb, ss, sq] = await startSections([
        { name: 'big', home: big.home, manifest: big.manifest },
        { name: 'small', home: small.home, manifest: small.manifest },
        // In a quick run the big home is the quick one and no same-count home is made.
        ...(quick ? [] : [{ name: 'same', home: same.home, manifest: same.manifest }]),
      ]);
      const paired = { cold: pairedRatio(sb, ss, 'cold'), warm: pairedRatio(sb, ss, 'warm') };
      const pairedSame = sq ? { cold: pairedRatio(sb, sq, 'cold'), warm: pairedRatio(sb, sq, 'warm') } : null;
      delete sb.runs;
      delete ss.runs;
      if (sq) delete sq.runs;
      results.start = { big: sb, small: ss, same: sq ?? null, baseRchar, paired, pairedSame };
      const share = (r) => (r / big.manifest.totalBytes) * 100;
      const net = (r) => ((r - baseRchar) / big.manifest.totalBytes) * 100;
      row('start', 'exec → first frame (output), big cold', sb.cold.firstOutput, 'ms', '≤ 500', sb.cold.firstOutput <= 500);
      row('start', 'exec → first frame listing sessions, big cold', sb.cold.firstList, 'ms', '≤ 500', sb.cold.firstList <= 500);
      row('start', 'exec → first frame listing sessions, big warm', sb.warm.firstList, 'ms', '≤ 500', sb.warm.firstList <= 500);
      row('start', 'exec → first frame with every checkpoint, big cold', sb.cold.withCheckpoints, 'ms', '≤ 500', sb.cold.withCheckpoints <= 500);
      row('start', 'exec → first frame with every checkpoint, big warm', sb.warm.withCheckpoints, 'ms', '≤ 500', sb.warm.withCheckpoints <= 500);
      row('start', 'exec → fully populated, big cold', sb.cold.populated, 'ms', '≤ 2000', sb.cold.populated <= 2000);
      row('start', 'exec → fully populated, big warm', sb.warm.populated, 'ms', '≤ 1000', sb.warm.populated <= 1000);
      row('start', 'CPU to populated, big cold (all threads / main thread)', `${sb.cold.cpuPopulated.toFixed(0)} / ${sb.cold.cpuMainPopulated.toFixed(0)}`, 'ms');
      row('start', 'CPU to populated, big warm (all threads / main thread)', `${sb.warm.cpuPopulated.toFixed(0)} / ${sb.warm.cpuMainPopulated.toFixed(0)}`, 'ms');
      row('start', 'meanwhile, the main thread waited for a core (the host\'s or the bench\'s load), big cold / warm / 10 MB warm', `${sb.cold.waitMainPopulated.toFixed(0)} / ${sb.warm.waitMainPopulated.toFixed(0)} / ${ss.warm.waitMainPopulated.toFixed(0)}`, 'ms');
      row('start', "a build's first start (no code cache): first frame, big cold", sb.first.firstList, 'ms');
      row('start', "a build's first start (no code cache): CPU to populated (all / main)", `${sb.first.cpuPopulated.toFixed(0)} / ${sb.first.cpuMainPopulated.toFixed(0)}`, 'ms');
      row('start', "a build's first start (no code cache): populated, big cold", sb.first.populated, 'ms');
      row('start', "a build's first start (no code cache): bytes read at populated", share(sb.first.rcharPopulated), '%');
      row('start', 'exec → first frame listing sessions, 10 MB home', ss.cold.firstList, 'ms');
      row('start', 'exec → fully populated, 10 MB cold', ss.cold.populated, 'ms');
      row('start', 'exec → fully populated, 10 MB warm', ss.warm.populated, 'ms');
      // The target's verdict is on the paired ratios (below); the medians' ratios are printed beside them.
      row('start', 'populated big ÷ 10 MB, cold (the medians\' ratio)', sb.cold.populated / ss.cold.populated, '×');
      row('start', 'populated big ÷ 10 MB, warm (the medians\' ratio)', sb.warm.populated / ss.warm.populated, '×');
      row('start', `populated big ÷ 10 MB (a tenth of the counts), cold, paired (median of ${RUNS} rounds' ratios)`, paired.cold, '×', '≤ 1.5', paired.cold <= 1.5);
      row('start', `populated big ÷ 10 MB (a tenth of the counts), warm, paired (median of ${RUNS} rounds' ratios)`, paired.warm, '×', '≤ 1.5', paired.warm <= 1.5);
      if (sq) {
        row('start', `the small-file home with the big home's counts (${(same.manifest.totalBytes / MB).toFixed(0)} MB, ${same.manifest.files} files): populated cold / warm`, `${sq.cold.populated.toFixed(0)} / ${sq.warm.populated.toFixed(0)}`, 'ms');
        row('start', `populated big ÷ the ${(same.manifest.totalBytes / MB).toFixed(0)} MB home of the same counts, cold, paired (median of ${RUNS} rounds' ratios)`, pairedSame.cold, '×', '≤ 1.5', pairedSame.cold <= 1.5);
        row('start', `populated big ÷ the ${(same.manifest.totalBytes / MB).toFixed(0)} MB home of the same counts, warm, paired (median of ${RUNS} rounds' ratios)`, pairedSame.warm, '×', '≤ 1.5', pairedSame.warm <= 1.5);
        row('start', `warm floors, big / the ${(same.manifest.totalBytes / MB).toFixed(0)} MB home of the same counts`, `${sb.warmFloor.toFixed(0)} / ${sq.warmFloor.toFixed(0)}`, 'ms');
      }
      const bound = ss.warm.populated + sb.warmFloor - ss.warmFloor;
      row('start', 'warm floor (walk, stat, watch, cache load; exec → its work done), big / 10 MB', `${sb.warmFloor.toFixed(0)} / ${ss.warmFloor.toFixed(0)}`, 'ms');
      row('start', 'the same to the floor\'s exit (as measured until 12-07), big / 10 MB', `${sb.warmFloorExit.toFixed(0)} / ${ss.warmFloorExit.toFixed(0)}`, 'ms');
      row('start', 'populated big warm, lower bound (10 MB warm + the warm floors\' difference)', bound, 'ms');
      row('start', 'lower bound ÷ 10 MB warm', bound / ss.warm.populated, '×');
      row('start', 'lower bound ÷ 10 MB warm, the floors to their exit (as until 12-07)', (ss.warm.populated + sb.warmFloorExit - ss.warmFloorExit) / ss.warm.populated, '×');
      row('start', 'populated big cold ÷ floor', sb.cold.populated / results.floor.big, '×');
      row('start', 'first list frame big cold ÷ floor', sb.cold.firstList / results.floor.big, '×');
      row('start', 'bytes read at populated, cold (rchar / home)', share(sb.cold.rcharPopulated), '%', '≤ 7', share(sb.cold.rcharPopulated) <= 7);
      row('start', 'bytes read at populated, warm (rchar / home)', share(sb.warm.rcharPopulated), '%', '≤ 1', share(sb.warm.rcharPopulated) <= 1);
      row('start', 'bytes read 1.5 s after populated, cold', share(sb.cold.rcharSettled), '%');
      row('start', 'bytes read 1.5 s after populated, warm', share(sb.warm.rcharSettled), '%');
      row('start', 'of which code and terminal (empty home)', share(baseRchar), '%');
      row('start', 'bytes read at populated net of code, cold', net(sb.cold.rcharPopulated), '%');
      row('start', 'bytes read at populated net of code, warm', net(sb.warm.rcharPopulated), '%');
      row('start', 'peak RSS, big cold', sb.cold.hwm / MB, 'MB', '≤ 200', sb.cold.hwm / MB <= 200);
      row('start', 'peak RSS, big warm', sb.warm.hwm / MB, 'MB', '≤ 200', sb.warm.hwm / MB <= 200);
      row('start', 'peak RSS, 10 MB', ss.cold.hwm / MB, 'MB');
      row('start', 'open regular-file fds (max sampled every 10 ms), big', Math.max(sb.cold.maxRegularFds, sb.warm.maxRegularFds), '', '≤ 32', Math.max(sb.cold.maxRegularFds, sb.warm.maxRegularFds) <= 32);
      row('start', 'inotify watches, big', sb.cold.watches, '');
      row('start', 'inotify watches, 10 MB', ss.cold.watches, '');
      pressure();
    }

    if (want('keys')) {
      const pressure = pressureOver('keys');
      log(`keys during start-up (big, cold): ${RUNS} starts, ? every 50 ms from the first frame`);
      const lat = [];
      for (let i = 0; i < RUNS; i++) lat.push(...(await startOnce(big.home, { cold: true, keys: true })).keyLat);
      const p99 = quantile(lat, 0.99);
      row('keys', `keypress → frame during start-up p50 (n=${lat.length})`, quantile(lat, 0.5), 'ms');
      row('keys', 'keypress → frame during start-up p99', p99, 'ms', '≤ 100', p99 <= 100);
      pressure();
    }

    if (want('live')) {
      const pressure = pressureOver('live');
      const live = await liveSection(big.home, big.manifest);
      results.live = live;
      row('live', `rows requesting on screen (of ${live.liveSessions} live sessions) after the filter`, live.requestingOnScreen, '', `≥ ${live.liveSessions}`, live.requestingOnScreen >= live.liveSessions);
      row('live', `idle CPU, ${live.requestingOnScreen} countdowns visible`, live.idleCountdowns, '%', '≤ 3', live.idleCountdowns <= 3);
      row('live', 'idle CPU, nothing changing on screen', live.idleStatic, '%', '≤ 0.1', live.idleStatic <= 0.1);
      row('live', '  of which the main thread (the rest: V8 and libuv threads)', live.idleStaticSplit?.main, '%');
      row('live', `append → model p50 (${APPENDS} appends)`, live.appendModel.p50, 'ms', '≤ 50', live.appendModel.p50 <= 50);
      row('live', 'append → model p99', live.appendModel.p99, 'ms');
      row('live', 'append → frame p50', live.appendFrame.p50, 'ms', '≤ 50', live.appendFrame.p50 <= 50);
      row('live', 'append → frame p99', live.appendFrame.p99, 'ms', '≤ 250', live.appendFrame.p99 <= 250);
      row('live', `  appends whose frame wrote to the terminal (each should: it renames a row on screen)`, live.appendFrameDrawn.n, '', `${APPENDS}`, live.appendFrameDrawn.n === APPENDS);
      if (live.appendFrame.missing) row('live', 'appends with no frame drawn after them (left out of the frame figures)', live.appendFrame.missing, '');
      if (live.appendModel.missing) {
        row('live', 'appends never seen in the model', live.appendModel.missing, '', '0', false);
        for (const d of live.appendMissingDetail ?? []) log(`  MISSING append: ${JSON.stringify(d)}`);
      }
      row('live', 'last append of a burst → model, max of 10', live.burstLast.max, 'ms', '≤ 250', live.burstLast.max <= 250);
      row('live', 'last append of a burst → frame, max of 10', live.burstLastFrame.max, 'ms', '≤ 250', live.burstLastFrame.max <= 250);
      row('live', 'CPU at 100 appends/s over 100 files', live.cpu100, '%', '≤ 15', live.cpu100 <= 15);
      row('live', '  of which the main thread', live.cpu100Main, '%');
      if (live.cpu100Windows?.length > 1) row('live', `  each of its ${live.cpu100Windows.length} windows (median above)`, live.cpu100Windows.map((w) => w.cpu.toFixed(2)).join(' / '), '%');
      row('live', `  garbage collections in a window of ${CPU_S} s: scavenges, all pauses (medians)`, `${live.scavenges}, ${live.gcMs.toFixed(0)} ms`, '');
      row('live', `flood ${Math.round(live.flood.lines / live.flood.seconds)} lines/s: lag at the end → model`, live.flood.lagModel, 'ms');
      row('live', 'flood: lag at the end → the first frame of that model (these appends change no cell on screen)', live.flood.lagFrame, 'ms');
      row('live', 'keypress → frame p50 (steady)', live.keys.p50, 'ms');
      row('live', 'keypress → frame p99 (steady)', live.keys.p99, 'ms', '≤ 100', live.keys.p99 <= 100);
      row('live', 'peak RSS after the live run', live.hwm / MB, 'MB', '≤ 200', live.hwm / MB <= 200);
      pressure();
      row('once', 'first start ever: populated → background search done', live.oneTime.backgroundMs, 'ms');
      row('once', 'bytes read by it and the bounds audit (share of home)', (live.oneTime.rchar / big.manifest.totalBytes) * 100, '%');
      row('once', 'CPU spent by them', live.oneTime.cpuMs, 'ms');
    }

    if (want('scale')) {
      const pressure = pressureOver('scale');
      const wide = await ensureHome('wide', log);
      // The wide home's own live pid: it ends halfway through, for the CPU with nothing live.
      const wideSleeper = startSleeper([wide.home]);
      const wideStart = await waitFor(() => processStartIdentity(wideSleeper.pid), 'the wide home\'s live pid running', 10_000, 10);
      await refreshLiveCheckpoints(wide.manifest, wideSleeper.pid, wideStart, Date.now());
      log('scale: the big home against one of ten times as many sessions');
      let sc;
      try {
        sc = await scaleSection([
          { name: 'big', home: big.home, manifest: big.manifest },
          { name: 'wide', home: wide.home, manifest: wide.manifest, sleeper: wideSleeper },
        ]);
      } finally {
        wideSleeper.kill('SIGKILL');
      }
      results.scale = sc;
      const b = sc.big.perAppend;
      const w = sc.wide.perAppend;
      row('scale', `model and frame work per append, ${b.sessions} sessions (reduce / snapshot / rows+screen)`, `${b.total.toFixed(3)} (${b.reduce.toFixed(3)} / ${b.snapshot.toFixed(3)} / ${(b.rows + b.nextChange + b.screen).toFixed(3)})`, 'ms');
      row('scale', `model and frame work per append, ${w.sessions} sessions (reduce / snapshot / rows+screen)`, `${w.total.toFixed(3)} (${w.reduce.toFixed(3)} / ${w.snapshot.toFixed(3)} / ${(w.rows + w.nextChange + w.screen).toFixed(3)})`, 'ms');
      row('scale', `  ${(w.sessions / b.sessions).toFixed(1)}× the sessions: × the work per append`, w.total / b.total, '×');
      row('scale', 'model and frame work per lane status rewritten / per state log event, big / wide', `${b.laneStatus?.toFixed(3)} / ${b.stateLog?.toFixed(3)}, ${w.laneStatus?.toFixed(3)} / ${w.stateLog?.toFixed(3)}`, 'ms');
      row('scale', `CPU at 100 appends/s over 100 lanes, ${b.sessions} sessions`, sc.big.cpu100, '%', '≤ 15', sc.big.cpu100 <= 15);
      row('scale', `CPU at 100 appends/s over 100 lanes, ${w.sessions} sessions`, sc.wide.cpu100, '%', '≤ 15', sc.wide.cpu100 <= 15);
      row('scale', `CPU at 10 lane status rewrites/s over 20 lanes, ${b.sessions} / ${w.sessions} sessions (not one of the issue's figures)`, `${sc.big.laneStatusCpu.toFixed(2)} / ${sc.wide.laneStatusCpu.toFixed(2)}`, '%');
      row('scale', `CPU at 100 appends/s over 100 lanes, ${w.sessions} sessions, nothing live (its live pid ended)`, sc.wide.nothingLive.cpu100, '%', '≤ 15', sc.wide.nothingLive.cpu100 <= 15);
      if (CPU_WINDOWS > 1) row('scale', '  each window, wide, nothing live', sc.wide.nothingLive.cpu100Windows.map((x) => x.cpu.toFixed(2)).join(' / '), '%');
      if (CPU_WINDOWS > 1) row('scale', '  each window, big / wide', `${sc.big.cpu100Windows.map((x) => x.cpu.toFixed(2)).join(' ')} / ${sc.wide.cpu100Windows.map((x) => x.cpu.toFixed(2)).join(' ')}`, '%');
      const gcs = (x) => `${x.scavenges} (${x.gcMs.toFixed(0)} ms)`;
      row('scale', `  garbage collections in a window of ${CPU_S} s, big / wide / wide nothing live: scavenges (all pauses), medians`, `${gcs(sc.big)} / ${gcs(sc.wide)} / ${gcs(sc.wide.nothingLive)}`, '');
      row('scale', `first start to populated, wide home (${(wide.manifest.totalBytes / MB).toFixed(0)} MB, ${wide.manifest.files} files)`, sc.wide.populatedCold, 'ms');
      row('scale', `keypress → frame, a tour of ${sc.big.keyTour.n} keys once started, big / wide: p50`, [sc.big.keyTour, sc.wide.keyTour].map((x) => x.p50.toFixed(1)).join(' / '), 'ms');
      row('scale', '  p99 / max, big', `${sc.big.keyTour.p99.toFixed(1)} / ${sc.big.keyTour.max.toFixed(1)}`, 'ms', '≤ 100', sc.big.keyTour.p99 <= 100);
      row('scale', '  p99 / max, wide (not one of the issue\'s homes)', `${sc.wide.keyTour.p99.toFixed(1)} / ${sc.wide.keyTour.max.toFixed(1)}`, 'ms', '≤ 100', sc.wide.keyTour.p99 <= 100);
      row('scale', '  keys of the tour that drew no frame (each changes the screen), big / wide', `${sc.big.keyTour.noFrame} / ${sc.wide.keyTour.noFrame}`, '', '0', sc.big.keyTour.noFrame + sc.wide.keyTour.noFrame === 0);
      const ws = sc.wide.warmStarts;
      const wideLat = ws.flatMap((r) => r.keyLat);
      row('scale', `warm start of the wide home: first list frame / populated, medians of ${ws.length}`, `${median(ws.map((r) => r.firstList)).toFixed(0)} / ${median(ws.map((r) => r.populated)).toFixed(0)}`, 'ms');
      row('scale', `  keypress → frame during it p50 / p99 (n=${wideLat.length}; not one of the issue's figures)`, `${quantile(wideLat, 0.5).toFixed(1)} / ${quantile(wideLat, 0.99).toFixed(1)}`, 'ms');
      pressure();
    }

    if (want('remote')) {
      const pressure = pressureOver('remote');
      log('remote: each home served by `loop-dash serve`, a dashboard attached with --remote');
      const rm = await remoteSection([
        { name: 'big', home: big.home },
        { name: 'small', home: small.home },
      ]);
      results.remote = rm;
      row('remote', `exec → every root shown, a dashboard with an empty home and --remote on the home's serve, big / 10 MB (medians of ${RUNS})`, `${median(rm.big.attach).toFixed(0)} / ${median(rm.small.attach).toFixed(0)}`, 'ms');
      row('remote', '  big ÷ 10 MB, paired (not one of the issue\'s figures: what a start attached to a resident process reads)', median(rm.big.attach.map((b, i) => b / rm.small.attach[i])), '×');
      row('remote', 'the status document the dashboard fetches every 5 s, big / 10 MB', `${(rm.big.docBytes / MB).toFixed(2)} / ${(rm.small.docBytes / MB).toFixed(2)}`, 'MB');
      row('remote', `idle CPU over ${IDLE_S} s, the dashboard attached to the big home's serve (the issue's idle target is a local home's)`, rm.big.idleDashboard, '%');
      row('remote', '  the serving process meanwhile', rm.big.idleServer, '%');
      pressure();
    }

    if (want('status')) {
      const pressure = pressureOver('status');
      log('status: `loop-dash status --json` on the big home, the first run with no session cache, then with the one it left');
      const st = statusSection(big.home);
      results.status = st;
      const share = (r) => (r / big.manifest.totalBytes) * 100;
      row('status', `exec → exit, the first run (no cache) / later runs (median of ${RUNS})`, `${st.first.ms.toFixed(0)} / ${median(st.again.map((r) => r.ms)).toFixed(0)}`, 'ms');
      row('status', 'bytes read (rchar / home), the first run / later runs', `${share(st.first.rchar).toFixed(2)} / ${share(median(st.again.map((r) => r.rchar))).toFixed(3)}`, '%');
      row('status', 'the JSON document printed', st.first.bytes / MB, 'MB');
      pressure();
    }

    if (want('degraded')) {
      const pressure = pressureOver('degraded');
      log('degraded: the big home idle natively, with a kernel limit of watches at half its directories, and all polled (--poll); the wide home limited to 8 192 watches and all polled');
      const wide = quick ? null : (await ensureHome('wide', log)).home;
      const dg = await degradedSection(big.home, wide);
      results.degraded = dg;
      row('degraded', `idle CPU over ${IDLE_S} s, big: native / watches limited to half its ${dg.dirs} directories / all polled (not one of the issue's figures)`, `${dg.native.idle.toFixed(2)} / ${dg.limited.idle.toFixed(2)} / ${dg.polled.idle.toFixed(2)}`, '%');
      row('degraded', '  inotify watches held: native / limited (the limit) / all polled', `${dg.native.watches} / ${dg.limited.watches} (${dg.limit}) / ${dg.polled.watches}`, '');
      if (dg.wideLimited) {
        row('degraded', `idle CPU over ${IDLE_S} s, wide: watches limited to ${WIDE_WATCH_LIMIT} / all polled`, `${dg.wideLimited.idle.toFixed(2)} / ${dg.widePolled.idle.toFixed(2)}`, '%');
      }
      pressure();
    }

    if (withHuge) {
      const free = Number(execFileSync('df', ['-k', '--output=avail', cacheRoot()], { encoding: 'utf8' }).split('\n')[1]) * 1024;
      const needed = 12 * 2 ** 30;
      if (free < needed * 2) {
        row('huge', '10 GB home', 'skipped', '', `needs ${needed / 2 ** 30} GB free ×2, have ${(free / 2 ** 30).toFixed(0)} GB`);
      } else {
        const huge = await ensureHome('huge', log);
        await refreshLiveCheckpoints(huge.manifest, sleeper.pid, pidStart, Date.now());
        const a = [];
        const b = [];
        for (let i = 0; i < Math.min(RUNS, 3); i++) {
          a.push((await startOnce(big.home, { cold: true })).hwm);
          b.push((await startOnce(huge.home, { cold: true })).hwm);
        }
        const ra = median(a);
        const rb = median(b);
        const diff = (Math.abs(rb - ra) / ra) * 100;
        row('huge', `peak RSS, ${(huge.manifest.totalBytes / 2 ** 30).toFixed(1)} GB home, cold`, rb / MB, 'MB');
        row('huge', 'peak RSS, 1 GB home, cold (same run)', ra / MB, 'MB');
        row('huge', 'RSS difference 10 GB vs 1 GB', diff, '%', '< 10', diff < 10);
      }
    }
  } finally {
    sleeper.kill();
    fs.rmSync(scratch, { recursive: true, force: true });
  }

  // Report.
  const w = Math.max(...rows.map((r) => r.name.length));
  let section = '';
  const lines = [];
  for (const r of rows) {
    if (r.section !== section) {
      section = r.section;
      lines.push(`\n[${section}]`);
    }
    const verdict = r.ok === null ? '' : r.ok ? '  ok' : '  MISS';
    lines.push(`  ${r.name.padEnd(w)}  ${fmt(r.value, r.unit).padStart(9)} ${r.unit.padEnd(2)}  ${r.target ? `target ${r.target}` : ''}${verdict}`);
  }
  process.stdout.write(`loop-dash bench — ${results.machine.cpu} × ${results.machine.cores}, ${results.machine.memGB} GB, node ${process.version}; big home ${bigMB.toFixed(0)} MB (${big.manifest.roots.length} roots, ${big.manifest.lanes.length} lanes, largest ${(big.manifest.largestBytes / MB).toFixed(0)} MB, ${big.manifest.files} files); medians of ${RUNS}\n`);
  // A quick run (--quick, or CI=true) is said on stdout, with what it shortens: its verdicts are
  // against the 1 GB home's targets but measured on less.
  if (quick) process.stdout.write(`QUICK RUN${/^(1|true)$/i.test(process.env.CI ?? '') ? ' (CI=true)' : ''}: the big home is the ${bigMB.toFixed(0)} MB quick home, idle windows ${IDLE_S} s, ${APPENDS} appends, ${CPU_WINDOWS} CPU window of ${CPU_S} s, a ${FLOOD_S} s flood, ${SETTLE_S} s settle, no 10 MB home with the same counts; not the issue's figures\n`);
  process.stdout.write(lines.join('\n') + '\n');
  const resultsDir = path.join(cacheRoot(), 'results');
  fs.mkdirSync(resultsDir, { recursive: true });
  const file = path.join(resultsDir, `${results.at.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify({ ...results, rows }, null, 2));
  process.stdout.write(`\nresults: ${file}\n`);
  const missed = rows.filter((r) => r.ok === false).length;
  process.stdout.write(`${missed} target${missed === 1 ? '' : 's'} missed\n`);
}

await main();
