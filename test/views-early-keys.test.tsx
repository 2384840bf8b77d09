/**
 * Keys typed while Ink loads (src/views/early-keys.ts): handled by the first screen exactly as App
 * handles them through Ink, and App goes on from there without a redraw.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { cleanup, render } from 'ink-testing-library';
import { App } from '../src/views/App.js';
import { drawFirstFrame, type FirstScreen } from '../src/views/first-frame.js';
import { earlyKey, readEarlyKeys } from '../src/views/early-keys.js';
import { createSnapshotCache } from '../src/model/snapshot.js';
import type { ReaderEvent } from '../src/model/types.js';
import { clock, fixtureState, HOME, HOST, NOW, recordingPort, recordingSink, testStore, waitFor } from './views-fixtures.js';

afterEach(() => cleanup());

const ESC = '\u001b';
const UP = '\u001b[A';
const DOWN = '\u001b[B';
const RIGHT = '\u001b[C';
const LEFT = '\u001b[D';

/** The home is still being read (as during a real start): App does not pin the cursor yet. */
const READING: ReaderEvent = { type: 'progress', home: HOME, read: 1, total: 5, done: false };

function firstScreen(store: ReturnType<typeof testStore>, sink: ReturnType<typeof recordingSink>['sink'], readOnly = false): { first: FirstScreen; cache: ReturnType<typeof createSnapshotCache> } {
  const cache = createSnapshotCache();
  const first = drawFirstFrame({ model: store.getState(), now: NOW, host: HOST, cache, feeds: [], audits: null, readOnly, noColor: true, rows: 40, columns: 100 }, sink);
  return { first, cache };
}

/**
 * Each sequence is typed one read at a time into App through Ink's own input parsing, and
 * handed to the first screen as early-keys.ts would. After every read both show the same frame.
 * Every read changes the screen, so the comparison after each one is a real step.
 */
const SEQUENCES: { name: string; reads: string[]; readOnly?: boolean }[] = [
  { name: 'help on and off', reads: ['?', ESC] },
  { name: 'moving with j/k and arrows', reads: ['j', 'j', 'k', DOWN, DOWN, UP] },
  { name: 'a run of keys in one read', reads: ['jj', 'G', 'g'] },
  { name: 'the filter prompt: typing, Backspace, Enter, Esc', reads: ['/', 'a', 'p', 'i', '\x7f', 'i', '\r', ESC] },
  { name: 'the detail pane, Tab, folding', reads: ['\r', '\t', '\t', '\r', LEFT, RIGHT] },
  { name: 'sort and the incidents view', reads: ['s', 's', 'i', ESC] },
  { name: 'an owner action confirmed (capital letters, the dialog)', reads: ['j', 'x', 'N'] },
  { name: 'read-only: a dangerous key does nothing, the rest still work', reads: ['?', ESC, 'j'], readOnly: true },
];

for (const seq of SEQUENCES) {
  test(`keys before Ink = keys through Ink: ${seq.name}`, async () => {
    const readOnly = seq.readOnly ?? false;
    // The first screen, fed as early-keys.ts feeds it.
    const early = recordingSink();
    const { first } = firstScreen(testStore(fixtureState([READING])), early.sink, readOnly);
    const expected: string[][] = [];
    for (const read of seq.reads) {
      const k = earlyKey(read);
      assert.ok(k, `${JSON.stringify(read)} is handled before Ink`);
      first.press(k.input, k.key);
      expected.push(early.drawn.at(-1)!);
    }
    // App through Ink, one read at a time, each waited for.
    const app = recordingSink();
    const store = testStore(fixtureState([READING]));
    const r = render(<App store={store} clock={clock} tick={false} host={HOST} readOnly={readOnly} actions={recordingPort()} rows={40} columns={100} noColor frame={app.sink} />);
    await waitFor(() => app.drawn.length > 0, 2000, () => 'no frame from App');
    assert.deepEqual(app.drawn[0], early.drawn[0], 'the same first frame');
    for (let i = 0; i < seq.reads.length; i++) {
      const want = expected[i]!;
      if (i > 0) assert.notDeepEqual(want, expected[i - 1], `read ${i} (${JSON.stringify(seq.reads[i])}) changes the screen`);
      r.stdin.write(seq.reads[i]!);
      await waitFor(
        () => JSON.stringify(app.drawn.at(-1)) === JSON.stringify(want),
        2000,
        () => `after read ${i} (${JSON.stringify(seq.reads[i])}):\n--- App\n${app.drawn.at(-1)!.join('\n')}\n--- before Ink\n${want.join('\n')}`,
      );
    }
    assert.equal(first.keys, seq.reads.reduce((n, read) => n + (/^[\x20-\x7e]+$/.test(read) ? read.length : 1), 0), 'every key counted');
  });
}

test('App goes on from the keys handled before it: the same view state, no line rewritten', async () => {
  const early = recordingSink();
  const store = testStore(fixtureState([READING]));
  const { first, cache } = firstScreen(store, early.sink);
  for (const read of ['j', 'j', '?']) {
    const k = earlyKey(read)!;
    first.press(k.input, k.key);
  }
  assert.equal(first.keys, 3);
  const before = early.drawn.length;
  render(<App store={store} clock={clock} tick={false} host={HOST} readOnly={false} actions={recordingPort()} rows={40} columns={100} noColor frame={early.sink} snapshotCache={cache} start={{ view: first.view, keys: first.keys }} />);
  await waitFor(() => early.drawn.length > before, 2000, () => 'no frame from App');
  assert.deepEqual(early.drawn[before], early.drawn[before - 1], "App's first frame is the help overlay the keys left");
});

test('a read the first screen does not handle is put back for Ink, with everything after it', async () => {
  const stdin = new PassThrough();
  const { sink, drawn } = recordingSink();
  const { first } = firstScreen(testStore(fixtureState([READING])), sink);
  readEarlyKeys(stdin, first, () => undefined);
  stdin.write('j');
  await waitFor(() => first.keys === 1, 2000, () => `${first.keys} keys`);
  assert.equal(drawn.length, 2, 'the key was drawn');
  const pageDown = '\u001b[6~';
  stdin.write(pageDown);
  stdin.write('k');
  // The reader stops listening once it has met a read it leaves to Ink.
  await waitFor(() => stdin.listenerCount('readable') === 0, 2000, () => 'still reading');
  assert.equal(first.keys, 1, 'nothing after the unknown read was handled');
  assert.equal(stdin.readableLength, pageDown.length + 1, 'the unknown read and the key after it are waiting');
  assert.equal(String(stdin.read()), `${pageDown}k`, 'left for Ink in order');
});

test('each read of keys handled before Ink loads is reported, as the App reports its own (the start\'s full collection waits for a pause in them)', async () => {
  const stdin = new PassThrough();
  const { sink } = recordingSink();
  const { first } = firstScreen(testStore(fixtureState([READING])), sink);
  let heard = 0;
  const early = readEarlyKeys(stdin, first, () => heard++);
  try {
    stdin.write('j');
    await waitFor(() => first.keys === 1, 2000, () => `${first.keys} keys`);
    assert.equal(heard, 1, 'the handled key reported');
    stdin.write('?');
    await waitFor(() => first.keys === 2, 2000, () => `${first.keys} keys`);
    assert.equal(heard, 2, 'and the next');
    // A read left to Ink is Ink's to report.
    stdin.write('\u001b[6~');
    await waitFor(() => stdin.listenerCount('readable') === 0, 2000, () => 'still reading');
    assert.equal(heard, 2, 'a read left to Ink is not reported here');
  } finally {
    early.stop();
  }
});

test('earlyKey handles one key or a printable run, and nothing Ink would read differently', () => {
  for (const chunk of ['\x03', '\x1b[6~', '\x1b[1;5A', '\x1bOA', '?\x1b', 'j\r', '\x1bj', 'é', '\n', '\b', '']) assert.equal(earlyKey(chunk), null, JSON.stringify(chunk));
  assert.deepEqual(earlyKey('Q')?.key.shift, true);
  assert.deepEqual(earlyKey('q')?.key.shift, false);
});
