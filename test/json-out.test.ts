/**
 * writeJson prints a document in chunks whose concatenation is exactly JSON.stringify(value, null, 2).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeJson } from '../src/cli/json-out.js';

function chunks(value: unknown): string[] {
  const out: string[] = [];
  writeJson(value, (c) => out.push(c));
  return out;
}

test('writeJson prints what JSON.stringify(value, null, 2) prints, for every shape JSON has', () => {
  const fn = () => 1;
  const sym = Symbol('s');
  const when = new Date(Date.UTC(2026, 11, 7, 12, 0, 0));
  const values: unknown[] = [
    null,
    0,
    -1.5,
    'text with "quotes", \\ and — non-Latin-1',
    true,
    [],
    {},
    [[]],
    [{}],
    { a: [], b: {} },
    { a: undefined, b: fn, c: sym, d: 1 },
    [undefined, fn, sym, 2, , 3], // eslint-disable-line no-sparse-arrays
    { only: undefined },
    { when, nested: { when } },
    [when],
    { custom: { toJSON: () => undefined }, kept: { toJSON: () => ({ x: 1 }) } },
    { toJSON: () => ['whole'] },
    new Map([[1, 2]]),
    Object.assign(Object.create(null), { a: { b: [1, { c: [null] }] } }),
    { v: 1, roots: [{ id: 'a', lanes: [{ id: 'a/L1', clocks: { inact: 12, abs: null } }] }, { id: 'b', lanes: [] }], incidents: [], warnings: [{ file: 'x', line: 3 }] },
    { 'key "quoted"': [1, [2, [3]]] },
  ];
  for (const v of values) {
    const expected = JSON.stringify(v, null, 2) as string | undefined;
    assert.equal(chunks(v).join(''), expected ?? '', `for ${String(expected)}`);
  }
  assert.deepEqual(chunks(undefined), [], 'nothing for a value JSON.stringify gives undefined');
});

test('writeJson: a document of ~5 MB comes in chunks of about 64 KB, the same text as one string', () => {
  const roots = Array.from({ length: 20_000 }, (_, i) => ({
    id: `root-${i}`,
    model: 'anthropic/claude — sonnet',
    clocks: { inactivityMs: i * 7, absoluteMs: i % 3 ? null : i * 11 },
    lanes: [{ id: `root-${i}/L1`, state: 'running' }],
  }));
  const doc = { v: 1, now: '2026-12-07T12:00:00.000Z', roots, incidents: [], warnings: [] };
  const got = chunks(doc);
  const expected = JSON.stringify(doc, null, 2);
  assert.equal(got.join(''), expected);
  assert.ok(got.length >= Math.floor(expected.length / (64 * 1024)), `${got.length} chunks for ${expected.length} characters`);
  // Each chunk is at most 64 KiB plus the one piece that crossed it (a root's text, < 1 KB here).
  const largest = Math.max(...got.map((c) => c.length));
  assert.ok(largest < 64 * 1024 + 1024, `largest chunk ${largest} characters`);
});
