import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { createReadCounter, readAt } from '../src/readers/read-counter.js';
import { BEFORE_OFFSET_BYTES, FileTailer, HEAD_FINGERPRINT_BYTES, scanBackward } from '../src/readers/tailer.js';
import { msFromNs } from '../src/readers/time-value.js';

const tmp = (): string => fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-tailer-'));
const texts = (lines: { text: string }[]): string[] => lines.map((l) => l.text);

test('readAt counts the bytes it reads and stops at end of file', async () => {
  const dir = tmp();
  const f = path.join(dir, 'a');
  fs.writeFileSync(f, '0123456789');
  const counter = createReadCounter();
  assert.equal((await readAt(f, 3, 4, counter)).toString(), '3456');
  assert.equal((await readAt(f, 8, 10, counter)).toString(), '89');
  assert.equal(counter.bytesRead, 6);
  assert.ok(counter.reads >= 2);
});

test('reads only appended bytes; an idle poll reads nothing', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  fs.writeFileSync(f, '{"n":1}\n');
  const counter = createReadCounter();
  const t = new FileTailer(f, { counter });
  const r1 = await t.poll();
  assert.deepEqual(texts(r1.lines), ['{"n":1}']);
  assert.equal(r1.bytesRead, 8);
  const idle = await t.poll();
  assert.equal(idle.bytesRead + idle.probeBytes, 0);
  fs.appendFileSync(f, '{"n":2}\n{"n":3}\n');
  const r2 = await t.poll();
  assert.deepEqual(texts(r2.lines), ['{"n":2}', '{"n":3}']);
  assert.deepEqual(r2.lines.map((l) => l.line), [2, 3]);
  assert.equal(r2.bytesRead, 16);
  assert.equal(counter.bytesRead, fs.statSync(f).size);
  assert.ok((counter.probeBytes ?? 0) <= 2 * HEAD_FINGERPRINT_BYTES);
});

test('a line written in two halves is one record; bytes read in total == file size', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  const line = Buffer.from('{"text":"a😀b"}\n', 'utf8');
  const cut = line.indexOf(Buffer.from('😀')) + 2; // inside the 4-byte character
  fs.writeFileSync(f, line.subarray(0, cut));
  const counter = createReadCounter();
  const t = new FileTailer(f, { counter });
  const r1 = await t.poll();
  assert.equal(r1.lines.length, 0);
  assert.deepEqual(r1.pending, { bytes: cut, offset: 0 });
  fs.appendFileSync(f, line.subarray(cut));
  const r2 = await t.poll();
  assert.deepEqual(texts(r2.lines), ['{"text":"a😀b"}']);
  assert.equal(r2.pending, null);
  assert.equal(counter.bytesRead, line.length);
});

test('truncated and re-written: reported, re-read from 0, offset never beyond EOF', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  fs.writeFileSync(f, '{"old":1}\n{"old":2}\n');
  const t = new FileTailer(f);
  await t.poll();
  fs.truncateSync(f, 0);
  const r1 = await t.poll();
  assert.equal(r1.reset, 'truncated');
  assert.equal(r1.lines.length, 0);
  assert.equal(t.offset(), 0);
  fs.appendFileSync(f, '{"new":1}\n');
  const r2 = await t.poll();
  assert.equal(r2.reset, null);
  assert.deepEqual(texts(r2.lines), ['{"new":1}']);
  assert.deepEqual(r2.lines.map((l) => l.line), [1]);
});

test('truncated then regrown past the old offset before the next poll: detected as rewritten', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  fs.writeFileSync(f, '{"old":1}\n');
  const t = new FileTailer(f);
  await t.poll();
  fs.writeFileSync(f, '{"new":1}\n{"new":2}\n{"new":3}\n'); // O_TRUNC then write: same inode
  const r = await t.poll();
  assert.equal(r.reset, 'rewritten');
  assert.deepEqual(texts(r.lines), ['{"new":1}', '{"new":2}', '{"new":3}']);
});

test('rewritten in place with the same head to past the old offset: detected as rewritten by the bytes before the offset, read in any number of chunks; appends stay appends', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  const head = '{"type":"session","version":3,"id":"same-session-id-0000","timestamp":"x"}\n';
  assert.ok(head.length > HEAD_FINGERPRINT_BYTES);
  fs.writeFileSync(f, head + '{"old":1}\n{"old":2}\n');
  const counter = createReadCounter();
  const t = new FileTailer(f, { counter, chunkBytes: 7 });
  await t.poll();
  for (const n of [3, 4]) {
    fs.appendFileSync(f, `{"old":${n}}\n`);
    const r = await t.poll();
    assert.equal(r.reset, null, 'an append is not a rewrite');
    assert.deepEqual(texts(r.lines), [`{"old":${n}}`]);
    assert.ok(r.probeBytes <= HEAD_FINGERPRINT_BYTES + BEFORE_OFFSET_BYTES, `${r.probeBytes} probe bytes`);
  }
  const ino = fs.statSync(f).ino;
  fs.writeFileSync(f, head + '{"new":1,"pad":"' + 'z'.repeat(60) + '"}\n{"new":2}\n'); // same head, same inode, longer
  assert.equal(fs.statSync(f).ino, ino);
  const r = await t.poll();
  assert.equal(r.reset, 'rewritten');
  assert.deepEqual(texts(r.lines).slice(1), ['{"new":1,"pad":"' + 'z'.repeat(60) + '"}', '{"new":2}']);
  // The same length, other bytes: a rewrite too.
  fs.writeFileSync(f, fs.readFileSync(f, 'utf8').replace('"new":2', '"new":9'));
  const same = await t.poll();
  assert.equal(same.reset, 'rewritten');
  assert.deepEqual(texts(same.lines).at(-1), '{"new":9}');
  fs.appendFileSync(f, '{"new":10}\n');
  const after = await t.poll();
  assert.equal(after.reset, null);
  assert.deepEqual(texts(after.lines), ['{"new":10}']);
});

test('the bytes before the offset are kept apart from the pooled read buffers: big appends to two files (read through the thread pool), then a plain append, is no rewrite', async () => {
  const dir = tmp();
  const a = path.join(dir, 'a.jsonl');
  const b = path.join(dir, 'b.jsonl');
  const big = (c: string) => JSON.stringify({ p: c.repeat(300_000) }) + '\n';
  fs.writeFileSync(a, '{"h":1}\n');
  fs.writeFileSync(b, '{"h":2}\n');
  const ta = new FileTailer(a);
  const tb = new FileTailer(b);
  await ta.poll();
  await tb.poll();
  fs.appendFileSync(a, big('a'));
  assert.equal((await ta.poll()).reset, null);
  fs.appendFileSync(b, big('b'));
  assert.equal((await tb.poll()).reset, null);
  fs.appendFileSync(a, '{"x":1}\n');
  const r = await ta.poll();
  assert.equal(r.reset, null);
  assert.equal(r.bytesRead, 8);
  assert.deepEqual(ta.bytesBeforeOffset(), fs.readFileSync(a).subarray(-BEFORE_OFFSET_BYTES));
});

test('replaced by rename: treated as a new file, no mixing', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  fs.writeFileSync(f, '{"old":1}\n{"old":2}\n{"old":3}\n');
  const t = new FileTailer(f);
  await t.poll();
  const next = path.join(dir, 'next.tmp');
  fs.writeFileSync(next, '{"old":1}\n{"old":2}\n{"old":3}\n{"new":4}\n'); // same head, other inode
  fs.renameSync(next, f);
  const r = await t.poll();
  assert.equal(r.reset, 'replaced');
  assert.deepEqual(texts(r.lines), ['{"old":1}', '{"old":2}', '{"old":3}', '{"new":4}']);
});

test('rereadOnReset false reports the reset and reads nothing', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  fs.writeFileSync(f, 'a\nb\n');
  const t = new FileTailer(f, { rereadOnReset: false });
  await t.poll();
  fs.writeFileSync(f + '.n', 'c\n');
  fs.renameSync(f + '.n', f);
  const r = await t.poll();
  assert.equal(r.reset, 'replaced');
  assert.equal(r.bytesRead, 0);
  assert.deepEqual(r.lines, []);
});

test('a missing file is gone, not an error; it is followed again when it returns', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  const t = new FileTailer(f);
  const r0 = await t.poll();
  assert.equal(r0.gone, true);
  fs.writeFileSync(f, 'x\n');
  assert.deepEqual(texts((await t.poll()).lines), ['x']);
  fs.unlinkSync(f);
  const r1 = await t.poll();
  assert.equal(r1.gone, true);
  assert.equal(r1.error, undefined);
  fs.writeFileSync(f, 'y\n');
  const r2 = await t.poll();
  assert.notEqual(r2.reset, null);
  assert.deepEqual(texts(r2.lines), ['y']);
});

test('a directory or an unreadable file is an error string, never a throw', async () => {
  const dir = tmp();
  const d = path.join(dir, 'dir.jsonl');
  fs.mkdirSync(d);
  const r = await new FileTailer(d).poll();
  assert.equal(r.gone, false);
  assert.match(r.error ?? '', /not a regular file|EISDIR/);
});

test('EACCES is reported and recovered after chmod back (as root: in a child running as nobody, which owns the file)', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  fs.writeFileSync(f, 'a\n');
  const scenario = async (tailerUrl: string, file: string) => {
    const { FileTailer: Tailer } = (await import(tailerUrl)) as typeof import('../src/readers/tailer.js');
    const { chmodSync } = await import('node:fs');
    chmodSync(file, 0o000);
    const t = new Tailer(file);
    const denied = (await t.poll()).error ?? '';
    chmodSync(file, 0o644);
    const after = (await t.poll()).lines.map((l) => l.text);
    return { denied, after };
  };
  const url = new URL('../src/readers/tailer.js', import.meta.url).href;
  let result: { denied: string; after: string[] };
  if (process.getuid?.() === 0) {
    // Root ignores file modes: the owner (nobody) does not.
    fs.chmodSync(dir, 0o755);
    fs.chownSync(f, 65534, 65534);
    const child = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', `const run = ${scenario.toString()}; console.log(JSON.stringify(await run(${JSON.stringify(url)}, ${JSON.stringify(f)})));`],
      { uid: 65534, gid: 65534, encoding: 'utf8', timeout: 10_000 },
    );
    assert.equal(child.status, 0, `the child as nobody ran: ${child.stderr}`);
    result = JSON.parse(child.stdout);
  } else {
    result = await scenario(url, f);
  }
  assert.match(result.denied, /EACCES/);
  assert.deepEqual(result.after, ['a']);
});

test('starting mid-file drops the cut line silently; at a line start nothing is dropped', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  fs.writeFileSync(f, 'first line\nsecond\nthird\n');
  const mid = await new FileTailer(f, { startOffset: 3 }).poll();
  assert.deepEqual(texts(mid.lines), ['second', 'third']);
  assert.deepEqual(mid.lines.map((l) => [l.offset, l.line]), [[11, null], [18, null]]);
  const aligned = await new FileTailer(f, { startOffset: 11 }).poll();
  assert.deepEqual(texts(aligned.lines), ['second', 'third']);
  const numbered = await new FileTailer(f, { startOffset: 11, startLine: 2 }).poll();
  assert.deepEqual(numbered.lines.map((l) => l.line), [2, 3]);
});

test('an over-long line is reported with its size and offset and the file is still followed', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  fs.writeFileSync(f, 'a\n' + 'x'.repeat(5000) + '\nb\n');
  const t = new FileTailer(f, { maxLineBytes: 1024, chunkBytes: 700 });
  const r = await t.poll();
  assert.deepEqual(r.lines, [
    { text: 'a', offset: 0, line: 1 },
    { text: '', offset: 2, line: 2, tooLong: 5000 },
    { text: 'b', offset: 5003, line: 3 },
  ]);
  fs.appendFileSync(f, 'c\n');
  assert.deepEqual(texts((await t.poll()).lines), ['c']);
});

test('maxBytesPerPoll bounds one poll and says there is more', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  fs.writeFileSync(f, 'aaaa\nbbbb\ncccc\n');
  const t = new FileTailer(f, { maxBytesPerPoll: 6 });
  const r1 = await t.poll();
  assert.deepEqual(texts(r1.lines), ['aaaa']);
  assert.equal(r1.more, true);
  const r2 = await t.poll();
  assert.deepEqual(texts(r2.lines), ['bbbb']);
  const r3 = await t.poll();
  assert.deepEqual(texts(r3.lines), ['cccc']);
  assert.equal(r3.more, false);
});

test('scanBackward finds the last line per needle across chunk boundaries', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  const lines = [
    '{"type":"session"}',
    '{"customType":"state","n":1}',
    '{"other":"x"}',
    '{"customType":"state","n":2}',
    '{"customType":"wait","n":1}',
    '{"other":"y"}',
  ];
  const content = lines.join('\n') + '\n';
  fs.writeFileSync(f, content);
  const expectOffset = (i: number): number => Buffer.byteLength(lines.slice(0, i).join('\n') + (i ? '\n' : ''));
  for (const chunkBytes of [1, 3, 7, 16, 1024]) {
    const counter = createReadCounter();
    const r = await scanBackward(f, {
      from: content.length,
      chunkBytes,
      needles: ['"customType":"state"', '"customType":"wait"', '"customType":"none"'],
      counter,
    });
    assert.deepEqual(r.found['"customType":"state"'], { offset: expectOffset(3), text: lines[3] }, `chunk ${chunkBytes}`);
    assert.deepEqual(r.found['"customType":"wait"'], { offset: expectOffset(4), text: lines[4] });
    assert.equal(r.found['"customType":"none"'], undefined);
    assert.equal(r.bytesScanned, content.length);
    assert.equal(counter.bytesRead, content.length);
  }
});

test('scanBackward: early stop, maxBytes bound, `to`, a partial last line, and accept', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  const content = 'HEAD\n{"k":"A","n":1}\n{"k":"A","n":2}\nfiller-filler\n{"k":"A","n":3 partial';
  fs.writeFileSync(f, content);
  const needle = '"k":"A"';
  const all = await scanBackward(f, { from: content.length, chunkBytes: 4, needles: [needle] });
  // The unterminated last line is not a line yet.
  assert.equal(all.found[needle]?.text, '{"k":"A","n":2}');
  assert.ok(all.bytesScanned < content.length, 'stops once every needle is found');
  const bounded = await scanBackward(f, { from: content.length, chunkBytes: 4, maxBytes: 20, needles: [needle] });
  assert.equal(bounded.found[needle], undefined);
  assert.equal(bounded.bytesScanned, 20);
  const first = await scanBackward(f, {
    from: content.length,
    to: 5,
    chunkBytes: 5,
    needles: [needle],
    accept: (_n, text) => text.includes('"n":1'),
  });
  assert.deepEqual(first.found[needle], { offset: 5, text: '{"k":"A","n":1}' });
  const missing = await scanBackward(path.join(dir, 'nope'), { from: 10, needles: [needle] });
  assert.match(missing.error ?? '', /ENOENT/);
});

test('scanBackward skips lines over maxLineBytes', async () => {
  const dir = tmp();
  const f = path.join(dir, 's.jsonl');
  const content = '{"k":"A","n":1}\n{"k":"A","big":"' + 'z'.repeat(100) + '"}\nshort\n';
  fs.writeFileSync(f, content);
  const r = await scanBackward(f, { from: content.length, chunkBytes: 8, maxLineBytes: 40, needles: ['"k":"A"'] });
  assert.deepEqual(r.found['"k":"A"'], { offset: 0, text: '{"k":"A","n":1}' });
});

test('property: scanBackward agrees with a naive search for any chunk size', async () => {
  const dir = tmp();
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.constantFrom('A', 'B', 'xx', 'é😀', '', 'AB', 'qqqqqqqq'), { maxLength: 15 }),
      fc.boolean(),
      fc.integer({ min: 1, max: 40 }),
      async (lines, trailingLf, chunkBytes) => {
        const f = path.join(dir, `p${n++}.jsonl`);
        const content = lines.join('\n') + (trailingLf ? '\n' : '');
        fs.writeFileSync(f, content);
        const size = Buffer.byteLength(content);
        const r = await scanBackward(f, { from: size, chunkBytes, needles: ['A', 'B', '😀'] });
        // Naive: the complete lines (the last one only when the file ends in LF).
        const complete = trailingLf ? lines : lines.slice(0, -1);
        for (const needle of ['A', 'B', '😀']) {
          let expected: { offset: number; text: string } | undefined;
          let offset = 0;
          for (const l of complete) {
            if (l.includes(needle)) expected = { offset, text: l };
            offset += Buffer.byteLength(l) + 1;
          }
          assert.deepEqual(r.found[needle], expected, `${JSON.stringify(content)} chunk ${chunkBytes} needle ${needle}`);
        }
      },
    ),
    { numRuns: 200 },
  );
});

test('a bigint stat\'s mtime in ms is exactly the plain stat\'s mtimeMs (a walk and a tailer agree on a file\'s mtime)', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-mtime-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (let i = 0; i < 300; i++) {
    const file = path.join(dir, `f${i}`);
    fs.writeFileSync(file, String(i));
    const plain = fs.statSync(file).mtimeMs;
    const ns = fs.statSync(file, { bigint: true }).mtimeNs;
    assert.equal(msFromNs(ns), plain, `file ${i}: ${ns} ns`);
  }
  // The tailer reports the same mtime as a plain stat of the file it read.
  const file = path.join(dir, 'tailed');
  fs.writeFileSync(file, 'a line\n');
  const tailer = new FileTailer(file);
  return tailer.poll().then((r) => assert.equal(r.mtimeMs, fs.statSync(file).mtimeMs));
});
