#!/usr/bin/env node
/**
 * Where a start's time goes on the big home against the 10 MB home: CPU profiles (V8's sampling
 * profiler, `--cpu-prof`) of starts of both homes, cut at the populated frame, summed by function
 * and by group (garbage collection, `stat`, the cache's `v8.deserialize`, the watches, Node's
 * internals, loop-dash and its libraries), the big home's minus the 10 MB home's; and the big
 * home's time by start phase (the timing marks `start`, `listed`, `checkpoints`, the first list
 * frame, `tails`, `ready`, populated).
 *
 *   node bench/profile-start.mjs [--cold] [--runs N] [--top N]
 *
 * Warm by default (each home started once first to write its session cache; cold: no cache at
 * each start). Each home is started once more first, so V8's code cache for these flags exists.
 * The dashboard runs as `node <the bin's V8 flags> --cpu-prof bin/loop-dash.js` (the profiler
 * itself adds ~10 % to a start: compare the two homes, not these times with the benchmark's).
 * The profile's samples are put on the marks' clock by the `start` mark's `origin` and `mono`.
 * The profiles are kept in ~/.cache/loop-dash-bench/profiles/<time>/ for a closer look
 * (e.g. Chrome's DevTools). See docs/PERFORMANCE.md ("Method").
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cacheRoot, ensureHome, refreshLiveCheckpoints } from './gen-home.mjs';
import { binNodeFlags, clearHomeCaches, firstMark, median, repo, startApp, startSleeper, waitFor } from './lib.mjs';

const argv = process.argv.slice(2);
const numberAfter = (flag, fallback) => {
  const at = argv.indexOf(flag);
  return at >= 0 ? Number(argv[at + 1]) : fallback;
};
const cold = argv.includes('--cold');
const RUNS = numberAfter('--runs', 3);
const TOP = numberAfter('--top', 25);
if (!(RUNS >= 1) || !(TOP >= 1)) {
  process.stderr.write('usage: node bench/profile-start.mjs [--cold] [--runs N] [--top N]\n');
  process.exit(2);
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-profile-'));
const appCache = path.join(scratch, 'cache');
const env = { XDG_CACHE_HOME: appCache, XDG_STATE_HOME: path.join(scratch, 'state') };
const keep = path.join(cacheRoot(), 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));
fs.mkdirSync(keep, { recursive: true });

/** What a sample's function is, by group. */
function groupOf(frame) {
  const { functionName: f, url } = frame;
  if (f === '(garbage collector)') return 'garbage collection';
  if (f === '(program)' || f === '(root)') return 'V8 (program)';
  if (!url && /^(stat|lstat|fstat)$/.test(f)) return 'stat';
  if (!url && f === 'readdir') return 'readdir';
  if (url === 'node:v8' && f === 'deserialize') return 'the cache (v8.deserialize)';
  if (/watchers$/.test(url) || (url === 'node:fs' && f === 'watch')) return 'watches';
  if (url.startsWith('node:') || !url) return "Node's internals and native";
  return 'JavaScript (loop-dash, libraries)';
}

const keyOf = (frame) => `${frame.functionName || '(anonymous)'} ${frame.url.split('/').pop()}:${frame.lineNumber + 1}:${frame.columnNumber + 1}`;

/** The phases of a start by its marks: [name, from, to] in epoch ms. */
function phasesOf(marks, populatedT) {
  const at = (pred) => firstMark(marks, pred)?.t;
  const edges = [
    ['start', at((m) => m.ev === 'start')],
    ['listed', at((m) => m.ev === 'listed')],
    ['checkpoints', at((m) => m.ev === 'checkpoints')],
    ['first list frame', at((m) => m.ev === 'frame' && m.r > 0)],
    ['tails', at((m) => m.ev === 'tails')],
    ['ready', at((m) => m.ev === 'ready')],
    ['populated', populatedT],
  ].filter(([, t]) => t !== undefined);
  return edges.slice(0, -1).map(([name, t], i) => [`${name} → ${edges[i + 1][0]}`, t, edges[i + 1][1]]);
}

/** Profiles `runs` starts of `home`; self time (ms, per start) by function, by group and by phase. */
async function profileHome(name, home) {
  const byFunction = new Map();
  const byGroup = new Map();
  const byPhase = new Map();
  const populated = [];
  const add = (map, key, ms) => map.set(key, (map.get(key) ?? 0) + ms / RUNS);
  for (let i = 0; i <= RUNS; i++) {
    if (cold || i === 0) clearHomeCaches(path.join(appCache, 'loop-dash'));
    const profDir = path.join(scratch, `${name}-${i}`);
    const marksFile = path.join(scratch, `${name}-${i}.jsonl`);
    const app = startApp({ home, env, marksFile, nodeArgs: [...binNodeFlags(), '--cpu-prof', `--cpu-prof-dir=${profDir}`] });
    let pop;
    try {
      pop = await waitFor(() => firstMark(app.marks(), (m) => m.ev === 'frame' && m.p), `${name}: the populated frame`, 120_000, 5);
    } finally {
      await app.quit();
    }
    // The first start of each home writes V8's code cache for these flags (and, warm, the session cache).
    if (i === 0) continue;
    const file = await waitFor(() => fs.existsSync(profDir) && fs.readdirSync(profDir).find((n) => n.endsWith('.cpuprofile')), `${name}: a profile in ${profDir}`, 30_000, 20);
    // Written at exit: wait until it parses.
    const profile = await waitFor(() => {
      try {
        return JSON.parse(fs.readFileSync(path.join(profDir, file), 'utf8'));
      } catch {
        return null;
      }
    }, `${name}: the profile complete`, 30_000, 50);
    fs.copyFileSync(path.join(profDir, file), path.join(keep, `${name}-${cold ? 'cold' : 'warm'}-${i}.cpuprofile`));
    const marks = app.marks();
    const start = marks.find((m) => m.ev === 'start');
    if (start?.mono === undefined) throw new Error(`${name}: the start mark has no monotonic clock (a build before 12-05)`);
    const epochOf = (us) => start.origin + us / 1000 - start.mono;
    const phases = phasesOf(marks, pop.t);
    populated.push(pop.t - app.t0);
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    let t = profile.startTime;
    for (let k = 0; k < profile.samples.length; k++) {
      t += profile.timeDeltas[k];
      const when = epochOf(t);
      if (when > pop.t) break;
      const frame = nodes.get(profile.samples[k]).callFrame;
      if (frame.functionName === '(idle)') continue;
      // A sample stands for the time until the next one.
      const ms = (profile.timeDeltas[k + 1] ?? 0) / 1000;
      add(byFunction, keyOf(frame), ms);
      add(byGroup, groupOf(frame), ms);
      const phase = phases.find(([, from, to]) => when >= from && when < to)?.[0] ?? 'before the start mark';
      add(byPhase, phase, ms);
    }
  }
  return { byFunction, byGroup, byPhase, populated };
}

const fmt = (ms) => ms.toFixed(1).padStart(7);
const sum = (map) => [...map.values()].reduce((a, b) => a + b, 0);

const big = await ensureHome('big', (s) => process.stderr.write(`${s}\n`));
const small = await ensureHome('small', (s) => process.stderr.write(`${s}\n`));
const sleeper = startSleeper([big.home, small.home]);
try {
  const { processStartIdentity } = await import(path.join(repo, 'dist', 'src', 'readers', 'process-probe.js'));
  const pidStart = await waitFor(() => processStartIdentity(sleeper.pid), 'the live pid running', 10_000, 10);
  for (const h of [big, small]) await refreshLiveCheckpoints(h.manifest, sleeper.pid, pidStart, Date.now());
  const a = await profileHome('big', big.home);
  const b = await profileHome('small', small.home);
  console.log(`profile-start — ${cold ? 'cold' : 'warm'}, ${RUNS} start(s) per home, main thread's self time to the populated frame, ms per start`);
  console.log(`populated (profiled), median: big ${median(a.populated).toFixed(0)} ms, 10 MB ${median(b.populated).toFixed(0)} ms; main thread busy: big ${sum(a.byGroup).toFixed(0)} ms, 10 MB ${sum(b.byGroup).toFixed(0)} ms`);
  const diff = (x, y) =>
    [...new Set([...x.keys(), ...y.keys()])].map((k) => [k, (x.get(k) ?? 0) - (y.get(k) ?? 0), x.get(k) ?? 0, y.get(k) ?? 0]).sort((p, q) => q[1] - p[1]);
  console.log('\nby group          big − 10 MB      big   10 MB');
  for (const [k, d, x, y] of diff(a.byGroup, b.byGroup)) console.log(`${fmt(d)}  ${fmt(x)} ${fmt(y)}  ${k}`);
  console.log(`\nby function (the ${TOP} that differ most)  big − 10 MB      big   10 MB`);
  for (const [k, d, x, y] of diff(a.byFunction, b.byFunction).slice(0, TOP)) console.log(`${fmt(d)}  ${fmt(x)} ${fmt(y)}  ${k}`);
  console.log('\nby phase (big home)');
  for (const [k, v] of a.byPhase) console.log(`${fmt(v)}  ${k}`);
  console.log(`\nprofiles: ${keep}`);
} finally {
  sleeper.kill('SIGKILL');
  fs.rmSync(scratch, { recursive: true, force: true });
}
