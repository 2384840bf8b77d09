/**
 * The live store publishes a batch two event-loop turns after reducing it, with input polled in
 * between (src/app/live-store.ts, `afterInput`), and its start resolves once everything read is
 * published.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, stat } from 'node:fs';
import net from 'node:net';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { generateHome } from '../src/demo/generate.js';
import { createLiveStore, startPaceDelay } from '../src/app/live-store.js';
import { loadState } from '../src/cli/load-snapshot.js';
import { afterInput, nextTurn } from '../src/readers/time-slices.js';
import { sessionListOrTimeout } from '../src/app/run-dashboard.js';
import { initialModelState, reduceEvents } from '../src/model/reducer.js';
import type { ReaderEvent } from '../src/model/types.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

/** Resolves once `cond` holds (checked every turn); rejects after `ms`. */
async function waitUntil(cond: () => boolean, ms = 5_000): Promise<void> {
  const until = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > until) throw new Error(`condition not met within ${ms} ms`);
    await nextTurn();
  }
}

/** A store (no watching) over a fresh demo home. */
async function demoStore(t: { after: (fn: () => void) => void }) {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-live-store-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const home = path.join(base, 'home');
  await generateHome(home, { now: NOW, host: 'test-host', livePid: 4_000_000, livePidStart: null, deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
  return { home, store: createLiveStore([home], { watch: false }) };
}

test('start() resolves with every batch the start read published: the same sessions as a one-shot read, the home marked read', async (t) => {
  const { home, store } = await demoStore(t);
  let told = 0;
  store.subscribe(() => told++);
  await store.start();
  const state = store.getState();
  assert.equal(state.progress.get(home)?.done, true, 'the last batch (the home read) is published');
  const once = await loadState([home]);
  assert.deepEqual([...state.sessionFiles.keys()].sort(), [...once.sessionFiles.keys()].sort());
  assert.deepEqual([...state.checkpoints.keys()].sort(), [...once.checkpoints.keys()].sort());
  assert.ok(told > 0, 'listeners were told');
  await store.stop();
});

test('a start names every home as being listed at once (before its walk), then as listed and read', async (t) => {
  const { home, store } = await demoStore(t);
  const first: string[] = [];
  store.subscribe(() => {
    if (first.length === 0) first.push(JSON.stringify([...store.getState().progress]));
  });
  const started = store.start();
  // Synchronously, before any reader has walked anything: published as it is.
  assert.deepEqual(store.getState().progress.get(home), { read: 0, total: 0, done: false, listing: true, searching: 0 });
  assert.equal(store.getState().sessionFiles.size, 0, 'nothing read yet');
  await started;
  const p = store.getState().progress.get(home);
  assert.equal(p?.listing, false, 'the reader listed the home');
  assert.equal(p?.done, true);
  assert.ok((p?.total ?? 0) > 0, 'the demo home has sessions');
  assert.ok(first.length === 1 && first[0]!.includes(home), `listeners were told with the home in the state: ${first[0]}`);
  await store.stop();
});

test('the first frame waits for every home\'s list, not for a home that is still listing', async () => {
  let state = initialModelState();
  const listeners = new Set<() => void>();
  const fake = { getState: () => state, subscribe: (l: () => void) => (listeners.add(l), () => listeners.delete(l)) };
  const set = (events: ReaderEvent[]) => {
    state = reduceEvents(state, events);
    for (const l of listeners) l();
  };
  let resolved = false;
  const wait = sessionListOrTimeout(fake, 2, 60_000).then(() => (resolved = true));
  set([
    { type: 'progress', home: '/a', read: 0, total: 0, done: false, listing: true },
    { type: 'progress', home: '/b', read: 0, total: 0, done: false, listing: true },
  ]);
  set([{ type: 'progress', home: '/a', read: 0, total: 5, done: false }]);
  await new Promise((r) => setImmediate(r));
  assert.equal(resolved, false, 'one home of two listed: still waiting');
  set([{ type: 'progress', home: '/b', read: 0, total: 0, done: true }]);
  await wait;
  assert.equal(resolved, true);
});

test('the start\'s pacing: a change waits until five times the last frame\'s cost has passed since the last publish, only while starting and only after a frame of 40 ms or more', () => {
  const at = { starting: true, toldAt: 1_000, now: 1_100 };
  assert.equal(startPaceDelay({ ...at, lastFrameMs: 100 }), 400, 'a 100 ms frame: published 500 ms after the last');
  assert.equal(startPaceDelay({ ...at, lastFrameMs: 100, now: 1_500 }), 0, 'that long after: at once');
  assert.equal(startPaceDelay({ ...at, lastFrameMs: 39 }), 0, 'a cheap frame holds nothing');
  assert.equal(startPaceDelay({ ...at, lastFrameMs: 40 }), 100);
  assert.equal(startPaceDelay({ ...at, starting: false, lastFrameMs: 1_000 }), 0, 'after the start nothing is held');
});

for (const cost of ['frames', 'preparations'] as const) {
  test(`during the start, with ${cost} that cost 10 s: the first change is published, the last at once when the home is read — the start is not held`, async (t) => {
    const { home, store } = await demoStore(t);
    let told = 0;
    // A preparation's time counts in the frame's cost, as the dashboard's render tells it.
    if (cost === 'preparations') store.setPrepare(async () => 10_000);
    // As the dashboard does: each published change is drawn, and what that cost is told back.
    store.subscribe(() => {
      told++;
      store.frameCost(cost === 'frames' ? 10_000 : 0);
    });
    const t0 = performance.now();
    await store.start();
    const ms = performance.now() - t0;
    assert.equal(store.getState().progress.get(home)?.done, true, 'the home read is published');
    // The list goes out when the start waits for it (HomeReader's listShown), held or not.
    assert.ok(told <= 3, `the first change, the list, then the last (${told})`);
    // Neither held by the pacing nor by the wait for the list (bounded by 1 s: it must not come to that).
    assert.ok(ms < 1_000, `the start was not held (${Math.round(ms)} ms)`);
    await store.stop();
  });
}

test('with a preparation: each state is published only once it is prepared, one preparation at a time, changes made meanwhile after it, versions only going up; start() resolves with the last one published', async (t) => {
  const { home, store } = await demoStore(t);
  const prepared = new Set<unknown>();
  let running = 0;
  let most = 0;
  let calls = 0;
  store.setPrepare(async (state) => {
    calls++;
    running++;
    most = Math.max(most, running);
    // A few turns, as a build in slices gives them: the readers' batches come in meanwhile.
    for (let i = 0; i < 3; i++) await nextTurn();
    prepared.add(state);
    running--;
    return 1;
  });
  const published: { version: number }[] = [];
  store.subscribe(() => {
    published.push(store.getState());
    store.frameCost(0);
  });
  await store.start();
  const last = store.getState();
  assert.equal(last.progress.get(home)?.done, true, 'the home read is published');
  assert.ok(published.length > 0 && published.every((s) => prepared.has(s)), `every published state was prepared first (${published.length} published, ${calls} prepared)`);
  assert.equal(most, 1, 'one preparation at a time');
  for (let i = 1; i < published.length; i++) assert.ok(published[i]!.version > published[i - 1]!.version, `published in order (${published.map((s) => s.version).join(', ')})`);
  assert.ok([...prepared].every((s) => published.includes(s as { version: number })), 'every prepared state was published');
  assert.ok(calls >= 2, `the start's batches came as several states (${calls})`);
  assert.equal(published.at(-1), last, 'the last state published is the store\'s');
  await store.stop();
});

test('a start goes on past its list only once the list is published: the list\'s frame, prepared in slices, does not share its turns with the rest of the start', async (t) => {
  const { home, store } = await demoStore(t);
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let heldAt: number | null = null;
  store.setPrepare(async (state) => {
    const progress = state.progress.get(home);
    // The list: every session listed, none read yet. Its preparation is held until released.
    if (heldAt === null && progress && progress.total > 0 && progress.read === 0 && !progress.done) {
      heldAt = store.eventsSeen;
      await gate;
    }
    return 1;
  });
  let done = false;
  const started = store.start().then(() => (done = true));
  try {
    await waitUntil(() => heldAt !== null);
    // Several turns of the event loop: the reader reads nothing more while the list is unpublished.
    for (let i = 0; i < 20; i++) await nextTurn();
    assert.equal(store.eventsSeen, heldAt, 'nothing read after the list while its frame is prepared');
    assert.equal(done, false);
  } finally {
    release();
    await started;
  }
  assert.ok(store.eventsSeen > heldAt!, 'the rest of the start read after it');
  assert.equal(store.getState().progress.get(home)?.done, true, 'and published');
  await store.stop();
});

test('a preparation that fails (rejects or throws at once) still publishes its state; stop() during a preparation publishes it, then the last state', async (t) => {
  for (const failure of ['reject', 'throw'] as const) {
    const { home, store } = await demoStore(t);
    let calls = 0;
    store.setPrepare((() => {
      calls++;
      if (failure === 'throw') throw new Error('prepare failed at once');
      return Promise.reject(new Error('prepare failed'));
    }) as (s: unknown) => Promise<number>);
    await store.start();
    assert.ok(calls > 0, `${failure}: it was asked`);
    assert.equal(store.getState().progress.get(home)?.done, true, `${failure}: the home read is published`);
    await store.stop();
  }
  const { home, store } = await demoStore(t);
  let release: () => void = () => undefined;
  let held = 0;
  store.setPrepare(async () => {
    held++;
    // The first preparation waits until stop() has begun.
    if (held === 1) await new Promise<void>((resolve) => (release = resolve));
    return 1;
  });
  const published: unknown[] = [];
  store.subscribe(() => published.push(store.getState()));
  const started = store.start();
  await waitUntil(() => held === 1);
  // Read on while the first state is held: later changes wait behind it. stop() waits for it
  // (given a second to end, it does not), then publishes it and the last state.
  let stopped = false;
  const stopping = store.stop().then(() => (stopped = true));
  try {
    await waitUntil(() => stopped, 1_000).catch(() => undefined);
    assert.equal(stopped, false, 'stop() waits for the state being prepared');
    assert.equal(published.length, 0, 'nothing was published while it was held');
  } finally {
    // Never left held: the start waits for it.
    release();
  }
  await stopping;
  await started;
  assert.ok(published.length >= 1, 'the held state was published');
  assert.equal(published.at(-1), store.getState(), 'and the last state, once stopped');
});

/** A connected pair of sockets on the loopback interface. */
async function socketPair(t: { after: (fn: () => void) => void }): Promise<{ client: net.Socket; peer: net.Socket }> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  const client = net.connect(port, '127.0.0.1');
  const [peer] = (await once(server, 'connection')) as [net.Socket];
  await once(client, 'connect').catch(() => undefined);
  t.after(() => {
    client.destroy();
    peer.destroy();
    server.close();
  });
  return { client, peer };
}

for (const origin of ['an I/O callback', 'a setImmediate callback'] as const) {
  test(`afterInput from ${origin}: input that arrived meanwhile is read first`, async (t) => {
    const { client, peer } = await socketPair(t);
    const order: string[] = [];
    peer.on('data', () => order.push('input'));
    await new Promise<void>((resolve) => {
      const schedule = () => {
        // Written now: in the peer's receive buffer before the loop next polls.
        client.write('k');
        afterInput(() => {
          order.push('published');
          resolve();
        });
      };
      if (origin === 'an I/O callback') stat(import.meta.filename, schedule);
      else setImmediate(schedule);
    });
    assert.deepEqual(order, ['input', 'published']);
  });
}
