/**
 * compareText (src/model/text-order.ts) orders as `localeCompare` does: on its fast set (ASCII
 * letters, digits, `-`, `.`, `/`) without ICU, elsewhere by `localeCompare` itself.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { byName, type SessionView } from '../src/model/snapshot.js';
import { compareNames, compareText } from '../src/model/text-order.js';

const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);
const agree = (a: string, b: string) => assert.equal(sign(compareText(a, b)), sign(a.localeCompare(b)), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);

test('compareText agrees with localeCompare on names as loop-pi writes them and on the cases that tell orders apart', () => {
  const names = ['bulk-131/L4', 'bulk-131/L10', 'bulk-131/l4', 'bulk-13', 'bulk-131', 'Bulk-131', 'bulk.131', 'bulk/131', 'bulk131', 'a', 'A', 'b', 'B', 'ab', 'aB', 'Ab', 'AB', 'a-b', 'a.b', 'a/b', 'a0', 'a9', 'aa', '', '0', '-', '.', '/', 'z', 'Z', 'release-2026.11', 'release-2026.2'];
  for (const a of names) for (const b of names) agree(a, b);
  // Outside the fast set: localeCompare's own answer (ignorable, accented, other punctuation).
  const outside: [string, string][] = [['abc', 'abc\u0000'], ['é', 'e'], ['a_b', 'a-b'], ['a b', 'ab'], ['ä', 'b'], ['bulk-1/L2', 'bulk-1/L2 ']];
  for (const [a, b] of outside) {
    agree(a, b);
    agree(b, a);
  }
});

test('compareText agrees with localeCompare on random strings (fast set and around it)', () => {
  const fast = fc.constantFrom(...'-./0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'.split(''));
  const any = fc.oneof(fast, fc.constantFrom('_', ' ', 'é', 'É', '\u0000', '~', ':', 'ß', '\u0301'));
  const str = (ch: fc.Arbitrary<string>) => fc.array(ch, { maxLength: 8 }).map((cs) => cs.join(''));
  fc.assert(fc.property(str(fast), str(fast), (a, b) => agree(a, b)), { numRuns: 20_000 });
  // Lowercase only (session ids, most names): compareText's first branch.
  const lower = fc.constantFrom(...'-./0123456789abcdefghijklmnopqrstuvwxyz'.split(''));
  fc.assert(fc.property(str(lower), str(lower), (a, b) => agree(a, b)), { numRuns: 10_000 });
  // Shared prefixes, so the case and length rules are reached often.
  fc.assert(fc.property(str(fast), str(fast), str(fast), (p, a, b) => agree(p + a, p + b)), { numRuns: 20_000 });
  fc.assert(fc.property(str(any), str(any), (a, b) => agree(a, b)), { numRuns: 5_000 });
});

test('compareNames puts numbers in names by their value, and is a total order', () => {
  const sorted = ['api/L10', 'api/L3', 'api/L1', 'api/l2', 'api', 'api/L03', 'bulk-131', 'bulk-9', 'bulk-9b', 'bulk-10'].sort(compareNames);
  assert.deepEqual(sorted, ['api', 'api/L1', 'api/l2', 'api/L03', 'api/L3', 'api/L10', 'bulk-9', 'bulk-9b', 'bulk-10', 'bulk-131']);
  // Without digits in both, compareText's (localeCompare's) order.
  for (const [a, b] of [['a-b', 'a.b'], ['Ab', 'ab'], ['x', 'x1'], ['é', 'e']] as const) assert.equal(sign(compareNames(a, b)), sign(compareText(a, b)));
  const ch = fc.constantFrom(...'00123aAb-/é'.split(''));
  const str = fc.array(ch, { maxLength: 7 }).map((cs) => cs.join(''));
  fc.assert(
    fc.property(str, str, str, (a, b, c) => {
      assert.equal(sign(compareNames(a, b)) + sign(compareNames(b, a)), 0, `${a} / ${b}`);
      assert.equal(compareNames(a, b) === 0, a === b, `${a} / ${b}`);
      const [x, y, z] = [a, b, c].sort(compareNames);
      assert.ok(compareNames(x!, z!) <= 0 && compareNames(x!, y!) <= 0 && compareNames(y!, z!) <= 0, `${x} ${y} ${z}`);
    }),
    { numRuns: 30_000 },
  );
});

test('rows by name (every row order\'s tie-break) put lane L3 before L10', () => {
  const rows = ['api/L10', 'api/L3', 'api/L1', 'api/L12', 'api/L2'].map((name, i) => ({ name, session: `s${i}` }) as SessionView);
  assert.deepEqual(rows.sort(byName).map((r) => r.name), ['api/L1', 'api/L2', 'api/L3', 'api/L10', 'api/L12']);
});
