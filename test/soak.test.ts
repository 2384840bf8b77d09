/**
 * RELIABILITY soak (issue 7): 20 appends/s over several session files, one checkpoint rewrite/s and
 * one incident a minute, against the data path in its own process. Heap and RSS must plateau, fds
 * and inotify watches stay constant, event-loop delay p99 < 20 ms.
 * Length: SOAK_SECONDS (default 60 in `npm test`; `npm run soak` runs 600; the note reports 3600).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { utcStamp } from '../src/contract/paths.js';
import { assistantEntry, customEntry, tempHome, writeRootSession } from './support/mini-home.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const REPORT_MS = Math.max(2000, Math.min(30_000, (SECONDS * 1000) / 30));
const CHILD = path.resolve(import.meta.dirname, 'support', 'soak-child.js');

interface Sample {
  t: number;
  heapMB: number;
  rssMB: number;
  total: number;
  files: number;
  watches: number;
  loopP99Ms: number;
  loopMaxMs: number;
  incidents: number;
  version: number;
}

test(`soak for ${SECONDS} s: heap and RSS plateau, fds and watches constant, event-loop p99 < 20 ms`, { timeout: (SECONDS + 120) * 1000 }, async () => {
  const home = tempHome('loop-dash-soak-');
  const t0 = Date.now();
  const files = Array.from({ length: 10 }, (_, i) =>
    writeRootSession(home, { id: `soak-${i}`, cwd: `/work/soak-${i}`, at: t0, lines: [customEntry('loop-continuation-state', { armed: true, launch: null, nudgeCount: 0 }, t0)] }),
  );
  const cpDir = path.join(home, 'loop-dash', 'checkpoints');
  const incDir = path.join(home, 'incidents', 'request');
  mkdirSync(cpDir, { recursive: true });
  mkdirSync(incDir, { recursive: true });
  const writeCheckpoint = (n: number) => {
    const now = Date.now();
    const cp = {
      v: 1, session: 'soak-0', sessionFile: files[0], role: 'root', parentSession: null, cwd: '/work/soak-0', pid: process.pid, pidStart: null,
      host: os.hostname(), model: 'p/m', thinking: null, limits: null, state: 'requesting',
      request: { turn: 1, startedAt: t0, lastModelEventAt: now, lastTransportEventAt: now, modelEvents: n, keepalives: 0 },
      episode: null, recovery: null, lastStop: null, held: null, ownerAbort: null, updatedAt: now,
    };
    writeFileSync(path.join(cpDir, '.soak-0.json.tmp'), JSON.stringify(cp));
    renameSync(path.join(cpDir, '.soak-0.json.tmp'), path.join(cpDir, 'soak-0.json'));
  };
  writeCheckpoint(0);

  const child = spawn(process.execPath, ['--expose-gc', CHILD, home, String(REPORT_MS)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const samples: Sample[] = [];
  const lines = createInterface({ input: child.stdout! });
  lines.on('line', (l) => samples.push(JSON.parse(l) as Sample));

  let appends = 0;
  let incidents = 0;
  const appendTimer = setInterval(() => {
    const f = files[appends % files.length]!;
    appendFileSync(f, appends % 5 === 0 ? assistantEntry(Date.now()) : customEntry('soak-note', { n: appends }, Date.now()));
    appends++;
  }, 50); // 20 a second
  let rewrites = 0;
  const cpTimer = setInterval(() => writeCheckpoint(++rewrites), 1000);
  const incidentEvery = Math.min(60_000, (SECONDS * 1000) / 4); // at least four in a short run
  const incTimer = setInterval(() => {
    const at = Date.now();
    const file = path.join(incDir, `soak-0-${utcStamp(at)}-inactivity-${++incidents}.json`);
    writeFileSync(`${file}.tmp`, JSON.stringify({ v: 1, session: 'soak-0', class: 'loop-request-inactivity-ceiling', at: new Date(at).toISOString(), attempt: incidents }));
    renameSync(`${file}.tmp`, file);
  }, incidentEvery);

  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  clearInterval(appendTimer);
  clearInterval(cpTimer);
  clearInterval(incTimer);
  await new Promise((r) => setTimeout(r, REPORT_MS + 500));
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));

  assert.ok(samples.length >= 8, `${samples.length} samples`);
  // Judge after a warm-up (the first quarter): the V8 heap and the caches settle there.
  const warm = samples.slice(Math.floor(samples.length / 4));
  const mid = warm.slice(0, Math.floor(warm.length / 2));
  const late = warm.slice(Math.floor(warm.length / 2));
  const max = (xs: number[]) => Math.max(...xs);
  const heapMid = max(mid.map((s) => s.heapMB));
  const heapLate = max(late.map((s) => s.heapMB));
  const rssMid = max(mid.map((s) => s.rssMB));
  const rssLate = max(late.map((s) => s.rssMB));
  const p99 = max(warm.map((s) => s.loopP99Ms));
  const figures = {
    seconds: SECONDS,
    appends,
    rewrites,
    incidents,
    heapMB: { mid: +heapMid.toFixed(1), late: +heapLate.toFixed(1) },
    rssMB: { mid: +rssMid.toFixed(1), late: +rssLate.toFixed(1) },
    fds: [...new Set(warm.map((s) => s.total))],
    regularFileFds: [...new Set(warm.map((s) => s.files))],
    watches: [...new Set(warm.map((s) => s.watches))],
    loopP99Ms: +p99.toFixed(2),
    loopMaxMs: +max(warm.map((s) => s.loopMaxMs)).toFixed(2),
  };
  console.log(`soak figures: ${JSON.stringify(figures)}`);
  assert.ok(heapLate <= heapMid * 1.1 + 2, `heap plateaus: ${heapMid.toFixed(1)} → ${heapLate.toFixed(1)} MB`);
  assert.ok(rssLate <= rssMid * 1.1 + 5, `RSS plateaus: ${rssMid.toFixed(1)} → ${rssLate.toFixed(1)} MB`);
  assert.equal(figures.fds.length, 1, `open fds constant: ${figures.fds.join(', ')}`);
  assert.equal(figures.watches.length, 1, `inotify watches constant: ${figures.watches.join(', ')}`);
  assert.ok(p99 < 20, `event-loop delay p99 ${p99.toFixed(2)} ms < 20 ms`);
  assert.equal(samples.at(-1)!.incidents, incidents, 'every incident was seen');
});
