import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import type { SessionFileFacts, Warning } from '../src/model/types.js';
import { createReadCounter } from '../src/readers/read-counter.js';
import { holdsStateNeedle, SessionFileReader, STATE_NEEDLES } from '../src/readers/session-file.js';
import { emptySessionFacts, foldSessionEntry, HISTORY_LIMIT, parseSessionEntry } from '../src/readers/session-entry.js';
import { parseSessionPath } from '../src/readers/session-path.js';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();
let seq = 0;

const header = (id = 'sid-1', ts = T0): string =>
  JSON.stringify({ type: 'session', version: 3, id, timestamp: iso(ts), cwd: '/work/repo' });
const entry = (type: string, extra: Record<string, unknown>, ts = T0 + 1000): string =>
  JSON.stringify({ type, id: `e${++seq}`, parentId: null, timestamp: iso(ts), ...extra });
const custom = (customType: string, data: unknown, ts?: number): string => entry('custom', { customType, data }, ts);
const continuation = (armed: boolean, ts?: number): string =>
  custom('loop-continuation-state', { armed, launch: { report: '/r/codex/report-x-loop1.md', loop: 1, launchTs: 'x' }, nudgeCount: 2 }, ts);
const assistant = (stopReason: string, ts = T0 + 2000, extra: Record<string, unknown> = {}): string =>
  entry(
    'message',
    { message: { role: 'assistant', content: [], provider: 'prov', model: 'mod-1', usage: { output: 42 }, stopReason, timestamp: ts, ...extra } },
    ts,
  );
const user = (text: string, ts?: number): string => entry('message', { message: { role: 'user', content: text, timestamp: T0 } }, ts);
const customMessage = (customType: string, details: unknown, ts?: number): string =>
  entry('custom_message', { customType, content: `${customType} happened`, display: true, details }, ts);

interface Setup {
  home: string;
  file: string;
}
function setup(name = '2026-03-01T10-00-00-000Z_sid-1.jsonl'): Setup {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-session-'));
  const dir = path.join(home, 'sessions', '--work-repo--');
  fs.mkdirSync(dir, { recursive: true });
  return { home, file: path.join(dir, name) };
}
const jsonl = (...lines: string[]): string => lines.join('\n') + '\n';
const clock = (start = T0 + 60_000) => {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
};

test('parseSessionPath: roots, lanes (root dir with or without .jsonl), temp and dot files', () => {
  const home = '/h';
  const root = parseSessionPath(home, '/h/sessions/--w-r--/2026-03-01T10-00-00-000Z_abc-1.jsonl');
  assert.deepEqual(root, { sessionId: 'abc-1', role: 'root', rootFile: null, runId: null, cwdDir: '/h/sessions/--w-r--' });
  const lane = parseSessionPath(home, '/h/sessions/--w-r--/2026-03-01T10-00-00-000Z_abc-1/run-7/run-0/2026-03-01T10-05-00-000Z_lane-9.jsonl');
  assert.deepEqual(lane, {
    sessionId: 'lane-9',
    role: 'lane',
    rootFile: '/h/sessions/--w-r--/2026-03-01T10-00-00-000Z_abc-1.jsonl',
    runId: 'run-7',
    cwdDir: '/h/sessions/--w-r--',
  });
  const laneDotJsonl = parseSessionPath(home, '/h/sessions/--w-r--/2026-03-01T10-00-00-000Z_abc-1.jsonl/run-7/x_lane-2.jsonl');
  assert.equal(laneDotJsonl?.rootFile, '/h/sessions/--w-r--/2026-03-01T10-00-00-000Z_abc-1.jsonl');
  assert.equal(laneDotJsonl?.runId, 'run-7');
  for (const bad of [
    '/h/sessions/--w-r--/.2026_abc.jsonl',
    '/h/sessions/--w-r--/2026_abc.jsonl.tmp-123',
    '/h/sessions/--w-r--/2026_abc.tmp.jsonl',
    '/h/sessions/--w-r--/2026_abc.json',
    '/h/sessions/--w-r--/subagent-artifacts/x_worker.jsonl',
    '/h/sessions/--w-r--/2026_abc/run-1/.hidden/x_y.jsonl',
    '/h/other/--w-r--/2026_abc.jsonl',
    '/h/sessions/2026_abc.jsonl',
  ]) {
    assert.equal(parseSessionPath(home, bad), null, bad);
  }
});

test('folds header, name, model, thinking, loop state, control and history', async () => {
  const { home, file } = setup();
  fs.writeFileSync(
    file,
    jsonl(
      header(),
      entry('session_info', { name: 'api loop ✓' }),
      entry('model_change', { provider: 'p0', modelId: 'm0' }),
      entry('thinking_level_change', { thinkingLevel: 'high' }),
      continuation(false),
      continuation(true, T0 + 1500),
      custom('loop-wait-state', { timers: [{ id: 't1', at: T0 + 600_000, reason: 'poll CI' }], watchers: [{ id: 'w1', label: 'ci', pid: 12, phase: 'running', command: 'gh', deadline: iso(T0 + 900_000), interval_s: 30 }] }),
      custom('loop-dash-control', { held: true, by: 'owner@host', reason: 'lunch' }),
      assistant('error', T0 + 3000, { errorMessage: 'overloaded\nretry later', loopPiRecovery: { attemptId: 'a1', code: 'overloaded', status: 529, disposition: 'retry' } }),
      customMessage('loop-request-incident', { kind: 'inactivity', attempt: 2, exhausted: true, elapsedMs: 900_000 }),
      customMessage('loop-recovery-exhausted', { episodeMs: 1_200_000 }),
      customMessage('loop-wake', {}),
      customMessage('some-other-thing', {}),
      user('hello'),
    ),
  );
  const reader = new SessionFileReader(home, file, { now: clock().now });
  const u = await reader.update();
  assert.deepEqual(u.warnings, []);
  assert.equal(u.changed, true);
  const f = u.facts;
  assert.deepEqual(f.header, { id: 'sid-1', timestamp: T0, cwd: '/work/repo', parentSession: null });
  assert.equal(f.sessionId, 'sid-1');
  assert.equal(f.role, 'root');
  assert.equal(f.name, 'api loop ✓');
  assert.deepEqual(f.model, { provider: 'prov', id: 'mod-1' }); // the assistant came after the model_change
  assert.equal(f.thinking, 'high');
  assert.equal(f.continuation?.armed, true);
  assert.equal(f.continuation?.at, T0 + 1500);
  assert.deepEqual(f.continuation?.launch, { report: '/r/codex/report-x-loop1.md', loop: '1', launchTs: 'x' });
  assert.deepEqual(f.waitState?.timers, [{ id: 't1', at: T0 + 600_000, reason: 'poll CI' }]);
  assert.equal(f.waitState?.watchers[0]?.deadline, T0 + 900_000);
  assert.equal(f.waitState?.watchers[0]?.intervalS, 30);
  assert.equal(f.waitState?.heldMessages, null);
  assert.deepEqual([f.dashControl?.held, f.dashControl?.by, f.dashControl?.reason], [true, 'owner@host', 'lunch']);
  assert.equal(f.lastAssistant?.stopReason, 'error');
  assert.equal(f.lastAssistant?.outputTokens, 42);
  assert.deepEqual(f.lastAssistant?.recovery, { code: 'overloaded', status: 529, disposition: 'retry', reason: null });
  assert.deepEqual(
    f.history.map((h) => h.kind),
    ['assistant-error', 'loop-request-incident', 'loop-recovery-exhausted', 'loop-wake'],
  );
  assert.ok(f.history.every((h) => !h.summary.includes('\n')));
  assert.match(f.history[1]!.summary, /inactivity.*attempt 2.*15 min.*exhausted/);
  assert.match(f.history[2]!.summary, /20 min/);
  assert.equal(f.lastEntryAt, T0 + 3000);
  assert.equal(f.incompleteSince, null);
  const again = await reader.update();
  assert.equal(again.changed, false);
  assert.equal(again.bytesRead, 0);
});

test('a partial last line is completed later: one record, incomplete-since set then cleared, bytes read == size', async () => {
  const { home, file } = setup();
  const line = Buffer.from(custom('loop-dash-control', { held: true, by: 'ø😀' }) + '\n', 'utf8');
  const cut = line.indexOf(Buffer.from('😀')) + 1;
  fs.writeFileSync(file, Buffer.concat([Buffer.from(jsonl(header())), line.subarray(0, cut)]));
  const counter = createReadCounter();
  const c = clock();
  const reader = new SessionFileReader(home, file, { now: c.now, counter });
  const u1 = await reader.update();
  assert.deepEqual(u1.warnings, []);
  assert.equal(u1.facts.dashControl, null);
  assert.equal(u1.facts.incompleteSince, c.now());
  c.advance(5000);
  const u2 = await reader.update();
  assert.equal(u2.facts.incompleteSince, T0 + 60_000, 'the first time it was seen incomplete');
  fs.appendFileSync(file, line.subarray(cut));
  const u3 = await reader.update();
  assert.deepEqual(u3.warnings, []);
  assert.equal(u3.facts.dashControl?.by, 'ø😀');
  assert.equal(u3.facts.incompleteSince, null);
  assert.equal(counter.bytesRead, fs.statSync(file).size);
});

test('malformed JSON in the middle: a warning with file and line; the lines after it still fold', async () => {
  const { home, file } = setup();
  fs.writeFileSync(
    file,
    jsonl(
      header(),
      custom('loop-dash-control', { held: false }),
      '{"type":"custom","customType":"loop-dash-con',
      custom('loop-dash-control', { held: 'yes' }),
      continuation(true),
      '\u0000\u0001garbage',
    ),
  );
  const reader = new SessionFileReader(home, file, { now: clock().now });
  const u = await reader.update();
  assert.equal(u.facts.continuation?.armed, true);
  assert.equal(u.facts.dashControl?.held, false, 'the last good state is kept');
  assert.deepEqual(
    u.warnings.map((w) => [w.file, w.line, w.severity]),
    [
      [file, 3, 'error'],
      [file, 4, 'error'],
      [file, 6, 'error'],
    ],
  );
  assert.match(u.warnings[0]!.message, /invalid JSON/);
  assert.match(u.warnings[1]!.message, /data\.held/);
  assert.equal(typeof u.warnings[2]!.offset, 'number');

  // Warnings stay current across updates (the reader event replaces a file's list) and are bounded.
  const idle = await reader.update();
  assert.equal(idle.warnings, u.warnings);
  assert.deepEqual(idle.newWarnings, []);
  fs.appendFileSync(file, jsonl(...Array.from({ length: 60 }, (_, i) => `bad ${i}`), continuation(false)));
  const many = await reader.update();
  assert.equal(many.newWarnings.length, 60);
  assert.equal(many.warnings.length, 51);
  assert.match(many.warnings[0]!.message, /^13 earlier warnings not shown/);
  assert.equal(many.warnings.at(-1)?.line, 66);
  assert.equal(many.facts.continuation?.armed, false);
});

test('hostile JSON: __proto__ keys, deep nesting, huge numbers, duplicate keys', async () => {
  const { home, file } = setup();
  const deep = `{"type":"custom","customType":"x","data":${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}}`;
  fs.writeFileSync(
    file,
    jsonl(
      header(),
      '{"__proto__":{"polluted":1},"type":"session_info","name":"proto"}',
      deep,
      '{"type":"custom","customType":"loop-continuation-state","data":{"armed":true,"nudgeCount":1e308,"__proto__":{"armed":false}}}',
      '{"type":"session_info","name":"first","name":"second"}',
    ),
  );
  const reader = new SessionFileReader(home, file, { now: clock().now, tailWindowBytes: 8 * 1024 * 1024 });
  const started = performance.now();
  const u = await reader.update();
  assert.ok(performance.now() - started < 500, 'the deep line is rejected without parsing it');
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.deepEqual(
    u.warnings.map((w) => [w.line, /nesting deeper/.test(w.message)]),
    [[3, true]],
  );
  assert.equal(u.facts.name, 'second');
  assert.equal(u.facts.continuation?.armed, true);
  assert.equal(u.facts.continuation?.nudgeCount, 1e308);
});

test('a 5 MB line is skipped with a visible warning and the next line is read', async () => {
  const { home, file } = setup();
  const big = custom('loop-dash-control', { held: true, pad: 'x'.repeat(5 * 1024 * 1024) });
  fs.writeFileSync(file, jsonl(header(), big, continuation(true)));
  const reader = new SessionFileReader(home, file, { now: clock().now, tailWindowBytes: 8 * 1024 * 1024 });
  const u = await reader.update();
  assert.equal(u.warnings.length, 1);
  const w = u.warnings[0]!;
  assert.equal(w.line, 2);
  assert.equal(w.offset, header().length + 1);
  assert.match(w.message, new RegExp(`line too long \\(${Buffer.byteLength(big)} bytes\\) at offset ${w.offset}`));
  assert.equal(u.facts.dashControl, null);
  assert.equal(u.facts.continuation?.armed, true);
  fs.appendFileSync(file, jsonl(custom('loop-dash-control', { held: false })));
  assert.equal((await reader.update()).facts.dashControl?.held, false);
});

test('truncated, then replaced by rename: reset with a notice each time, never mixed', async () => {
  const { home, file } = setup();
  fs.writeFileSync(file, jsonl(header('old-id'), entry('session_info', { name: 'old' }), continuation(true), assistant('error')));
  const reader = new SessionFileReader(home, file, { now: clock().now });
  assert.equal((await reader.update()).facts.name, 'old');

  fs.truncateSync(file, 0);
  const t = await reader.update();
  assert.deepEqual(
    t.warnings.map((w) => [w.severity, w.line]),
    [['warning', null]],
  );
  assert.match(t.warnings[0]!.message, /^truncated/);
  assert.equal(t.changed, true);
  assert.equal(t.facts.name, null);
  assert.equal(t.facts.continuation, null);
  assert.deepEqual(t.facts.history, []);

  const next = file + '.tmp-1';
  fs.writeFileSync(next, jsonl(header('new-id'), entry('session_info', { name: 'new' }), user('hi')));
  fs.renameSync(next, file);
  const r = await reader.update();
  assert.match(r.warnings[0]?.message ?? '', /^replaced/);
  assert.equal(r.facts.name, 'new');
  assert.equal(r.facts.sessionId, 'new-id');
  assert.equal(r.facts.continuation, null);
  assert.equal(r.facts.lastAssistant, null);
  assert.deepEqual(r.facts.history, []);
});

test('rewritten in place and larger: reset as rewritten; a first line that is no header is flagged', async () => {
  const { home, file } = setup();
  fs.writeFileSync(file, jsonl(header('a'), entry('session_info', { name: 'a' })));
  const reader = new SessionFileReader(home, file, { now: clock().now });
  assert.equal((await reader.update()).facts.name, 'a');
  fs.writeFileSync(file, jsonl(entry('session_info', { name: 'b' }), user('x'.repeat(200)), continuation(true)));
  const u = await reader.update();
  assert.deepEqual(
    u.warnings.map((w) => [w.line, w.severity]),
    [
      [null, 'warning'],
      [1, 'error'],
    ],
  );
  assert.match(u.warnings[0]!.message, /^rewritten/);
  assert.match(u.warnings[1]!.message, /not a session header/);
  assert.equal(u.facts.name, 'b');
  assert.equal(u.facts.header, null);
  assert.equal(u.facts.continuation?.armed, true);
});

test('rewritten in place with the same header (the same session) to past the old end: reset as rewritten, nothing of the old content kept (RELIABILITY B2)', async () => {
  const { home, file } = setup();
  fs.writeFileSync(file, jsonl(header(), entry('session_info', { name: 'old' }), continuation(true)));
  const reader = new SessionFileReader(home, file, { now: clock().now });
  const first = await reader.update();
  assert.equal(first.facts.name, 'old');
  assert.equal(first.facts.continuation?.armed, true);
  const ino = fs.statSync(file).ino;
  // The same header (so the same first 64 bytes), then other entries, longer than what was read.
  fs.writeFileSync(file, jsonl(header(), user('y'.repeat(300)), entry('session_info', { name: 'new' })));
  assert.equal(fs.statSync(file).ino, ino, 'in place');
  const u = await reader.update();
  assert.match(u.warnings[0]?.message ?? '', /^rewritten/);
  assert.equal(u.facts.name, 'new');
  assert.equal(u.facts.continuation, null, 'the old loop state is gone');
  assert.equal(u.facts.sessionId, 'sid-1');
  assert.deepEqual(u.newWarnings.map((w) => w.message), [u.warnings[0]!.message]);
  // An append after it is an append: no new notice, exactly its bytes read.
  const appended = jsonl(continuation(false));
  fs.appendFileSync(file, appended);
  const more = await reader.update();
  assert.deepEqual(more.newWarnings, []);
  assert.equal(more.bytesRead, Buffer.byteLength(appended));
  assert.equal(more.facts.continuation?.armed, false);
  assert.equal(more.facts.name, 'new');
});

test('rewritten in place after the last read, before the cache entry is made: the next start does not take the new bytes from the old offset', async () => {
  const { home, file } = setup();
  const now = clock().now;
  fs.writeFileSync(file, jsonl(header(), entry('session_info', { name: 'old' }), continuation(true)));
  const live = new SessionFileReader(home, file, { now });
  await live.update();
  // The same session written again in place, longer, before the (timed) cache save.
  fs.writeFileSync(file, jsonl(header(), user('y'.repeat(300)), entry('session_info', { name: 'new' })));
  const saved = await live.cacheEntry();
  assert.ok(saved, 'the entry describes what was read');
  const st = fs.statSync(file);
  const next = new SessionFileReader(home, file, { now, cached: structuredClone(saved) });
  const u = await next.update({ size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
  assert.equal(u.facts.name, 'new');
  assert.equal(u.facts.continuation, null, 'nothing of the old content');
  assert.deepEqual(
    u.warnings.filter((w) => w.severity === 'error'),
    [],
    'no torn fragment read as a line',
  );
  // The same with a partial last line held back (the bytes are read from the file then).
  fs.writeFileSync(file, jsonl(header('a'), entry('session_info', { name: 'old2' })) + '{"type":"mess');
  const held = new SessionFileReader(home, file, { now });
  await held.update();
  fs.writeFileSync(file, jsonl(header('a'), user('z'.repeat(300)), entry('session_info', { name: 'new2' })));
  assert.equal(await held.cacheEntry(), null, 'not saved: the file no longer has the bytes read');
});

test('a lane file is known as a lane of its root from its path', async () => {
  const { home, file: rootFile } = setup();
  const laneDir = path.join(rootFile.replace(/\.jsonl$/, ''), 'run-3');
  fs.mkdirSync(laneDir, { recursive: true });
  const laneFile = path.join(laneDir, '2026-03-01T10-01-00-000Z_lane-1.jsonl');
  fs.writeFileSync(laneFile, jsonl(header('lane-1')));
  const u = await new SessionFileReader(home, laneFile, { now: clock().now }).update();
  assert.deepEqual([u.facts.role, u.facts.runId, u.facts.rootFile, u.facts.sessionId], ['lane', 'run-3', rootFile, 'lane-1']);
});

test('a deleted file is gone (no throw, facts kept); a new file at the path is read from the start', async () => {
  const { home, file } = setup();
  fs.writeFileSync(file, jsonl(header(), entry('session_info', { name: 'one' })));
  const reader = new SessionFileReader(home, file, { now: clock().now });
  await reader.update();
  fs.unlinkSync(file);
  const g = await reader.update();
  assert.equal(g.gone, true);
  assert.equal(g.facts.name, 'one');
  fs.writeFileSync(file, jsonl(header('sid-2'), entry('session_info', { name: 'two' })));
  const back = await reader.update();
  assert.equal(back.gone, false);
  assert.equal(back.facts.name, 'two');
  assert.equal(back.facts.sessionId, 'sid-2');
});

test('a path that is not a regular file is reported once as an error, not thrown', async () => {
  const { home, file } = setup();
  fs.mkdirSync(file);
  const reader = new SessionFileReader(home, file, { now: clock().now });
  const u1 = await reader.update();
  assert.equal(u1.newWarnings.length, 1);
  assert.deepEqual(u1.warnings, u1.newWarnings);
  assert.match(u1.warnings[0]!.message, /cannot read/);
  assert.ok(u1.error);
  const u2 = await reader.update();
  assert.equal(u2.newWarnings.length, 0, 'reported once');
  assert.equal(u2.warnings, u1.warnings, 'still current, same array');
  assert.ok(u2.error);
  fs.rmdirSync(file);
  fs.writeFileSync(file, jsonl(header()));
  const u3 = await reader.update();
  assert.equal(u3.error, null);
  assert.deepEqual(u3.warnings, [], 'the error clears once a read succeeds');
});

test('tail window: header from the head, state before the window found by a backward scan, then appends only', async () => {
  const { home, file } = setup();
  const filler: string[] = [];
  for (let i = 0; i < 400; i++) filler.push(user(`filler ${i} ${'.'.repeat(200)}`, T0 + 5000 + i));
  const windowBytes = 8 * 1024;
  const lines = [
    header(),
    entry('session_info', { name: 'before window' }),
    entry('model_change', { provider: 'p0', modelId: 'm0' }),
    continuation(false),
    custom('loop-dash-control', { held: true }),
    // A decoy: the needle inside nested data of another entry is not a continuation state.
    customMessage('note', { raw: { customType: 'loop-continuation-state' } }),
    ...filler,
    '{"broken json in the window',
    user('last'),
  ];
  fs.writeFileSync(file, jsonl(...lines));
  const counter = createReadCounter();
  const reader = new SessionFileReader(home, file, { now: clock().now, counter, tailWindowBytes: windowBytes, chunkBytes: 4096 });
  const u1 = await reader.update();
  const size = fs.statSync(file).size;
  assert.equal(u1.facts.header?.id, 'sid-1');
  assert.equal(u1.facts.name, 'before window');
  assert.deepEqual(u1.facts.model, { provider: 'p0', id: 'm0' });
  assert.equal(u1.facts.continuation?.armed, false);
  assert.equal(u1.facts.dashControl?.held, true);
  // Every byte is read at most once, apart from the head block (1 KiB) and the line the window cuts.
  assert.ok(u1.bytesRead <= size + 1024 + 512, `${u1.bytesRead} bytes read for a ${size}-byte file`);
  // In the window, line numbers are unknown: the warning gives the byte offset instead.
  assert.equal(u1.warnings.length, 1);
  assert.equal(u1.warnings[0]!.line, null);
  assert.equal(u1.warnings[0]!.offset, size - Buffer.byteLength(jsonl('{"broken json in the window', user('last'))));

  const before = counter.bytesRead;
  const appended = jsonl(continuation(true, T0 + 99_000));
  fs.appendFileSync(file, appended);
  const u2 = await reader.update();
  assert.equal(counter.bytesRead - before, Buffer.byteLength(appended));
  assert.equal(u2.bytesRead, Buffer.byteLength(appended));
  assert.equal(u2.facts.continuation?.armed, true);
  assert.equal(u2.facts.lastEntryAt, T0 + 99_000);
});

test('foldSessionEntry is pure and keeps a bounded history', () => {
  const empty = emptySessionFacts('/h', '/h/sessions/--w--/x_s.jsonl', null);
  assert.equal(empty.sessionId, 's');
  let facts: SessionFileFacts = empty;
  for (let i = 0; i < HISTORY_LIMIT + 7; i++) {
    const parsed = parseSessionEntry(JSON.parse(customMessage('loop-wake', {}, T0 + i)));
    assert.ok(parsed.ok);
    const before = facts;
    const snapshot = JSON.stringify(before);
    facts = foldSessionEntry(facts, parsed.entry, { line: i + 2, offset: i * 100 });
    assert.equal(JSON.stringify(before), snapshot, 'input not modified');
  }
  assert.equal(facts.history.length, HISTORY_LIMIT);
  assert.equal(facts.history.at(-1)?.at, T0 + HISTORY_LIMIT + 6);
  assert.equal(empty.history.length, 0);
  const unknown = parseSessionEntry({ type: 'brand_new_type', whatever: [1, 2] });
  assert.ok(unknown.ok);
  const bad = parseSessionEntry({ type: 'model_change', provider: 'p' });
  assert.equal(bad.ok, false);
  assert.match(bad.ok ? '' : bad.error, /modelId/);
  // SPEC §3.1: a custom_message's details are optional, and a custom entry may carry no data.
  const noDetails = parseSessionEntry({ type: 'custom_message', customType: 'note', content: 'hello', display: true, timestamp: '2026-12-07T12:00:00.000Z' });
  assert.ok(noDetails.ok, noDetails.ok ? '' : noDetails.error);
  const noData = parseSessionEntry({ type: 'custom', customType: 'marker' });
  assert.ok(noData.ok, noData.ok ? '' : noData.error);
  assert.equal(parseSessionEntry({ type: 'custom_message', content: 'no type' }).ok, false, 'customType is still required');
});

const normalise = (facts: SessionFileFacts): Partial<SessionFileFacts> => {
  const { file: _f, home: _h, size: _s, mtimeMs: _m, incompleteSince: _i, ...rest } = facts;
  return rest;
};
const normaliseWarnings = (warnings: Warning[]): Omit<Warning, 'file'>[] => warnings.map(({ file: _f, ...w }) => w);

test('property: any split of a JSONL stream into appends yields the same facts and warnings as one read', async () => {
  const lineArb = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 12 }).map((name) => entry('session_info', { name }, T0 + 10)),
    fc.boolean().map((armed) => continuation(armed, T0 + 20)),
    fc.string({ unit: 'grapheme', maxLength: 8 }).map((by) => custom('loop-dash-control', { held: true, by }, T0 + 30)),
    fc.constantFrom('error', 'aborted', 'stop', 'length').map((s) => assistant(s, T0 + 40)),
    fc.constantFrom('loop-wake', 'loop-continuation', 'subagent-notify').map((t) => customMessage(t, { x: 'é😀' }, T0 + 50)),
    fc.constantFrom('{"type":"custom","customType":', 'not json 😀', '{"type":"model_change"}', '', '\r'),
    fc.string({ unit: 'binary', maxLength: 20 }).filter((s) => !s.includes('\n')),
  );
  const oneGoHome = setup().home;
  const chunkedHome = setup().home;
  const dirOf = (home: string): string => path.join(home, 'sessions', '--work-repo--');
  let run = 0;
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(lineArb, { maxLength: 10 }), fc.array(fc.nat(), { maxLength: 8 }), async (lines, cuts) => {
        run++;
        const name = `2026-03-01T10-00-00-000Z_p${run}.jsonl`;
        const bytes = Buffer.from(jsonl(header(), ...lines), 'utf8');
        const oneGoFile = path.join(dirOf(oneGoHome), name);
        fs.writeFileSync(oneGoFile, bytes);
        const u1 = await new SessionFileReader(oneGoHome, oneGoFile, { now: () => T0 }).update();

        const chunkedFile = path.join(dirOf(chunkedHome), name);
        const r2 = new SessionFileReader(chunkedHome, chunkedFile, { now: () => T0 });
        const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const warnings: Warning[] = [];
        let prev = 0;
        fs.writeFileSync(chunkedFile, '');
        for (const p of [...points, bytes.length]) {
          fs.appendFileSync(chunkedFile, bytes.subarray(prev, p));
          prev = p;
          warnings.push(...(await r2.update()).newWarnings);
        }
        const u2 = await r2.update();
        warnings.push(...u2.newWarnings);
        assert.deepEqual(normalise(u2.facts), normalise(u1.facts));
        assert.deepEqual(normaliseWarnings(warnings), normaliseWarnings(u1.warnings));
        assert.deepEqual(normaliseWarnings(u2.warnings), normaliseWarnings(u1.warnings));
        assert.equal(u2.facts.incompleteSince, null);
      }),
      { numRuns: 200 },
    );
  } finally {
    fs.rmSync(oneGoHome, { recursive: true, force: true });
    fs.rmSync(chunkedHome, { recursive: true, force: true });
  }
});

test('200 MB session file: state near the start found once by the backward scan; an append of N bytes costs N bytes', async () => {
  const { home, file } = setup();
  const started = Date.now();
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, jsonl(header(), entry('session_info', { name: 'big one' }), continuation(true, T0 + 100), assistant('stop', T0 + 200)));
    const one = user(`filler ${'lorem ipsum dolor sit amet '.repeat(36)}`, T0 + 300) + '\n';
    const block = Buffer.from(one.repeat(Math.ceil((4 * 1024 * 1024) / one.length)), 'utf8');
    const target = 200 * 1024 * 1024;
    for (let written = 0; written < target; written += block.length) fs.writeSync(fd, block);
  } finally {
    fs.closeSync(fd);
  }
  try {
    const size = fs.statSync(file).size;
    assert.ok(size >= 200 * 1024 * 1024);
    const counter = createReadCounter();
    const reader = new SessionFileReader(home, file, { now: clock().now, counter });
    const u1 = await reader.update();
    assert.deepEqual(u1.warnings, []);
    assert.equal(u1.facts.continuation?.armed, true, 'found before the tail window');
    assert.equal(u1.facts.name, 'big one');
    assert.equal(u1.facts.lastAssistant?.stopReason, 'stop');
    assert.equal(u1.facts.header?.id, 'sid-1');
    // Each byte at most once, apart from the head block and the line cut by the window start.
    assert.ok(u1.bytesRead <= size + 1024 + 2048, `${u1.bytesRead - size} bytes over the size`);

    const readBefore = counter.bytesRead;
    const appended = jsonl(custom('loop-dash-control', { held: true, by: 'owner' }, T0 + 500), assistant('aborted', T0 + 600));
    fs.appendFileSync(file, appended);
    const u2 = await reader.update();
    const n = Buffer.byteLength(appended);
    assert.equal(counter.bytesRead - readBefore, n, 'only the appended bytes are read');
    assert.equal(u2.bytesRead, n);
    assert.equal(u2.facts.dashControl?.held, true);
    assert.equal(u2.facts.lastAssistant?.stopReason, 'aborted');
    assert.equal(u2.facts.continuation?.armed, true);
    const idle = await reader.update();
    assert.equal(idle.bytesRead, 0);
    assert.equal(idle.changed, false);
    assert.ok(Date.now() - started < 15_000, `took ${Date.now() - started} ms`);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('holdsStateNeedle is "some needle is in the text", for texts built from pieces of the needles', () => {
  // Pieces of each needle (and the regular expressions' special characters) make near misses likely.
  const pieces = [...new Set(STATE_NEEDLES.flatMap((n) => [n, n.slice(1), n.slice(0, -1), n.slice(0, n.length >> 1), n.slice(n.length >> 1)]))];
  const piece = fc.oneof(fc.constantFrom(...pieces, '"', ':', '.', '*', '\\', '(', '|', '[', '$'), fc.string({ maxLength: 6 }));
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 8 }), (parts) => {
      const text = parts.join('');
      assert.equal(holdsStateNeedle(text), STATE_NEEDLES.some((n) => text.includes(n)), JSON.stringify(text));
    }),
    { numRuns: 3000 },
  );
  for (const n of STATE_NEEDLES) assert.equal(holdsStateNeedle(`{"x":1,${n},"y":2}`), true, n);
  assert.equal(holdsStateNeedle('{"type":"message","message":{"role":"user"}}'), false);
});

test('line 1: a header whose id is not the file name\'s is shown by the header\'s id with a warning; a first line that is no entry at all says it is no session header', async () => {
  const { home, file } = setup('2026-03-01T10-00-00-000Z_from-name.jsonl');
  fs.writeFileSync(file, jsonl(header('from-header'), user('hi')));
  const u = await new SessionFileReader(home, file, { now: clock().now }).update();
  assert.equal(u.facts.sessionId, 'from-header');
  assert.deepEqual(
    u.warnings.map((w) => [w.line, w.severity, w.message]),
    [[1, 'warning', "the header's id from-header is not the file name's from-name; the session is shown as from-header"]],
  );
  // The same header read through the head block of a file larger than its tail window.
  const big = setup('2026-03-01T10-00-00-000Z_from-name.jsonl');
  fs.writeFileSync(big.file, jsonl(header('from-header'), ...Array.from({ length: 400 }, (_, i) => user(`${i} ${'x'.repeat(200)}`))));
  const v = await new SessionFileReader(big.home, big.file, { now: clock().now }).update();
  assert.deepEqual(v.warnings.map((w) => w.message), ["the header's id from-header is not the file name's from-name; the session is shown as from-header"]);
  // A stray JSONL file whose first line is no entry.
  const stray = setup('notes.jsonl');
  fs.writeFileSync(stray.file, jsonl(JSON.stringify({ note: 'hello' })));
  const w = await new SessionFileReader(stray.home, stray.file, { now: clock().now }).update();
  assert.match(w.warnings[0]?.message ?? '', /^line 1 is not a session header: invalid entry: /);
  for (const s of [home, big.home, stray.home]) fs.rmSync(s, { recursive: true, force: true });
});
