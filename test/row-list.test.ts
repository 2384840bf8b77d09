import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { changedPlaces } from '../src/views/changed-places.js';
import { RowList } from '../src/views/row-list.js';
import type { TreeRow } from '../src/views/session-rows.js';

/** Distinct row objects (identity is what the list keeps and compares). */
const row = (n: number): TreeRow => ({ id: `s${n}`, view: {} as TreeRow['view'], depth: 0, parent: null, last: false, laneCount: 0, collapsed: false });

test('a row list reads as the array it was built from, and a patch changes a new list only', () => {
  let made = 0;
  fc.assert(
    fc.property(
      // Lengths around the chunk size (256) and several chunks.
      fc.array(fc.nat({ max: 1100 }), { minLength: 1, maxLength: 6 }),
      fc.array(fc.array(fc.tuple(fc.nat(), fc.boolean()), { maxLength: 40 }), { minLength: 1, maxLength: 6 }),
      fc.integer({ min: -1200, max: 1200 }),
      fc.integer({ min: -1200, max: 1200 }),
      (partLengths, patches, a, b) => {
        const parts = partLengths.map((n) => Array.from({ length: n }, () => row(made++)));
        const flat = parts.flat();
        let list = RowList.concat(parts, flat.length);
        let model = flat;
        for (const writes of patches) {
          const before = list;
          const beforeRows = before.toArray();
          const patch = list.patch();
          const next = model.slice();
          for (const [at, fresh] of writes) {
            if (next.length === 0) break;
            const i = at % next.length;
            // A write of the row already there, or of a new object.
            const r = fresh ? row(made++) : next[i]!;
            patch.set(i, r);
            next[i] = r;
          }
          list = patch.done();
          assert.deepEqual(list.toArray(), next, 'the patched list');
          assert.equal(list.length, next.length);
          assert.deepEqual(before.toArray(), beforeRows, 'the list patched is unchanged');
          assert.deepEqual(list.changedSince(before), changedPlaces(next, model), 'changed places against the last list');
          if (changedPlaces(next, model)!.length === 0) assert.equal(list, before, 'nothing replaced: the same list');
          // A write in one chunk leaves the others shared.
          else if (list.length > 256 && new Set(changedPlaces(next, model)!.map((i) => i >> 8)).size < Math.ceil(list.length / 256)) assert.ok(list.shares(before), 'unchanged chunks shared');
          model = next;
        }
        for (const i of [0, a, b, -1, model.length - 1, model.length, -model.length - 1]) assert.equal(list.at(i), model.at(i), `at(${i})`);
        assert.deepEqual(list.slice(a, b), model.slice(a, b), `slice(${a}, ${b})`);
        assert.deepEqual(list.slice(a), model.slice(a), `slice(${a})`);
        assert.deepEqual([...list], model, 'iteration');
        const target = model.at(a);
        assert.equal(list.findIndex((r) => r === target), model.findIndex((r) => r === target), 'findIndex');
        // Another list of the same rows built afresh shares no chunk: compared row by row.
        assert.ok(model.length === 0 || !RowList.of(model).shares(list));
        assert.deepEqual(RowList.of(model).changedSince(list), []);
        assert.deepEqual(RowList.of(model.slice(1)).changedSince(list), model.length === 0 ? [] : null);
      },
    ),
    { numRuns: 200 },
  );
});

test('a patch takes no write after done, nor one outside the list', () => {
  const list = RowList.of([row(1), row(2)]);
  const patch = list.patch();
  assert.throws(() => patch.set(2, row(3)), RangeError);
  assert.throws(() => patch.set(-1, row(3)), RangeError);
  patch.set(1, row(4));
  const done = patch.done();
  assert.throws(() => patch.set(0, row(5)), /after done/);
  assert.equal(done.at(1)!.id, 's4');
  assert.equal(list.at(1)!.id, 's2');
  assert.throws(() => RowList.concat([[row(1)]], 2), /2 rows announced, 1 given/);
  assert.throws(() => RowList.concat([[row(1), row(2)], [row(3)]], 2), /2 rows announced, 3 given/);
  assert.throws(() => RowList.concat([[], [row(1)]], 0), /0 rows announced/);
  // The empty list (a home with no sessions yet, or a filter nothing matches).
  const empty = RowList.concat([[], []], 0);
  assert.equal(empty.length, 0);
  assert.equal(empty.at(0), undefined);
  assert.deepEqual(empty.slice(), []);
  assert.deepEqual(empty.changedSince(RowList.EMPTY), []);
  assert.equal(empty.changedSince(list), null);
  assert.equal(empty.patch().done(), empty);
});
