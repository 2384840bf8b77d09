#!/usr/bin/env node
// Runs every compiled test file with node:test and fails when no test ran.
// Node 20's runner neither discovers .tsx output nor expands quoted globs, so the list is explicit.
// TEST_FILTER=substring limits the files (for local iteration).
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const testDir = path.join(root, 'dist', 'test');

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...walk(full));
    else if (name.endsWith('.test.js')) out.push(full);
  }
  return out;
}

const filter = process.env.TEST_FILTER ?? '';
const files = walk(testDir).filter((f) => path.relative(testDir, f).includes(filter));
if (files.length === 0) {
  console.error(`run-tests: no test files found under ${testDir}${filter ? ` matching "${filter}"` : ''}`);
  process.exit(1);
}

const scratch = mkdtempSync(path.join(tmpdir(), 'loop-dash-tests-'));
// The tests' temporary directory (os.tmpdir(): their homes, caches and scratch files, and those of
// the processes they start) is one directory removed at the end, so a test that does not clean up
// after itself leaves nothing behind (runs used to leave ~17 MB each in /tmp). Its name is short:
// a liveness socket in a test home must still fit a socket address (src/contract/paths.ts).
const testTmp = mkdtempSync(path.join(tmpdir(), 'ldt-'));
// As open as /tmp itself (sticky, world-writable): some tests run a child as the user nobody in it.
chmodSync(testTmp, 0o1777);
const concurrency = process.env.TEST_CONCURRENCY ?? '2';
// Timing-sensitive measurements (the soak's event-loop delay) run alone, after everything else,
// so another test's CPU burst is not counted as the app blocking its own event loop.
const isSerial = (f) => /soak/.test(path.basename(f));
const phases = [
  { files: files.filter((f) => !isSerial(f)), concurrency },
  { files: files.filter(isSerial), concurrency: '1' },
].filter((p) => p.files.length > 0);

let status = 0;
const reports = [];
for (const [i, phase] of phases.entries()) {
  const tap = path.join(scratch, `report-${i}.tap`);
  const result = spawnSync(
    process.execPath,
    [
      '--test',
      `--test-concurrency=${phase.concurrency}`,
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=tap',
      `--test-reporter-destination=${tap}`,
      ...phase.files,
    ],
    // The dashboards and servers the tests start keep their session cache in the scratch
    // directory, not in the user's ~/.cache (LOOP_DASH_CACHE_DIR; the tmux panes inherit it).
    { stdio: 'inherit', cwd: root, env: { ...process.env, FORCE_COLOR: '0', LOOP_DASH_CACHE_DIR: path.join(scratch, 'session-cache'), TMPDIR: testTmp } },
  );
  if (result.status !== 0) status = result.status ?? 1;
  reports.push(readFileSync(tap, 'utf8'));
}
rmSync(scratch, { recursive: true, force: true });
rmSync(testTmp, { recursive: true, force: true });
const sum = (name) =>
  reports.reduce((n, report) => n + Number(/^# (\w+) (\d+)$/m.exec(report.split('\n').filter((l) => l.startsWith(`# ${name} `)).pop() ?? '')?.[2] ?? 0), 0);
const tests = sum('tests');
const pass = sum('pass');
const fail = sum('fail');
const skipped = sum('skipped') + sum('todo');
if (!(tests > 0)) {
  console.error('run-tests: the run executed no test; failing.');
  process.exit(1);
}
console.log(`${pass} passed, ${fail} failed, ${skipped} skipped`);
process.exit(status === 0 && fail === 0 ? 0 : 1);
