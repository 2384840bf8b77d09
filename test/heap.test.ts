/**
 * The start's full collection (app/heap.ts) waits for a pause in the user's keys: on a home of
 * 12 000 sessions it holds the event loop for 110–180 ms, which a key pressed meanwhile waits for.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { collectionDelay, collectWhenQuiet, MAX_DEFER_MS, QUIET_MS } from '../src/app/heap.js';

test('collectionDelay: at once without keys, after a quiet spell with them, never later than the cap', () => {
  const settled = 5_000;
  assert.equal(collectionDelay(settled, -Infinity, settled), 0);
  // A key 200 ms ago: the rest of the quiet spell.
  assert.equal(collectionDelay(settled, settled - 200, settled), QUIET_MS - 200);
  // A key long before the start's work was done does not hold it.
  assert.equal(collectionDelay(settled, settled - QUIET_MS, settled), 0);
  // Keys all the time: due at the cap, not after.
  const nearCap = settled + MAX_DEFER_MS - 300;
  assert.equal(collectionDelay(settled, nearCap, nearCap), 300);
  assert.equal(collectionDelay(settled, settled + MAX_DEFER_MS, settled + MAX_DEFER_MS), 0);
});

test('collectWhenQuiet: collects once, after the keys stop, looking again only when it said to', () => {
  let now = 10_000;
  let lastKey = now - 100;
  let collected = 0;
  const pending: Array<{ fn: () => void; at: number }> = [];
  const later = (fn: () => void, ms: number) => pending.push({ fn, at: now + ms });
  const runDue = () => {
    const next = pending.shift();
    assert.ok(next, 'a check is pending');
    now = next.at;
    next.fn();
  };
  collectWhenQuiet(() => collected++, () => lastKey, () => now, later);
  assert.equal(collected, 0, 'a key 100 ms ago holds it');
  assert.deepEqual(pending.map((p) => p.at), [10_000 - 100 + QUIET_MS]);
  // A key comes in before the check: the check waits for the new quiet spell.
  now += 500;
  lastKey = now;
  runDue();
  assert.equal(collected, 0);
  assert.deepEqual(pending.map((p) => p.at), [lastKey + QUIET_MS]);
  runDue();
  assert.equal(collected, 1, 'collected once the keys were quiet for QUIET_MS');
  assert.equal(pending.length, 0, 'and nothing more is scheduled');
});

test('collectWhenQuiet: keys that never stop are collected through at the cap', () => {
  let now = 0;
  let collected = 0;
  const later = (fn: () => void, ms: number) => {
    // A key every 50 ms meanwhile.
    now += ms;
    fn();
  };
  collectWhenQuiet(() => collected++, () => now - 50, () => now, later);
  assert.equal(collected, 1);
  assert.equal(now, MAX_DEFER_MS);
});
