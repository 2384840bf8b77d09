import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkpointSchema, type Checkpoint } from '../src/contract/checkpoint.js';
import { cwdSlug, homePaths, stateLogPathFromReport, utcStamp } from '../src/contract/paths.js';
import { generateHome, type DemoManifest, type DemoManifestSession } from '../src/demo/generate.js';
import { DEMO, DEMO_PLACEHOLDER_RUN, MIN, SEC } from '../src/demo/scenarios.js';
import { loadSnapshot } from '../src/cli/load-snapshot.js';

const NOW = Date.UTC(2026, 9, 20, 12, 0, 0, 0);
const LIVE_PID = process.pid;
const DEAD_PID = 4_194_301;
const STAMP = '\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}-\\d{3}Z';

type Obj = Record<string, unknown>;

function pidStart(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of fs.readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    if (fs.statSync(full).isDirectory()) out.push(...walk(full));
    else out.push(full);
  }
  return out;
}

const readJson = (file: string): Obj => JSON.parse(fs.readFileSync(file, 'utf8')) as Obj;

function readJsonl(file: string): Obj[] {
  const text = fs.readFileSync(file, 'utf8');
  assert.ok(text.endsWith('\n'), `${file} ends with a newline`);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line, i) => {
      try {
        return JSON.parse(line) as Obj;
      } catch (err) {
        throw new Error(`${file}:${i + 1}: ${(err as Error).message}`);
      }
    });
}

const message = (e: Obj): Obj | null => (e['type'] === 'message' ? (e['message'] as Obj) : null);
const lastCustom = (entries: Obj[], type: string): Obj | null =>
  ([...entries].reverse().find((e) => e['type'] === 'custom' && e['customType'] === type)?.['data'] as Obj | undefined) ?? null;

let base = '';
let home = '';
let manifest: DemoManifest;
const byName = (name: string): DemoManifestSession => {
  const s = manifest.sessions.find((x) => x.name === name);
  assert.ok(s, `session ${name} in the manifest`);
  return s;
};
const checkpointOf = (name: string): Checkpoint => {
  const s = byName(name);
  assert.ok(s.checkpoint);
  return checkpointSchema.parse(readJson(s.checkpoint));
};

before(async () => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-demo-gen-'));
  home = path.join(base, 'home');
  manifest = await generateHome(home, { now: NOW, host: 'demo-host', livePid: LIVE_PID, livePidStart: pidStart(LIVE_PID), deadPid: DEAD_PID });
});

after(() => {
  if (base) fs.rmSync(base, { recursive: true, force: true });
});

test('the home and the repository sit where asked, and every JSON and JSONL file parses', () => {
  assert.equal(manifest.home, home);
  assert.equal(manifest.repoDir, path.join(base, 'demo-repo'));
  assert.equal(manifest.now, NOW);
  const files = walk(base);
  let jsonl = 0;
  let json = 0;
  for (const f of files) {
    const name = path.basename(f);
    assert.ok(!name.startsWith('.') && !name.includes('.tmp'), `no temp file left: ${f}`);
    if (name.endsWith('.jsonl')) {
      for (const v of readJsonl(f)) assert.equal(typeof v, 'object');
      jsonl += 1;
    } else if (name.endsWith('.json')) {
      const v = readJson(f);
      assert.ok(v !== null && typeof v === 'object' && !Array.isArray(v), f);
      json += 1;
    }
  }
  const sessionFiles = files.filter((f) => f.startsWith(homePaths(home).sessions) && f.endsWith('.jsonl'));
  assert.equal(sessionFiles.length, manifest.sessions.filter((s) => s.file !== null).length);
  assert.equal(jsonl - sessionFiles.length, 11, 'a state log for every launched root');
  assert.ok(json >= 30, `checkpoints, statuses, incidents, settings written (${json})`);
});

test('every checkpoint passes checkpointSchema and names the live or the dead process', () => {
  const dir = homePaths(home).checkpoints;
  const files = fs.readdirSync(dir);
  const expected = manifest.sessions.filter((s) => s.checkpoint !== null);
  assert.equal(files.length, expected.length);
  assert.ok(expected.length >= 12);
  for (const s of expected) {
    const raw = readJson(s.checkpoint!);
    const parsed = checkpointSchema.safeParse(raw);
    assert.ok(parsed.success, `${s.name}: ${parsed.success ? '' : parsed.error.message}`);
    const cp = parsed.data;
    assert.equal(path.basename(s.checkpoint!), `${s.session}.json`);
    assert.equal(cp.session, s.session);
    assert.equal(cp.role, s.role);
    assert.equal(cp.host, 'demo-host');
    assert.equal(cp.pid, s.name === DEMO.crashed ? DEAD_PID : LIVE_PID, s.name);
    if (s.name !== DEMO.crashed) assert.equal(cp.pidStart, pidStart(LIVE_PID));
    assert.ok(cp.updatedAt <= NOW, `${s.name} updatedAt is not in the future`);
    assert.ok(cp.limits, `${s.name} carries its limits`);
    if (cp.state !== 'ended' && s.name !== DEMO.crashed) assert.ok(NOW - cp.updatedAt <= 10 * SEC, `${s.name} was updated a few seconds ago`);
    if (s.role === 'lane') {
      assert.equal(cp.parentSession, s.root);
      assert.ok(cp.runId);
    }
  }
  assert.equal(checkpointOf(DEMO.crashed).state, 'tools');
  assert.equal(byName(DEMO.noCheckpoint).checkpoint, null);
});

test('session files are at their SPEC §3.1 paths, with a header, linked entries and a reply', () => {
  const sessionsDir = homePaths(home).sessions;
  const withFile = manifest.sessions.filter((s) => s.file !== null);
  assert.equal(withFile.length, manifest.sessions.length - 1, 'only the fresh root has no file yet');
  for (const s of withFile) {
    const entries = readJsonl(s.file!);
    const header = entries[0]!;
    assert.deepEqual(
      { type: header['type'], version: header['version'], id: header['id'] },
      { type: 'session', version: 3, id: s.session },
    );
    const parts = path.relative(sessionsDir, s.file!).split(path.sep);
    assert.equal(parts[parts.length - 1], `${utcStamp(Date.parse(String(header['timestamp'])))}_${s.session}.jsonl`);
    assert.equal(parts[0], cwdSlug(String(header['cwd'])));
    if (s.role === 'root') {
      assert.equal(parts.length, 2, `${s.name} is a root`);
      assert.equal(header['parentSession'], undefined);
    } else {
      assert.equal(parts.length, 4, `${s.name} is a lane`);
      const root = manifest.sessions.find((r) => r.session === s.root)!;
      assert.equal(parts[1], path.basename(root.file!, '.jsonl'));
      assert.equal(header['parentSession'], root.file);
      const cp = checkpointSchema.parse(readJson(s.checkpoint!));
      assert.equal(parts[2], cp.runId);
      const status = readJson(path.join(homePaths(home).laneRuns, cp.runId!, 'status.json'));
      assert.equal(status['sessionFile'], s.file);
      assert.equal(status['sessionId'], root.file);
      assert.equal(status['state'], s.expect.state === 'ended' ? 'complete' : 'running');
    }
    // Entries: pi's shape, a parent chain, time order, at least one assistant reply.
    let parent: unknown = null;
    let last = 0;
    const ids = new Set<string>();
    for (const e of entries.slice(1)) {
      assert.match(String(e['id']), /^[0-9a-f]{8}$/);
      assert.ok(!ids.has(String(e['id'])), 'entry ids are unique');
      ids.add(String(e['id']));
      assert.equal(e['parentId'], parent);
      parent = e['id'];
      const at = Date.parse(String(e['timestamp']));
      assert.ok(at >= last, `${s.name}: entries in time order`);
      assert.ok(at <= NOW, `${s.name}: no entry in the future`);
      last = at;
    }
    assert.ok(entries.some((e) => message(e)?.['role'] === 'assistant'), `${s.name} has a reply`);
    const info = [...entries].reverse().find((e) => e['type'] === 'session_info');
    assert.equal(info?.['name'], s.name, `${s.name} is named`);
  }
  const fresh = byName(DEMO.fresh);
  assert.equal(fresh.file, null);
  assert.equal(fs.existsSync(checkpointOf(DEMO.fresh).sessionFile!), false, 'the fresh root is known only from its checkpoint');
});

test('incident files follow SPEC §3.2 naming and link to generated sessions', () => {
  const incidentsDir = homePaths(home).incidents;
  const onDisk = walk(incidentsDir);
  assert.equal(onDisk.length, manifest.incidents.length);
  const sessions = new Set(manifest.sessions.filter((s) => s.file !== null).map((s) => s.session));
  for (const i of manifest.incidents) {
    const body = readJson(i.file);
    assert.equal(body['class'], i.class);
    assert.equal(body['session'], i.session);
    assert.equal(body['v'], 1);
    assert.ok(sessions.has(i.session), `${i.class} links to a generated session`);
    const rel = path.relative(incidentsDir, i.file).split(path.sep).join('/');
    const stamp = utcStamp(Date.parse(String(body['at'])));
    assert.ok(rel.includes(`${i.session}-${stamp}`), `${rel} is named from its session and time`);
    const sid = i.session;
    if (rel.startsWith('bad/')) continue;
    if (i.class === 'loop-continuation-chain-exhausted') {
      assert.match(rel, new RegExp(`^${sid}-${STAMP}\\.json$`));
      assert.equal(typeof body['home'], 'string');
    } else if (i.class.startsWith('loop-request-')) {
      const m = new RegExp(`^request/${sid}-${STAMP}-([a-z-]+?)-(\\d+)(-exhausted)?\\.json$`).exec(rel);
      assert.ok(m, rel);
      assert.equal(Boolean(m[3]), i.class.endsWith('-exhausted'), `${rel}: -exhausted in name and class agree`);
      assert.equal(Number(m[2]), body['attempt']);
      for (const k of ['home', 'cwd', 'model', 'elapsed_ms', 'wall_clock_ms', 'attempt']) assert.ok(k in body, `${rel} has ${k}`);
    } else if (i.class === 'loop-arm-refused') {
      assert.match(rel, new RegExp(`^root/${sid}-${STAMP}-arm-refused\\.json$`));
      assert.equal(body['home'], undefined);
      assert.equal(typeof body['reason'], 'string');
    } else if (i.class === 'loop-root-context-overflow') {
      assert.match(rel, new RegExp(`^root/${sid}-${STAMP}-context-overflow\\.json$`));
      assert.ok(Array.isArray(body['live_runs']));
    } else if (['loop-ops-grants-rejected', 'loop-audit-grants-rejected', 'loop-standing-rejected'].includes(i.class)) {
      assert.match(rel, new RegExp(`^ops/${sid}-${STAMP}\\.json$`));
      assert.equal(typeof body['reason'], 'string');
      assert.ok(Object.keys(body).some((k) => k.endsWith('_path')), `${rel} names a file`);
    } else {
      assert.match(rel, new RegExp(`^root/${sid}-${STAMP}-[a-z-]+\\.json$`), `an unpublished class sits beside its kin: ${rel}`);
    }
  }
  const classes = new Set(manifest.incidents.map((i) => i.class));
  for (const cls of [
    'loop-continuation-chain-exhausted',
    'loop-request-wall-clock-ceiling',
    'loop-request-empty-length-stop',
    'loop-request-empty-length-stop-exhausted',
    'loop-arm-refused',
    'loop-root-context-overflow',
    'loop-ops-grants-rejected',
    'loop-audit-grants-rejected',
    'loop-standing-rejected',
    'loop-request-inactivity-ceiling',
  ]) {
    assert.ok(classes.has(cls), `an incident of class ${cls}`);
  }
  const inactivity = manifest.incidents.find((i) => i.class === 'loop-request-inactivity-ceiling')!;
  assert.equal(readJson(inactivity.file)['limit'], 'inactivity');
  assert.equal(inactivity.limit, 'inactivity');
  assert.ok(manifest.incidents.some((i) => path.relative(incidentsDir, i.file).startsWith(`bad${path.sep}`)), 'one moved aside');
  // The per-session counts agree with the files on disk.
  for (const s of manifest.sessions) {
    const n = onDisk.filter((f) => readJson(f)['session'] === s.session).length;
    assert.equal(s.expect.incidents, n, `${s.name} incident count`);
  }
});

test('the expected values follow SPEC §2 arithmetic on the files written', () => {
  const settings = readJson(homePaths(home).settings) as { loopPi: { requestCeiling: Obj; retryRecovery: Obj }; retry: Obj };
  const inactivityMs = settings.loopPi.requestCeiling['inactivityMs'] as number;
  const absoluteMs = settings.loopPi.requestCeiling['absoluteMs'] as number;
  const episodeMs = settings.loopPi.retryRecovery['episodeMs'] as number;
  assert.equal(settings.retry['maxRetries'], 3);
  const maxAttempts = Math.min(5, (settings.retry['maxRetries'] as number) + 1);
  assert.equal(maxAttempts, 4);

  for (const s of manifest.sessions) {
    if (!s.checkpoint || s.expect.state !== 'requesting') continue;
    const cp = checkpointSchema.parse(readJson(s.checkpoint));
    const req = cp.request!;
    const inactivityAt = (req.lastModelEventAt ?? req.startedAt) + cp.limits!.inactivityMs;
    const absoluteAt = req.startedAt + cp.limits!.absoluteMs;
    assert.equal(s.expect.inactivityAt, inactivityAt, `${s.name} inactivity`);
    assert.equal(s.expect.absoluteAt, absoluteAt, `${s.name} absolute`);
    assert.equal(s.expect.firstToFire, inactivityAt <= absoluteAt ? 'inactivity' : 'absolute', `${s.name} first to fire`);
  }

  const streaming = checkpointOf(DEMO.streaming).request!;
  assert.equal(streaming.lastModelEventAt, NOW - 2 * SEC);
  assert.equal(streaming.startedAt, NOW - 12 * MIN);

  const silent = byName(DEMO.silent);
  const silentReq = checkpointOf(DEMO.silent).request!;
  assert.equal(silentReq.lastModelEventAt, NOW - 11 * MIN);
  assert.equal(silentReq.lastTransportEventAt, NOW - 3 * SEC);
  assert.ok(silentReq.keepalives > 0);
  assert.equal(silent.expect.inactivityAt! - NOW, 4 * MIN);
  assert.equal(inactivityMs, 15 * MIN);

  const long = byName(DEMO.longThink);
  assert.equal(checkpointOf(DEMO.longThink).request!.startedAt, NOW - 68 * MIN);
  assert.equal(long.expect.absoluteAt! - NOW, 7 * MIN);
  assert.equal(long.expect.firstToFire, 'absolute');
  assert.equal(absoluteMs, 75 * MIN);

  const lane = byName(DEMO.streamingLane);
  assert.equal(checkpointOf(DEMO.streamingLane).limits!.inactivityMs, 10 * MIN, "the lane's own limits");
  assert.equal(lane.expect.inactivityAt, NOW - 5 * SEC + 10 * MIN);

  const fresh = byName(DEMO.fresh);
  const freshReq = checkpointOf(DEMO.fresh).request!;
  assert.equal(freshReq.lastModelEventAt, null);
  assert.equal(fresh.expect.inactivityAt, freshReq.startedAt + inactivityMs);

  const flaky = byName(DEMO.retry);
  const ep = checkpointOf(DEMO.retry).episode!;
  assert.equal(checkpointOf(DEMO.retry).state, 'retry-wait');
  assert.equal(ep.startedAt, NOW - 6 * MIN);
  assert.equal(ep.lastErrorClass, 'rate-limit');
  assert.deepEqual(flaky.expect.episode, { at: ep.startedAt + episodeMs, attempts: 2, maxAttempts });
  assert.equal(flaky.expect.nextRetryAt, NOW + 45 * SEC);
  assert.equal(flaky.expect.firstToFire, 'episode');
  const errors = readJsonl(flaky.file!).map(message).filter((m) => m?.['role'] === 'assistant' && m['stopReason'] === 'error');
  assert.equal(errors.length, 2);
  for (const m of errors) assert.equal((m!['loopPiRecovery'] as Obj)['status'], 429);

  const night = byName(DEMO.ladder);
  const rec = checkpointOf(DEMO.ladder).recovery!;
  assert.deepEqual({ resumes: rec.resumes, nextResumeAt: rec.nextResumeAt, stoppedAt: rec.stoppedAt }, { resumes: 2, nextResumeAt: null, stoppedAt: NOW - 3 * MIN });
  assert.deepEqual(night.expect.nextResume, { at: rec.stoppedAt + 4 * MIN, source: 'predicted', step: 3 });
  assert.equal(night.expect.nextResume!.at, NOW + MIN);

  const scheduled = byName(DEMO.scheduled);
  const srec = checkpointOf(DEMO.scheduled).recovery!;
  assert.deepEqual(scheduled.expect.nextResume, { at: srec.nextResumeAt, source: 'scheduled', step: srec.resumes + 1 });
  const ladder = srec.stoppedAt + Math.min(2 ** srec.resumes, 15) * MIN;
  assert.notEqual(srec.nextResumeAt, ladder, 'the scheduled time differs from the ladder prediction');

  const states = Object.fromEntries(manifest.sessions.map((s) => [s.name, s.expect.state]));
  assert.deepEqual(states, {
    [DEMO.streaming]: 'requesting',
    [DEMO.returnedLane]: 'ended',
    [DEMO.streamingLane]: 'requesting',
    [DEMO.silent]: 'requesting',
    [DEMO.longThink]: 'requesting',
    [DEMO.retry]: 'retry-wait',
    [DEMO.ladder]: 'recovering',
    [DEMO.scheduled]: 'recovering',
    [DEMO.held]: 'held',
    [DEMO.waiting]: 'waiting',
    [DEMO.crashed]: 'lost',
    [DEMO.noCheckpoint]: 'unknown',
    [DEMO.fresh]: 'requesting',
    [DEMO.quota]: 'stopped',
  });
  for (const s of manifest.sessions) {
    if (s.expect.state !== 'requesting') assert.equal(s.expect.inactivityAt, null, `${s.name} has no request clocks`);
  }
});

test('loop state in the files: armed, state logs from launch.report, held, waits, receipts, settings', () => {
  for (const s of manifest.sessions.filter((x) => x.role === 'root' && x.file)) {
    const cont = lastCustom(readJsonl(s.file!), 'loop-continuation-state');
    if (s.name === DEMO.noCheckpoint) {
      assert.equal(cont, null);
      continue;
    }
    assert.ok(cont, `${s.name} has loop-continuation-state`);
    assert.equal(cont['armed'], s.name !== DEMO.quota, `${s.name} armed`);
    const report = (cont['launch'] as Obj)['report'] as string;
    assert.equal(report, path.join(manifest.repoDir, 'codex', `report-${s.name}-loop1.md`));
    const log = readJsonl(stateLogPathFromReport(report));
    let seq = 0;
    for (const line of log) {
      assert.equal(line['v'], 1);
      assert.equal(line['seq'], ++seq);
      assert.match(String(line['ts']), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      assert.ok(['root', 'dispatcher', 'ext', 'daemon'].includes(String(line['by'])));
    }
    assert.equal(log[0]!['ev'], 'open');
  }

  const api = byName(DEMO.streaming);
  const apiLog = readJsonl(path.join(manifest.repoDir, 'codex', 'state-api-refactor-loop1.jsonl'));
  const run = (name: string): string => checkpointOf(name).runId!;
  assert.deepEqual(apiLog.filter((l) => l['ev'] === 'dispatch').map((l) => l['run']).sort(), [run(DEMO.returnedLane), run(DEMO.streamingLane), DEMO_PLACEHOLDER_RUN].sort());
  assert.deepEqual(apiLog.filter((l) => l['ev'] === 'return').map((l) => l['run']), [run(DEMO.returnedLane)]);
  assert.ok(apiLog.some((l) => l['ev'] === 'heartbeat'));
  assert.equal(manifest.sessions.filter((s) => s.root === api.session).length, 2);

  const nightLog = readJsonl(path.join(manifest.repoDir, 'codex', 'state-night-run-loop1.jsonl'));
  assert.deepEqual(nightLog.filter((l) => l['ev'] === 'resume').map((l) => l['step']), [1, 2]);

  const held = readJsonl(byName(DEMO.held).file!);
  const control = lastCustom(held, 'loop-dash-control')!;
  assert.equal(control['held'], true);
  assert.equal(control['by'], 'owner');
  assert.equal(typeof control['reason'], 'string');
  assert.equal(checkpointOf(DEMO.held).held?.by, 'owner');

  const waiting = byName(DEMO.waiting);
  const wait = lastCustom(readJsonl(waiting.file!), 'loop-wait-state')!;
  const timers = wait['timers'] as Obj[];
  assert.ok((timers[0]!['at'] as number) > NOW, 'the timer is in the future');
  const receipt = readJson(path.join(homePaths(home).loopWait, waiting.session, 'receipts', 'w-ci.json'));
  assert.equal(receipt['phase'], 'running');
  assert.ok(NOW - (receipt['last_observed_at'] as number) <= 2 * (receipt['interval_s'] as number) * SEC, 'the receipt is fresh');

  const settings = readJson(homePaths(home).settings) as { loopPi: { requestCeiling: Obj } };
  assert.equal(settings.loopPi.requestCeiling['maxFollowUps'], 2);
  const models = readJson(homePaths(home).models) as { providers: Record<string, { models: Obj[]; modelOverrides?: Record<string, Obj> }> };
  assert.ok(Object.keys(models.providers).length >= 2);
  for (const p of Object.values(models.providers)) for (const m of p.models) assert.equal(typeof m['maxTokens'], 'number');
  assert.equal(models.providers['openai']!.modelOverrides!['gpt-6.1-sol']!['maxTokens'], 80_000);
});

test('the demo shows the lane api-refactor dispatched 20 s ago, with no session yet, as a placeholder lane', async () => {
  const snap = await loadSnapshot([manifest.home], manifest.now);
  const api = snap.roots.find((r) => r.name === DEMO.streaming)!;
  const lane = api.lanes.find((l) => l.runId === DEMO_PLACEHOLDER_RUN);
  assert.ok(lane, `lanes: ${api.lanes.map((l) => l.session).join(', ')}`);
  assert.equal(lane.session, `run:${DEMO_PLACEHOLDER_RUN}`);
  assert.equal(lane.placeholder, 'dispatch');
  assert.equal(lane.state, 'dispatched');
  assert.equal(lane.name, 'L3');
  assert.equal(lane.task, 'T5');
  assert.equal(lane.deadline, manifest.now - 20 * SEC + 60 * MIN);
  // The lanes with sessions are not placeholders.
  assert.equal(api.lanes.filter((l) => l.placeholder).length, 1);
});

test('the same inputs give the same home', async () => {
  const other = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-demo-gen-'));
  try {
    const again = await generateHome(path.join(other, 'home'), { now: NOW, host: 'demo-host', livePid: LIVE_PID, livePidStart: pidStart(LIVE_PID), deadPid: DEAD_PID });
    const shape = (m: DemoManifest) => ({
      sessions: m.sessions.map((s) => ({ ...s, file: s.file && path.basename(s.file), checkpoint: s.checkpoint && path.basename(s.checkpoint) })),
      incidents: m.incidents.map((i) => ({ ...i, file: path.basename(i.file) })),
    });
    assert.deepEqual(shape(again), shape(manifest));
    const a = readJsonl(byName(DEMO.streaming).file!).map((e) => e['id']);
    const b = readJsonl(again.sessions.find((s) => s.name === DEMO.streaming)!.file!).map((e) => e['id']);
    assert.deepEqual(a, b);
  } finally {
    fs.rmSync(other, { recursive: true, force: true });
  }
});

test('a scaled home has the bulk roots and lanes, big files written whole, state at the end', async () => {
  const other = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-demo-gen-'));
  try {
    const sessionBytes = 300_000;
    const m = await generateHome(path.join(other, 'home'), {
      now: NOW,
      livePid: LIVE_PID,
      livePidStart: null,
      deadPid: DEAD_PID,
      repoDir: path.join(other, 'repo'),
      scale: { roots: 3, lanesPerRoot: 2, sessionBytes },
    });
    assert.equal(m.repoDir, path.join(other, 'repo'));
    const bulkRoots = m.sessions.filter((s) => s.name.startsWith('bulk-') && s.role === 'root');
    const bulkLanes = m.sessions.filter((s) => s.name.startsWith('bulk-') && s.role === 'lane');
    assert.equal(bulkRoots.length, 3);
    assert.equal(bulkLanes.length, 6);
    for (const s of bulkRoots) {
      const size = fs.statSync(s.file!).size;
      assert.ok(size >= sessionBytes && size < sessionBytes + 20_000, `${s.name}: ${size} bytes`);
      const entries = readJsonl(s.file!);
      const ids = new Set(entries.slice(1).map((e) => e['id']));
      assert.equal(ids.size, entries.length - 1, 'entry ids are unique');
      const last = entries[entries.length - 1]!;
      assert.equal(last['customType'], 'loop-continuation-state', 'the latest loop state is at the end');
      const cp = checkpointSchema.parse(readJson(s.checkpoint!));
      assert.equal(cp.host, os.hostname(), 'host defaults to this machine');
    }
    for (const s of bulkLanes) assert.ok(checkpointSchema.safeParse(readJson(s.checkpoint!)).success);
    assert.ok(fs.existsSync(path.join(other, 'repo', 'codex', 'state-bulk-1-loop1.jsonl')));
  } finally {
    fs.rmSync(other, { recursive: true, force: true });
  }
});
