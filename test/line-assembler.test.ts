import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LineAssembler, type AssembledLine } from '../src/readers/line-assembler.js';

const assembleAll = (chunks: Buffer[], maxLineBytes?: number): AssembledLine[] => {
  const a = new LineAssembler(maxLineBytes === undefined ? {} : { maxLineBytes });
  return chunks.flatMap((c) => a.push(c));
};

test('every split point, including inside a 4-byte UTF-8 character, yields the same lines', () => {
  const text = '{"t":"a😀b"}\n{"t":"é中"}\n😀\n';
  const bytes = Buffer.from(text, 'utf8');
  const whole = assembleAll([bytes]);
  assert.deepEqual(
    whole.map((l) => l.text),
    ['{"t":"a😀b"}', '{"t":"é中"}', '😀'],
  );
  for (let i = 0; i <= bytes.length; i++) {
    for (let j = i; j <= bytes.length; j++) {
      const lines = assembleAll([bytes.subarray(0, i), bytes.subarray(i, j), bytes.subarray(j)]);
      assert.deepEqual(lines, whole, `split at ${i},${j}`);
      assert.ok(lines.every((l) => !l.text.includes('\uFFFD')));
    }
  }
});

test('offsets and line numbers are byte-exact', () => {
  const lines = assembleAll([Buffer.from('ab\n\né\nxyz\n', 'utf8')]);
  assert.deepEqual(lines, [
    { text: 'ab', offset: 0, line: 1 },
    { text: 'é', offset: 4, line: 3 },
    { text: 'xyz', offset: 7, line: 4 },
  ]);
});

test('BOM at file start, CRLF and empty lines are stripped or skipped; a BOM later is kept', () => {
  const bom = Buffer.from([0xef, 0xbb, 0xbf]);
  const body = Buffer.from('{"a":1}\r\n\r\n\n  \n{"b":2}\r\n', 'utf8');
  for (let i = 0; i <= 3 + body.length; i++) {
    const all = Buffer.concat([bom, body]);
    const lines = assembleAll([all.subarray(0, i), all.subarray(i)]);
    assert.deepEqual(lines, [
      { text: '{"a":1}', offset: 0, line: 1 },
      { text: '{"b":2}', offset: 18, line: 5 },
    ]);
  }
  const later = assembleAll([Buffer.concat([Buffer.from('x\n'), bom, Buffer.from('y\n')])]);
  assert.equal(later[1]?.text, '\uFEFFy');
});

test('a line over the cap is reported with its length and offset, not kept; the next line is read', () => {
  const a = new LineAssembler({ maxLineBytes: 10 });
  const out: AssembledLine[] = [];
  out.push(...a.push(Buffer.from('ok\n' + 'x'.repeat(8))));
  out.push(...a.push(Buffer.from('y'.repeat(30))));
  assert.deepEqual(a.pending(), { bytes: 38, offset: 3 });
  out.push(...a.push(Buffer.from('z\nnext\n')));
  assert.deepEqual(out, [
    { text: 'ok', offset: 0, line: 1 },
    { text: '', offset: 3, line: 2, tooLong: 39 },
    { text: 'next', offset: 43, line: 3 },
  ]);
  assert.equal(a.pending(), null);
});

test('a line of exactly the cap is kept', () => {
  const lines = assembleAll([Buffer.from('a'.repeat(10) + '\n')], 10);
  assert.deepEqual(lines, [{ text: 'a'.repeat(10), offset: 0, line: 1 }]);
});

test('pending reports the kept partial line until its LF arrives', () => {
  const a = new LineAssembler();
  assert.deepEqual(a.push(Buffer.from('{"a":1}\n{"b"')), [{ text: '{"a":1}', offset: 0, line: 1 }]);
  assert.deepEqual(a.pending(), { bytes: 4, offset: 8 });
  assert.equal(a.offset(), 12);
  assert.deepEqual(a.push(Buffer.from(':2}\n')), [{ text: '{"b":2}', offset: 8, line: 2 }]);
  assert.equal(a.pending(), null);
});

test('reset with discardFirst drops the cut line and leaves line numbers unknown', () => {
  const a = new LineAssembler();
  a.reset(100, { discardFirst: true });
  assert.deepEqual(a.push(Buffer.from('tail of a line\nwhole\n')), [{ text: 'whole', offset: 115, line: null }]);
  const b = new LineAssembler();
  b.reset(99, { discardFirst: true });
  // The byte at 99 is the LF ending the previous line: the line at 100 is whole and kept.
  assert.deepEqual(b.push(Buffer.from('\nfirst\n')), [{ text: 'first', offset: 100, line: null }]);
  const c = new LineAssembler();
  c.reset(50, { line: 2 });
  assert.deepEqual(c.push(Buffer.from('l2\nl3\n')), [
    { text: 'l2', offset: 50, line: 2 },
    { text: 'l3', offset: 53, line: 3 },
  ]);
});

test('property: any chunking of a byte stream yields the same lines as one push', () => {
  const lineArb = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 20 }).map((s) => JSON.stringify({ s })),
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.constantFrom('', '\r', '{"broken":', '😀😀', '\uFEFF'),
  );
  fc.assert(
    fc.property(
      fc.array(lineArb, { maxLength: 12 }),
      fc.boolean(),
      fc.array(fc.nat(), { maxLength: 10 }),
      fc.integer({ min: 4, max: 64 }),
      (lines, trailingLf, cuts, cap) => {
        const bytes = Buffer.from(lines.join('\n') + (trailingLf ? '\n' : ''), 'utf8');
        const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((x, y) => x - y);
        const chunks: Buffer[] = [];
        let prev = 0;
        for (const p of points) {
          chunks.push(bytes.subarray(prev, p));
          prev = p;
        }
        chunks.push(bytes.subarray(prev));
        const one = new LineAssembler({ maxLineBytes: cap });
        const many = new LineAssembler({ maxLineBytes: cap });
        assert.deepEqual(chunks.flatMap((c) => many.push(c)), one.push(bytes));
        assert.deepEqual(many.pending(), one.pending());
        assert.equal(many.offset(), bytes.length);
      },
    ),
    { numRuns: 200 },
  );
});
