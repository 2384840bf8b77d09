import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runAudit } from '../src/cli/audit-command.js';
import { displayWidth } from '../src/views/text.js';

const T0 = Date.parse('2026-10-03T14:00:00.000Z');
const NOW = T0 + 3_600_000;
const S = 1000;
const iso = (ms: number) => new Date(ms).toISOString();

/** One prompt + one assistant reply, as pi writes them (message stamped at the start, entry at the end). */
function call(n: number, model: string, start: number, seconds: number, output: number, stopReason = 'stop'): string {
  const prompt = { type: 'message', id: `u${n}`, parentId: null, timestamp: iso(start), message: { role: 'user', content: 'next', timestamp: start } };
  const reply = {
    type: 'message',
    id: `a${n}`,
    parentId: `u${n}`,
    timestamp: iso(start + seconds * S),
    message: {
      role: 'assistant',
      content: [{ type: 'text', text: 'ok' }],
      api: 'openai-responses',
      provider: 'openai',
      model,
      usage: { input: 500, output, cacheRead: 0, cacheWrite: 0, totalTokens: 500 + output },
      stopReason,
      timestamp: start + 2,
    },
  };
  return `${JSON.stringify(prompt)}\n${JSON.stringify(reply)}\n`;
}

/** A pi home with one root session: gpt-x at 21.5 and 43 tok/s, gpt-y with only short calls. */
function generateHome(absoluteMs: number): string {
  const home = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-audit-cli-')), 'home');
  fs.mkdirSync(path.join(home, 'sessions', '--work-repo--'), { recursive: true });
  fs.writeFileSync(path.join(home, 'settings.json'), JSON.stringify({ loopPi: { requestCeiling: { absoluteMs } } }));
  fs.writeFileSync(
    path.join(home, 'models.json'),
    JSON.stringify({ providers: { openai: { models: [{ id: 'gpt-x', maxTokens: 16_000 }, { id: 'gpt-y', maxTokens: 32_000 }] } } }),
  );
  const header = JSON.stringify({ type: 'session', version: 3, id: 'root-1', timestamp: iso(T0), cwd: '/work/repo' }) + '\n';
  const body = [
    call(1, 'gpt-x', T0, 100, 2150), // 21.5 tok/s
    call(2, 'gpt-x', T0 + 200 * S, 50, 2150), // 43 tok/s
    call(3, 'gpt-y', T0 + 400 * S, 10, 120), // too short to count
    call(4, 'gpt-y', T0 + 500 * S, 1, 0, 'error'),
  ].join('');
  fs.writeFileSync(path.join(home, 'sessions', '--work-repo--', '2026-10-03T14-00-00-000Z_root-1.jsonl'), header + body);
  return home;
}

function capture(columns?: number) {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (s: string) => out.push(s), err: (s: string) => err.push(s), ...(columns ? { columns } : {}) } };
}

const rate215 = { slowestTokPerS: 21.5, medianTokPerS: 32.25, calls: 2 };
const noRate = { slowestTokPerS: null, medianTokPerS: null, calls: 0 };

test('runAudit --json prints exactly the expected rows and exits 1 when a limit is below bound', async () => {
  const home = generateHome(600_000);
  const c = capture();
  const code = await runAudit({ homes: [home], json: true, now: NOW, io: c.io });
  assert.equal(code, 1);
  assert.deepEqual(c.err, []);
  const doc = JSON.parse(c.out.join(''));
  assert.equal(doc.v, 1);
  assert.equal(doc.home, home);
  assert.equal(doc.now, iso(NOW));
  const rows = doc.rows.map((r: Record<string, unknown>) => ({
    limit: r.limit,
    model: r.model,
    configuredMs: r.configuredMs,
    boundMs: r.boundMs,
    margin: r.margin,
    verdict: r.verdict,
    rate: r.rate,
    firstTokenMs: r.firstTokenMs,
    maxTokens: r.maxTokens,
  }));
  const transport = (limit: string, model: string, configuredMs: number | null, rate: object, maxTokens: number) => ({
    limit,
    model,
    configuredMs,
    boundMs: null,
    margin: null,
    verdict: 'NOT A REQUEST BOUND',
    rate,
    firstTokenMs: null,
    maxTokens,
  });
  assert.deepEqual(rows, [
    { limit: 'loopPi.requestCeiling.inactivityMs', model: 'openai/gpt-x', configuredMs: 900_000, boundMs: null, margin: null, verdict: 'UNKNOWN', rate: rate215, firstTokenMs: null, maxTokens: 16_000 },
    { limit: 'loopPi.requestCeiling.inactivityMs', model: 'openai/gpt-y', configuredMs: 900_000, boundMs: null, margin: null, verdict: 'UNKNOWN', rate: noRate, firstTokenMs: null, maxTokens: 32_000 },
    { limit: 'loopPi.requestCeiling.absoluteMs', model: 'openai/gpt-x', configuredMs: 600_000, boundMs: 744_187, margin: 0.806, verdict: 'BELOW BOUND', rate: rate215, firstTokenMs: null, maxTokens: 16_000 },
    { limit: 'loopPi.requestCeiling.absoluteMs', model: 'openai/gpt-y', configuredMs: 600_000, boundMs: null, margin: null, verdict: 'UNKNOWN', rate: noRate, firstTokenMs: null, maxTokens: 32_000 },
    transport('httpIdleTimeoutMs', 'openai/gpt-x', 300_000, rate215, 16_000),
    transport('httpIdleTimeoutMs', 'openai/gpt-y', 300_000, noRate, 32_000),
    transport('retry.provider.timeoutMs', 'openai/gpt-x', null, rate215, 16_000),
    transport('retry.provider.timeoutMs', 'openai/gpt-y', null, noRate, 32_000),
  ]);
  assert.match(doc.rows[3].note, /no rate measured.*1 under the output minimum, 1 error/);
  assert.deepEqual(doc.binding, { limit: 'loopPi.requestCeiling.absoluteMs', model: 'openai/gpt-x', margin: 0.806 });
  assert.deepEqual(doc.excluded, { total: 2, reasons: { 'below-min-output': 1, error: 1 } });
  assert.equal(doc.worstCase.model, 'openai/gpt-x');
  assert.equal(doc.worstCase.perAttemptMs, 744_187);
  assert.equal(doc.worstCase.attempts, 4);
  assert.equal(doc.worstCase.absolute.perAttemptFits, false);
  assert.equal(doc.sampled.files, 1);
  assert.equal(doc.sampled.bytesSampled, doc.sampled.bytesTotal);
});

test('runAudit exits 0 when every limit holds its bound (a 1200 s limit is OK at 1.61×)', async () => {
  const home = generateHome(1_200_000);
  const c = capture();
  assert.equal(await runAudit({ homes: [home], json: true, now: NOW, io: c.io }), 0);
  const doc = JSON.parse(c.out.join(''));
  const abs = doc.rows.find((r: { limit: string; model: string }) => r.limit === 'loopPi.requestCeiling.absoluteMs' && r.model === 'openai/gpt-x');
  assert.equal(abs.verdict, 'OK');
  assert.equal(Math.round(abs.margin * 100) / 100, 1.61);
  assert.ok(!doc.rows.some((r: { verdict: string }) => r.verdict === 'BELOW BOUND'));
});

test('--min-output moves which calls count: with 3000 no call of gpt-x counts and it becomes UNKNOWN (exit 0)', async () => {
  const home = generateHome(600_000);
  const c = capture();
  assert.equal(await runAudit({ homes: [home], json: true, minOutput: '3000', now: NOW, io: c.io }), 0);
  const doc = JSON.parse(c.out.join(''));
  assert.equal(doc.minOutput, 3000);
  const abs = doc.rows.find((r: { limit: string; model: string }) => r.limit === 'loopPi.requestCeiling.absoluteMs' && r.model === 'openai/gpt-x');
  assert.equal(abs.verdict, 'UNKNOWN');
  assert.equal(abs.rate.calls, 0);
  assert.equal(doc.binding, null);
});

test('bad input exits 2 with one line naming what to fix', async () => {
  const home = generateHome(600_000);
  for (const minOutput of ['abc', '0', '-5', '1.5', '']) {
    const c = capture();
    assert.equal(await runAudit({ homes: [home], json: false, minOutput, now: NOW, io: c.io }), 2, `--min-output ${JSON.stringify(minOutput)}`);
    assert.deepEqual(c.out, []);
    assert.match(c.err.join(''), /--min-output must be a whole number/);
  }
  const missing = path.join(path.dirname(home), 'no-such-home');
  const c = capture();
  assert.equal(await runAudit({ homes: [home, missing], json: true, now: NOW, io: c.io }), 2);
  assert.deepEqual(c.out, [], 'nothing printed when one home is bad');
  assert.match(c.err.join(''), /no-such-home is not a directory/);
  const file = path.join(home, 'settings.json');
  const f = capture();
  assert.equal(await runAudit({ homes: [file], json: true, now: NOW, io: f.io }), 2);
  // The directory above the home (a mistyped --home): not a pass, but a line naming the mistake.
  const above = capture();
  assert.equal(await runAudit({ homes: [path.dirname(home)], json: false, now: NOW, io: above.io }), 2);
  assert.deepEqual(above.out, []);
  assert.match(above.err.join(''), /does not look like a pi home \(no settings\.json, models\.json, sessions\/, extensions\/ or loop-dash\/ in it\)/);
});

test('several homes: one JSON document per home under audits; exit 1 when any home has a row below bound', async () => {
  const ok = generateHome(1_200_000);
  const below = generateHome(600_000);
  const c = capture();
  assert.equal(await runAudit({ homes: [ok, below], json: true, now: NOW, io: c.io }), 1);
  const doc = JSON.parse(c.out.join(''));
  assert.equal(doc.v, 1);
  assert.deepEqual(
    doc.audits.map((a: { home: string }) => a.home),
    [ok, below],
  );
});

test('the text report fits the terminal width and names the verdicts', async () => {
  const home = generateHome(600_000);
  for (const columns of [80, 132]) {
    const c = capture(columns);
    assert.equal(await runAudit({ homes: [home], json: false, now: NOW, io: c.io }), 1);
    const lines = c.out.join('').replace(/\n$/, '').split('\n');
    assert.ok(lines.every((l) => displayWidth(l) <= columns), `a line is wider than ${columns}`);
    const text = lines.join('\n');
    assert.match(text, /absolute +openai\/gpt-x +10m00s +12m25s +0\.81× +BELOW BOUND/);
    assert.match(text, columns >= 100 ? /NOT A REQUEST BOUND/ : /NOT A REQ BOUND/);
    assert.match(text, /UNKNOWN/);
    assert.match(text, /Binding: loop-pi absolute for openai\/gpt-x/);
  }
});

test('a home with no sessions audits cleanly: no rows, a note, exit 0; a directory with nothing of a pi home in it exits 2', async () => {
  const home = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-audit-empty-')), 'home');
  fs.mkdirSync(home);
  const empty = capture();
  assert.equal(await runAudit({ homes: [home], json: true, now: NOW, io: empty.io }), 2);
  assert.match(empty.err.join(''), /does not look like a pi home/);
  // A pi home as pi leaves it before its first session: its settings.
  fs.writeFileSync(path.join(home, 'settings.json'), '{}');
  const c = capture();
  assert.equal(await runAudit({ homes: [home], json: true, now: NOW, io: c.io }), 0);
  const doc = JSON.parse(c.out.join(''));
  assert.deepEqual(doc.rows, []);
  assert.equal(doc.binding, null);
  assert.match(doc.notes.join('\n'), /No model seen/);
  assert.equal(doc.worstCase.composedMs, null);
});
