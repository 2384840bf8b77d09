/**
 * The model's maps share entries between versions (src/model/shared-map.ts). The promise: every
 * version reads and iterates exactly as a native `Map` built by the same sets and deletes would
 * (order included), no later batch changes an earlier version, and `changedKeys` never leaves out
 * a key whose value differs. And the point of it: a batch that replaces one session's facts in a
 * model of many sessions neither copies the session map nor walks it in the snapshot's patch.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { initialModelState, reduceEvents, type ModelState } from '../src/model/reducer.js';
import { changedKeys, foldAfter, MapDraft, SharedMap } from '../src/model/shared-map.js';
import { buildSnapshot, createSnapshotCache } from '../src/model/snapshot.js';
import type { ReaderEvent } from '../src/model/types.js';
import { facts, factsEvent, fileOf, HOST, NOW } from './views-fixtures.js';

type Op = { kind: 'set'; key: number; value: number } | { kind: 'delete'; key: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), key: fc.nat({ max: 60 }), value: fc.nat({ max: 5 }) }),
  fc.record({ kind: fc.constant('delete' as const), key: fc.nat({ max: 60 }) }),
);

/** Everything a reader of the map can see, through each way of reading it. */
function observe(m: ReadonlyMap<number, number>) {
  const viaForEach: [number, number][] = [];
  m.forEach((v, k, self) => {
    assert.equal(self, m, 'forEach passes the map itself');
    viaForEach.push([k, v]);
  });
  return {
    size: m.size,
    entries: [...m.entries()],
    iterated: [...m],
    viaForEach,
    keys: [...m.keys()],
    values: [...m.values()],
    lookups: Array.from({ length: 62 }, (_, k) => [m.has(k), m.get(k)]),
  };
}

test('property: every version reads and iterates as a native Map would, earlier versions stay as they were, changedKeys covers every change', () => {
  fc.assert(
    fc.property(fc.array(fc.array(opArb, { maxLength: 40 }), { minLength: 1, maxLength: 30 }), fc.nat({ max: 40 }), (batches, prefill) => {
      // The first version: a native map, as the model starts (prefilled so some batches stay on top of it).
      const start = new Map<number, number>();
      for (let k = 0; k < prefill; k++) start.set(k, k % 3);
      let native = new Map(start);
      let shared: ReadonlyMap<number, number> = start;
      const versions: { shared: ReadonlyMap<number, number>; seen: ReturnType<typeof observe> }[] = [{ shared, seen: observe(native) }];
      for (const batch of batches) {
        const next = new Map(native);
        const draft = new MapDraft(shared);
        for (const op of batch) {
          if (op.kind === 'set') {
            next.set(op.key, op.value);
            assert.equal(draft.set(op.key, op.value), draft);
          } else assert.equal(draft.delete(op.key), next.delete(op.key));
          assert.equal(draft.has(op.key), next.has(op.key));
          assert.equal(draft.get(op.key), next.get(op.key));
        }
        const made = draft.done();
        assert.deepEqual(observe(made), observe(next));
        const keys = changedKeys(made, shared);
        if (keys) {
          for (let k = 0; k <= 61; k++) if (made.get(k) !== shared.get(k) || made.has(k) !== shared.has(k)) assert.ok(keys.has(k), `key ${k} changed but is not named`);
        }
        // Too much on top of a base is folded into a native map.
        if (made instanceof SharedMap) assert.ok(made.over.size + made.gone.size <= foldAfter(made.base.size));
        native = next;
        shared = made;
        versions.push({ shared, seen: observe(native) });
      }
      for (const v of versions) assert.deepEqual(observe(v.shared), v.seen, 'a later batch changed an earlier version');
    }),
    { numRuns: 300 },
  );
});

test('changedKeys: none for the same map, null when two maps share no base', () => {
  const a = new Map([[1, 1]]);
  assert.equal(changedKeys(a, a)?.size, 0);
  assert.equal(changedKeys(new Map([[1, 1]]), a), null);
  const b = new MapDraft<number, number>(a).set(2, 2).done();
  const c = new MapDraft<number, number>(a).set(3, 3).done();
  // Both on a: what either put on top.
  assert.deepEqual([...(changedKeys(b, c) ?? [])].sort(), [2, 3]);
  assert.deepEqual([...(changedKeys(b, a) ?? [])], [2]);
  assert.deepEqual([...(changedKeys(a, b) ?? [])], [2]);
});

const LANES = 3_000;
const idOf = (i: number) => `${String(i).padStart(8, '0')}-0000-4000-8000-00000000beef`;

/** A model of one root with many lanes, then one append to a lane (as the live reader sends it). */
function bigModel(): { state: ModelState; append: (i: number, size: number) => ReaderEvent } {
  const rootFile = fileOf(idOf(0));
  const laneFacts = (i: number, size: number) => facts(idOf(i), `lane-${i}`, { role: 'lane', rootFile, runId: `run-${i}`, size });
  const events: ReaderEvent[] = [factsEvent(facts(idOf(0), 'root'))];
  for (let i = 1; i <= LANES; i++) events.push(factsEvent(laneFacts(i, 100)));
  return { state: reduceEvents(initialModelState(), events), append: (i, size) => factsEvent(laneFacts(i, size)) };
}

/** Counts the entries `m`'s own `get` and `forEach` reach until `stop()`. */
function countLookups(m: ReadonlyMap<string, unknown>): { count: () => number; stop: () => void } {
  let n = 0;
  const own = m as unknown as Record<string, unknown>;
  const { get, forEach } = m;
  own.get = (k: string) => (n++, get.call(m, k));
  own.forEach = (fn: (v: unknown, k: string, map: ReadonlyMap<string, unknown>) => void) => forEach.call(m, (v, k, map) => (n++, fn(v, k, map)));
  return {
    count: () => n,
    stop: () => {
      delete own.get;
      delete own.forEach;
    },
  };
}

test('one append to a model of 3 000 sessions neither copies the session map nor makes the patch walk it', () => {
  const { state: first, append } = bigModel();
  const cache = createSnapshotCache();
  assert.equal(buildSnapshot(first, NOW, { host: HOST, cache }).roots[0]?.lanes.length, LANES);
  let state = first;
  // Each version is the one before plus what the batch set: the first map is the base of them all
  // until the entries on top are folded in (after ~2√n batches of one change each).
  const folds: number[] = [];
  for (let n = 1; n <= 200; n++) {
    const before = state.sessionFiles;
    state = reduceEvents(state, [append(n, 100 + n)]);
    const now = state.sessionFiles;
    assert.equal(now.size, LANES + 1);
    if (now instanceof SharedMap) {
      assert.equal(now.base, before instanceof SharedMap ? before.base : before, `append ${n}: the new version is built on the old one's base, not on a copy`);
      assert.ok(now.over.size <= foldAfter(now.base.size), `append ${n}: ${now.over.size} entries on top`);
    } else folds.push(n);
    const counter = countLookups(now);
    const snapshot = buildSnapshot(state, NOW + n * 10, { host: HOST, cache });
    counter.stop();
    assert.equal(snapshot.roots[0]?.lanes.find((l) => l.session === idOf(n))?.source.sessionFile, fileOf(idOf(n)), `append ${n}: the lane is shown`);
    // The patch compares the entries the versions do not share: one per append since the last fold.
    if (now instanceof SharedMap) assert.ok(counter.count() <= now.over.size + 5, `append ${n}: the patch looked up ${counter.count()} session files (${now.over.size} on top)`);
  }
  // Folded now and then: every so many batches, not at each one, nor never.
  assert.ok(folds.length >= 1 && folds.length <= 4, `folded after appends ${folds.join(', ')}`);
});
