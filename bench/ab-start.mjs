#!/usr/bin/env node
/**
 * Interleaved start-up runs of two builds on the benchmark's big home: the working tree against
 * a base revision, side by side in one run (this host's load comes and goes, so two builds are
 * compared only with their runs interleaved).
 *
 *   node bench/ab-start.mjs <base-rev> [--rounds N] [--quick]
 *
 * Checks out <base-rev> in a temporary git worktree (its node_modules linked to this tree's),
 * builds both, then per round a cold and a warm start of each build, the order alternating
 * between rounds. Prints each run and, per figure, both medians and the median of the paired
 * differences (this tree − base). The worktree is removed at the end. See docs/PERFORMANCE.md.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureHome, refreshLiveCheckpoints } from './gen-home.mjs';
import { clearHomeCaches, firstMark, mainThreadCpuMs, median, processCpuMs, repo, sleep, startFrames, startSleeper, waitFor } from './lib.mjs';

const argv = process.argv.slice(2);
const base = argv.find((a) => !a.startsWith('--'));
const roundsAt = argv.indexOf('--rounds');
const ROUNDS = roundsAt >= 0 ? Number(argv[roundsAt + 1]) : 7;
const quick = argv.includes('--quick') || /^(1|true)$/i.test(process.env.CI ?? '');
if (!base || !(ROUNDS > 0)) {
  process.stderr.write('usage: node bench/ab-start.mjs <base-rev> [--rounds N] [--quick]\n');
  process.exit(2);
}
const log = (...a) => process.stderr.write(`${a.join(' ')}\n`);
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-ab-'));
const baseTree = path.join(scratch, 'base');

/** Builds a tree (compiled modules and the bundle bin/loop-dash.js runs). */
function build(tree) {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: tree, stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync(process.execPath, [path.join(tree, 'scripts', 'bundle.mjs')], { cwd: tree, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** One start of the build in `tree`: exec → first list frame, → frame with every checkpoint, → populated. */
async function startOnce(lib, tree, home, cold) {
  const cache = path.join(scratch, `cache-${path.basename(tree)}`);
  // A cold start keeps the code cache (bench/lib.mjs clearHomeCaches).
  if (cold) clearHomeCaches(path.join(cache, 'loop-dash'));
  const app = lib.startApp({ home, env: { XDG_CACHE_HOME: cache, XDG_STATE_HOME: path.join(scratch, 'state') }, marksFile: path.join(scratch, 'marks.jsonl') });
  try {
    await app.waitOutput(/loop-dash/, 30_000);
    const populated = await waitFor(() => firstMark(app.marks(), (m) => m.ev === 'frame' && m.p), 'populated frame', 120_000, 5);
    // CPU to populated (as bench/run.mjs): less moved by the host's load than the wall times, so a
    // change of 10–20 ms shows where the wall times' swings hide it.
    const pid = app.pid();
    const cpuMain = mainThreadCpuMs(pid);
    const cpu = processCpuMs(pid);
    const { list, withCheckpoints } = startFrames(app.marks());
    return { list: list ? list.t - app.t0 : NaN, checkpoints: withCheckpoints ? withCheckpoints.t - app.t0 : NaN, populated: populated.t - app.t0, cpuMain, cpu };
  } finally {
    await app.quit();
    await sleep(200);
  }
}

async function main() {
  const rev = execFileSync('git', ['rev-parse', '--short', base], { cwd: repo, encoding: 'utf8' }).trim();
  log(`ab-start: this tree against ${base} (${rev}), ${ROUNDS} rounds`);
  execFileSync('git', ['worktree', 'add', '--detach', baseTree, rev], { cwd: repo, stdio: 'ignore' });
  try {
    fs.symlinkSync(path.join(repo, 'node_modules'), path.join(baseTree, 'node_modules'));
    log('building both …');
    build(baseTree);
    build(repo);
    const { home, manifest } = await ensureHome(quick ? 'quick' : 'big', log);
    // As in bench/run.mjs: the live checkpoints' process listens on its liveness socket in the
    // home, so a start links to it as it would to a live pi (the link's probe is part of a start).
    const sleeper = startSleeper([home]);
    try {
      const { processStartIdentity } = await import(path.join(repo, 'dist', 'src', 'readers', 'process-probe.js'));
      await sleep(50);
      await refreshLiveCheckpoints(manifest, sleeper.pid, processStartIdentity(sleeper.pid), Date.now());
      const trees = { base: baseTree, this: repo };
      const libs = { base: await import(path.join(baseTree, 'bench', 'lib.mjs')), this: await import(path.join(repo, 'bench', 'lib.mjs')) };
      const runs = { base: [], this: [] };
      // One start of each build first, not counted: a build's first start writes its code cache.
      for (const which of ['base', 'this']) await startOnce(libs[which], trees[which], home, true);
      for (let round = 0; round < ROUNDS; round++) {
        for (const which of round % 2 === 0 ? ['base', 'this'] : ['this', 'base']) {
          const cold = await startOnce(libs[which], trees[which], home, true);
          const warm = await startOnce(libs[which], trees[which], home, false);
          runs[which][round] = { cold, warm };
          log(`  round ${round + 1} ${which.padEnd(4)}: cold ${cold.list.toFixed(0)} / ${cold.checkpoints.toFixed(0)} / ${cold.populated.toFixed(0)} ms; warm ${warm.list.toFixed(0)} / ${warm.checkpoints.toFixed(0)} / ${warm.populated.toFixed(0)} ms`);
        }
      }
      console.log(`\nab-start — ${ROUNDS} rounds, this tree against ${base} (${rev}); medians, ms`);
      console.log(`${'figure'.padEnd(34)}${'base'.padStart(8)}${'this'.padStart(8)}${'paired Δ'.padStart(10)}`);
      for (const start of ['cold', 'warm']) {
        for (const figure of ['list', 'checkpoints', 'populated', 'cpuMain', 'cpu']) {
          const b = runs.base.map((r) => r[start][figure]);
          const t = runs.this.map((r) => r[start][figure]);
          const d = t.map((v, i) => v - b[i]);
          const name = { cpuMain: 'CPU to populated, main thread', cpu: 'CPU to populated, process' }[figure] ?? figure;
          console.log(`${`${start} ${name}`.padEnd(34)}${median(b).toFixed(0).padStart(8)}${median(t).toFixed(0).padStart(8)}${median(d).toFixed(0).padStart(10)}`);
        }
      }
    } finally {
      sleeper.kill();
    }
  } finally {
    execFileSync('git', ['worktree', 'remove', '--force', baseTree], { cwd: repo, stdio: 'ignore' });
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
