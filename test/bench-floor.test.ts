/**
 * The benchmark's floors (bench/floor.mjs; docs/PERFORMANCE.md, "Method"): the plain floor walks
 * and stats every file of a home, the warm floor loads a session cache and walks the home as a
 * warm start does. Both print when their work was done (`done=`, ms since the epoch), which the
 * benchmark takes as the floor — not the process's exit, which closes the watches first. Checked
 * on a demo home: the counts are the home's, and the mark lies between the spawn and the exit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateHome } from '../src/demo/generate.js';
import { HomeReader } from '../src/readers/home-reader.js';
import { sessionCacheFile } from '../src/readers/session-cache.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const floorScript = path.join(repo, 'bench', 'floor.mjs');

/** Every regular file under `dir` (symbolic links not followed) and their bytes. */
function regularFiles(dir: string): { files: number; bytes: number; dirs: number } {
  let files = 0;
  let bytes = 0;
  let dirs = 1;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      const sub = regularFiles(p);
      files += sub.files;
      bytes += sub.bytes;
      dirs += sub.dirs;
    } else if (e.isFile()) {
      files++;
      bytes += lstatSync(p).size;
    }
  }
  return { files, bytes, dirs };
}

/** Runs the floor; its printed fields, with the spawn's and the exit's times on the same clock. */
function runFloor(args: string[]): Promise<{ fields: number[]; done: number; spawned: number; exited: number }> {
  const spawned = performance.timeOrigin + performance.now();
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [floorScript, ...args], { encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      const exited = performance.timeOrigin + performance.now();
      if (err) return reject(new Error(`${floorScript} failed: ${err.message}\n${stderr}`));
      const line = stdout.trim();
      const m = /^([\d ]+) done=([\d.]+)$/.exec(line);
      if (!m) return reject(new Error(`${floorScript} printed an unexpected line: ${line}`));
      resolve({ fields: m[1]!.trim().split(' ').map(Number), done: Number(m[2]), spawned, exited });
    });
  });
}

test('the floors count the home and mark the end of their work before their exit', async (t) => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-bench-floor-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const home = path.join(base, 'home');
  await generateHome(home, { now: NOW, host: 'test-host', livePid: 4_000_000, livePidStart: null, deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
  const want = regularFiles(home);
  assert.ok(want.files > 20, `the demo home has files (${want.files})`);

  const plain = await runFloor([home]);
  assert.deepEqual(plain.fields, [want.files, want.bytes], 'the plain floor: every file and its bytes');
  assert.ok(plain.spawned < plain.done && plain.done <= plain.exited, `done=${plain.done} between the spawn ${plain.spawned} and the exit ${plain.exited}`);

  // A cache as a start leaves it, then the warm floor on it.
  const cacheDir = path.join(base, 'cache');
  const reader = new HomeReader({ home, emit: () => undefined, watch: false, now: () => NOW, host: 'test-host', cacheDir });
  await reader.start();
  await reader.stop();
  const cacheFile = sessionCacheFile(cacheDir, home);
  assert.ok(readFileSync(cacheFile).length > 0, 'the start left a session cache');
  const warm = await runFloor([home, '--warm', cacheFile]);
  const [files, bytes, dirs, read, entries] = warm.fields;
  // The warm floor walks what a start walks — every directory of the demo home — and counts files
  // from listings and incident bundles. (The directories it reads rather than take from the cache
  // are most of them here: a directory changed just before the cache was written is not trusted.)
  assert.equal(files, want.files, 'the warm floor: every file');
  assert.equal(bytes, want.bytes, 'the warm floor: every byte');
  assert.equal(dirs, want.dirs, 'the warm floor: every directory');
  assert.ok(read! <= dirs!, `directories read: ${read} of ${dirs}`);
  assert.ok(entries! > 0, 'the cache had entries');
  assert.ok(warm.spawned < warm.done && warm.done <= warm.exited, `done=${warm.done} between the spawn ${warm.spawned} and the exit ${warm.exited}`);
});
