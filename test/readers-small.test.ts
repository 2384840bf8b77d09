import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { readCheckpointFile, isCheckpointFileName } from '../src/readers/checkpoint-file.js';
import { effectiveLimits, limitsFromSettings, type HomeLimits } from '../src/model/limits.js';
import { checkpointSkewMs } from '../src/model/clock-skew.js';
import { readJsonFile, readJsonFileSync, type JsonFileResult } from '../src/readers/json-file.js';
import fc from 'fast-check';
import { findExcessDepth, locateJsonError, parseJsonText } from '../src/readers/json-text.js';
import { readLaneStatus } from '../src/readers/lane-status.js';
import { keepStateLog, STATE_LOG_KEEP } from '../src/model/reducer.js';
import { isResumeEvent, StateLogReader, stateLogEventOf } from '../src/readers/state-log.js';
import { stateLogOfRoot } from '../src/contract/paths.js';
import { TAIL_BYTES } from '../src/readers/small-jsonl.js';
import { isReceiptStale, readReceipt } from '../src/readers/receipt-file.js';
import { readHomeSettings } from '../src/readers/settings-file.js';
import { JournalReader, readAck, readJournal } from '../src/readers/journal.js';
import { readIncidentFile } from '../src/readers/incident-file.js';
import { CacheFile, defaultCacheDir, SessionCache, sessionCacheFile } from '../src/readers/session-cache.js';

const dirs: string[] = [];
function tmpHome(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-small-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function write(file: string, text: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);

function checkpoint(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    v: 1,
    session: 'sess-1',
    sessionFile: '/h/sessions/--r--/x_sess-1.jsonl',
    role: 'root',
    parentSession: null,
    cwd: '/r',
    pid: 4242,
    pidStart: '123456',
    host: 'box',
    model: 'anthropic/claude',
    thinking: 'high',
    limits: { inactivityMs: 900000, absoluteMs: 4500000, episodeMs: 1200000, episodeMaxAttempts: 4 },
    state: 'requesting',
    request: { turn: 3, startedAt: T0, lastModelEventAt: T0 + 1000, lastTransportEventAt: T0 + 2000, modelEvents: 5, keepalives: 1 },
    episode: null,
    recovery: null,
    lastStop: null,
    held: null,
    ownerAbort: null,
    updatedAt: T0 + 2000,
    ...over,
  };
}

function deepJson(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

describe('json-text and json-file', () => {
  test('locates a syntax error by line and column', () => {
    const text = '{\n  "a": 1,\n  "b": }\n';
    const r = parseJsonText(text);
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.equal(r.line, 3);
    assert.equal(r.column, 8);
    assert.match(r.message, /line 3 column 8/);
    assert.equal(r.truncated, false);
    assert.equal(locateJsonError('{"a":[1,2,{"b":null}],"c":"\\u00e9"}'), null);
    assert.equal(locateJsonError('{"a":1}}'), 7);
  });

  test('findExcessDepth skips strings with indexOf and answers as a scan of every character does', () => {
    // The reference: every character, a backslash in a string skipping the next one.
    const scan = (text: string, max: number): number | null => {
      let depth = 0;
      let inString = false;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (inString) {
          if (c === 0x5c) i++;
          else if (c === 0x22) inString = false;
        } else if (c === 0x22) inString = true;
        else if (c === 0x7b || c === 0x5b) {
          if (++depth > max) return i;
        } else if (c === 0x7d || c === 0x5d) depth--;
      }
      return null;
    };
    const piece = fc.constantFrom('"', '\\', '\\\\', '\\"', '{', '[', '}', ']', 'a', ':', ',', ' ', '"x"', '[[', '{"k":');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), fc.integer({ min: 0, max: 6 }), (parts, max) => {
        const text = parts.join('');
        assert.equal(findExcessDepth(text, max), scan(text, max), JSON.stringify(text));
      }),
      { numRuns: 5000 },
    );
    // Brackets inside strings, escaped quotes and backslash runs before a closing quote.
    const escaped = '{"a":"[[[[\\"]]]\\\\","b":[[1]]}';
    assert.equal(findExcessDepth(escaped, 2), escaped.indexOf('[[1') + 1, 'the second bracket of "b", after the string');
    assert.equal(scan(escaped, 2), escaped.indexOf('[[1') + 1);
    assert.equal(findExcessDepth(escaped, 3), null);
    assert.equal(findExcessDepth('["unterminated [[[[', 1), null);
    // A string of a million escaped quotes (4 MB, a session line's cap; walked by hand past 256 K characters) is skipped whole, its brackets after it still counted.
    const escapes = `[["${'\\"'.repeat(1_000_000)}"],[[[1]]]]`;
    assert.equal(findExcessDepth(escapes, 3), escapes.indexOf('[[[1') + 2);
    assert.equal(findExcessDepth(escapes, 4), null);
    // A tool's JSON output as a string: 357 brackets, none of them structure.
    const inner = JSON.stringify({ deps: Array.from({ length: 120 }, (_, i) => ({ name: `p${i}`, v: [1, 2] })) });
    assert.equal(findExcessDepth(JSON.stringify({ content: [{ type: 'text', text: inner }] }), 3), null);
  });

  test('a cut-off document is marked truncated', () => {
    const r = parseJsonText('{"a": [1, 2');
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.truncated, true);
  });

  test('missing, empty, good, bad', async () => {
    const home = tmpHome();
    assert.deepEqual(await readJsonFile(path.join(home, 'nope.json')), { missing: true, warnings: [] });
    assert.deepEqual(await readJsonFile(path.join(home, 'nope', 'deeper.json')), { missing: true, warnings: [] });
    const empty = await readJsonFile(write(path.join(home, 'empty.json'), ''));
    assert.equal(!empty.missing && empty.transient, true);
    assert.deepEqual(empty.warnings, []);
    const good = await readJsonFile(write(path.join(home, 'good.json'), '\uFEFF{"a": 1}\n'));
    assert.equal(!good.missing && (good.value as { a: number }).a, 1);
    const bad = await readJsonFile(write(path.join(home, 'bad.json'), '{\n"a": 1,\n"b": tru\n}'));
    assert.equal(bad.warnings.length, 1);
    assert.equal(bad.warnings[0]?.file, path.join(home, 'bad.json'));
    assert.equal(bad.warnings[0]?.line, 3);
  });

  test('a deep file is rejected without a crash; one over the cap is not even read', async () => {
    const home = tmpHome();
    const deep = await readJsonFile(write(path.join(home, 'deep.json'), deepJson(500_000)));
    assert.equal(!deep.missing && deep.value, undefined);
    assert.match(deep.warnings[0]?.message ?? '', /nesting deeper than 64/);
    const huge = await readJsonFile(write(path.join(home, 'huge.json'), deepJson(1_000_000)));
    assert.match(huge.warnings[0]?.message ?? '', /too large/);
  });

  test('a read given the walk\'s stat answers as the ordinary read does, in one call; anything unusual is left to the ordinary read', async () => {
    const home = tmpHome();
    const file = path.join(home, 'f.json');
    // A marker mtime in the given stat shows which read answered: the one-call read carries it.
    const MARK = 1_234_567;
    const both = (maxBytes?: number): { fast: JsonFileResult; slow: JsonFileResult } => {
      const st = fs.statSync(file);
      const opts = maxBytes === undefined ? {} : { maxBytes };
      return { fast: readJsonFileSync(file, { ...opts, stat: { size: st.size, mtimeMs: MARK } }), slow: readJsonFileSync(file, opts) };
    };
    const fragments = ['{', '}', '[', ']', '"a"', ':', ',', '1', 'true', 'null', '"__proto__"', '\\u0041', ' ', '\n', '\uFEFF', 'é', '"x'];
    const bytes = fc.oneof(
      fc.array(fc.constantFrom(...fragments), { minLength: 1, maxLength: 30 }).map((parts) => Buffer.from(parts.join(''))),
      fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
      fc.uint8Array({ minLength: 1, maxLength: 64 }).map((a) => Buffer.from(a)),
    );
    fc.assert(
      fc.property(bytes, (content) => {
        fs.writeFileSync(file, content);
        const { fast, slow } = both();
        assert.deepEqual(fast, slow.missing ? slow : { ...slow, mtimeMs: MARK }, `content ${content.toString('hex')}`);
      }),
      { numRuns: 400 },
    );
    // Left to the ordinary read (the real mtime, its warnings): an empty file, one grown past the
    // cap since its stat, a FIFO or a directory put there since.
    fs.writeFileSync(file, '');
    assert.deepEqual(both().fast, both().slow);
    fs.writeFileSync(file, '{"a": 1}');
    const st = fs.statSync(file);
    fs.writeFileSync(file, `{"a": "${'x'.repeat(100)}"}`);
    const grown = readJsonFileSync(file, { maxBytes: 50, stat: { size: st.size, mtimeMs: MARK } });
    assert.deepEqual(grown, readJsonFileSync(file, { maxBytes: 50 }));
    assert.match(grown.warnings[0]?.message ?? '', /too large/);
    // Bigger than the cap by the given stat: not read (the ordinary read's own stat says why).
    assert.deepEqual(readJsonFileSync(file, { maxBytes: 50, stat: { size: 108, mtimeMs: MARK } }), readJsonFileSync(file, { maxBytes: 50 }));
    fs.rmSync(file);
    assert.deepEqual(readJsonFileSync(file, { stat: { size: st.size, mtimeMs: MARK } }), { missing: true, warnings: [] });
    if (process.platform !== 'win32') {
      execFileSync('mkfifo', [file]);
      const fifo = readJsonFileSync(file, { stat: { size: st.size, mtimeMs: MARK } });
      assert.match(fifo.warnings[0]?.message ?? '', /not a regular file/);
      fs.rmSync(file);
    }
    fs.mkdirSync(file);
    assert.deepEqual(readJsonFileSync(file, { stat: { size: st.size, mtimeMs: MARK } }), readJsonFileSync(file));
  });

  test('a FIFO does not hang the reader', { skip: process.platform === 'win32' }, async () => {
    const home = tmpHome();
    const fifo = path.join(home, 'pipe.json');
    execFileSync('mkfifo', [fifo]);
    const r = await readJsonFile(fifo);
    assert.match(r.warnings[0]?.message ?? '', /not a regular file/);
  });
});

describe('checkpoint file', () => {
  test('good file; unknown fields kept; temp names are not checkpoints', async () => {
    const home = tmpHome();
    const file = write(path.join(home, 'loop-dash/checkpoints/sess-1.json'), JSON.stringify(checkpoint({ extra: { x: 1 } })));
    const r = await readCheckpointFile(home, file);
    assert.deepEqual(r.warnings, []);
    assert.equal(r.record?.session, 'sess-1');
    assert.equal(r.record?.checkpoint.request?.turn, 3);
    assert.deepEqual((r.record?.checkpoint as Record<string, unknown>).extra, { x: 1 });
    assert.ok((r.record?.mtimeMs ?? 0) > 0);
    assert.equal(isCheckpointFileName('sess-1.json'), true);
    assert.equal(isCheckpointFileName('.sess-1.json.tmp-123'), false);
    assert.equal(isCheckpointFileName('sess-1.json.tmp123.json'), false);
  });

  test('missing, empty (transient, silent), cut off (transient), bad JSON with line', async () => {
    const home = tmpHome();
    const dir = path.join(home, 'loop-dash/checkpoints');
    const missing = await readCheckpointFile(home, path.join(dir, 'gone.json'));
    assert.equal(missing.missing, true);
    assert.equal(missing.record, null);
    const empty = await readCheckpointFile(home, write(path.join(dir, 'e.json'), ''));
    assert.equal(empty.transient, true);
    assert.deepEqual(empty.warnings, []);
    const cut = await readCheckpointFile(home, write(path.join(dir, 'c.json'), JSON.stringify(checkpoint()).slice(0, 100)));
    assert.equal(cut.transient, true);
    assert.equal(cut.record, null);
    const bad = await readCheckpointFile(home, write(path.join(dir, 'b.json'), '{\n "v": 1,\n "session": "x",,\n}'));
    assert.equal(bad.record, null);
    assert.equal(bad.transient, false);
    assert.equal(bad.warnings[0]?.line, 3);
    assert.equal(bad.warnings[0]?.file, path.join(dir, 'b.json'));
  });

  test('bad limits cost only themselves: the valid fields are kept, the rest fall back to the home, a warning names them; absent limits too', async () => {
    const home = tmpHome();
    const dir = path.join(home, 'loop-dash/checkpoints');
    const zero = await readCheckpointFile(home, write(path.join(dir, 'sess-1.json'), JSON.stringify(checkpoint({ limits: { inactivityMs: 0, absoluteMs: 4_500_000, episodeMs: 1_200_000, episodeMaxAttempts: 4 } }))));
    assert.equal(zero.record?.checkpoint.state, 'requesting', 'the request is kept');
    assert.deepEqual(zero.record?.checkpoint.limits, { absoluteMs: 4_500_000, episodeMs: 1_200_000, episodeMaxAttempts: 4 });
    assert.match(zero.warnings[0]?.message ?? '', /^limits: inactivityMs 0 not valid; the home's settings are used for it/);
    const home10: HomeLimits = { ...limitsFromSettings(null).limits, inactivityMs: 600_000 };
    const eff = effectiveLimits(home10, zero.record!.checkpoint.limits);
    assert.deepEqual([eff.inactivityMs, eff.source.inactivityMs, eff.absoluteMs, eff.source.absoluteMs], [600_000, home10.sources.inactivityMs, 4_500_000, 'checkpoint']);
    const only = await readCheckpointFile(home, write(path.join(dir, 'sess-1.json'), JSON.stringify(checkpoint({ limits: { inactivityMs: 600_000 } }))));
    assert.deepEqual(only.record?.checkpoint.limits, { inactivityMs: 600_000 });
    assert.match(only.warnings[0]?.message ?? '', /absoluteMs \(absent\), episodeMs \(absent\), episodeMaxAttempts \(absent\) not valid; the home's settings are used for them/);
    const { limits: _gone, ...noLimits } = checkpoint();
    const absent = await readCheckpointFile(home, write(path.join(dir, 'sess-1.json'), JSON.stringify(noLimits)));
    assert.equal(absent.record?.checkpoint.limits, null);
    assert.match(absent.warnings[0]?.message ?? '', /no limits field/);
    const str = await readCheckpointFile(home, write(path.join(dir, 'sess-1.json'), JSON.stringify(checkpoint({ limits: 'fast' }))));
    assert.equal(str.record?.checkpoint.limits, null);
    assert.match(str.warnings[0]?.message ?? '', /limits: not an object/);
  });

  test('the mtime a checkpoint record carries is its content’s: a walk’s stat older than a rewrite it read is not taken for a clock ahead', async () => {
    const home = tmpHome();
    const file = write(path.join(home, 'loop-dash/checkpoints/sess-1.json'), JSON.stringify(checkpoint({ updatedAt: Date.now() })));
    const walked = { size: fs.statSync(file).size, mtimeMs: Date.now() - 10_000, ino: fs.statSync(file).ino };
    const r = await readCheckpointFile(home, file, walked);
    assert.ok(r.record);
    assert.ok(r.record.mtimeMs >= fs.statSync(file).mtimeMs, 'the file\'s own mtime, not the walk\'s');
    assert.equal(checkpointSkewMs(r.record), 0);
  });

  test('another version of our contract is said to be one ("unknown version"), not dumped as a schema failure', async () => {
    const home = tmpHome();
    const r = await readCheckpointFile(home, write(path.join(home, 'loop-dash/checkpoints/sess-1.json'), JSON.stringify(checkpoint({ v: 2, state: 'whatever-v2-says' }))));
    assert.equal(r.record, null);
    assert.equal(r.warnings.length, 1);
    assert.equal(r.warnings[0]?.message, 'unknown version: v 2 (this loop-dash reads version 1); not read');
  });

  test('schema failure names the zod path', async () => {
    const home = tmpHome();
    const bad = checkpoint({ state: 'dancing' });
    (bad.request as Record<string, unknown>).startedAt = 'soon';
    const r = await readCheckpointFile(home, write(path.join(home, 'loop-dash/checkpoints/sess-1.json'), JSON.stringify(bad)));
    assert.equal(r.record, null);
    assert.equal(r.warnings.length, 1);
    assert.match(r.warnings[0]?.message ?? '', /request\.startedAt/);
    assert.match(r.warnings[0]?.message ?? '', /state/);
    assert.equal(r.warnings[0]?.line, null);
  });

  test('__proto__ keys do not pollute and are reported', async () => {
    const home = tmpHome();
    const text = JSON.stringify(checkpoint()).replace(/^\{/, '{"__proto__":{"polluted":"yes"},"request2":{"__proto__":{"polluted":1}},');
    const r = await readCheckpointFile(home, write(path.join(home, 'loop-dash/checkpoints/sess-1.json'), text));
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.ok(r.record);
    assert.equal((r.record.checkpoint as Record<string, unknown>).polluted, undefined);
    assert.equal(Object.getPrototypeOf(r.record.checkpoint), Object.prototype);
    assert.ok(r.warnings.some((w) => /__proto__/.test(w.message)));
  });

  test('a session that does not match the file name is flagged, not dropped', async () => {
    const home = tmpHome();
    const r = await readCheckpointFile(home, write(path.join(home, 'loop-dash/checkpoints/other.json'), JSON.stringify(checkpoint())));
    assert.equal(r.record?.session, 'sess-1');
    assert.match(r.warnings[0]?.message ?? '', /named other/);
  });

  test('deep nesting inside a checkpoint is rejected', async () => {
    const home = tmpHome();
    const r = await readCheckpointFile(home, write(path.join(home, 'loop-dash/checkpoints/d.json'), `{"v":1,"x":${deepJson(100_000)}}`));
    assert.equal(r.record, null);
    assert.match(r.warnings[0]?.message ?? '', /nesting/);
  });
});

describe('lane status', () => {
  const status = {
    runId: 'run-7',
    sessionId: '/h/sessions/--r--/x_root.jsonl',
    state: 'running',
    pid: 999,
    startedAt: T0,
    lastActivityAt: '2026-11-30T12:05:00.000Z',
    currentTool: 'bash',
    steps: [{ agent: 'worker', model: 'm', status: 'running', sessionFile: '/s.jsonl' }, 'junk'],
    error: { message: 'boom' },
    futureField: true,
  };

  test('good file; ISO times accepted; junk steps skipped', async () => {
    const home = tmpHome();
    const file = write(path.join(home, 'tmp/async-subagent-runs/run-7/status.json'), JSON.stringify(status));
    const r = await readLaneStatus(home, file);
    assert.deepEqual(r.warnings, []);
    assert.equal(r.record?.runId, 'run-7');
    assert.equal(r.record?.startedAt, T0);
    assert.equal(r.record?.lastActivityAt, T0 + 5 * 60_000);
    assert.equal(r.record?.endedAt, null);
    assert.equal(r.record?.steps.length, 1);
    assert.equal(r.record?.steps[0]?.agent, 'worker');
    assert.equal(r.record?.error, 'boom');
  });

  test('a bad optional field is named and ignored; a bad required one drops the record', async () => {
    const home = tmpHome();
    const file = write(path.join(home, 'tmp/async-subagent-runs/run-8/status.json'), JSON.stringify({ ...status, runId: undefined, pid: 'x' }));
    const r = await readLaneStatus(home, file);
    assert.equal(r.record?.runId, 'run-8');
    assert.equal(r.record?.pid, null);
    assert.match(r.warnings[0]?.message ?? '', /^schema: pid: .*ignored/);
    const noState = write(path.join(home, 'tmp/async-subagent-runs/run-9/status.json'), JSON.stringify({ runId: 'run-9' }));
    const r2 = await readLaneStatus(home, noState);
    assert.equal(r2.record, null);
    assert.match(r2.warnings[0]?.message ?? '', /state/);
    assert.equal((await readLaneStatus(home, path.join(home, 'tmp/async-subagent-runs/none/status.json'))).missing, true);
  });

  test('bad JSON names the line', async () => {
    const home = tmpHome();
    const file = write(path.join(home, 'tmp/async-subagent-runs/r/status.json'), '{\n"runId": "r",\n"state": running\n}');
    const r = await readLaneStatus(home, file);
    assert.equal(r.record, null);
    assert.equal(r.warnings[0]?.line, 3);
  });
});

describe('state log', () => {
  const line = (o: Record<string, unknown>) => `${JSON.stringify(o)}\n`;

  test('reads incrementally; a torn last line waits for its newline', async () => {
    const home = tmpHome();
    const file = path.join(home, 'codex/state-api-loop3.jsonl');
    write(file, line({ v: 1, seq: 1, ts: '2026-11-30T12:00:00Z', ev: 'open', by: 'root' }) + '{"v":1,"seq":2,"ts":"2026-11-30T12:01:00Z","ev":"dis');
    const reader = new StateLogReader(file);
    const a = await reader.update();
    assert.deepEqual(a.warnings, []);
    assert.equal(a.events.length, 1);
    assert.equal(a.events[0]?.at, T0);
    assert.equal(a.events[0]?.by, 'root');
    assert.ok(reader.pendingBytes > 0);
    const b = await reader.update();
    assert.equal(b.events.length, 0);
    assert.deepEqual(b.warnings, []);
    fs.appendFileSync(file, 'patch","lane":"L1","run":"r1"}\n' + line({ v: 1, seq: 3, ts: '2026-11-30T12:02:00Z', ev: 'root-resume', by: 'daemon' }));
    const c = await reader.update();
    assert.deepEqual(c.warnings, []);
    assert.equal(c.reset, false);
    assert.deepEqual(c.events.map((e) => [e.line, e.ev, e.seq]), [[2, 'dispatch', 2], [3, 'root-resume', 3]]);
    assert.equal(c.events[0]?.raw.lane, 'L1');
    assert.equal(isResumeEvent(c.events[1]!), true);
    assert.equal(isResumeEvent('dispatch'), false);
    assert.equal(reader.pendingBytes, 0);
  });

  test('bad lines are warnings with line numbers; reading continues; unknown ev is not a warning', async () => {
    const home = tmpHome();
    const file = write(
      path.join(home, 'state.jsonl'),
      '\uFEFF' + line({ v: 1, seq: 1, ts: '2026-11-30T12:00:00Z', ev: 'open', by: 'root' }) +
        '\r\n' +
        'not json\n' +
        line({ v: 1, seq: 3, ts: 'yesterday', ev: 'gate' }) +
        line({ v: 1, seq: 4 }) +
        `{"v":1,"ev":"x","deep":${deepJson(1000)}}\n` +
        line({ v: 1, seq: 6, ts: '2026-11-30T12:00:00Z', ev: 'brand-new-event', by: 'ext' }) +
        '{"__proto__":{"polluted":true},"ev":"p"}\r\n',
    );
    const r = await new StateLogReader(file).update();
    assert.deepEqual(r.events.map((e) => [e.line, e.ev]), [[1, 'open'], [4, 'gate'], [7, 'brand-new-event'], [8, 'p']]);
    assert.equal(r.events[1]?.at, null);
    const byLine = new Map(r.warnings.map((w) => [w.line, w.message]));
    assert.match(byLine.get(3) ?? '', /invalid JSON/);
    assert.match(byLine.get(4) ?? '', /^ts: expected/);
    assert.match(byLine.get(5) ?? '', /ev/);
    assert.match(byLine.get(6) ?? '', /nesting/);
    assert.match(byLine.get(8) ?? '', /__proto__/);
    assert.equal(byLine.has(7), false);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.ok(r.warnings.every((w) => w.file === file && typeof w.offset === 'number'));
  });

  test('a shrink or a vanish resets; a regrown file is read from 0', async () => {
    const home = tmpHome();
    const file = write(path.join(home, 'state.jsonl'), line({ v: 1, seq: 1, ev: 'open' }) + line({ v: 1, seq: 2, ev: 'admit' }));
    const reader = new StateLogReader(file);
    assert.equal((await reader.update()).events.length, 2);
    fs.writeFileSync(file, line({ v: 1, seq: 1, ev: 'close' }));
    const r = await reader.update();
    assert.equal(r.reset, true);
    assert.deepEqual(r.events.map((e) => [e.line, e.ev]), [[1, 'close']]);
    fs.rmSync(file);
    const gone = await reader.update();
    assert.equal(gone.reset, true);
    assert.equal(gone.missing, true);
    const again = await reader.update();
    assert.equal(again.reset, false);
    write(file, line({ v: 1, seq: 1, ev: 'open' }));
    const back = await reader.update();
    assert.equal(back.reset, false);
    assert.deepEqual(back.events.map((e) => e.ev), ['open']);
  });

  test('a replaced file (new inode, not smaller) is re-read from 0', async () => {
    const home = tmpHome();
    const file = write(path.join(home, 'state.jsonl'), line({ v: 1, seq: 1, ev: 'open' }));
    const reader = new StateLogReader(file);
    await reader.update();
    write(path.join(home, 'next.jsonl'), line({ v: 1, seq: 1, ev: 'admit' }) + line({ v: 1, seq: 2, ev: 'gate' }));
    fs.renameSync(path.join(home, 'next.jsonl'), file);
    const r = await reader.update();
    assert.equal(r.reset, true);
    assert.deepEqual(r.events.map((e) => e.ev), ['admit', 'gate']);
  });

  test('rewritten in place (the same inode) to at least the length read: read again from 0, also after a resume; a position without the bytes before its offset starts over', async () => {
    const home = tmpHome();
    const file = path.join(home, 'state.jsonl');
    const open = line({ v: 1, seq: 1, ts: '2026-11-30T12:00:00Z', ev: 'open', by: 'root' });
    const ev = (seq: number, ev: string, pad = '') => line({ v: 1, seq, ts: '2026-11-30T12:01:00Z', ev, by: 'root', ...(pad ? { note: pad } : {}) });
    write(file, open + ev(2, 'admit') + ev(3, 'gate'));
    const ino = fs.statSync(file).ino;
    const reader = new StateLogReader(file);
    assert.deepEqual((await reader.update()).events.map((e) => e.ev), ['open', 'admit', 'gate']);
    const readTo = fs.statSync(file).size;
    // The worst case: the same first line, a new line ending exactly where the old read ended, then
    // more — a follower that only compares sizes reads the last line alone, as an append.
    const filler = ev(2, 'revert');
    const padded = ev(2, 'revert', 'x'.repeat(readTo - open.length - filler.length - ',"note":""'.length));
    assert.equal(Buffer.byteLength(open + padded), readTo, 'the rewrite has a line boundary where the old read ended');
    fs.writeFileSync(file, open + padded + ev(3, 'land'));
    assert.equal(fs.statSync(file).ino, ino, 'rewritten in place: the same inode');
    const r = await reader.update();
    assert.equal(r.reset, true, 'seen as a rewrite');
    assert.deepEqual(r.events.map((e) => [e.line, e.ev]), [[1, 'open'], [2, 'revert'], [3, 'land']]);
    assert.deepEqual(r.warnings, []);

    // The same length, different bytes: a rewrite too.
    const same = fs.readFileSync(file, 'utf8').replace('"land"', '"lend"');
    fs.writeFileSync(file, same);
    const s = await reader.update();
    assert.equal(s.reset, true);
    assert.deepEqual(s.events.map((e) => e.ev), ['open', 'revert', 'lend']);
    // An append is not.
    fs.appendFileSync(file, ev(4, 'close'));
    const a = await reader.update();
    assert.equal(a.reset, false);
    assert.deepEqual(a.events.map((e) => [e.line, e.ev]), [[4, 'close']]);

    // After a resume (the session cache) a rewrite in place is seen at the first read.
    const kept = reader.remembered();
    assert.ok(kept && kept.tail.length > 0);
    const resumed = new StateLogReader(file);
    resumed.adopt(kept, kept.events.map((e) => stateLogEventOf(file, e.line, e.raw)));
    fs.writeFileSync(file, open + ev(2, 'admit', 'y'.repeat(400)) + ev(3, 'park'));
    assert.equal(fs.statSync(file).ino, ino);
    const after = await resumed.update();
    assert.equal(after.reset, true);
    assert.deepEqual(after.events.map((e) => e.ev), ['open', 'admit', 'park']);
    // A position saved without them (an older build's cache): the first read starts over.
    const { tail: _none, ...noTail } = resumed.remembered()!;
    const older = new StateLogReader(file);
    older.adopt(noTail as typeof kept, []);
    fs.appendFileSync(file, ev(4, 'close'));
    const fresh = await older.update();
    assert.equal(fresh.reset, true);
    assert.deepEqual(fresh.events.map((e) => e.ev), ['open', 'admit', 'park', 'close']);
    // One damaged (more bytes than were read): the same, never a read error.
    const damaged = new StateLogReader(file);
    damaged.adopt({ ...older.remembered()!, offset: 16, line: 1 }, []);
    const whole = await damaged.update();
    assert.deepEqual(whole.warnings, []);
    assert.equal(whole.reset, true);
    assert.deepEqual(whole.events.map((e) => e.ev), ['open', 'admit', 'park', 'close']);
  });

  test('a log read in several chunks (over 64 KB) and then appended to: only the appended lines, no reset; the bytes kept are the last ones read', async () => {
    const home = tmpHome();
    const file = path.join(home, 'state.jsonl');
    const ev = (seq: number) => line({ v: 1, seq, ts: '2026-11-30T12:01:00Z', ev: 'heartbeat', by: 'root', note: 'é'.repeat(seq % 300) });
    let text = '';
    let n = 0;
    while (Buffer.byteLength(text) < 200 * 1024) text += ev(++n);
    write(file, text);
    const reader = new StateLogReader(file);
    assert.equal((await reader.update()).events.length, n);
    for (let i = 0; i < 3; i++) {
      fs.appendFileSync(file, ev(++n));
      const r = await reader.update();
      assert.equal(r.reset, false, `append ${i + 1}: not a rewrite`);
      assert.deepEqual(r.events.map((e) => e.seq), [n]);
    }
    const size = fs.statSync(file).size;
    const kept = Buffer.from(reader.remembered()!.tail, 'base64');
    assert.deepEqual(kept, fs.readFileSync(file).subarray(size - kept.length), 'the last bytes of the file');
    assert.equal(kept.length, TAIL_BYTES);
  });

  test('remembered and adopted (the session cache): the next run goes on at the right line with nothing twice; the last STATE_LOG_KEEP events kept; nothing remembered while a line is torn or after a bad one', async () => {
    const home = tmpHome();
    const file = path.join(home, 'state.jsonl');
    const events = (n: number, from = 1) => Array.from({ length: n }, (_, i) => line({ v: 1, seq: from + i, ts: '2026-11-30T12:00:00Z', ev: 'heartbeat', by: 'root' })).join('');
    write(file, events(STATE_LOG_KEEP + 60));
    const first = new StateLogReader(file);
    const read = await first.update();
    const kept = first.remembered();
    assert.ok(kept);
    assert.equal(kept.offset, fs.statSync(file).size);
    assert.equal(kept.line, STATE_LOG_KEEP + 60);
    assert.deepEqual(kept.events, read.events.slice(-STATE_LOG_KEEP), 'the last STATE_LOG_KEEP events');
    // What a cache gives back: each event rebuilt from its line and JSON.
    const again = new StateLogReader(file);
    const adopted = again.adopt(kept, kept.events.map((e) => stateLogEventOf(file, e.line, e.raw)));
    assert.deepEqual(adopted, kept.events, 'stateLogEventOf gives the events a read gives');
    assert.equal(again.started, true);
    fs.appendFileSync(file, events(2, STATE_LOG_KEEP + 61));
    const more = await again.update();
    assert.equal(more.reset, false);
    assert.deepEqual(more.events.map((e) => [e.line, e.seq]), [[STATE_LOG_KEEP + 61, STATE_LOG_KEEP + 61], [STATE_LOG_KEEP + 62, STATE_LOG_KEEP + 62]], 'only the appended lines, numbered on');
    assert.deepEqual(again.remembered()?.events.map((e) => e.seq), [...read.events.slice(-STATE_LOG_KEEP + 2), ...more.events].map((e) => e.seq));
    // Many appends: the reader holds at most twice STATE_LOG_KEEP events.
    for (let i = 0; i < 5; i++) {
      fs.appendFileSync(file, events(STATE_LOG_KEEP, 1_000 + i * STATE_LOG_KEEP));
      await again.update();
    }
    assert.equal(again.remembered()?.events.length, STATE_LOG_KEEP);
    assert.ok((again as unknown as { events: unknown[] }).events.length <= 2 * STATE_LOG_KEEP, 'bounded');

    // A torn last line: nothing to remember until it is complete.
    fs.appendFileSync(file, '{"v":1,"seq":9999,"ev":"ga');
    await again.update();
    assert.equal(again.remembered(), null, 'not while a line is torn');
    fs.appendFileSync(file, 'te"}\n');
    await again.update();
    assert.equal(again.remembered()?.events.at(-1)?.ev, 'gate', 'remembered once it is complete');
    // A bad line: nothing remembered (a read shows its warning) until the file starts over.
    fs.appendFileSync(file, 'not json\n');
    assert.equal((await again.update()).warnings.length, 1);
    assert.equal(again.remembered(), null, 'not after a line with a problem');
    fs.writeFileSync(file, events(1));
    assert.equal((await again.update()).reset, true);
    assert.equal(again.remembered()?.events.length, 1, 'remembered again once the file started over');
  });

  test('state log path from a report', () => {
    assert.equal(stateLogOfRoot('/r/codex/report-api-loop3.md', null), '/r/codex/state-api-loop3.jsonl');
    assert.equal(stateLogOfRoot('codex/report-x-loop1.md', '/repo'), '/repo/codex/state-x-loop1.jsonl');
    // A relative report with no cwd known locates nothing (never the dashboard's own directory).
    assert.equal(stateLogOfRoot('codex/report-x-loop1.md', null), null);
  });
});

describe('watcher receipts', () => {
  test('good file with ISO, epoch ms and epoch seconds; staleness', async () => {
    const home = tmpHome();
    const file = write(
      path.join(home, 'loop-wait/sess-1/receipts/w1.json'),
      JSON.stringify({ phase: 'running', observations: 3, last_observed_at: '2026-11-30T12:00:00Z', deadline: T0 / 1000 + 600, result: null, pid: 77, command: 'make test', interval_s: 30, label: 'ci', extra: 1 }),
    );
    const r = await readReceipt(home, file);
    assert.deepEqual(r.warnings, []);
    const rec = r.record!;
    assert.equal(rec.session, 'sess-1');
    assert.equal(rec.id, 'w1');
    assert.equal(rec.lastObservedAt, T0);
    assert.equal(rec.deadline, T0 + 600_000);
    assert.equal(rec.intervalS, 30);
    assert.equal(isReceiptStale(rec, T0 + 60_000), false);
    assert.equal(isReceiptStale(rec, T0 + 60_001), true);
    assert.equal(isReceiptStale({ ...rec, phase: 'done' }, T0 + 600_000), false);
    assert.equal(isReceiptStale({ ...rec, lastObservedAt: null }, T0 + 600_000), false);
    const ms = write(path.join(home, 'loop-wait/sess-1/receipts/w2.json'), JSON.stringify({ phase: 'done', last_observed_at: T0 }));
    assert.equal((await readReceipt(home, ms)).record?.lastObservedAt, T0);
  });

  test('missing and bad', async () => {
    const home = tmpHome();
    assert.equal((await readReceipt(home, path.join(home, 'loop-wait/s/receipts/x.json'))).missing, true);
    const r = await readReceipt(home, write(path.join(home, 'loop-wait/s/receipts/y.json'), '[1,2]'));
    assert.equal(r.record, null);
    assert.match(r.warnings[0]?.message ?? '', /expected a JSON object, found an array/);
    const r2 = await readReceipt(home, write(path.join(home, 'loop-wait/s/receipts/z.json'), JSON.stringify({ phase: 'running', interval_s: -1 })));
    assert.equal(r2.record?.intervalS, null);
    assert.match(r2.warnings[0]?.message ?? '', /interval_s/);
  });
});

describe('settings', () => {
  test('reads settings and models; auth.json is never opened', async () => {
    const home = tmpHome();
    write(path.join(home, 'settings.json'), JSON.stringify({ loopPi: { requestCeiling: { inactivityMs: 60000 } }, retry: { maxRetries: 3 } }));
    write(path.join(home, 'models.json'), JSON.stringify({ providers: { p: { models: [{ id: 'm', maxTokens: 32000 }] } } }));
    // A FIFO: opening it for reading would block forever, so a pass proves it was never opened.
    if (process.platform !== 'win32') execFileSync('mkfifo', [path.join(home, 'auth.json')]);
    const r = await readHomeSettings(home);
    assert.deepEqual(r.warnings, []);
    assert.deepEqual(r.settings.settings?.retry, { maxRetries: 3 });
    assert.ok(r.settings.models?.providers);
    assert.equal(r.settings.home, home);
  });

  test('absent files are null; bad JSON gives file and line', async () => {
    const home = tmpHome();
    const none = await readHomeSettings(home);
    assert.equal(none.settings.settings, null);
    assert.equal(none.settings.models, null);
    assert.deepEqual(none.warnings, []);
    write(path.join(home, 'settings.json'), '{\n  "retry": {\n    "maxRetries": 3,\n  }\n}\n');
    const bad = await readHomeSettings(home);
    assert.equal(bad.settings.settings, null);
    assert.equal(bad.warnings[0]?.file, path.join(home, 'settings.json'));
    assert.equal(bad.warnings[0]?.line, 4);
  });

  test('__proto__ in settings does not pollute', async () => {
    const home = tmpHome();
    write(path.join(home, 'settings.json'), '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":2}},"retry":{"maxRetries":2}}');
    const r = await readHomeSettings(home);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.deepEqual(r.settings.settings?.retry, { maxRetries: 2 });
  });
});

describe('journal and acks', () => {
  const entry = (o: Record<string, unknown>) => `${JSON.stringify({ v: 1, at: T0, kind: 'requested', id: 'a1', session: 's', action: 'abort', ...o })}\n`;

  test('journal is read incrementally with bad lines as warnings', async () => {
    const home = tmpHome();
    const file = write(path.join(home, 'loop-dash/actions.jsonl'), entry({}) + entry({ action: 'explode' }) + entry({ kind: 'outcome', status: 'applied' }).slice(0, 20));
    const reader = new JournalReader(home);
    const a = await reader.update();
    assert.equal(a.entries.length, 1);
    assert.equal(a.warnings.length, 1);
    assert.equal(a.warnings[0]?.line, 2);
    assert.match(a.warnings[0]?.message ?? '', /action/);
    fs.appendFileSync(file, entry({ kind: 'outcome', status: 'applied' }).slice(20));
    const b = await reader.update();
    assert.deepEqual(b.warnings, []);
    assert.deepEqual(b.entries.map((e) => [e.kind, e.status]), [['outcome', 'applied']]);
    const whole = await readJournal(home);
    assert.equal(whole.entries.length, 2);
    const none = await readJournal(tmpHome());
    assert.equal(none.missing, true);
  });

  test('acks: good, missing, wrong', async () => {
    const home = tmpHome();
    const dir = path.join(home, 'loop-dash/control/s');
    const good = await readAck(write(path.join(dir, 'a1.ack.json'), JSON.stringify({ v: 1, id: 'a1', status: 'applied', at: T0, detail: 'cut', extra: 1 })));
    assert.equal(good.record?.status, 'applied');
    assert.equal((good.record as Record<string, unknown> | null)?.extra, 1);
    assert.equal((await readAck(path.join(dir, 'none.ack.json'))).missing, true);
    const wrong = await readAck(write(path.join(dir, 'a2.ack.json'), JSON.stringify({ v: 1, id: 'a2', status: 'maybe', at: T0, detail: '' })));
    assert.equal(wrong.record, null);
    assert.match(wrong.warnings[0]?.message ?? '', /status/);
  });
});

describe('hostile input in every whole-file reader', () => {
  test('1e6-deep nesting and __proto__ keys: no crash, warnings, no pollution', async () => {
    const home = tmpHome();
    const deep = deepJson(1_000_000);
    const nestedInCap = `{"state":"running","x":${deepJson(400_000)}}`;
    const files = {
      incident: path.join(home, 'incidents/s-2026-11-30T12-00-00-000Z.json'),
      lane: path.join(home, 'tmp/async-subagent-runs/r/status.json'),
      receipt: path.join(home, 'loop-wait/s/receipts/w.json'),
      ack: path.join(home, 'loop-dash/control/s/a.ack.json'),
    };
    const readers = [
      () => readIncidentFile(home, files.incident),
      () => readLaneStatus(home, files.lane),
      () => readReceipt(home, files.receipt),
      () => readAck(files.ack),
    ];
    for (const text of [deep, nestedInCap]) {
      for (const f of Object.values(files)) write(f, text);
      for (const read of readers) {
        const r = await read();
        assert.equal(r.record, null);
        assert.equal(r.warnings.length, 1);
        assert.match(r.warnings[0]?.message ?? '', /too large|nesting/);
      }
    }
    const proto = '{"__proto__":{"polluted":true},"class":"loop-arm-refused","state":"running","phase":"running","v":1,"id":"a","status":"applied","at":1,"detail":""}';
    for (const f of Object.values(files)) write(f, proto);
    for (const read of readers) {
      const r = await read();
      assert.ok(r.record);
      assert.ok(r.warnings.some((w) => /__proto__/.test(w.message)));
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
  });
});

test('the session cache directory: LOOP_DASH_CACHE_DIR (absolute), else $XDG_CACHE_HOME/loop-dash, else ~/.cache/loop-dash', () => {
  assert.equal(defaultCacheDir({ LOOP_DASH_CACHE_DIR: '/scratch/c', XDG_CACHE_HOME: '/x' }), '/scratch/c');
  assert.equal(defaultCacheDir({ LOOP_DASH_CACHE_DIR: 'relative', XDG_CACHE_HOME: '/x' }), '/x/loop-dash');
  assert.equal(defaultCacheDir({ XDG_CACHE_HOME: '/x' }), '/x/loop-dash');
  assert.equal(defaultCacheDir({}), path.join(os.homedir(), '.cache', 'loop-dash'));
});

test('the session cache: saved and loaded slice by slice (2 002 entries, 6 slices), keyed by the path from the home (files outside it too); a cut-short, foreign or other-home file loads empty', async () => {
  const dir = tmpHome();
  const home = path.join(tmpHome(), 'home');
  const compact = (e: { n: number; text: string }) => ({ n: e.n, text: e.text });
  const key = (i: number) => path.join(home, 'sessions', `--r${i % 7}--`, `s${i}.jsonl`);
  const cache = await SessionCache.open<{ n: number; text: string }>(dir, home, 'writer-1', compact);
  assert.equal(cache.size, 0);
  for (let i = 0; i < 2_000; i++) cache.set(key(i), { n: i, text: 'é'.repeat(i % 50) });
  // A file outside the home (a root's state log is keyed by its path from the home) and one whose
  // path only begins like the home's: each keyed apart from the home's own files.
  const outside = path.join(path.dirname(home), 'repo', 'state.jsonl');
  const lookalike = path.join(`${home}x`, 'sessions', 's1.jsonl');
  cache.set(outside, { n: -1, text: 'outside' });
  cache.set(lookalike, { n: -2, text: 'lookalike' });
  await cache.save();
  const file = sessionCacheFile(dir, home);
  const again = await SessionCache.open<{ n: number; text: string }>(dir, home, 'writer-1', compact);
  await again.loadRest();
  assert.equal(again.size, 2_002);
  for (const i of [0, 399, 400, 1_234, 1_999]) assert.deepEqual(again.get(key(i)), { n: i, text: 'é'.repeat(i % 50) });
  assert.deepEqual(again.get(outside), { n: -1, text: 'outside' });
  assert.deepEqual(again.get(lookalike), { n: -2, text: 'lookalike' });
  assert.equal(again.get(path.join(home, 'sessions', 's1.jsonl')), undefined);
  // Keyed by the path from the home, as written: the same file named another way is found.
  assert.deepEqual(again.get(path.join(home, '..', 'repo', 'state.jsonl')), { n: -1, text: 'outside' });
  const written: string[] = [];
  const reader = CacheFile.open(file)!;
  assert.ok(reader.readMagic());
  reader.next(); // the header
  while (!reader.atEnd) reader.nextEntries((k) => written.push(k));
  reader.close();
  assert.equal(written.length, 2_002);
  assert.ok(written.includes(path.join('sessions', '--r0--', 's0.jsonl')), 'a file under the home: its path inside it');
  assert.ok(written.includes(path.join('..', 'repo', 'state.jsonl')), 'a file outside: its relative path');
  assert.ok(written.includes(path.join('..', 'homex', 'sessions', 's1.jsonl')), 'a look-alike of the home: outside it');
  again.delete(outside);
  assert.equal(again.get(outside), undefined);
  assert.equal(again.size, 2_001);
  assert.deepEqual(fs.readdirSync(dir), [path.basename(file)], 'no temporary file is left behind');
  // Another writer or another home: not ours.
  assert.equal((await SessionCache.open(dir, home, 'writer-2')).size, 0);
  fs.copyFileSync(file, sessionCacheFile(dir, path.join(home, 'other')));
  const other = await SessionCache.open(dir, path.join(home, 'other'), 'writer-1');
  await other.loadRest();
  assert.equal(other.size, 0);
  // Cut short inside a slice: the whole slices before the cut (each entry stands on its own and
  // is checked against its file), never part of a slice.
  const whole = fs.readFileSync(file);
  fs.writeFileSync(file, whole.subarray(0, Math.floor(whole.length * 0.6)));
  const cut = await SessionCache.open<{ n: number; text: string }>(dir, home, 'writer-1');
  await cut.loadRest();
  assert.ok(cut.size > 0 && cut.size < 2_000 && cut.size % 400 === 0, `whole slices only (${cut.size} entries)`);
  for (let i = 0; i < 2_000; i++) {
    const e = cut.get(key(i));
    if (e) assert.deepEqual(e, { n: i, text: 'é'.repeat(i % 50) });
  }
  fs.writeFileSync(file, Buffer.from('not a cache at all'));
  const bad = await SessionCache.open(dir, home, 'writer-1');
  await bad.loadRest();
  assert.equal(bad.size, 0);
});

test('the session cache: typed arrays and Buffers in its entries come back whole, though later slices are read after theirs (the deserialiser makes them views of the bytes it read)', async () => {
  const dir = tmpHome();
  const home = path.join(tmpHome(), 'home');
  type Entry = { n: number; stats?: Float64Array; bytes?: Buffer };
  const key = (i: number) => path.join(home, 'incidents', `d${i}`) + path.sep;
  const cache = await SessionCache.open<Entry>(dir, home, 'writer-1');
  // In the first slices, then 1 600 entries (four slices) of strings that would overwrite them.
  for (let i = 0; i < 3; i++) cache.set(key(i), { n: i, stats: Float64Array.from({ length: 300 }, (_, k) => k * 1.5 + i), bytes: Buffer.alloc(5_000, i + 1) });
  for (let i = 3; i < 1_603; i++) cache.set(key(i), { n: i });
  await cache.save();
  const again = await SessionCache.open<Entry>(dir, home, 'writer-1');
  await again.loadRest();
  assert.equal(again.size, 1_603);
  for (let i = 0; i < 3; i++) {
    const e = again.get(key(i))!;
    assert.deepEqual([...e.stats!], Array.from({ length: 300 }, (_, k) => k * 1.5 + i), `entry ${i}: its Float64Array as written`);
    assert.ok(e.bytes!.equals(Buffer.alloc(5_000, i + 1)), `entry ${i}: its Buffer as written`);
  }
});

test('the session cache: a small slice whose Buffers view the bytes read keeps only its own bytes, not the larger read buffer a slice before it grew', async () => {
  const dir = tmpHome();
  const home = path.join(tmpHome(), 'home');
  type Entry = { n: number; text?: string; bytes?: Buffer };
  const key = (i: number) => path.join(home, 'incidents', `d${i}`) + path.sep;
  const cache = await SessionCache.open<Entry>(dir, home, 'writer-1', (e) => e, () => false, (e) => e.bytes !== undefined);
  // A plain slice of ~600 KB (the read buffer grows to it), then an entry with a few bytes of its own, alone.
  for (let i = 0; i < 60; i++) cache.set(key(i), { n: i, text: String(i % 10).repeat(10_000) });
  cache.set(key(60), { n: 60, bytes: Buffer.from([1, 2, 3]) });
  await cache.save();
  const again = await SessionCache.open<Entry>(dir, home, 'writer-1');
  await again.loadRest();
  const bytes = again.get(key(60))!.bytes!;
  assert.deepEqual([...bytes], [1, 2, 3], 'as written');
  assert.ok(bytes.buffer.byteLength < 64 * 1024, `its Buffer keeps ${bytes.buffer.byteLength} bytes, not the ~600 KB buffer`);
  assert.equal(again.get(key(59))!.text, '9'.repeat(10_000), 'the slice before it as written');
});

test('the session cache: after the front, an entry that says it holds bytes of its own is written in a slice alone', async () => {
  const dir = tmpHome();
  const home = path.join(tmpHome(), 'home');
  type Entry = { n: number; blob?: Buffer };
  const key = (i: number) => path.join(home, 'incidents', `d${i}`) + path.sep;
  const cache = await SessionCache.open<Entry>(dir, home, 'writer-1', (e) => e, () => false, (e) => e.blob !== undefined);
  // 10 plain entries, one of 700 KiB, 10 plain, two of 200 KiB, 10 plain.
  const sizes = [...Array(10).fill(0), 700 * 1024, ...Array(10).fill(0), 200 * 1024, 200 * 1024, ...Array(10).fill(0)];
  sizes.forEach((size, i) => cache.set(key(i), size > 0 ? { n: i, blob: Buffer.alloc(size, 7) } : { n: i }));
  await cache.save();
  const slices: number[][] = [];
  const reader = CacheFile.open(sessionCacheFile(dir, home))!;
  assert.ok(reader.readMagic());
  reader.next();
  while (!reader.atEnd) {
    const ns: number[] = [];
    reader.nextEntries<Entry>((_, e) => ns.push(e.n));
    slices.push(ns);
  }
  reader.close();
  const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);
  assert.deepEqual(slices, [range(0, 10), [10], range(11, 21), [21], [22], range(23, 33)], 'each one with bytes alone, the plain ones between them together');
  const again = await SessionCache.open<Entry>(dir, home, 'writer-1');
  await again.loadRest();
  assert.equal(again.size, sizes.length);
  assert.ok(again.get(key(10))!.blob!.equals(Buffer.alloc(700 * 1024, 7)));
});

test('the session cache: a slice is one flat array, key and entry alternating; a slice of another shape (an array per entry, a key that is not a string) is not taken, nor any part of it', async () => {
  const dir = tmpHome();
  const home = path.join(tmpHome(), 'home');
  const cache = await SessionCache.open<{ n: number }>(dir, home, 'w');
  cache.set(path.join(home, 'a.json'), { n: 1 });
  await cache.save();
  const file = sessionCacheFile(dir, home);
  // This build's own magic and header, then slices made by hand.
  const saved = fs.readFileSync(file);
  const headerEnd = 4 + 4 + saved.readUInt32LE(4);
  const withSlices = (...slices: unknown[]) => {
    const parts = [saved.subarray(0, headerEnd)];
    for (const slice of slices) {
      const bytes = v8.serialize(slice);
      const length = Buffer.alloc(4);
      length.writeUInt32LE(bytes.length);
      parts.push(length, bytes);
    }
    fs.writeFileSync(file, Buffer.concat(parts));
  };
  const load = async () => {
    const c = await SessionCache.open<{ n: number }>(dir, home, 'w');
    await c.loadRest();
    return c;
  };
  withSlices(['a.json', { n: 2 }, 'b.json', { n: 3 }]);
  const flat = await load();
  assert.equal(flat.size, 2, 'the flat slice, made by hand, is read');
  assert.deepEqual(flat.get(path.join(home, 'b.json')), { n: 3 });
  withSlices([['a.json', { n: 2 }], ['b.json', { n: 3 }]]);
  assert.equal((await load()).size, 0, 'an array per entry (the format before 10)');
  withSlices(['a.json', { n: 2 }, 7, { n: 3 }]);
  assert.equal((await load()).size, 0, 'a key that is not a string, after a good entry: none of the slice');
  withSlices(['a.json', { n: 2 }, 'b.json']);
  assert.equal((await load()).size, 0, 'an odd length');
});

test('the session cache: its first save removes the temp files writers killed mid-write left (their pid gone, a minute old; any pid after a day), not a live or fresh one, not anything else', async () => {
  const dir = tmpHome();
  const home = path.join(tmpHome(), 'home');
  // A pid no process has any more, and one that stays alive until the end of the test.
  const dead = spawnSync(process.execPath, ['-e', '']).pid;
  assert.ok(dead, 'a pid');
  const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  try {
    assert.ok(live.pid);
    fs.mkdirSync(path.join(dir, 'code'));
    const put = (rel: string, ageMs: number) => {
      const file = path.join(dir, rel);
      fs.writeFileSync(file, 'x');
      const at = new Date(Date.now() - ageMs);
      fs.utimesSync(file, at, at);
      return file;
    };
    const minutes = (n: number) => n * 60_000;
    const stale = [
      put(`home-0123456789abcdef.cache.${dead}.tmp`, minutes(2)),
      put(`code/.main.script.v8.tmp-${dead}-a1b2c3d4`, minutes(2)),
      put(`code/.main.script.0a1b2c3d.v8.tmp-${dead}-a1b2c3d4`, minutes(2)),
      // Its pid is some process now (reused, or another namespace's), but it is two days old.
      put(`home-fedcba9876543210.cache.${live.pid}.tmp`, minutes(2 * 24 * 60)),
    ];
    const kept = [
      // Being written by a process this one cannot see (its pid looks gone): not a minute old.
      put(`home-1111111111111111.cache.${dead}.tmp`, 5_000),
      put(`home-0123456789abcdef.cache.${live.pid}.tmp`, minutes(2)),
      put(`code/.main.script.v8.tmp-${live.pid}-a1b2c3d4`, minutes(2)),
      put('home-0123456789abcdef.cache', minutes(3 * 24 * 60)),
      put('code/main.script.v8', minutes(3 * 24 * 60)),
      put(`notes.${dead}.tmp`, minutes(3 * 24 * 60)),
      put(`code/home-0123456789abcdef.cache.${dead}.tmp`, minutes(3 * 24 * 60)),
    ];
    const cache = await SessionCache.open<{ n: number }>(dir, home, 'w');
    cache.set(path.join(home, 'sessions', 'a.jsonl'), { n: 1 });
    for (const f of stale) assert.ok(fs.existsSync(f), `${f} is there before the save`);
    await cache.save();
    for (const f of stale) assert.equal(fs.existsSync(f), false, `${f} is removed`);
    for (const f of kept) assert.ok(fs.existsSync(f), `${f} is kept`);
    assert.ok(fs.existsSync(sessionCacheFile(dir, home)), 'the save itself went through');
    // Only at the first save: one left after it stays until the next start's.
    const later = put(`home-0123456789abcdef.cache.${dead}.tmp`, minutes(2));
    cache.set(path.join(home, 'sessions', 'b.jsonl'), { n: 2 });
    await cache.save();
    assert.ok(fs.existsSync(later), 'not swept again by the same process');
  } finally {
    live.kill();
  }
});

test('the session cache front: written first, loaded alone by open (the rest by loadRest, a slice per turn); an entry set meanwhile is kept; no save until the rest is loaded', async () => {
  type E = { n: number; front: boolean };
  const dir = tmpHome();
  const home = path.join(tmpHome(), 'home');
  const key = (i: number) => path.join(home, 'x', `f${i}.json`);
  const front = (e: E) => e.front;
  const cache = await SessionCache.open<E>(dir, home, 'w', (e) => e, front);
  // Front entries interleaved with the rest: 300 of 1 500.
  for (let i = 0; i < 1_500; i++) cache.set(key(i), { n: i, front: i % 5 === 0 });
  await cache.save();
  const file = sessionCacheFile(dir, home);

  const warm = await SessionCache.open<E>(dir, home, 'w', (e) => e, front);
  assert.equal(warm.size, 300, 'open loads the front alone');
  for (let i = 0; i < 1_500; i++) assert.deepEqual(warm.get(key(i)), i % 5 === 0 ? { n: i, front: true } : undefined, `entry ${i} after open`);
  // Set before the rest is loaded: newer than the file's, and nothing is written meanwhile.
  warm.set(key(1), { n: -1, front: false });
  const before = fs.readFileSync(file);
  await warm.save();
  assert.deepEqual(fs.readFileSync(file), before, 'no save while the rest is unloaded');
  let turns = 0;
  await warm.loadRest(async () => {
    turns++;
    await new Promise((r) => setImmediate(r));
  });
  assert.equal(warm.size, 1_500);
  assert.equal(turns, 2, 'the rest (1 200 entries, 3 slices) gives a turn between slices');
  assert.deepEqual(warm.get(key(1)), { n: -1, front: false }, 'the entry set meanwhile is kept');
  assert.deepEqual(warm.get(key(2)), { n: 2, front: false });
  await warm.save();
  const next = await SessionCache.open<E>(dir, home, 'w', (e) => e, front);
  await next.loadRest();
  assert.deepEqual(next.get(key(1)), { n: -1, front: false }, 'saved once the rest was loaded');

  // Closed before the rest is loaded: loadRest then adds nothing.
  const closed = await SessionCache.open<E>(dir, home, 'w', (e) => e, front);
  closed.close();
  await closed.loadRest();
  assert.equal(closed.size, 300);
});

test('the session cache keeps only the files it is given, in time slices: an entry set while it pauses (a file found since, or one gone and made again) stays, and so does the rest of the list', async () => {
  const dir = tmpHome();
  const home = path.join(tmpHome(), 'home');
  const key = (i: number) => path.join(home, 'sessions', `s${i}.jsonl`);
  const cache = await SessionCache.open<{ n: number }>(dir, home, 'writer-1');
  for (let i = 0; i < 1_000; i++) cache.set(key(i), { n: i });
  await cache.save();
  // Every file still there: nothing to forget, nothing changed.
  await cache.retain(Array.from({ length: 1_000 }, (_, i) => key(i)));
  assert.equal(cache.changed, false, 'nothing forgotten, nothing to write');
  // The even files are still in the home; at each pause a new file is found, and an odd one
  // (gone when the list was made) is made again.
  const files = Array.from({ length: 500 }, (_, i) => key(2 * i));
  let pauses = 0;
  await cache.retain(files, {
    due: () => true,
    pause: async () => {
      cache.set(key(10_000 + pauses), { n: -1 });
      cache.set(key(2 * pauses + 1), { n: -2 });
      pauses++;
    },
  });
  // A slice's time is looked at every 256 items: once over the 500 files, three times over the 1 000 entries.
  assert.equal(pauses, 4, 'it paused in both loops');
  const remade = (i: number) => i % 2 === 1 && (i - 1) / 2 < pauses;
  for (let i = 0; i < 1_000; i++) assert.equal(cache.get(key(i))?.n, i % 2 === 0 ? i : remade(i) ? -2 : undefined, `file ${i}`);
  for (let p = 0; p < pauses; p++) assert.deepEqual(cache.get(key(10_000 + p)), { n: -1 }, `the file found at pause ${p}`);
  assert.equal(cache.size, 500 + 2 * pauses);
});

test('state log: a run\'s dispatch outlives the last STATE_LOG_KEEP events (one per run, the newest), in the model and in what the cache remembers', async () => {
  const ev = (seq: number, ev: string, raw: Record<string, unknown> = {}) => ({ file: '/r/state.jsonl', line: seq, seq, at: seq, ev, by: 'root', raw: { v: 1, seq, ev, ...raw } });
  const log = [
    ev(1, 'dispatch', { run: 'run-a', lane: 'L1', task: 'old task' }),
    ev(2, 'dispatch', { run: 'run-b', lane: 'L2' }),
    ev(3, 'dispatch', { run: 'run-a', lane: 'L1', task: 'redispatched' }),
    ...Array.from({ length: 300 }, (_, i) => ev(4 + i, 'gate')),
  ];
  const kept = keepStateLog(log);
  assert.deepEqual(kept.slice(0, 2).map((e) => [e.seq, e.raw.run]), [[2, 'run-b'], [3, 'run-a']], 'the newest dispatch of each run, oldest first');
  assert.equal(kept.length, 2 + STATE_LOG_KEEP);
  assert.deepEqual(kept.slice(2), log.slice(-STATE_LOG_KEEP));
  assert.equal(keepStateLog(kept).length, kept.length, 'kept again: the same');
  assert.equal(keepStateLog(log.slice(0, 10)).length, 10);
  // With each kept dispatch, its run's newest return (a dispatch with none is a live lane), and the
  // loop's newest close; a return of a run whose dispatch is not kept, and older closes, are not.
  const withReturns = [
    ev(1, 'return', { run: 'run-z' }),
    ev(2, 'close'),
    ev(3, 'dispatch', { run: 'run-a' }),
    ev(4, 'return', { run: 'run-a', status: 'failed' }),
    ev(5, 'dispatch', { run: 'run-b' }),
    ev(6, 'return', { run: 'run-a', status: 'complete' }),
    ev(7, 'close'),
    ...Array.from({ length: 300 }, (_, i) => ev(8 + i, 'gate')),
  ];
  assert.deepEqual(
    keepStateLog(withReturns).slice(0, 4).map((e) => [e.seq, e.ev, e.raw.run ?? null]),
    [[3, 'dispatch', 'run-a'], [5, 'dispatch', 'run-b'], [6, 'return', 'run-a'], [7, 'close', null]],
  );
  assert.equal(keepStateLog(withReturns).length, 4 + STATE_LOG_KEEP);

  // Through the reader and its cache entry.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-statelog-'));
  try {
    const file = path.join(dir, 'state-x-loop1.jsonl');
    fs.writeFileSync(file, log.map((e) => JSON.stringify({ ...e.raw, ts: '2026-11-30T12:00:00Z', by: 'root' }) + '\n').join(''));
    const reader = new StateLogReader(file);
    await reader.update();
    assert.deepEqual(reader.remembered()!.events.slice(0, 2).map((e) => e.raw.run), ['run-b', 'run-a']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
