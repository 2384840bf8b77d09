/**
 * The exporter without Prometheus: the metrics text for a fixed snapshot of a generated home,
 * pruning of ended sessions after the grace period, the HTTP routes (GET only: 405 otherwise;
 * loopback by default; loopback Host names only), and the `serve` command as a user runs it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadState } from '../src/cli/load-snapshot.js';
import { generateHome, type DemoManifest } from '../src/demo/generate.js';
import { initialModelState, reduceEvents, type ModelState } from '../src/model/reducer.js';
import { buildSnapshot } from '../src/model/snapshot.js';
import { statusJson } from '../src/model/status-json.js';
import { processStartIdentity } from '../src/readers/process-probe.js';
import { createExporter, SESSION_STATES } from '../src/serve/metrics.js';
import { startServe } from '../src/serve/serve-command.js';
import { DEFAULT_LISTEN, isLoopbackHost, parseListen } from '../src/serve/server.js';
import { waitFor } from './support/wait-for.js';

const NOW = Date.UTC(2026, 10, 30, 14, 0, 0, 0);
const HOST = os.hostname();
const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'loop-dash.js');

async function demoHome(now = NOW): Promise<DemoManifest> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-serve-'));
  return generateHome(path.join(base, 'home'), {
    now,
    livePid: process.pid,
    livePidStart: processStartIdentity(process.pid),
    deadPid: spawnSync(process.execPath, ['-e', '0']).pid!,
    repoDir: path.join(base, 'repo'),
  });
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The text exposition format, sample lines only. */
function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_x, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

const find = (samples: Sample[], name: string, labels: Record<string, string>) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

function one(samples: Sample[], name: string, labels: Record<string, string>): number | null {
  const hits = find(samples, name, labels);
  assert.ok(hits.length <= 1, `at most one ${name} ${JSON.stringify(labels)}, got ${hits.length}`);
  return hits[0]?.value ?? null;
}

function exporterFor(state: ModelState, clock: () => number, homes: string[], graceMs?: number) {
  return createExporter({ getState: () => state, host: HOST, clock, version: '9.9.9', homes, defaultMetrics: false, ...(graceMs !== undefined ? { graceMs } : {}) });
}

test('metrics for a fixed snapshot: every clock of every session as the model computes it, in base units', async () => {
  const m = await demoHome();
  const state = await loadState([m.home]);
  const text = await exporterFor(state, () => NOW, [m.home]).render();
  const samples = parseMetrics(text);

  // Conventions: the prefix, base units, counters end in _total, HELP and TYPE for each family.
  const families = new Set(samples.map((s) => s.name));
  for (const name of families) {
    assert.match(name, /^loop_dash_[a-z_]+$/, name);
    assert.ok(text.includes(`# HELP ${name} `), `HELP for ${name}`);
    const type = new RegExp(`^# TYPE ${name} (gauge|counter)$`, 'm').exec(text)?.[1];
    assert.ok(type, `TYPE for ${name}`);
    if (type === 'counter') assert.match(name, /_total$/, `${name} is a counter`);
    assert.doesNotMatch(name, /_ms$|_milliseconds/, `${name} is in base units`);
  }
  assert.equal(one(samples, 'loop_dash_build_info', { version: '9.9.9' }), 1);

  const byName = new Map(m.sessions.map((s) => [s.name, s]));
  for (const s of m.sessions) {
    const e = s.expect;
    const base = { session: s.session, home: m.home, name: s.name, role: s.role, root: s.root ?? s.session };
    const label = `${s.name}: `;
    if (e.state === 'ended' || e.state === 'unknown') continue; // pruning has its own test
    for (const st of SESSION_STATES) assert.equal(one(samples, 'loop_dash_session_state', { ...base, state: st }), st === e.state ? 1 : 0, `${label}state ${st}`);
    const remaining = (limit: string) => one(samples, 'loop_dash_session_limit_remaining_seconds', { session: s.session, limit });
    assert.equal(remaining('inactivity'), e.inactivityAt === null ? null : (e.inactivityAt - NOW) / 1000, label + 'inactivity');
    assert.equal(remaining('absolute'), e.absoluteAt === null ? null : (e.absoluteAt - NOW) / 1000, label + 'absolute');
    assert.equal(remaining('episode'), e.episode ? (e.episode.at - NOW) / 1000 : null, label + 'episode');
    assert.equal(one(samples, 'loop_dash_session_limit_deadline_timestamp_seconds', { session: s.session, limit: 'inactivity' }), e.inactivityAt === null ? null : e.inactivityAt / 1000);
    if (e.firstToFire) assert.equal(one(samples, 'loop_dash_session_limit_fires_first', { session: s.session, limit: e.firstToFire }), 1, label + 'first');
    assert.equal(find(samples, 'loop_dash_session_limit_fires_first', { session: s.session }).filter((x) => x.value === 1).length, e.firstToFire ? 1 : 0, label + 'one first');
    if (e.episode) {
      assert.equal(one(samples, 'loop_dash_session_retry_attempts', { session: s.session }), e.episode.attempts);
      assert.equal(one(samples, 'loop_dash_session_retry_attempts_max', { session: s.session }), e.episode.maxAttempts);
      assert.equal(one(samples, 'loop_dash_session_retry_attempts_remaining', { session: s.session }), e.episode.maxAttempts - e.episode.attempts);
    } else assert.equal(one(samples, 'loop_dash_session_retry_attempts_remaining', { session: s.session }), null, label + 'no episode');
    assert.equal(
      one(samples, 'loop_dash_session_next_resume_seconds', { session: s.session, ...(e.nextResume ? { source: e.nextResume.source } : {}) }),
      e.nextResume ? (e.nextResume.at - NOW) / 1000 : null,
      label + 'next resume',
    );
    if (e.nextResume) assert.equal(one(samples, 'loop_dash_session_resume_step', { session: s.session }), e.nextResume.step);
    assert.equal(one(samples, 'loop_dash_session_next_retry_seconds', { session: s.session }), e.nextRetryAt === null ? null : (e.nextRetryAt - NOW) / 1000, label + 'next retry');
    assert.equal(one(samples, 'loop_dash_session_incidents', { session: s.session }), e.incidents, label + 'incidents');
  }

  // The lane carries its root; the host is the checkpoint's.
  const lane = byName.get('api-refactor/L1')!;
  const laneState = find(samples, 'loop_dash_session_state', { session: lane.session, state: 'requesting' })[0]!;
  assert.equal(laneState.labels.root, lane.root);
  assert.equal(laneState.labels.role, 'lane');
  assert.equal(laneState.labels.host, HOST);
  assert.match(laneState.labels.model!, /\//);

  // Checkpoint age: exact at the scrape instant.
  const snap = buildSnapshot(state, NOW, { host: HOST });
  const flaky = snap.roots.find((r) => r.name === 'flaky-provider')!;
  assert.equal(one(samples, 'loop_dash_session_checkpoint_age_seconds', { session: flaky.session }), (NOW - flaky.checkpoint!.updatedAt) / 1000);

  // Per home: sessions known by role and state; incidents by class; nothing pruned beyond the finished ones.
  const known = find(samples, 'loop_dash_sessions', { home: m.home }).reduce((n, s) => n + s.value, 0);
  assert.equal(known, m.sessions.length + m.placeholders.length, 'every session, and each lane with no session yet');
  // A lane dispatched with no session yet: its state series, under its root.
  for (const p of m.placeholders) {
    assert.equal(one(samples, 'loop_dash_session_state', { session: `run:${p.runId}`, state: 'dispatched', role: 'lane', root: p.root }), 1, `placeholder ${p.lane}`);
    assert.equal(one(samples, 'loop_dash_session_state', { session: `run:${p.runId}`, state: 'unknown' }), 0);
  }
  assert.ok(m.placeholders.length > 0);
  assert.equal(one(samples, 'loop_dash_sessions', { home: m.home, role: 'root', state: 'recovering' }), 2);
  const incidents = find(samples, 'loop_dash_incidents_total', { home: m.home });
  assert.equal(incidents.reduce((n, s) => n + s.value, 0), m.incidents.length);
  const byClass = new Map<string, number>();
  for (const i of m.incidents) byClass.set(i.class, (byClass.get(i.class) ?? 0) + 1);
  for (const [cls, n] of byClass) assert.equal(one(samples, 'loop_dash_incidents_total', { home: m.home, class: cls }), n, cls);
  assert.equal(one(samples, 'loop_dash_warnings', { home: m.home }), 0);
  assert.equal(one(samples, 'loop_dash_watch_degraded', {}), 0);
  assert.equal(one(samples, 'loop_dash_watch_mode', { mode: 'native' }), 1);
  assert.equal(one(samples, 'loop_dash_scrapes_total', {}), 1);

  // The exact lines for one session (home and host normalised), so the format itself is pinned.
  const flakyLines = text
    .split('\n')
    .filter((l) => l.includes(`session="${flaky.session}"`) && /^loop_dash_session_(limit_remaining|retry_attempts_remaining|next_retry|limit_fires_first)/.test(l))
    .map((l) => l.replaceAll(m.home, '<HOME>').replaceAll(`host="${HOST}"`, 'host="<HOST>"').replaceAll(flaky.session, '<ID>'));
  const labels = `home="<HOME>",host="<HOST>",session="<ID>",name="flaky-provider",role="root",root="<ID>",model="${flaky.model}"`;
  assert.deepEqual(flakyLines, [
    `loop_dash_session_limit_remaining_seconds{${labels},limit="episode"} ${(flaky.clocks.episode!.at - NOW) / 1000}`,
    `loop_dash_session_limit_fires_first{${labels},limit="episode"} 1`,
    `loop_dash_session_retry_attempts_remaining{${labels}} 2`,
    `loop_dash_session_next_retry_seconds{${labels},source="${flaky.clocks.nextRetry!.source}"} ${(flaky.clocks.nextRetry!.at - NOW) / 1000}`,
  ]);
});

test('values are computed at scrape time: a later scrape counts down by exactly the time between', async () => {
  const m = await demoHome();
  const state = await loadState([m.home]);
  let now = NOW;
  const exporter = exporterFor(state, () => now, [m.home]);
  const live = m.sessions.find((s) => s.name === 'api-refactor')!;
  const at = async () => one(parseMetrics(await exporter.render()), 'loop_dash_session_limit_remaining_seconds', { session: live.session, limit: 'inactivity' });
  const first = await at();
  now += 12_345;
  const second = await at();
  assert.equal(Math.round(first! * 1000) - Math.round(second! * 1000), 12_345);
  // Concurrent scrapes each see one consistent snapshot.
  const texts = await Promise.all([exporter.render(), exporter.render(), exporter.render()]);
  for (const t of texts) assert.equal(one(parseMetrics(t), 'loop_dash_session_limit_remaining_seconds', { session: live.session, limit: 'inactivity' }), second);
  assert.equal(one(parseMetrics(await exporter.render()), 'loop_dash_scrapes_total', {}), 6);
});

test('cardinality: an ended session leaves the metrics after the grace period; live ones stay', async () => {
  const m = await demoHome();
  const state = await loadState([m.home]);
  const ended = m.sessions.find((s) => s.expect.state === 'ended')!;
  const live = m.sessions.find((s) => s.name === 'api-refactor')!;
  const snap = buildSnapshot(state, NOW, { host: HOST });
  const endedView = snap.roots.flatMap((r) => [r, ...r.lanes]).find((v) => v.session === ended.session)!;
  const endedAt = endedView.checkpoint!.updatedAt;
  const grace = 10 * 60_000;
  let now = endedAt + grace; // exactly at the end of the grace period: still shown
  const exporter = exporterFor(state, () => now, [m.home], grace);

  const before = parseMetrics(await exporter.render());
  assert.equal(one(before, 'loop_dash_session_state', { session: ended.session, state: 'ended' }), 1, 'shown within the grace period');
  assert.ok(find(before, 'loop_dash_session_state', { session: live.session }).length > 0);

  now = endedAt + grace + 1;
  const after = parseMetrics(await exporter.render());
  assert.equal(find(after, 'loop_dash_session_state', { session: ended.session }).length, 0, 'pruned after the grace period');
  assert.equal(
    after.filter((s) => s.labels.session === ended.session).length,
    0,
    'no per-session series of the ended session remain',
  );
  assert.ok(find(after, 'loop_dash_session_state', { session: live.session }).length > 0, 'a live session stays');
  assert.ok((one(after, 'loop_dash_sessions_pruned', {}) ?? 0) >= 1);
  // Still counted among the sessions known.
  assert.ok((one(after, 'loop_dash_sessions', { home: m.home, role: ended.role, state: 'ended' }) ?? 0) >= 1);

  // Every per-session family is bounded by the sessions exported × a fixed number of label values.
  const exported = new Set(after.filter((s) => s.labels.session).map((s) => s.labels.session));
  assert.ok(after.filter((s) => s.labels.session).length <= exported.size * 36, 'at most 36 series per session');
});

test('incident counter: the files present at start count once, and a second scrape does not count them again', async () => {
  const m = await demoHome();
  const state = await loadState([m.home]);
  const exporter = exporterFor(state, () => NOW, [m.home]);
  const total = async () => find(parseMetrics(await exporter.render()), 'loop_dash_incidents_total', { home: m.home }).reduce((n, s) => n + s.value, 0);
  assert.equal(await total(), m.incidents.length);
  assert.equal(await total(), m.incidents.length);
});

test('the incident counter grows when a file appears between scrapes', async () => {
  let state: ModelState = initialModelState();
  const exporter = createExporter({ getState: () => state, host: HOST, clock: () => NOW, version: 'x', homes: ['/h'], defaultMetrics: false });
  const count = async () => one(parseMetrics(await exporter.render()), 'loop_dash_incidents_total', { home: '/h', class: 'loop-x' }) ?? 0;
  const rec = (file: string) => ({ file, home: '/h', cls: 'loop-x', known: false, session: null, at: NOW, limit: null, attempt: null, exhausted: false, movedAside: false, summary: '', raw: {} });
  assert.equal(await count(), 0);
  state = reduceEvents(state, [{ type: 'incident', record: rec('/h/incidents/a.json') }]);
  assert.equal(await count(), 1);
  state = reduceEvents(state, [{ type: 'incident', record: rec('/h/incidents/b.json') }, { type: 'incident-removed', file: '/h/incidents/a.json' }]);
  assert.equal(await count(), 2, 'a new file counts; a removed one does not take the counter down');
  // Hostile class names cannot grow the label set without bound.
  state = reduceEvents(state, Array.from({ length: 200 }, (_, i) => ({ type: 'incident' as const, record: { ...rec(`/h/incidents/c${i}.json`), cls: `junk-${i}` } })));
  const classes = new Set(find(parseMetrics(await exporter.render()), 'loop_dash_incidents_total', { home: '/h' }).map((s) => s.labels.class));
  assert.ok(classes.size <= 64 + 1, `classes capped (${classes.size})`);
  assert.ok(classes.has('other'));
});

test('listen addresses: loopback by default; parsing; loopback detection', () => {
  assert.deepEqual(DEFAULT_LISTEN, { host: '127.0.0.1', port: 9464 });
  assert.ok(isLoopbackHost(DEFAULT_LISTEN.host));
  assert.deepEqual(parseListen('127.0.0.1:9464'), { host: '127.0.0.1', port: 9464 });
  assert.deepEqual(parseListen('[::1]:0'), { host: '::1', port: 0 });
  assert.deepEqual(parseListen('9000'), { host: '127.0.0.1', port: 9000 });
  assert.deepEqual(parseListen(':9000'), { host: '0.0.0.0', port: 9000 });
  for (const bad of ['', 'nohost', '1.2.3.4:99999', 'a:b', 'x y:1', '::1:80']) assert.ok('error' in parseListen(bad), bad);
  for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) assert.ok(isLoopbackHost(h), h);
  for (const h of ['0.0.0.0', '10.0.0.1', '::', 'example.com', '128.0.0.1']) assert.ok(!isLoopbackHost(h), h);
});

test('HTTP: GET /metrics, /api/status, /healthz; 405 for anything but GET; 404; loopback Host names only', async () => {
  const m = await demoHome(Date.now());
  const serve = await startServe({ homes: [m.home], listen: { host: '127.0.0.1', port: 0 }, version: 't', defaultMetrics: false, storeOptions: { reconcileMs: 60_000 } });
  try {
    assert.match(serve.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(serve.server.loopback);
    await serve.ready;

    const metrics = await fetch(`${serve.url}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(metrics.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const live = m.sessions.find((s) => s.name === 'api-refactor')!;
    assert.ok(find(parseMetrics(await metrics.text()), 'loop_dash_session_limit_remaining_seconds', { session: live.session, limit: 'inactivity' }).length === 1);

    const status = await fetch(`${serve.url}/api/status`);
    assert.equal(status.status, 200);
    const doc = (await status.json()) as Record<string, any>;
    const expected = statusJson(buildSnapshot(serve.store.getState(), Date.parse(doc.now), { host: HOST }));
    assert.deepEqual({ ...doc, host: undefined, generator: undefined }, { ...JSON.parse(JSON.stringify(expected)), host: undefined, generator: undefined });
    assert.equal(doc.host, HOST);

    const health = await fetch(`${serve.url}/healthz`);
    assert.equal(health.status, 200);
    const body = (await health.json()) as { status: string; sessions: number };
    assert.equal(body.status, 'ok');
    assert.equal(body.sessions, m.sessions.length, 'each session once, whether it has a file, a checkpoint or both (a lane with no session yet is none)');

    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']) {
      for (const p of ['/metrics', '/api/status', '/healthz', '/api/abort']) {
        const r = await fetch(`${serve.url}${p}`, { method, ...(method === 'POST' || method === 'PUT' ? { body: '{"action":"abort"}' } : {}) });
        assert.equal(r.status, 405, `${method} ${p}`);
        assert.equal(r.headers.get('allow'), 'GET');
        await r.arrayBuffer();
      }
    }
    const missing = await fetch(`${serve.url}/api/abort`);
    assert.equal(missing.status, 404);
    await missing.arrayBuffer();

    // DNS rebinding: a Host that is not a loopback name is refused on a loopback listener.
    const port = new URL(serve.url).port;
    const rebound = await rawGet(Number(port), '/api/status', 'attacker.example:80');
    assert.equal(rebound.status, 403);
    assert.equal((await rawGet(Number(port), '/healthz', `localhost:${port}`)).status, 200);
  } finally {
    await serve.stop();
  }
});

/** A GET with a chosen Host header (fetch does not let us set it). */
async function rawGet(port: number, p: string, host: string): Promise<{ status: number }> {
  const http = await import('node:http');
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('loop-dash serve: listens on loopback, prints its address, stops cleanly on SIGTERM; --listen default is loopback', async () => {
  const help = spawnSync(process.execPath, [BIN, 'serve', '--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0);
  assert.match(help.stdout, /--listen <host:port>[\s\S]*default: "127\.0\.0\.1:9464"/);
  const bad = spawnSync(process.execPath, [BIN, 'serve', '--listen', 'nonsense'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--listen: "nonsense" is not HOST:PORT/);

  const m = await demoHome(Date.now());
  const child = spawn(process.execPath, [BIN, 'serve', '--home', m.home, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const url = await waitFor(() => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1], () => `the address in stdout (${out}${err})`, 10_000);
    assert.equal(err, '', 'no warning on loopback');
    const r = await waitFor(async () => {
      const res = await fetch(`${url}/healthz`);
      return res.status === 200 ? res : null;
    }, 'healthz 200', 10_000);
    await r.arrayBuffer();
  } finally {
    child.kill('SIGTERM');
  }
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 10_000).unref())]);
  if (code === 'timeout') child.kill('SIGKILL');
  assert.equal(code, 0, `exit code after SIGTERM (stderr: ${err})`);
});
