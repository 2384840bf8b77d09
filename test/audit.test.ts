import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  buildAudit,
  composeWorstCase,
  modelCatalog,
  parseAgentFile,
  resolveModelRef,
  summarizeRates,
  worstRetryWait,
  type AuditInput,
  type AuditResult,
  type ModelRateInput,
} from '../src/model/audit.js';
import { limitsFromSettings } from '../src/model/limits.js';
import { loadAudit } from '../src/cli/audit-command.js';
import { createReadCounter } from '../src/readers/read-counter.js';
import { sampleRates } from '../src/readers/rate-sampler.js';
import { auditHeaderWarning, auditLines } from '../src/views/audit-lines.js';
import { displayWidth } from '../src/views/text.js';

const T0 = Date.parse('2026-10-03T14:00:00.000Z');
const NOW = T0 + 24 * 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
const S = 1000;
let seq = 0;

/** How the assistant message's own epoch-ms `timestamp` is written. */
type Style = 'pi' | 'at-end';

interface Call {
  provider?: string;
  model: string;
  /** Request start: the entry before the assistant message is written here. */
  start: number;
  end: number;
  output: number;
  stop?: string;
  /** Time to first model event, recorded as loopPiTiming.firstTokenAt. */
  ttftMs?: number;
  attempts?: number;
  /** The entry before the call: a user prompt (default) or a tool result. */
  before?: 'user' | 'toolResult' | 'none';
  style?: Style;
}

function line(type: string, at: number, extra: Record<string, unknown>): string {
  seq += 1;
  return JSON.stringify({ type, id: `e${seq}`, parentId: seq > 1 ? `e${seq - 1}` : null, timestamp: iso(at), ...extra }) + '\n';
}

function callLines(c: Call): string {
  let out = '';
  if (c.before !== 'none') {
    out +=
      c.before === 'toolResult'
        ? line('message', c.start, { message: { role: 'toolResult', toolCallId: 'x', toolName: 'bash', content: [{ type: 'text', text: 'ok' }], isError: false, timestamp: c.start } })
        : line('message', c.start, { message: { role: 'user', content: 'go on', timestamp: c.start } });
  }
  // pi-ai stamps the message when the request starts and the session entry when it ends; the demo writes the end in both.
  const messageTs = (c.style ?? 'pi') === 'pi' ? c.start + 3 : c.end;
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: [{ type: 'text', text: 'done' }],
    api: 'openai-responses',
    provider: c.provider ?? 'openai',
    model: c.model,
    usage: { input: 1000, output: c.output, cacheRead: 0, cacheWrite: 0, totalTokens: 1000 + c.output },
    stopReason: c.stop ?? 'stop',
    timestamp: messageTs,
  };
  if (c.stop === 'error') message.errorMessage = '502 Bad Gateway';
  if (c.ttftMs !== undefined || c.attempts !== undefined) {
    message.loopPiTiming = { firstTokenAt: c.ttftMs === undefined ? null : c.start + c.ttftMs, attempts: c.attempts ?? 1, processingMs: 100, headers: {} };
  }
  out += line('message', c.end, { message });
  return out;
}

function tempHome(): string {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-audit-'));
  const home = path.join(base, 'home');
  fs.mkdirSync(home, { recursive: true });
  return home;
}

/** Writes a root session of the given calls; returns its path. */
function writeSession(home: string, id: string, calls: Call[], opts: { cwd?: string; prefix?: string } = {}): string {
  const cwd = opts.cwd ?? '/work/repo';
  const dir = path.join(home, 'sessions', `--${cwd.replace(/^\//, '').replace(/\//g, '-')}--`);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `2026-10-03T14-00-00-000Z_${id}.jsonl`);
  const headerLine = JSON.stringify({ type: 'session', version: 3, id, timestamp: iso(T0), cwd }) + '\n';
  fs.writeFileSync(file, headerLine + (opts.prefix ?? '') + calls.map(callLines).join(''));
  return file;
}

function writeJson(file: string, value: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(value, null, 2));
}

/** `n` calls of `model` at `tokPerS`, one after another, each 100 s long. */
function steadyCalls(model: string, tokPerS: number, n: number, from: number, extra: Partial<Call> = {}): Call[] {
  return Array.from({ length: n }, (_, i) => ({
    model,
    start: from + i * 200 * S,
    end: from + i * 200 * S + 100 * S,
    output: Math.round(tokPerS * 100),
    before: i === 0 ? 'user' : 'toolResult',
    ...extra,
  }));
}

const row = (r: AuditResult, limit: string, model: string) => {
  const found = r.rows.find((x) => x.limit === limit && x.model === model);
  assert.ok(found, `row ${limit} × ${model} in ${r.rows.map((x) => `${x.limit} × ${x.model}`).join('; ')}`);
  return found;
};

// ---------------------------------------------------------------------------------------------
// The rate sampler on real session files

test('sampler: rate = output tokens over request duration, slowest and median per model, in both timestamp conventions', async () => {
  for (const style of ['pi', 'at-end'] as const) {
    const home = tempHome();
    writeSession(home, 'sid-a', [
      { model: 'gpt-x', start: T0 + 10 * S, end: T0 + 110 * S, output: 2150, style }, // 21.5 tok/s
      { model: 'gpt-x', start: T0 + 120 * S, end: T0 + 170 * S, output: 2150, before: 'toolResult', style }, // 43 tok/s
      { model: 'gpt-x', start: T0 + 200 * S, end: T0 + 240 * S, output: 1200, stop: 'toolUse', before: 'toolResult', style }, // 30
    ]);
    const sample = await sampleRates(home);
    const m = sample.models.find((x) => x.id === 'gpt-x');
    assert.ok(m, style);
    assert.equal(m.provider, 'openai');
    const summary = summarizeRates(m.tokPerS);
    assert.equal(summary.calls, 3, style);
    assert.equal(summary.slowestTokPerS, 21.5, style);
    assert.equal(summary.medianTokPerS, 30, style);
    assert.equal(m.calls[0]!.startSource, 'previous-entry');
    assert.equal(sample.excluded.total, 0);
    assert.equal(sample.sampled.files, 1);
    assert.equal(sample.sampled.filesCut, 0);
  }
});

test('sampler: error and aborted attempts never count; short calls are left out with their reason', async () => {
  const home = tempHome();
  writeSession(home, 'sid-b', [
    { model: 'gpt-x', start: T0, end: T0 + 100 * S, output: 2150 },
    { model: 'gpt-x', start: T0 + 200 * S, end: T0 + 900 * S, output: 600, stop: 'aborted' },
    { model: 'gpt-x', start: T0 + 1000 * S, end: T0 + 1001 * S, output: 0, stop: 'error' },
    { model: 'gpt-x', start: T0 + 1100 * S, end: T0 + 1200 * S, output: 499 }, // 4.99 tok/s, but under 500 tokens
    { model: 'gpt-x', start: T0 + 1300 * S, end: T0 + 1400 * S, output: 3000, stop: 'length' }, // counts: 30 tok/s
  ]);
  const sample = await sampleRates(home);
  const m = sample.models.find((x) => x.id === 'gpt-x')!;
  assert.deepEqual(summarizeRates(m.tokPerS), { slowestTokPerS: 21.5, medianTokPerS: 25.75, calls: 2 });
  assert.deepEqual(sample.excluded, { total: 3, reasons: { aborted: 1, error: 1, 'below-min-output': 1 } });
  assert.deepEqual(m.excluded, { aborted: 1, error: 1, 'below-min-output': 1 });
  // --min-output moves the threshold.
  const low = await sampleRates(home, { minOutput: 100 });
  assert.equal(summarizeRates(low.models.find((x) => x.id === 'gpt-x')!.tokPerS).slowestTokPerS, 4.99);
});

test('sampler: a retried call does not lower the measured rate and is counted as excluded', async () => {
  const home = tempHome();
  const t = T0 + 1000 * S;
  writeSession(home, 'sid-c', [
    { model: 'gpt-x', start: T0, end: T0 + 100 * S, output: 2150 }, // 21.5
    // Attempt 1 fails after 30 s; pi persists it, waits, retries; the retry's entry follows the error.
    { model: 'gpt-x', start: t, end: t + 30 * S, output: 0, stop: 'error' },
    // Measured from the error entry this would be 2150 / 400 s = 5.4 tok/s: it must not count.
    { model: 'gpt-x', start: t + 30 * S, end: t + 430 * S, output: 2150, before: 'none' },
    // loop-pi's own count of attempts marks a retried call too.
    { model: 'gpt-x', start: t + 500 * S, end: t + 900 * S, output: 2150, before: 'toolResult', attempts: 3 },
  ]);
  const sample = await sampleRates(home);
  const m = sample.models.find((x) => x.id === 'gpt-x')!;
  assert.equal(summarizeRates(m.tokPerS).slowestTokPerS, 21.5);
  assert.equal(summarizeRates(m.tokPerS).calls, 1);
  assert.equal(sample.excluded.reasons.retried, 2);
  assert.equal(sample.excluded.reasons.error, 1);
});

test('sampler: time to first token is measured, the rate runs over the generation, and custom entries do not move the start', async () => {
  const home = tempHome();
  // A custom entry written while the request runs (extension state) must not be taken as its start.
  const start = T0 + 10 * S;
  const custom = JSON.stringify({ type: 'custom', id: 'c1', parentId: null, timestamp: iso(start + 50 * S), customType: 'loop-dash-control', data: { held: true } }) + '\n';
  const user = JSON.stringify({ type: 'message', id: 'u1', parentId: null, timestamp: iso(start), message: { role: 'user', content: 'go', timestamp: start } }) + '\n';
  const dir = path.join(home, 'sessions', '--work-repo--');
  fs.mkdirSync(dir, { recursive: true });
  const assistant = callLines({ model: 'gpt-x', start, end: start + 110 * S, output: 2150, ttftMs: 10 * S, before: 'none' });
  fs.writeFileSync(
    path.join(dir, '2026-10-03T14-00-00-000Z_sid-d.jsonl'),
    JSON.stringify({ type: 'session', version: 3, id: 'sid-d', timestamp: iso(T0), cwd: '/work/repo' }) + '\n' + user + custom + assistant,
  );
  const sample = await sampleRates(home);
  const m = sample.models.find((x) => x.id === 'gpt-x')!;
  assert.equal(m.calls.length, 1);
  assert.equal(m.calls[0]!.startedAt, start);
  assert.equal(m.calls[0]!.firstTokenMs, 10 * S);
  assert.equal(m.calls[0]!.generationMs, 100 * S);
  assert.equal(m.tokPerS[0], 21.5, '2150 tokens over the 100 s after the first token');
  assert.equal(m.firstTokenMs, 10 * S);
});

test('sampler: a checkpoint that recorded the request start wins over the entry before it', async () => {
  const home = tempHome();
  const start = T0 + 10 * S;
  writeSession(home, 'sid-e', [{ model: 'gpt-x', start, end: start + 150 * S, output: 2150 }]);
  const sample = await sampleRates(home, {
    checkpoints: [
      {
        file: path.join(home, 'loop-dash', 'checkpoints', 'sid-e.json'),
        home,
        session: 'sid-e',
        mtimeMs: 0,
        // The request really started 50 s after the prompt (e.g. compaction ran first).
        checkpoint: { session: 'sid-e', sessionFile: null, lastRequest: { turn: 1, startedAt: start + 50 * S, endedAt: start + 150 * S + 20 } } as never,
      },
    ],
  });
  const m = sample.models.find((x) => x.id === 'gpt-x')!;
  assert.equal(m.calls[0]!.startSource, 'checkpoint');
  assert.equal(m.tokPerS[0], 21.5);
});

test('sampler: reads only the last N bytes of a big session and says how much it sampled', async () => {
  const home = tempHome();
  const filler = Array.from({ length: 400 }, (_, i) =>
    JSON.stringify({ type: 'custom', id: `f${i}`, parentId: null, timestamp: iso(T0), customType: 'padding', data: { text: 'x'.repeat(1000) } }) + '\n',
  ).join('');
  // Old slow calls before the window (would be 1 tok/s), recent ones inside it.
  const old = steadyCalls('gpt-x', 5, 3, T0).map(callLines).join('');
  const recent = steadyCalls('gpt-x', 21.5, 3, T0 + 10_000 * S).map(callLines).join('');
  const file = writeSession(home, 'sid-f', [], { prefix: old + filler + recent });
  const size = fs.statSync(file).size;
  const tailBytes = 64 * 1024;
  const counter = createReadCounter();
  const sample = await sampleRates(home, { tailBytes, counter });
  assert.ok(size > 4 * tailBytes);
  assert.equal(sample.sampled.bytesSampled, tailBytes);
  assert.equal(sample.sampled.bytesTotal, size);
  assert.equal(sample.sampled.filesCut, 1);
  assert.ok(counter.bytesRead <= tailBytes, `read ${counter.bytesRead} bytes`);
  const m = sample.models.find((x) => x.id === 'gpt-x')!;
  assert.equal(summarizeRates(m.tokPerS).slowestTokPerS, 21.5, 'the old slow calls lie outside the window');
  assert.equal(sample.warnings.length, 0, 'the cut first line is not reported as bad');
});

test('sampler: the total budget reads the newest files first and counts the skipped ones', async () => {
  const home = tempHome();
  const older = writeSession(home, 'sid-old', steadyCalls('gpt-old', 5, 2, T0));
  const newer = writeSession(home, 'sid-new', steadyCalls('gpt-new', 21.5, 2, T0));
  fs.utimesSync(older, new Date(T0), new Date(T0));
  fs.utimesSync(newer, new Date(T0 + 3_600_000), new Date(T0 + 3_600_000));
  const sample = await sampleRates(home, { totalBytes: fs.statSync(newer).size });
  assert.deepEqual(
    sample.files.map((f) => f.sessionId),
    ['sid-new'],
  );
  assert.equal(sample.sampled.filesSkipped, 1);
  assert.ok(!sample.models.some((m) => m.id === 'gpt-old'));
});

test('sampler: bad lines become warnings with file and line; the calls around them still count', async () => {
  const home = tempHome();
  const file = writeSession(home, 'sid-g', [], {
    prefix: callLines({ model: 'gpt-x', start: T0, end: T0 + 100 * S, output: 2150 }) + '{not json\n' + callLines({ model: 'gpt-x', start: T0 + 200 * S, end: T0 + 250 * S, output: 2150 }),
  });
  const sample = await sampleRates(home);
  assert.equal(sample.models.find((x) => x.id === 'gpt-x')!.tokPerS.length, 2);
  assert.equal(sample.warnings.length, 1);
  assert.equal(sample.warnings[0]!.file, file);
  assert.equal(sample.warnings[0]!.line, 4);
});

// ---------------------------------------------------------------------------------------------
// Pure audit arithmetic

function input(over: Partial<AuditInput> & { settings?: Record<string, unknown>; models?: AuditInput['models'] }): AuditInput {
  const { limits, notes } = limitsFromSettings(over.settings ?? {});
  return {
    home: '/h',
    now: NOW,
    minOutput: 500,
    limits,
    settingsNotes: notes,
    catalog: modelCatalog({ providers: { openai: { models: [{ id: 'gpt-x', maxTokens: 16_000 }, { id: 'gpt-slow', maxTokens: 16_000 }] } } }),
    rates: [],
    models: [],
    lanes: [],
    excluded: { total: 0, reasons: {} },
    sampled: { files: 0, filesCut: 0, filesSkipped: 0, bytesSampled: 0, bytesTotal: 0, tailBytes: 8 << 20, totalBytes: 256 << 20 },
    notes: [],
    warnings: [],
    ...over,
  };
}

const rate = (id: string, tokPerS: number[], firstTokenMs: number | null = null, excluded: Record<string, number> = {}): ModelRateInput => ({
  provider: 'openai',
  id,
  tokPerS,
  firstTokenMs,
  excluded,
});

test('a 16 000-token budget at 21.5 tok/s needs 744 s: 600 s is BELOW BOUND at 0.81×, 1200 s is OK at 1.61×', () => {
  const cases = [
    { absoluteMs: 600_000, verdict: 'BELOW BOUND', margin: 0.81 },
    { absoluteMs: 1_200_000, verdict: 'OK', margin: 1.61 },
  ] as const;
  for (const c of cases) {
    const r = buildAudit(input({ settings: { loopPi: { requestCeiling: { absoluteMs: c.absoluteMs } } }, models: [{ provider: 'openai', id: 'gpt-x' }], rates: [rate('gpt-x', [21.5, 40])] }));
    const abs = row(r, 'loopPi.requestCeiling.absoluteMs', 'openai/gpt-x');
    assert.equal(Math.floor(abs.boundMs! / 1000), 744);
    assert.equal(abs.boundMs, 744_187);
    assert.equal(abs.verdict, c.verdict);
    assert.equal(Math.round(abs.margin! * 100) / 100, c.margin);
    assert.equal(abs.kind, 'request');
    assert.equal(abs.maxTokens, 16_000);
    assert.deepEqual(abs.rate, { slowestTokPerS: 21.5, medianTokPerS: 30.75, calls: 2 });
    assert.equal(abs.firstTokenMs, null);
  }
});

test('the measured time to first token is added to the bound', () => {
  const r = buildAudit(input({ models: [{ provider: 'openai', id: 'gpt-x' }], rates: [rate('gpt-x', [21.5], 60_000)] }));
  assert.equal(row(r, 'loopPi.requestCeiling.absoluteMs', 'openai/gpt-x').boundMs, 744_187 + 60_000);
  // The inactivity limit cannot cut a request that keeps producing events: it is judged against the silence before the first one.
  const inactivity = row(r, 'loopPi.requestCeiling.inactivityMs', 'openai/gpt-x');
  assert.equal(inactivity.kind, 'silence');
  assert.equal(inactivity.boundMs, 60_000);
  assert.equal(inactivity.margin, 15);
  assert.equal(inactivity.verdict, 'OK');
  const silent = buildAudit(input({ settings: { loopPi: { requestCeiling: { inactivityMs: 30_000 } } }, models: [{ provider: 'openai', id: 'gpt-x' }], rates: [rate('gpt-x', [21.5], 60_000)] }));
  assert.equal(row(silent, 'loopPi.requestCeiling.inactivityMs', 'openai/gpt-x').verdict, 'BELOW BOUND');
  const none = buildAudit(input({ models: [{ provider: 'openai', id: 'gpt-x' }], rates: [rate('gpt-x', [21.5])] }));
  assert.equal(row(none, 'loopPi.requestCeiling.inactivityMs', 'openai/gpt-x').verdict, 'UNKNOWN');
});

test('a limit shared by a 21.5 and a 12.1 tok/s model is judged at 12.1 tok/s (one row per model plus a summary)', () => {
  const r = buildAudit(
    input({
      settings: { loopPi: { requestCeiling: { absoluteMs: 1_200_000 } } },
      models: [
        { provider: 'openai', id: 'gpt-x' },
        { provider: 'openai', id: 'gpt-slow' },
      ],
      rates: [rate('gpt-x', [21.5]), rate('gpt-slow', [12.1, 30])],
    }),
  );
  const fast = row(r, 'loopPi.requestCeiling.absoluteMs', 'openai/gpt-x');
  const slow = row(r, 'loopPi.requestCeiling.absoluteMs', 'openai/gpt-slow');
  assert.equal(fast.verdict, 'OK');
  assert.equal(slow.boundMs, Math.ceil((16_000 / 12.1) * 1000));
  assert.equal(slow.verdict, 'BELOW BOUND', '1200 s < 1322 s');
  const summary = r.limits.find((l) => l.limit === 'loopPi.requestCeiling.absoluteMs')!;
  assert.equal(summary.models, 2);
  assert.equal(summary.judgedAt, 'openai/gpt-slow');
  assert.equal(summary.boundMs, slow.boundMs);
  assert.equal(summary.verdict, 'BELOW BOUND');
  assert.deepEqual(r.binding, { limit: 'loopPi.requestCeiling.absoluteMs', model: 'openai/gpt-slow', margin: 0.907 }, '1200 s ÷ 1322.3 s = 0.9075…: a margin under 1 is rounded down');
});

test('no measurable calls → UNKNOWN with the reason, never a guessed rate; unknown maxTokens → UNKNOWN too', () => {
  const r = buildAudit(
    input({
      models: [
        { provider: 'openai', id: 'gpt-x' },
        { provider: 'acme', id: 'mystery' },
      ],
      rates: [rate('gpt-x', [], null, { 'below-min-output': 4, retried: 1 }), { provider: 'acme', id: 'mystery', tokPerS: [30], firstTokenMs: null, excluded: {} }],
    }),
  );
  const x = row(r, 'loopPi.requestCeiling.absoluteMs', 'openai/gpt-x');
  assert.equal(x.verdict, 'UNKNOWN');
  assert.equal(x.boundMs, null);
  assert.equal(x.margin, null);
  assert.equal(x.rate.slowestTokPerS, null);
  assert.match(x.note, /no rate measured/);
  assert.match(x.note, /4 under the output minimum, 1 retried/);
  const m = row(r, 'loopPi.requestCeiling.absoluteMs', 'acme/mystery');
  assert.equal(m.verdict, 'UNKNOWN');
  assert.match(m.note, /maxTokens unknown: acme\/mystery is not in models\.json/);
  assert.equal(r.binding, null, 'no row with a known bound');
  const summary = r.limits.find((l) => l.limit === 'loopPi.requestCeiling.absoluteMs')!;
  assert.equal(summary.verdict, 'UNKNOWN');
  assert.equal(summary.unknownModels, 2);
});

test("pi's idle timer and provider timeout are NOT A REQUEST BOUND, with what they do bound", () => {
  const r = buildAudit(
    input({ settings: { retry: { provider: { timeoutMs: 120_000 } } }, models: [{ provider: 'openai', id: 'gpt-x' }], rates: [rate('gpt-x', [21.5], 2_000)] }),
  );
  const idle = row(r, 'httpIdleTimeoutMs', 'openai/gpt-x');
  assert.equal(idle.verdict, 'NOT A REQUEST BOUND');
  assert.equal(idle.kind, 'transport');
  assert.equal(idle.configuredMs, 300_000);
  assert.equal(idle.boundMs, null);
  assert.match(idle.note, /reset by every streamed byte/);
  assert.match(idle.note, /time to the first byte/);
  const provider = row(r, 'retry.provider.timeoutMs', 'openai/gpt-x');
  assert.equal(provider.verdict, 'NOT A REQUEST BOUND');
  assert.equal(provider.configuredMs, 120_000);
  assert.match(provider.note, /clears once the response headers arrive/);
  // Neither can be the binding row, even with the smallest configured value.
  assert.equal(r.binding?.limit, 'loopPi.requestCeiling.absoluteMs');
});

test('the legacy wall-clock ceiling stands in for the absolute limit', () => {
  const r = buildAudit(input({ settings: { loopPi: { requestCeiling: { wallClockMs: 14 * 60_000 } } }, models: [{ provider: 'openai', id: 'gpt-x' }], rates: [rate('gpt-x', [21.5])] }));
  const legacy = row(r, 'loopPi.requestCeiling.wallClockMs', 'openai/gpt-x');
  assert.equal(legacy.configuredMs, 840_000);
  assert.equal(legacy.verdict, 'OK');
  assert.match(legacy.note, /Legacy wall-clock ceiling/);
  assert.ok(!r.rows.some((x) => x.limit === 'loopPi.requestCeiling.absoluteMs'));
});

test('lane deadlines pair with their own models; a lane with no known model is UNKNOWN', () => {
  const r = buildAudit(
    input({
      models: [
        { provider: 'openai', id: 'gpt-x' },
        { provider: 'openai', id: 'gpt-slow' },
      ],
      rates: [rate('gpt-x', [21.5]), rate('gpt-slow', [12.1])],
      lanes: [
        { limit: 'lane deadline [worker]', configuredMs: 600_000, models: [{ provider: 'openai', id: 'gpt-x' }], source: 'status.json' },
        { limit: 'agent timeout [ghost]', configuredMs: 600_000, models: [], source: 'ghost.md frontmatter' },
      ],
    }),
  );
  const lane = r.rows.filter((x) => x.limit === 'lane deadline [worker]');
  assert.deepEqual(
    lane.map((x) => [x.model, x.verdict]),
    [['openai/gpt-x', 'BELOW BOUND']],
  );
  assert.deepEqual(
    r.rows.filter((x) => x.limit === 'agent timeout [ghost]').map((x) => [x.model, x.verdict]),
    [['(unknown model)', 'UNKNOWN']],
  );
  assert.deepEqual(r.binding, { limit: 'lane deadline [worker]', model: 'openai/gpt-x', margin: 0.806 });
});

test('worst case across retries: attempts × bound + worst waits, against the episode and the absolute limit', () => {
  // The episode covers openai's retries (loop-pi's recovery is set for it).
  const { limits } = limitsFromSettings({ loopPi: { retryRecovery: { providerIds: ['openai'] } } });
  // pi's delays 2, 4, 8 s are under the 60 s floor of a 429: each wait is at most 60 s + 30 s.
  assert.deepEqual(worstRetryWait(1, limits), { retry: 1, piDelayMs: 2000, worstMs: 90_000 });
  assert.deepEqual(worstRetryWait(3, { baseDelayMs: 30_000, maxAgentDelayMs: 100_000, rateLimitDelayMs: 60_000 }), {
    retry: 3,
    piDelayMs: 100_000,
    worstMs: 150_000,
  });
  const wc = composeWorstCase(limits, 'openai/gpt-x', 744_186.05);
  assert.equal(wc.attempts, 4);
  assert.deepEqual(
    wc.waits.map((w) => w.worstMs),
    [90_000, 90_000, 90_000],
  );
  assert.equal(wc.composedMs, Math.ceil(4 * 744_186.05 + 270_000));
  assert.equal(wc.episode.neededMs, Math.ceil(3 * 744_186.05 + 270_000));
  assert.equal(wc.episode.fits, false);
  assert.equal(wc.episode.retriesThatFit, 1, '90 s + 744 s fits in 20 min, a second retry does not');
  assert.equal(wc.absolute.perAttemptFits, true);
  assert.equal(wc.ceilingMs, 75 * 60_000 + 20 * 60_000);
  assert.match(wc.assumptions, /429/);
  const none = composeWorstCase(limitsFromSettings({ retry: { enabled: false } }).limits, null, null);
  assert.equal(none.attempts, 1);
  assert.deepEqual(none.waits, []);
  assert.equal(none.composedMs, null);
  assert.equal(none.ceilingMs, 75 * 60_000);

  // A provider loop-pi's recovery does not cover (the default: no providerIds): no episode, and
  // pi's retries run to retry.maxRetries (here 6: 7 attempts, not the episode's cap of 5).
  const uncovered = composeWorstCase(limitsFromSettings({ retry: { maxRetries: 6 } }).limits, 'openai/gpt-x', 744_186.05);
  assert.equal(uncovered.episode.applies, false);
  assert.equal(uncovered.attempts, 7);
  assert.equal(uncovered.episode.fits, null);
  assert.equal(uncovered.episode.retriesThatFit, null);
  const waits = uncovered.waits.reduce((a, w) => a + w.worstMs, 0);
  assert.equal(uncovered.ceilingMs, 7 * 75 * 60_000 + waits, 'every attempt up to the absolute limit, with the waits');
  assert.equal(wc.episode.applies, true);
  // No model with a bound (none named): the episode is taken to apply when a provider is covered.
  assert.equal(composeWorstCase(limits, null, null).episode.applies, true);
  assert.equal(composeWorstCase(limitsFromSettings({}).limits, null, null).episode.applies, false);
});

test('models.json budgets: modelOverrides wins; bad values are named', () => {
  const c = modelCatalog({
    providers: {
      openai: { models: [{ id: 'gpt-6.1-sol', maxTokens: 128_000 }, { id: 'bad', maxTokens: 'lots' }], modelOverrides: { 'gpt-6.1-sol': { maxTokens: 80_000 } } },
      broken: 7,
    },
  });
  assert.deepEqual(
    c.entries.map((e) => [e.provider, e.id, e.maxTokens, e.source]),
    [
      ['openai', 'gpt-6.1-sol', 80_000, 'modelOverrides'],
      ['openai', 'bad', null, null],
    ],
  );
  assert.match(c.notes.join('\n'), /providers\.openai\.models\[1\]\.maxTokens "lots"/);
});

test('model references: provider/id, bare ids, thinking suffixes, ids with a slash', () => {
  const known = [
    { provider: 'openai', id: 'gpt-6.1-sol' },
    { provider: 'openrouter', id: 'anthropic/claude-x' },
    { provider: 'anthropic', id: 'claude-sonnet-4-5' },
    { provider: 'bedrock', id: 'claude-sonnet-4-5' },
  ];
  assert.deepEqual(resolveModelRef('openai/gpt-6.1-sol:high', known), [{ provider: 'openai', id: 'gpt-6.1-sol' }]);
  assert.deepEqual(resolveModelRef('gpt-6.1-sol', known), [{ provider: 'openai', id: 'gpt-6.1-sol' }]);
  assert.deepEqual(resolveModelRef('anthropic/claude-x', known), [{ provider: 'openrouter', id: 'anthropic/claude-x' }]);
  assert.equal(resolveModelRef('claude-sonnet-4-5', known).length, 2, 'a bare id shared by two providers: both are judged');
  assert.deepEqual(resolveModelRef('newco/model-9', known), [{ provider: 'newco', id: 'model-9' }]);
  assert.deepEqual(resolveModelRef('model-9', known), [{ provider: null, id: 'model-9' }]);
  assert.deepEqual(resolveModelRef('  ', known), []);
});

test('agent files: model list and timeouts read tolerantly', () => {
  const a = parseAgentFile('/h/agents/w.md', '---\r\nname: worker\r\nmodel: "openai/gpt-x:high"\r\ntimeoutMs: 1800000\r\n---\r\nDo work.\r\n', 'w');
  assert.equal(a.name, 'worker');
  assert.deepEqual(a.models, ['openai/gpt-x:high']);
  assert.equal(a.timeoutMs, 1_800_000);
  const b = parseAgentFile('/h/agents/r.md', '---\nmodel: openai/gpt-x, claude-y # fallbacks\nmaxRuntimeSeconds: 600\n---\n', 'reviewer');
  assert.equal(b.name, 'reviewer');
  assert.deepEqual(b.models, ['openai/gpt-x', 'claude-y']);
  assert.equal(b.timeoutMs, 600_000);
  const c = parseAgentFile('/h/agents/c.md', '---\ntimeout: 45m\n---\n', 'c');
  assert.equal(c.timeoutMs, 45 * 60_000);
  const d = parseAgentFile('/h/agents/d.md', '---\ntimeout: 3600\n---\n', 'd');
  assert.equal(d.timeoutMs, null);
  assert.match(d.notes[0]!, /no unit/);
  assert.equal(parseAgentFile('/h/agents/e.md', 'no frontmatter', 'e').timeoutMs, null);
});

test('views: header warning only when a row is below bound; every report line fits the width', () => {
  const below = buildAudit(
    input({ settings: { loopPi: { requestCeiling: { absoluteMs: 600_000 }, retryRecovery: { providerIds: ['openai'] } } }, models: [{ provider: 'openai', id: 'gpt-x' }], rates: [rate('gpt-x', [21.5], 1_500)] }),
  );
  const warning = auditHeaderWarning(below);
  assert.ok(warning);
  assert.match(warning, /loop-pi absolute for openai\/gpt-x at 0\.80× \(10m00s, needs 12m26s\)/);
  const ok = buildAudit(input({ models: [{ provider: 'openai', id: 'gpt-x' }], rates: [rate('gpt-x', [21.5], 1_500)] }));
  assert.equal(auditHeaderWarning(ok), null);
  for (const width of [40, 72, 100, 160]) {
    const lines = auditLines(below, width);
    assert.ok(lines.every((l) => displayWidth(l) <= width), `width ${width}`);
    assert.ok(lines.some((l) => l.includes('BELOW BOUND')));
  }
  const wide = auditLines(below, 160).join('\n');
  assert.match(wide, /Binding: loop-pi absolute for openai\/gpt-x — margin 0\.80×/);
  assert.match(wide, /Worst case of one request across retries \(4 attempts\)/);
  assert.match(wide, /holds 1 of 3 retries/);
  // Without loop-pi's recovery set for openai: no episode, said so.
  const uncovered = auditLines(buildAudit(input({ models: [{ provider: 'openai', id: 'gpt-x' }], rates: [rate('gpt-x', [21.5], 1_500)] })), 160).join('\n');
  assert.match(uncovered, /No retry episode: openai\/gpt-x is of a provider not in loopPi\.retryRecovery\.providerIds, so pi's 3 retries run to retry\.maxRetries with no time bound/);
});

// ---------------------------------------------------------------------------------------------
// The whole gathering on a real temp home

test('loadAudit: loop-pi limits for every model used, lane deadlines for their agent only, configured-only models noted', async () => {
  const home = tempHome();
  writeJson(path.join(home, 'settings.json'), { loopPi: { requestCeiling: { absoluteMs: 1_200_000 } } });
  writeJson(path.join(home, 'models.json'), {
    providers: { openai: { models: [{ id: 'gpt-x', maxTokens: 16_000 }, { id: 'gpt-slow', maxTokens: 16_000 }, { id: 'gpt-unused', maxTokens: 8_000 }] } },
  });
  const root = writeSession(home, 'root-1', steadyCalls('gpt-x', 21.5, 2, T0));
  // The lane (worker agent) runs gpt-slow; its file sits below the root's directory.
  const laneDir = path.join(path.dirname(root), path.basename(root, '.jsonl'), 'run-1');
  fs.mkdirSync(laneDir, { recursive: true });
  const laneFile = path.join(laneDir, '2026-10-03T14-10-00-000Z_lane-1.jsonl');
  fs.writeFileSync(laneFile, JSON.stringify({ type: 'session', version: 3, id: 'lane-1', timestamp: iso(T0), cwd: '/work/repo' }) + '\n' + steadyCalls('gpt-slow', 12.1, 2, T0).map(callLines).join(''));
  writeJson(path.join(home, 'tmp', 'async-subagent-runs', 'run-1', 'status.json'), {
    runId: 'run-1',
    state: 'running',
    startedAt: T0,
    timeoutMs: 3_600_000,
    steps: [{ agent: 'worker', model: 'openai/gpt-slow', status: 'running', sessionFile: laneFile }],
  });
  fs.mkdirSync(path.join(home, 'agents'), { recursive: true });
  fs.writeFileSync(path.join(home, 'agents', 'reviewer.md'), '---\nname: reviewer\nmodel: gpt-x\ntimeoutMs: 600000\n---\nReview.\n');

  const r = await loadAudit(home, { now: NOW });
  assert.deepEqual(
    r.rows.filter((x) => x.kind !== 'transport').map((x) => [x.limit, x.model, x.verdict]),
    [
      ['loopPi.requestCeiling.inactivityMs', 'openai/gpt-slow', 'UNKNOWN'],
      ['loopPi.requestCeiling.inactivityMs', 'openai/gpt-x', 'UNKNOWN'],
      ['loopPi.requestCeiling.absoluteMs', 'openai/gpt-slow', 'BELOW BOUND'],
      ['loopPi.requestCeiling.absoluteMs', 'openai/gpt-x', 'OK'],
      ['agent timeout [reviewer]', 'openai/gpt-x', 'BELOW BOUND'],
      ['lane deadline [worker]', 'openai/gpt-slow', 'OK'],
    ],
  );
  assert.equal(r.rows.filter((x) => x.kind === 'transport').length, 4);
  assert.deepEqual(r.binding, { limit: 'agent timeout [reviewer]', model: 'openai/gpt-x', margin: 0.806 });
  assert.equal(r.worstCase.model, 'openai/gpt-slow');
  const shared = r.limits.find((l) => l.limit === 'loopPi.requestCeiling.absoluteMs')!;
  assert.equal(shared.judgedAt, 'openai/gpt-slow', 'the shared absolute limit is judged at 12.1 tok/s');
  assert.equal(shared.boundMs, Math.ceil((16_000 / 12.1) * 1000));
  assert.equal(row(r, 'loopPi.requestCeiling.absoluteMs', 'openai/gpt-slow').rate.slowestTokPerS, 12.1);
  assert.match(r.notes.join('\n'), /never seen in use.*openai\/gpt-unused/);
  assert.equal(r.sampled.files, 2);
  assert.deepEqual(r.warnings, []);
});

test('a model named only by a model_change (its first request still in flight) gets rows, UNKNOWN until a rate is measured', async () => {
  const home = tempHome();
  const file = writeSession(home, 'sid-mc', steadyCalls('gpt-x', 20, 1, T0));
  fs.appendFileSync(
    file,
    JSON.stringify({ type: 'model_change', id: 'mc1', parentId: null, timestamp: iso(T0 + 500 * S), provider: 'openai', modelId: 'gpt-slow' }) + '\n' +
      JSON.stringify({ type: 'message', id: 'u9', parentId: 'mc1', timestamp: iso(T0 + 501 * S), message: { role: 'user', content: 'go on', timestamp: T0 + 501 * S } }) + '\n',
  );
  const sample = await sampleRates(home);
  assert.deepEqual(sample.files[0]!.models.map((m) => `${m.provider}/${m.id}`).sort(), ['openai/gpt-slow', 'openai/gpt-x']);
  const r = await loadAudit(home, { now: NOW });
  const slow = row(r, 'loopPi.requestCeiling.absoluteMs', 'openai/gpt-slow');
  assert.equal(slow.verdict, 'UNKNOWN');
  assert.equal(slow.rate.calls, 0);
  assert.equal(row(r, 'loopPi.requestCeiling.absoluteMs', 'openai/gpt-x').rate.calls, 1);
});

test('a margin just under 1 stays under 1 in the JSON (0.999, BELOW BOUND), never rounds to 1', () => {
  // 45 010 tokens at 10 tok/s need 4 501 s; the default absolute limit is 4 500 s: 0.99978×.
  const r = buildAudit(input({
    catalog: modelCatalog({ providers: { openai: { models: [{ id: 'gpt-x', maxTokens: 45_010 }] } } }),
    models: [{ provider: 'openai', id: 'gpt-x' }],
    rates: [rate('gpt-x', [10])],
  }));
  const abs = row(r, 'loopPi.requestCeiling.absoluteMs', 'openai/gpt-x');
  assert.equal(abs.verdict, 'BELOW BOUND');
  assert.equal(abs.margin, 0.999);
  const limit = r.limits.find((l) => l.limit === 'loopPi.requestCeiling.absoluteMs')!;
  assert.equal(limit.margin, 0.999);
  assert.ok(r.binding && r.binding.margin < 1, JSON.stringify(r.binding));
});

test('calls counted: each call once, though a bare id\'s row pools its providers\' calls', () => {
  const r = buildAudit(input({
    models: [{ provider: 'openai', id: 'gpt-x' }, { provider: null, id: 'gpt-x' }],
    rates: [rate('gpt-x', [20, 30]), { provider: null, id: 'gpt-x', tokPerS: [25], firstTokenMs: null, excluded: {} }],
  }));
  assert.equal(row(r, 'loopPi.requestCeiling.absoluteMs', 'gpt-x').rate.calls, 3, 'the bare id pools every provider');
  assert.equal(r.callsCounted, 3);
  assert.match(auditLines(r, 120).join('\n'), /Rates: 3 calls counted/);
  // Shown later (the dashboard's `b`, measured every 10 minutes): its age is said; the CLI's not.
  const measured = Date.parse(r.now);
  assert.match(auditLines(r, 120, measured + 5 * 60_000 + 10_000)[0]!, /\(measured 5m ago\)$/);
  assert.doesNotMatch(auditLines(r, 120)[0]!, /measured/);
});
