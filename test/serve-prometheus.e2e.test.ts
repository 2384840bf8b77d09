/**
 * Against a real Prometheus: `promtool` accepts the example config, the alert rules pass their unit
 * tests and the exporter's text passes `promtool check metrics`; then Prometheus (loopback, a free
 * port, its own storage, 1 s scrapes) scrapes `loop-dash serve` over a generated home, and the
 * inactivity countdown it stores for a known session is the one the model computes.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadState } from '../src/cli/load-snapshot.js';
import { generateHome, type DemoManifest } from '../src/demo/generate.js';
import { processStartIdentity } from '../src/readers/process-probe.js';
import { createExporter } from '../src/serve/metrics.js';
import { ensurePrometheus, freeLoopbackPort, type PrometheusBinaries } from './support/prometheus.js';
import { waitFor } from './support/wait-for.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'loop-dash.js');
const DEPLOY = path.join(ROOT, 'deploy', 'prometheus');
const SCRAPE_S = 1;

let bins: PrometheusBinaries;
const children: ChildProcess[] = [];

before(() => {
  bins = ensurePrometheus();
});

after(async () => {
  for (const c of children) await stop(c);
});

function promtool(args: string[], input?: string) {
  return spawnSync(bins.promtool, args, { encoding: 'utf8', cwd: DEPLOY, input, timeout: 60_000 });
}

async function demoHome(now: number): Promise<DemoManifest> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-prom-'));
  return generateHome(path.join(base, 'home'), {
    now,
    livePid: process.pid,
    livePidStart: processStartIdentity(process.pid),
    deadPid: spawnSync(process.execPath, ['-e', '0']).pid!,
    repoDir: path.join(base, 'repo'),
  });
}

/** SIGTERM, then SIGKILL if it has not exited within 10 s; resolves to the exit code. */
async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  const code = await exited;
  clearTimeout(timer);
  return code;
}

function start(cmd: string, args: string[]): { child: ChildProcess; output: () => string } {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

test('promtool check config accepts deploy/prometheus/prometheus.yml (and the rule file it loads)', () => {
  const r = promtool(['check', 'config', 'prometheus.yml']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout + r.stderr, /SUCCESS: 1 rule files found/);
});

test('promtool test rules: every alert has a unit test and they pass', () => {
  const rules = readFileSync(path.join(DEPLOY, 'loop-dash-alerts.yml'), 'utf8');
  const tests = readFileSync(path.join(DEPLOY, 'loop-dash-alerts.test.yml'), 'utf8');
  const alerts = [...rules.matchAll(/^\s*- alert: (\S+)/gm)].map((m) => m[1]!);
  assert.deepEqual(alerts.sort(), ['LoopDashExporterDown', 'LoopDashIncidentBurst', 'LoopDashRequestAboutToBeCut', 'LoopDashRetryEpisodeExhausted', 'LoopDashRootLost']);
  for (const a of alerts) assert.match(tests, new RegExp(`alertname: ${a}\\n[\\s\\S]*?exp_alerts:\\n\\s+- exp_labels`), `${a} has a test that expects it to fire`);
  const check = promtool(['check', 'rules', 'loop-dash-alerts.yml']);
  assert.equal(check.status, 0, check.stdout + check.stderr);
  const r = promtool(['test', 'rules', 'loop-dash-alerts.test.yml']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /SUCCESS/);
});

test('promtool check metrics: the exporter text follows the Prometheus naming rules', async () => {
  const m = await demoHome(Date.now());
  const state = await loadState([m.home]);
  const text = await createExporter({ getState: () => state, host: os.hostname(), clock: () => Date.now(), version: 't', homes: [m.home] }).render();
  assert.match(text, /^process_cpu_seconds_total/m, 'with the default process metrics');
  const r = promtool(['check', 'metrics'], text);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.equal((r.stdout + r.stderr).trim(), '');
});

test('Prometheus scrapes loop-dash serve: the inactivity countdown of a known session is the model\'s, ± one scrape', async () => {
  const generatedAt = Date.now();
  const m = await demoHome(generatedAt);
  const session = m.sessions.find((s) => s.name === 'api-refactor' && s.expect.state === 'requesting' && s.expect.inactivityAt !== null)!;
  assert.ok(session, 'the generated home has a live request');
  const inactivityAt = session.expect.inactivityAt!;

  const serve = start(process.execPath, [BIN, 'serve', '--home', m.home, '--listen', '127.0.0.1:0']);
  const target = await waitFor(() => /listening on http:\/\/(127\.0\.0\.1:\d+)/.exec(serve.output())?.[1], () => `the exporter's address (${serve.output()})`, 15_000);

  const dir = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-prometheus-'));
  const promPort = await freeLoopbackPort();
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global:',
      `  scrape_interval: ${SCRAPE_S}s`,
      `  evaluation_interval: ${SCRAPE_S}s`,
      'rule_files:',
      `  - ${JSON.stringify(path.join(DEPLOY, 'loop-dash-alerts.yml'))}`,
      'scrape_configs:',
      '  - job_name: loop-dash',
      `    scrape_interval: ${SCRAPE_S}s`,
      '    static_configs:',
      `      - targets: ['${target}']`,
      '',
    ].join('\n'),
  );
  const prom = start(bins.prometheus, [
    `--config.file=${config}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${promPort}`,
    '--log.level=warn',
  ]);
  const api = `http://127.0.0.1:${promPort}/api/v1`;
  type Vector = { metric: Record<string, string>; value: [number, string] }[];
  const query = async (q: string): Promise<Vector> => {
    const res = await fetch(`${api}/query?query=${encodeURIComponent(q)}`);
    const body = (await res.json()) as { status: string; data: { result: Vector } };
    assert.equal(body.status, 'success');
    return body.data.result;
  };

  const selector = `loop_dash_session_limit_remaining_seconds{job="loop-dash",limit="inactivity",session="${session.session}"}`;
  const [sample] = await waitFor(
    async () => {
      const r = await query(selector);
      return r.length > 0 ? r : null;
    },
    () => `Prometheus to store ${selector}\n--- prometheus ---\n${prom.output().slice(-2000)}\n--- serve ---\n${serve.output().slice(-2000)}`,
    30_000,
    200,
  );
  const [evalTs, text] = sample!.value;
  const value = Number(text);
  assert.equal(sample!.metric.name, 'api-refactor');
  assert.equal(sample!.metric.role, 'root');
  assert.equal(sample!.metric.home, m.home);
  // The model at the query's instant; the stored sample is at most one scrape (plus lookback jitter) older.
  const atEval = (inactivityAt - evalTs * 1000) / 1000;
  assert.ok(value >= atEval - 0.5 && value <= atEval + SCRAPE_S + 1, `value ${value} vs the model's ${atEval} at the query instant`);
  // Tighter: against the scrape's own timestamp the values agree to the time the exporter took to answer.
  const [stamp] = await query(`timestamp(${selector})`);
  const [again] = await query(selector);
  const scrapedAt = Number(stamp!.value[1]) * 1000;
  const expected = (inactivityAt - scrapedAt) / 1000;
  const stored = Number(again!.value[1]);
  assert.ok(Math.abs(stored - expected) <= 0.5, `stored ${stored} vs model ${expected} at the scrape instant ${new Date(scrapedAt).toISOString()}`);
  assert.ok(stored < (inactivityAt - generatedAt) / 1000, 'the countdown has moved since the home was generated');

  // The target is up, the rules loaded, and the lost root in the home is there for LoopDashRootLost.
  const [up] = await query('up{job="loop-dash"}');
  assert.equal(up!.value[1], '1');
  const rules = (await (await fetch(`${api}/rules`)).json()) as { data: { groups: { name: string; rules: { name: string; health: string }[] }[] } };
  const group = rules.data.groups.find((g) => g.name === 'loop-dash');
  assert.equal(group?.rules.length, 5);
  for (const r of group!.rules) assert.notEqual(r.health, 'err', r.name);
  const lost = await query('loop_dash_session_state{role="root",state="lost"} == 1');
  assert.ok(lost.some((s) => s.metric.name === 'crashed-root'));
  // The example queries of docs/METRICS.md are valid PromQL and find something here.
  const doc = readFileSync(path.join(ROOT, 'docs', 'METRICS.md'), 'utf8');
  const examples = (/```promql\n([\s\S]*?)```/.exec(doc)?.[1] ?? '').split('\n').filter((l) => l.trim() && !l.startsWith('#'));
  assert.ok(examples.length >= 4);
  for (const q of examples) assert.ok((await query(q)).length > 0, `docs example finds series: ${q}`);
  const binding = await query('loop_dash_session_limit_remaining_seconds and on (instance, session, limit) (loop_dash_session_limit_fires_first == 1)');
  assert.ok(binding.some((s) => s.metric.session === session.session && s.metric.limit === 'inactivity'));

  assert.equal(await stop(prom.child), 0, `prometheus exit (${prom.output().slice(-1000)})`);
  assert.equal(await stop(serve.child), 0, `serve exit (${serve.output()})`);
});
