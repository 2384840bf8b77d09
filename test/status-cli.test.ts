/**
 * Acceptance: `loop-dash status --json --now …` on a generated home prints exactly the values the
 * generator set up. The built binary runs as a child process, as a user would run it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { generateHome, type DemoManifest } from '../src/demo/generate.js';
import { processStartIdentity } from '../src/readers/process-probe.js';
import { sessionCacheFile } from '../src/readers/session-cache.js';
import { loadSnapshot } from '../src/cli/load-snapshot.js';
import { InputError, parseNow } from '../src/cli/parse-time.js';
import { assistantEntry, tempHome, writeRootSession } from './support/mini-home.js';

const run = promisify(execFile);
const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'loop-dash.js');
const NOW = Date.UTC(2026, 10, 30, 14, 0, 0, 0);

async function demoHome(): Promise<DemoManifest> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-status-'));
  const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
  return generateHome(path.join(base, 'home'), {
    now: NOW,
    livePid: process.pid,
    livePidStart: processStartIdentity(process.pid),
    deadPid: dead,
    repoDir: path.join(base, 'repo'),
  });
}

type Json = Record<string, any>;
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function flatten(doc: Json): Map<string, Json> {
  const out = new Map<string, Json>();
  for (const r of doc.roots as Json[]) {
    out.set(r.session, r);
    for (const l of r.lanes as Json[]) out.set(l.session, l);
  }
  return out;
}

test('status --json --now prints exactly the generator\'s expected clocks for every session', async () => {
  const m = await demoHome();
  const { stdout } = await run(process.execPath, [BIN, 'status', '--json', '--now', new Date(NOW).toISOString(), '--home', m.home]);
  const doc = JSON.parse(stdout) as Json;
  // Printed in chunks (json-out.ts), the text is still exactly the document indented by 2, and a newline.
  assert.equal(stdout, JSON.stringify(doc, null, 2) + '\n');
  assert.equal(doc.v, 1);
  assert.equal(doc.now, new Date(NOW).toISOString());
  assert.equal(doc.home, m.home);
  assert.deepEqual(doc.warnings, []);
  const sessions = flatten(doc);
  assert.equal(sessions.size, m.sessions.length + m.placeholders.length, 'every generated session (and lane with no session yet) is shown once');
  for (const p of m.placeholders) {
    const got = sessions.get(`run:${p.runId}`);
    assert.ok(got, `placeholder ${p.lane} is shown`);
    assert.deepEqual([got.placeholder, got.state, got.role, got.lane, got.runId], ['dispatch', 'dispatched', 'lane', p.lane, p.runId]);
    assert.equal(got.clocks.firstToFire, null, 'no clock of its own');
  }

  for (const s of m.sessions) {
    const got = sessions.get(s.session);
    assert.ok(got, `session ${s.name} (${s.session}) is shown`);
    const e = s.expect;
    const label = `${s.name}: `;
    assert.equal(got.name, s.name, label + 'name');
    assert.equal(got.role, s.role, label + 'role');
    assert.equal(got.state, e.state, label + 'state');
    assert.equal(got.incidents, e.incidents, label + 'incidents');
    assert.equal(got.clocks.firstToFire, e.firstToFire, label + 'firstToFire');
    assert.equal(got.clocks.inactivity?.at ?? null, iso(e.inactivityAt), label + 'inactivity.at');
    assert.equal(got.clocks.inactivity?.remainingMs ?? null, e.inactivityAt === null ? null : e.inactivityAt - NOW, label + 'inactivity.remainingMs');
    assert.equal(got.clocks.absolute?.at ?? null, iso(e.absoluteAt), label + 'absolute.at');
    assert.equal(got.clocks.absolute?.remainingMs ?? null, e.absoluteAt === null ? null : e.absoluteAt - NOW, label + 'absolute.remainingMs');
    assert.deepEqual(
      got.clocks.episode,
      e.episode ? { at: iso(e.episode.at), remainingMs: e.episode.at - NOW, attempts: e.episode.attempts, maxAttempts: e.episode.maxAttempts } : null,
      label + 'episode',
    );
    assert.equal(got.clocks.nextRetry?.at ?? null, iso(e.nextRetryAt), label + 'nextRetry');
    assert.deepEqual(
      got.clocks.nextResume,
      e.nextResume ? { at: iso(e.nextResume.at), remainingMs: e.nextResume.at - NOW, source: e.nextResume.source, step: e.nextResume.step } : null,
      label + 'nextResume',
    );
    if (s.role === 'lane') assert.ok(flatten({ roots: doc.roots.filter((r: Json) => r.session === s.root) }).has(s.session), `${s.name} sits under its root`);
  }

  // Every incident file is listed with its class, session and limit.
  assert.equal(doc.incidents.length, m.incidents.length);
  for (const i of m.incidents) {
    const got = (doc.incidents as Json[]).find((x) => x.file === i.file);
    assert.ok(got, `incident ${i.file} listed`);
    assert.equal(got.class, i.class);
    assert.equal(got.session, i.session);
    assert.equal(got.limit, i.limit, `limit of ${path.basename(i.file)}`);
  }
});

test('status --now moves every clock: one minute later every remaining time is 60 000 ms less', async () => {
  const m = await demoHome();
  const at = async (t: number) =>
    flatten(JSON.parse((await run(process.execPath, [BIN, 'status', '--json', '--now', new Date(t).toISOString(), '--home', m.home])).stdout));
  const a = await at(NOW);
  const b = await at(NOW + 60_000);
  let compared = 0;
  for (const [id, x] of a) {
    const y = b.get(id)!;
    for (const k of ['inactivity', 'absolute', 'episode', 'nextResume'] as const) {
      if (x.clocks[k] && y.clocks[k]) {
        assert.equal(y.clocks[k].remainingMs, x.clocks[k].remainingMs - 60_000, `${x.name} ${k}`);
        compared++;
      }
    }
  }
  assert.ok(compared >= 6, `compared ${compared} clocks`);
});

test('status exits 2 with one clear line on a bad --now; the plain table names every root', async () => {
  const m = await demoHome();
  const bad = spawnSync(process.execPath, [BIN, 'status', '--now', 'yesterday', '--home', m.home], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--now: "yesterday" is not an ISO-8601 time/);
  const table = spawnSync(process.execPath, [BIN, 'status', '--now', new Date(NOW).toISOString(), '--home', m.home], { encoding: 'utf8' });
  assert.equal(table.status, 0);
  for (const s of m.sessions) assert.ok(table.stdout.includes(s.name.slice(0, 20)), `table shows ${s.name}`);
  assert.doesNotMatch(table.stdout, /\u001b\[/, 'no escape sequences in the plain table');
  assert.equal(table.stderr, '', 'at the data\'s own instant, no note');
  // Ten minutes before the data: the clocks read as if the later writes had not happened, and a
  // note on stderr says so (the JSON on stdout stays whole).
  const early = spawnSync(process.execPath, [BIN, 'status', '--json', '--now', new Date(NOW - 10 * 60_000).toISOString(), '--home', m.home], { encoding: 'utf8' });
  assert.equal(early.status, 0);
  assert.ok(JSON.parse(early.stdout).roots.length > 0);
  assert.match(early.stderr, /^loop-dash: note: --now \S+ is \d+:\d\d before the newest data read \(\S+\): clocks there read as if it had not been written yet\n$/);
});

test('a checkpoint whose pid is alive but whose start identity differs is lost (pid reused)', async () => {
  const m = await demoHome();
  const { readFileSync, writeFileSync } = await import('node:fs');
  const live = m.sessions.find((s) => s.name === 'docs-sweep')!;
  const cp = JSON.parse(readFileSync(live.checkpoint!, 'utf8'));
  assert.equal(cp.pid, process.pid);
  cp.pidStart = `${cp.pidStart}0`; // same live pid, another process incarnation
  writeFileSync(live.checkpoint!, JSON.stringify(cp));
  const doc = JSON.parse((await run(process.execPath, [BIN, 'status', '--json', '--now', new Date(NOW).toISOString(), '--home', m.home])).stdout);
  const got = flatten(doc).get(live.session)!;
  assert.equal(got.state, 'lost');
  assert.equal(got.liveness.status, 'pid-reused');
  assert.equal(got.clocks.inactivity, null, 'a lost request shows no running countdown');
});

test('incidents piped into head: shows the relative age and exits quietly when the reader goes away', async () => {
  const m = await demoHome();
  const r = spawnSync('sh', ['-c', `"${process.execPath}" "${BIN}" incidents --now ${new Date(NOW).toISOString()} --home "${m.home}" | head -1`], { encoding: 'utf8' });
  assert.equal(r.status, 0);
  const m2 = /^(\d{4}-\d\d-\d\dT[\d:.]+Z) \(((?:\d+ (?:day|hour|minute)s? ?)+|under a minute) ago\)/.exec(r.stdout);
  assert.ok(m2, r.stdout);
  // To the minute, as the instant beside it says (it read "3 hours ago" for 2 h 45 min).
  const unit = { day: 1440, hour: 60, minute: 1 } as Record<string, number>;
  let minutes = 0;
  for (const [, n, u] of m2[2]!.matchAll(/(\d+) (day|hour|minute)/g)) minutes += Number(n) * unit[u!]!;
  assert.equal(minutes, Math.floor((NOW - Date.parse(m2[1]!)) / 60_000), r.stdout);
  // Its session by name and the id's first 8, as `status` shows it (it was the bare id).
  const label = /ago\) {2}\S+ {2}(\S+) ([0-9a-f]{8}) {2}/.exec(r.stdout);
  assert.ok(label, r.stdout);
  assert.ok(m.sessions.some((s) => s.name === label[1] && s.session.startsWith(label[2]!) && m.incidents.some((i) => i.session === s.session)), r.stdout);
  assert.equal(r.stderr, '', 'no EPIPE stack trace');
});

test('status without --now reads the clock once the homes are read: a checkpoint written during the read is never newer than `now` (it read 15:01 left, an age of -2 ms)', async () => {
  const m = await demoHome();
  const cp = m.sessions.find((s) => s.checkpoint && s.expect.state === 'requesting')!;
  const text = readFileSync(cp.checkpoint!, 'utf8');
  let readAt = 0;
  // The clock: asked once, after the read. Were it read before, the checkpoint written here (a
  // refresh from pi) would be in the snapshot, an instant after `now`.
  const snap = await loadSnapshot([m.home], () => {
    readAt++;
    writeFileSync(cp.checkpoint!, text.replace(/"updatedAt": ?\d+/, `"updatedAt": ${NOW + 5_000}`));
    return NOW;
  });
  assert.equal(readAt, 1);
  const row = snap.roots.flatMap((r) => [r, ...r.lanes]).find((v) => v.session === cp.session)!;
  assert.ok(row.source.checkpointUpdatedAt! <= NOW, `checkpoint of ${row.source.checkpointUpdatedAt} read, now ${NOW}`);
});

test('status and incidents read with the session cache: the first run writes it, a run with nothing changed reuses it untouched and prints the same, an append is shown', async () => {
  const m = await demoHome();
  const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-status-cache-'));
  const env = { ...process.env, LOOP_DASH_CACHE_DIR: cacheDir };
  const cacheFile = sessionCacheFile(cacheDir, m.home);
  const status = async () => (await run(process.execPath, [BIN, 'status', '--json', '--now', new Date(NOW).toISOString(), '--home', m.home], { env })).stdout;
  try {
    const first = await status();
    assert.ok(existsSync(cacheFile), 'the first run wrote the cache');
    const written = statSync(cacheFile, { bigint: true });
    assert.equal(await status(), first, 'a run with the cache prints the same');
    const { stdout: incidents } = await run(process.execPath, [BIN, 'incidents', '--json', '--now', new Date(NOW).toISOString(), '--home', m.home], { env });
    assert.deepEqual(JSON.parse(incidents).incidents, (JSON.parse(first) as Json).incidents, 'incidents read with the cache list the same');
    assert.equal(incidents, JSON.stringify(JSON.parse(incidents), null, 2) + '\n', 'incidents --json: the document indented by 2, and a newline (printed in chunks)');
    // Nothing had changed: every entry it loaded held, so it was not written again.
    const after = statSync(cacheFile, { bigint: true });
    assert.deepEqual([after.ino, after.mtimeNs], [written.ino, written.mtimeNs], 'the cache is left as it was');
    // An error appended to a session: shown, and the cache written again.
    const s = m.sessions.find((x) => x.file !== null && x.role === 'root')!;
    appendFileSync(s.file!, assistantEntry(NOW - 1_000, { stopReason: 'error', errorMessage: 'appended after the cache' }));
    const third = flatten(JSON.parse(await status()) as Json).get(s.session)!;
    assert.match(JSON.stringify(third.lastError), /appended after the cache/);
    assert.notEqual(statSync(cacheFile, { bigint: true }).ino, written.ino, 'the cache written again (a new file renamed over it)');
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
    rmSync(path.dirname(m.home), { recursive: true, force: true });
  }
});

test('demo --status --dir where no directory can be made: one clear line and exit 2, not a spin (Node\'s recursive mkdir never returns under /proc)', () => {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'loop-dash-demo-dir-')), 'a-file');
  appendFileSync(file, '');
  for (const [dir, code] of [[path.join('/proc', `loop-dash-test-${process.pid}`), 'ENOENT'], [path.join(file, 'sub'), 'ENOTDIR']] as const) {
    const r = spawnSync(process.execPath, [BIN, 'demo', '--status', '--dir', dir], { encoding: 'utf8', timeout: 20_000, env: { ...process.env, CI: 'true' } });
    assert.equal(r.error, undefined, `${dir}: ${String(r.error)} (a spinning mkdir is killed by the 20 s timeout)`);
    assert.equal(r.status, 2, `${dir}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, new RegExp(`^loop-dash: demo --dir ${dir.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: cannot build the demo home there: ${code}\\b[^\\n]*\\n$`));
  }
  rmSync(path.dirname(file), { recursive: true, force: true });
});

test('demo --status --dir into a directory that already holds a demo home: refused with exit 2, the home untouched (it piled up: 28 incidents for 14)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-demo-twice-'));
  try {
    const first = spawnSync(process.execPath, [BIN, 'demo', '--status', '--dir', dir], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, CI: 'true' } });
    assert.equal(first.status, 0, first.stderr);
    const before = readdirSync(path.join(dir, 'home')).sort();
    const second = spawnSync(process.execPath, [BIN, 'demo', '--status', '--dir', dir], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, CI: 'true' } });
    assert.equal(second.status, 2, second.stderr);
    assert.match(second.stderr, /^loop-dash: demo --dir .*: .*home already holds a home \(an earlier demo\?\); remove it or name another directory\n$/);
    assert.deepEqual(readdirSync(path.join(dir, 'home')).sort(), before);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('loop-dash help and help COMMAND print the help, exit 0', () => {
  for (const [args, first] of [
    [['help'], /^Usage: loop-dash \[options\] \[command\]/],
    [['help', 'status'], /^Usage: loop-dash status \[options\]/],
    [['help', 'abort'], /^Usage: loop-dash abort \[options\] <session>/],
  ] as const) {
    const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 20_000, env: { ...process.env, CI: 'true' } });
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stdout, first, args.join(' '));
  }
});

test('a home that is a file, or a one-shot command (install-extension too) on a home that does not exist, or an unknown command: one clear line and exit 2', () => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-badhome-'));
  try {
    const file = path.join(base, 'a-file');
    appendFileSync(file, '');
    const missing = path.join(base, 'no-such-home');
    const cases: [string[], RegExp][] = [
      [['status', '--home', file], new RegExp(`^loop-dash: ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is not a directory; a pi home is one`)],
      [['status', '--json', '--home', missing], /^loop-dash: no pi home at .*no-such-home \(it does not exist\); name yours with --home DIR/],
      [['incidents', '--home', missing], /^loop-dash: no pi home at .*no-such-home \(it does not exist\)/],
      [['audit', '--home', missing], /^loop-dash: no pi home at .*no-such-home \(it does not exist\)/],
      [['install-extension', '--home', missing], /^loop-dash: no pi home at .*no-such-home \(create it, or pass --home/],
      [['install-extension', '--home', file], /^loop-dash: .*a-file is not a directory \(expected a pi home\)/],
      // The dashboard waits for a home that does not exist yet (RELIABILITY B12), but not for a file.
      [['--home', file], /is not a directory/],
      [['frobnicate'], /^loop-dash: unknown command "frobnicate" \(one of status, incidents, .*; see loop-dash --help\)/],
      // Commander's own errors too (they read `error: unknown option …`).
      [['status', '--bogus'], /^loop-dash: unknown option '--bogus'/],
    ];
    for (const [args, message] of cases) {
      const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 20_000, env: { ...process.env, CI: 'true' } });
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '', args.join(' '));
      assert.match(r.stderr, message, args.join(' '));
      assert.equal(r.stderr.split('\n').length, 2, `one line: ${r.stderr}`);
    }
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test('demo --status prints the demo home and leaves no temporary directory behind', () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-demo-tmp-'));
  try {
    const r = spawnSync(process.execPath, [BIN, 'demo', '--status'], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, CI: 'true', TMPDIR: tmp } });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /docs-sweep/);
    assert.deepEqual(readdirSync(tmp), [], 'the demo home built for the print is removed');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('status --json: every entry of roots has lanes, also a lane shown at the top because its root\'s session file is missing', () => {
  const home = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-orphan-'));
  try {
    const stem = path.join(home, 'sessions', '--work-orphan--', '2026-11-30T12-00-00-000Z_root-gone');
    const laneDir = path.join(stem, 'run-1');
    mkdirSync(laneDir, { recursive: true });
    appendFileSync(
      path.join(laneDir, '2026-11-30T12-01-00-000Z_lane-1.jsonl'),
      JSON.stringify({ type: 'session', version: 3, id: 'lane-1', timestamp: '2026-11-30T12:01:00.000Z', cwd: '/work/orphan' }) + '\n',
    );
    const r = spawnSync(process.execPath, [BIN, 'status', '--json', '--now', '2026-11-30T13:00:00Z', '--home', home], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as { roots: { session: string; role: string; lanes?: unknown }[] };
    const entry = doc.roots.find((x) => x.session === 'lane-1');
    assert.ok(entry, r.stdout);
    assert.equal(entry.role, 'lane');
    for (const root of doc.roots) assert.ok(Array.isArray(root.lanes), `${root.session} has lanes`);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('incidents (text): an incident file that cannot be read is said on stderr, naming the file, beside the rows that can', () => {
  const home = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-badinc-'));
  try {
    const dir = path.join(home, 'incidents', 'request');
    mkdirSync(dir, { recursive: true });
    appendFileSync(path.join(dir, 'sid-1-2026-11-30T12-00-00-000Z-wall-clock-1.json'), JSON.stringify({ v: 1, session: 'sid-1', class: 'loop-request-wall-clock-ceiling', at: '2026-11-30T12:00:00.000Z', attempt: 1 }));
    appendFileSync(path.join(dir, 'sid-2-2026-11-30T12-05-00-000Z-wall-clock-1.json'), 'this is not json');
    const r = spawnSync(process.execPath, [BIN, 'incidents', '--now', '2026-11-30T13:00:00Z', '--home', home], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /loop-request-wall-clock-ceiling {2}sid-1/);
    assert.match(r.stderr, /^warning: .*sid-2-2026-11-30T12-05-00-000Z-wall-clock-1\.json(:1)?: /m);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('status (table) and incidents name sessions pi started within a minute apart: the time-ordered ids shown to the millisecond, not cut', () => {
  const home = tempHome();
  const at = NOW - 60_000;
  const ids = ['019af0c2-1b2c-7d3e-8f40-0123456789ab', '019af0c2-6f70-7a81-9b92-0123456789ab'];
  for (const id of ids) writeRootSession(home, { id, cwd: '/work/alpha', at });
  const table = spawnSync(process.execPath, [BIN, 'status', '--now', new Date(NOW).toISOString(), '--home', home], { encoding: 'utf8' });
  assert.equal(table.status, 0, table.stderr);
  const rows = table.stdout.split('\n').filter((l) => /^alpha /.test(l));
  assert.deepEqual(rows.map((l) => l.trimEnd().split(/\s+/).at(-1)).sort(), ['019af0c2-1b2c', '019af0c2-6f70'], table.stdout);
});

test('--read-only, before or after the command, refuses abort, disarm and arm with exit 2 and sends nothing', () => {
  const home = tempHome();
  writeRootSession(home, { id: 'aaaa1111-0000-4000-8000-000000000001', cwd: '/work/alpha', at: NOW });
  for (const args of [['--read-only', 'abort', 'alpha'], ['disarm', 'alpha', '--read-only'], ['arm', '--read-only', 'alpha']]) {
    const r = spawnSync(process.execPath, [BIN, ...args, '--home', home, '--yes'], { encoding: 'utf8' });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /^loop-dash: --read-only: no owner actions; (abort|disarm|arm) was not sent\n$/);
  }
  assert.equal(existsSync(path.join(home, 'loop-dash', 'control')), false, 'no control request written');
});

test('instants beyond what a Date can hold (1e300, 9e15, -1e300) are unreadable with a warning naming the file, never a crash or NaN', async () => {
  const m = await demoHome();
  const cps = m.sessions.filter((s) => s.checkpoint).map((s) => s.checkpoint!);
  const edit = (file: string, f: (j: Json) => void) => {
    const j = JSON.parse(readFileSync(file, 'utf8')) as Json;
    f(j);
    writeFileSync(file, JSON.stringify(j));
  };
  edit(cps[0]!, (cp) => (cp.updatedAt = 9e15));
  edit(cps[1]!, (cp) => (cp.updatedAt = -1e300));
  // A limit past the timer range: the home's is used (its deadline would leave Date's range).
  const withLimits = cps.slice(2).find((f) => (JSON.parse(readFileSync(f, 'utf8')) as Json).limits)!;
  edit(withLimits, (cp) => (cp.limits.inactivityMs = 1e16));
  const incidentDir = path.join(m.home, 'incidents');
  const incident = readdirSync(incidentDir).map((f) => path.join(incidentDir, f)).find((f) => f.endsWith('.json'))!;
  edit(incident, (i) => (i.at = 1e300));
  // Before, each of these exited 1 with `RangeError: Invalid time value`.
  const json = spawnSync(process.execPath, [BIN, 'status', '--json', '--now', new Date(NOW).toISOString(), '--home', m.home], { encoding: 'utf8' });
  assert.equal(json.status, 0, json.stderr);
  const doc = JSON.parse(json.stdout) as Json;
  const warned = (doc.warnings as Json[]).map((w) => `${w.file}: ${w.message}`).join('\n');
  for (const f of [cps[0]!, cps[1]!, incident]) assert.ok(warned.includes(f), `a warning names ${f}:\n${warned}`);
  const text = spawnSync(process.execPath, [BIN, 'status', '--now', new Date(NOW).toISOString(), '--home', m.home], { encoding: 'utf8' });
  assert.equal(text.status, 0, text.stderr);
  // The table (the warnings under it quote the values read).
  assert.doesNotMatch(text.stdout.split('\n\n')[0]!, /NaN|Invalid|e\+\d/);
  for (const args of [['incidents'], ['incidents', '--json'], ['incidents', '--since', '2h']]) {
    const r = spawnSync(process.execPath, [BIN, ...args, '--now', new Date(NOW).toISOString(), '--home', m.home], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    assert.doesNotMatch(r.stdout, /NaN|Invalid/);
  }
});

test('status and incidents print terminal-safe text: escapes from a home\'s files (a name, a bad line, an incident class) never reach the terminal; JSON keeps them escaped', () => {
  const home = tempHome();
  const evil = '\u001b]0;PWNED\u0007\u001b[41m';
  const file = writeRootSession(home, { id: 'aaaa1111-0000-4000-8000-000000000001', cwd: '/work/alpha', at: NOW - 60_000 });
  // A line that is not JSON (quoted in the warning), then a session name with escapes in it.
  appendFileSync(file, `x${evil}\n`);
  appendFileSync(file, JSON.stringify({ type: 'session_info', id: 'n1', parentId: null, timestamp: new Date(NOW - 50_000).toISOString(), name: `evil${evil}name` }) + '\n');
  mkdirSync(path.join(home, 'incidents'), { recursive: true });
  writeFileSync(path.join(home, 'incidents', 'x.json'), JSON.stringify({ kind: `loop-x${evil}`, sessionId: 'aaaa1111-0000-4000-8000-000000000001', at: new Date(NOW - 1000).toISOString() }));
  const now = ['--now', new Date(NOW).toISOString(), '--home', home];
  for (const args of [['status'], ['incidents']]) {
    const r = spawnSync(process.execPath, [BIN, ...args, ...now], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(r.stdout.length > 0);
    for (const [stream, text] of [['stdout', r.stdout], ['stderr', r.stderr]] as const) assert.doesNotMatch(text, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/, `${args[0]} ${stream}: ${JSON.stringify(text)}`);
  }
  const status = spawnSync(process.execPath, [BIN, 'status', ...now], { encoding: 'utf8' }).stdout;
  // What is around the escapes stays: the name, the warning naming the file and line.
  assert.match(status, /^evilname /m);
  assert.ok(status.includes(`${file}:2: invalid JSON`), status);
  // JSON: the name as the file has it, its escapes escaped as JSON escapes them.
  const json = spawnSync(process.execPath, [BIN, 'status', '--json', ...now], { encoding: 'utf8' });
  assert.equal(json.status, 0, json.stderr);
  assert.doesNotMatch(json.stdout, /\u001b/);
  assert.equal((JSON.parse(json.stdout) as Json).roots[0].name, `evil${evil}name`);
});

test('incidents --now leaves out the incidents written after it, and says how many', async () => {
  const m = await demoHome();
  const all = JSON.parse(spawnSync(process.execPath, [BIN, 'incidents', '--json', '--now', new Date(NOW).toISOString(), '--home', m.home], { encoding: 'utf8' }).stdout) as Json;
  const times = (all.incidents as Json[]).map((i) => Date.parse(i.at)).filter(Number.isFinite).sort((a, b) => a - b);
  assert.ok(times.length >= 4, 'the demo has incidents at several times');
  const cut = times[Math.floor(times.length / 2)]!;
  const later = times.filter((t) => t > cut).length;
  assert.ok(later > 0);
  const r = spawnSync(process.execPath, [BIN, 'incidents', '--json', '--now', new Date(cut).toISOString(), '--home', m.home], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const shown = (JSON.parse(r.stdout) as Json).incidents as Json[];
  assert.ok(shown.every((i) => i.at === null || Date.parse(i.at) <= cut), 'none after --now');
  assert.equal(shown.length, all.incidents.length - later);
  assert.equal(r.stderr, `loop-dash: note: ${later} incident${later === 1 ? '' : 's'} after --now ${new Date(cut).toISOString()} left out\n`);
});

test('--now takes an ISO-8601 time that exists, with its zone: 02-30, 04-31 and T24:00 are refused, not rolled over; a time without a zone is refused, not read in the machine\'s zone', () => {
  assert.equal(parseNow('2026-11-30T12:00:00Z', () => 0), Date.UTC(2026, 10, 30, 12));
  assert.equal(parseNow('2026-11-30T12:00Z', () => 0), Date.UTC(2026, 10, 30, 12));
  assert.equal(parseNow('2026-11-30T12:00:00.250+01:00', () => 0), Date.UTC(2026, 10, 30, 11, 0, 0, 250));
  assert.equal(parseNow('2028-02-29T00:00:00Z', () => 0), Date.UTC(2028, 1, 29));
  assert.equal(parseNow(undefined, () => 42), 42);
  for (const v of ['2026-02-30T00:00:00Z', '2026-04-31T12:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01T12:60:00Z', '2027-02-29T00:00:00Z']) {
    assert.throws(() => parseNow(v, () => 0), (e: Error) => e instanceof InputError && e.message === `--now: "${v}" is not a time that exists (e.g. 2026-11-30T12:00:00Z)`, v);
  }
  assert.throws(() => parseNow('2026-12-08T01:30:00', () => 0), /has no zone: give Z or ±hh:mm/);
  assert.throws(() => parseNow('2026-12-08', () => 0), /is not an ISO-8601 time/);
});

test('status and incidents on a directory that is no pi home (the one above it, say) say so on stderr; the output stays whole', () => {
  const home = tempHome();
  const above = path.dirname(home);
  writeRootSession(home, { id: 'aaaa1111-0000-4000-8000-000000000001', cwd: '/work/alpha', at: NOW });
  for (const cmd of ['status', 'incidents']) {
    const r = spawnSync(process.execPath, [BIN, cmd, '--now', new Date(NOW).toISOString(), '--home', above], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, `loop-dash: note: ${above} does not look like a pi home (no settings.json, models.json, sessions/, extensions/ or loop-dash/ in it): is your pi agent directory below it?\n`);
    const ok = spawnSync(process.execPath, [BIN, cmd, '--now', new Date(NOW).toISOString(), '--home', home], { encoding: 'utf8' });
    assert.doesNotMatch(ok.stderr, /does not look like a pi home/, `${cmd} on the home itself`);
  }
});

test('an owner action on a home whose loop-dash/control is a plain file: one line naming the path and errno, no stack trace', () => {
  const home = tempHome();
  writeRootSession(home, { id: 'aaaa1111-0000-4000-8000-000000000001', cwd: '/work/alpha', at: NOW });
  mkdirSync(path.join(home, 'loop-dash'), { recursive: true });
  writeFileSync(path.join(home, 'loop-dash', 'control'), '');
  const r = spawnSync(process.execPath, [BIN, 'disarm', 'alpha', '--yes', '--home', home], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /^loop-dash: ENOTDIR: not a directory, \w+ '[^']*\/loop-dash\/control[^']*'\n$/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
});

test('a last line left torn ten minutes ago is reported by status, with the file\'s time, not the read\'s', () => {
  const home = tempHome();
  const file = writeRootSession(home, { id: 'aaaa1111-0000-4000-8000-000000000001', cwd: '/work/alpha', at: NOW - 20 * 60_000 });
  appendFileSync(file, '{"type":"message","id":"torn"');
  const torn = new Date(Date.now() - 10 * 60_000);
  utimesSync(file, torn, torn);
  const r = spawnSync(process.execPath, [BIN, 'status', '--json', '--home', home], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const w = ((JSON.parse(r.stdout) as Json).warnings as Json[]).find((x) => x.file === file && /last line incomplete since/.test(x.message));
  assert.ok(w, r.stdout);
  // The file's mtime in the machine's zone, as the warning prints it (utimes keeps the second).
  const local = (d: Date) => [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
  assert.equal(String(w.message).match(/since (\d\d:\d\d:\d\d)/)?.[1], local(torn), String(w.message));
});
