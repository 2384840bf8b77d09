import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { act } from 'react';
import { cleanup, render } from 'ink-testing-library';
import { App } from '../src/views/App.js';
import { drawFirstFrame } from '../src/views/first-frame.js';
import { TerminalFrame } from '../src/views/terminal-frame.js';
import type { Line } from '../src/views/line.js';
import { createSnapshotCache } from '../src/model/snapshot.js';
import { KEYMAP } from '../src/views/keymap.js';
import { NO_CONSUMER_TEXT } from '../src/views/owner-actions.js';
import { initialModelState } from '../src/model/reducer.js';
import type { IncidentFields, IncidentRecord, ReaderEvent } from '../src/model/types.js';
import type { Checkpoint } from '../src/contract/checkpoint.js';
import { clock, cpEvent, facts, factsEvent, fixtureState, HOME, HOST, ID, NOW, recordingPort, recordingSink, requesting, stripAnsi, testStore, waitFor } from './views-fixtures.js';

const MIN = 60_000;
const DOWN = '\u001b[B';
const ESC = '\u001b';

afterEach(() => cleanup());

function setup(opts: { readOnly?: boolean; events?: ReaderEvent[]; port?: ReturnType<typeof recordingPort>; incidentFields?: (file: string) => Promise<IncidentFields> } = {}) {
  const store = testStore(fixtureState(opts.events ?? []));
  const port = opts.port ?? recordingPort();
  const props = { store, clock, tick: false, host: HOST, readOnly: opts.readOnly ?? false, actions: port, rows: 40, columns: 100, noColor: true, ...(opts.incidentFields ? { incidentFields: opts.incidentFields } : {}) };
  const r = render(<App {...props} />);
  const frame = () => stripAnsi(r.lastFrame() ?? '');
  const until = (pred: (f: string) => boolean, ms = 2000) => waitFor(() => pred(frame()), ms, frame);
  /** The line of the highlighted row. */
  const cursorLine = () => frame().split('\n').find((l) => l.startsWith('›')) ?? '';
  return { r, store, port, frame, until, cursorLine, props };
}

/** Session rows (lines that hold one of the fixture names), in screen order. */
function rowOrder(frame: string): string[] {
  const names = ['api-root', 'lane-a', 'lane-b', 'web-root', 'ops-root'];
  return frame
    .split('\n')
    .map((l) => names.find((n) => l.includes(` ${n} `)))
    .filter((n): n is string => !!n);
}

test('rows show every root and lane with countdowns for the fixed now', async () => {
  const { frame, until } = setup();
  await until((f) => f.includes('ops-root'));
  const lines = frame().split('\n');
  const api = lines.find((l) => l.includes('api-root'))!;
  assert.match(api, /requesting\s+4:00\s+1:02:57/, api);
  assert.match(api, /inact\+58:57/, 'first-to-fire with margin (abbreviated at 100 columns)');
  const laneA = lines.find((l) => l.includes('lane-a'))!;
  assert.match(laneA, /├ lane-a/);
  assert.match(laneA, /0:30!!/, 'critical countdown marked under NO_COLOR');
  assert.match(lines.find((l) => l.includes('lane-b'))!, /└ lane-b/);
  assert.match(lines.find((l) => l.includes('web-root'))!, /10:00/);
  assert.match(lines.find((l) => l.includes('ops-root'))!, /unknown/);
  // Sorted by time to the first limit: api (4:00) before web (10:00) before ops (none).
  assert.deepEqual(rowOrder(frame()), ['api-root', 'lane-a', 'lane-b', 'web-root', 'ops-root']);
});

test('each new model\'s frame cost is told to the store once (the start\'s pacing, live-store.ts), not again for a key', async () => {
  const costs: { version: number; ms: number }[] = [];
  const base = testStore(fixtureState([]));
  const store = { ...base, frameCost: (ms: number) => costs.push({ version: base.getState().version, ms }) };
  const r = render(<App store={store} clock={clock} tick={false} host={HOST} readOnly={false} actions={recordingPort()} rows={40} columns={100} noColor />);
  const frame = () => stripAnsi(r.lastFrame() ?? '');
  await waitFor(() => frame().includes('ops-root') && costs.length === 1, 2000, frame);
  assert.ok(costs[0]!.ms > 0 && costs[0]!.ms < 2000, `a cost in ms (${costs[0]!.ms})`);
  base.push([cpEvent(requesting(ID.web, 1 * MIN, { model: 'openai/gpt-5' }))]);
  await waitFor(() => costs.length === 2, 2000, () => JSON.stringify(costs));
  assert.equal(costs[1]!.version, costs[0]!.version + 1, 'the new model\'s frame');
  r.stdin.write('?');
  await waitFor(() => frame().includes('help') || frame().includes('Help'), 2000, frame);
  assert.equal(costs.length, 2, 'a key draws the same model: no cost told');
});

test('every key read is told to onKey (the start\'s full collection waits for a pause in them, app/heap.ts)', async () => {
  let keys = 0;
  const r = render(<App store={testStore(fixtureState([]))} clock={clock} tick={false} host={HOST} readOnly={false} actions={recordingPort()} rows={40} columns={100} noColor onKey={() => keys++} />);
  const frame = () => stripAnsi(r.lastFrame() ?? '');
  await waitFor(() => frame().includes('ops-root'), 2000, frame);
  assert.equal(keys, 0);
  r.stdin.write('j');
  await waitFor(() => keys === 1, 2000, () => `keys ${keys}`);
  r.stdin.write('?');
  await waitFor(() => keys === 2 && /help/i.test(frame()), 2000, () => `keys ${keys}`);
});

test('before any key, the highlighted first row keeps its session across a reorder', async () => {
  const { store, until, cursorLine } = setup();
  await until((f) => f.includes('ops-root'));
  assert.match(cursorLine(), /api-root/);
  // Under lane-a's 0:30 (api-root goes by its most urgent lane).
  store.push([cpEvent(requesting(ID.web, 20_000, { model: 'openai/gpt-5' }))]);
  await until((f) => rowOrder(f)[0] === 'web-root');
  assert.match(cursorLine(), /api-root/);
});

test('the cursor stays on its session when rows reorder', async () => {
  const { r, store, until, cursorLine, frame } = setup();
  await until((f) => f.includes('ops-root'));
  r.stdin.write('j');
  await until(() => cursorLine().includes('lane-a'));
  r.stdin.write('k');
  await until(() => cursorLine().includes('api-root'));
  // web-root's inactivity drops to 0:20, under api-root's lane-a's 0:30: it now sorts first.
  store.push([cpEvent(requesting(ID.web, 20_000, { model: 'openai/gpt-5' }))]);
  await until((f) => rowOrder(f)[0] === 'web-root');
  assert.match(cursorLine(), /api-root/);
  assert.deepEqual(rowOrder(frame()), ['web-root', 'api-root', 'lane-a', 'lane-b', 'ops-root']);
});

test('several keys delivered in one chunk are all applied', async () => {
  const { r, until, cursorLine } = setup();
  await until((f) => f.includes('ops-root'));
  r.stdin.write(DOWN + DOWN + DOWN);
  await until(() => cursorLine().includes('web-root'));
});

test('lanes collapse and expand; left on a lane goes to its root', async () => {
  const { r, until, cursorLine, frame } = setup();
  await until((f) => f.includes('lane-a'));
  r.stdin.write('j');
  await until(() => cursorLine().includes('lane-a'));
  r.stdin.write('h');
  await until(() => cursorLine().includes('api-root'));
  assert.ok(frame().includes('lane-a'), 'moving to the root does not fold it');
  r.stdin.write('h');
  // Folded: its two lanes, and that one of them (lane-a) has a request in flight.
  await until((f) => !f.includes('lane-a') && f.includes('api-root (+2, 1 req'));
  r.stdin.write('l');
  await until((f) => f.includes('lane-a') && f.includes('lane-b'));
});

test('the abort dialog names the exact target, and n cancels without a request', async () => {
  const { r, until, port, frame } = setup();
  await until((f) => f.includes('ops-root'));
  r.stdin.write('x');
  await until((f) => f.includes('Owner-abort api-root?'));
  const f = frame();
  assert.ok(f.includes(ID.api), 'session id');
  assert.ok(f.includes('anthropic/claude-sonnet-4'), 'model');
  assert.ok(f.includes('turn 7, started 12:03 ago'), 'request age and turn');
  assert.match(f.replace(/\n│ /g, ' '), /cut the in-flight request turn 7 \(started 12:03 ago\) and hold the root; nothing restarts it until you arm it/);
  assert.ok(f.includes('y confirm · any other key cancels'));
  r.stdin.write('n');
  await until((g) => !g.includes('Owner-abort'));
  await new Promise((res) => setImmediate(res));
  assert.equal(port.calls.length, 0);
});

test('x on a row without a checkpoint says whether a request runs cannot be seen (not that none does)', async () => {
  const { r, until, frame } = setup();
  await until((f) => f.includes('ops-root'));
  r.stdin.write('G'); // last row: ops-root, no checkpoint
  await until((f) => f.split('\n').some((l) => l.startsWith('›') && l.includes('ops-root')));
  r.stdin.write('x');
  await until((f) => f.includes('request  unknown: no loop-dash checkpoint') && f.replace(/\n│ /g, ' ').includes('Whether a request is in flight cannot be seen here'));
  assert.ok(!frame().includes('none in flight'), frame());
});

test('x while tools run names the request that asked for them and says the abort stops them; in a retry wait, that it cancels the retry', async () => {
  const port = recordingPort({ id: 'req-t' });
  const { r, until, store, frame } = setup({ port });
  await until((f) => f.includes('ops-root'));
  const lastRequest = { turn: 7, startedAt: NOW - 723_000, endedAt: NOW - 20_000, stopReason: 'toolUse', modelEvents: 120, keepalives: 3 };
  store.push([cpEvent(requesting(ID.api, 14 * MIN, { state: 'tools', request: null, lastRequest } as Partial<Checkpoint>))]);
  await until((f) => /api-root\s.*tools/.test(f));
  r.stdin.write('x');
  await until((f) => f.includes('Owner-abort api-root?'));
  const f = frame().replace(/\n│ /g, ' ');
  assert.ok(f.includes('request  turn 7, started 12:03 ago') && f.includes('ended, its tools are running'), f);
  assert.match(f, /This will stop the tools turn 7 asked for \(unless a later request has started\) and hold the root: no request follows them/);
  r.stdin.write('y');
  await until(() => port.calls.length === 1);
  assert.deepEqual((port.calls[0]!.target.checkpoint as { lastRequest?: unknown }).lastRequest, lastRequest, 'the target is the request whose tools run');

  store.push([cpEvent(requesting(ID.api, 14 * MIN, { state: 'retry-wait', request: null }))]);
  await until((f) => /api-root\s.*retry-wait/.test(f) && !f.includes('Owner-abort'));
  r.stdin.write('x');
  await until((f) => f.includes("No request is in flight: this cancels pi's pending retry and holds the root"));
});

test('y sends the request, then the flash follows the ack', async () => {
  const port = recordingPort({ id: 'req-42' });
  const { r, until, store } = setup({ port });
  await until((f) => f.includes('ops-root'));
  r.stdin.write('x');
  await until((f) => f.includes('Owner-abort api-root?'));
  r.stdin.write('y');
  await until((f) => f.includes('abort api-root: pending'));
  assert.equal(port.calls.length, 1);
  assert.equal(port.calls[0]!.action, 'abort');
  assert.equal(port.calls[0]!.target.session, ID.api);
  store.push([{ type: 'ack', home: HOME, session: ID.api, ack: { v: 1, id: 'req-42', status: 'applied', at: NOW, detail: 'request cut' } }]);
  await until((f) => f.includes('abort api-root: applied: request cut'));
});

test('a refusal\'s reason is wrapped, not cut at the edge', async () => {
  const port = recordingPort({ id: 'req-43' });
  const { r, until, store, frame } = setup({ port });
  await until((f) => f.includes('ops-root'));
  r.stdin.write('x');
  await until((f) => f.includes('Owner-abort api-root?'));
  r.stdin.write('y');
  await until((f) => f.includes('abort api-root: pending'));
  const detail = 'the targeted request (turn 7, started 2026-01-15T09:47:57.000Z) is not the one in flight (turn 8, started 2026-01-15T09:59:58.000Z); nothing was cut';
  store.push([{ type: 'ack', home: HOME, session: ID.api, ack: { v: 1, id: 'req-43', status: 'stale-target', at: NOW, detail } }]);
  await until((f) => f.includes('abort api-root: rejected'));
  // The whole reason, on the lines the 100-column frame wraps it to.
  const shown = frame().split('\n').map((l) => l.trim()).join(' ');
  assert.ok(shown.includes('nothing was cut'), frame());
  assert.ok(shown.includes('(turn 8, started 2026-01-15T09:59:58.000Z)'), frame());
});

test('the abort targets the request in flight when x was pressed: a new request meanwhile is flagged, and y still sends the old target', async () => {
  const port = recordingPort({ id: 'req-7' });
  const { r, until, store, frame } = setup({ port });
  await until((f) => f.includes('ops-root'));
  r.stdin.write('x');
  await until((f) => f.includes('Owner-abort api-root?'));
  assert.ok(!frame().includes('CHANGED'), 'nothing changed yet');
  // Turn 7 ends and turn 8 starts while the dialog is open.
  store.push([cpEvent(requesting(ID.api, 14 * MIN, { request: { turn: 8, startedAt: NOW - 2000, lastModelEventAt: null, lastTransportEventAt: null, modelEvents: 0, keepalives: 0 } }))]);
  await until((f) => f.includes('CHANGED since you pressed x'));
  const f = frame().replace(/\n│ /g, ' ');
  assert.ok(f.includes('request  turn 7, started 12:03 ago'), 'the dialog still names what the owner saw');
  assert.ok(f.includes('now      turn 8 is in flight, started 0:02 ago'), 'and what runs now');
  assert.match(f, /y still sends the abort for what you saw \(turn 7\), which the session will refuse/);
  assert.ok(!f.includes('This will cut the in-flight request turn 8'), 'never offers to cut what was not seen');
  r.stdin.write('y');
  await until(() => port.calls.length === 1);
  assert.equal(port.calls[0]!.target.checkpoint?.request?.turn, 7, 'the target sent is the request seen at x');
});

test('x with nothing in flight, then a request starts: the dialog says so, and y sends no target (the session refuses it)', async () => {
  const port = recordingPort({ id: 'req-8' });
  const { r, until, store, frame } = setup({ port });
  await until((f) => f.includes('ops-root'));
  store.push([cpEvent(requesting(ID.web, 10 * MIN, { model: 'openai/gpt-5', state: 'idle', request: null }))]);
  r.stdin.write('j');
  r.stdin.write('j');
  r.stdin.write('j');
  await until((f) => f.split('\n').some((l) => l.startsWith('›') && l.includes('web-root')));
  r.stdin.write('x');
  await until((f) => f.includes('Owner-abort web-root?') && f.includes('request  none in flight'));
  store.push([cpEvent(requesting(ID.web, 15 * MIN, { model: 'openai/gpt-5', request: { turn: 3, startedAt: NOW - 1000, lastModelEventAt: null, lastTransportEventAt: null, modelEvents: 0, keepalives: 0 } }))]);
  await until((f) => f.includes('now      turn 3 is in flight, started 0:01 ago — CHANGED since you pressed x'));
  assert.ok(!frame().includes('This will cut'), 'no cut is offered');
  r.stdin.write('y');
  await until(() => port.calls.length === 1);
  assert.equal(port.calls[0]!.target.checkpoint?.request ?? null, null, 'no target: the extension refuses it while a request is in flight');
});

test('a request that could not be written shows the error and no pending state', async () => {
  const port = recordingPort({ error: 'ENOSPC: no space left on device' });
  const { r, until } = setup({ port });
  await until((f) => f.includes('ops-root'));
  r.stdin.write('a');
  await until((f) => f.includes('Arm api-root?'));
  r.stdin.write('y');
  await until((f) => f.includes('arm api-root: could not write the request: ENOSPC'));
  assert.equal(port.calls.length, 1);
});

test('without an ack for 10 s the flash says no consumer answered', async () => {
  const port = recordingPort({ id: 'req-7' });
  const { r, until, props } = setup({ port });
  await until((f) => f.includes('ops-root'));
  r.stdin.write('d');
  await until((f) => f.includes('Disarm api-root?'));
  r.stdin.write('y');
  await until((f) => f.includes('disarm api-root: pending'));
  const later = () => NOW + 11_000;
  r.rerender(<App {...props} clock={later} />);
  await until((f) => f.includes(NO_CONSUMER_TEXT));
});

test('read-only: x does nothing and the footer and help lack the owner actions', async () => {
  const { r, until, frame, port } = setup({ readOnly: true });
  await until((f) => f.includes('ops-root'));
  const footer = frame().split('\n').filter(Boolean).pop()!;
  assert.ok(footer.includes('? help'));
  assert.ok(!footer.includes('abort') && !footer.includes('disarm') && !/\ba arm/.test(footer), footer);
  r.stdin.write('x');
  r.stdin.write('?');
  await until((f) => f.includes('Esc or ? closes this help'));
  assert.ok(!frame().includes('Owner-abort'));
  assert.ok(!frame().includes('owner-abort the request'), 'help lists no dangerous key');
  assert.equal(port.calls.length, 0);
});

test('the help overlay lists every key of the registry', async () => {
  const { r, until, frame } = setup();
  await until((f) => f.includes('ops-root'));
  r.stdin.write('?');
  await until((f) => f.includes('Esc or ? closes this help'));
  for (const b of KEYMAP.filter((k) => k.keys.length > 0)) {
    assert.ok(frame().includes(b.label), `help shows ${b.label}`);
    assert.ok(frame().includes(b.description), `help shows "${b.description}"`);
  }
  r.stdin.write(ESC);
  await until((f) => f.includes('ops-root') && !f.includes('closes this help'));
});

test('while loading, sessions found so far and a progress line are shown', async () => {
  const { until, store } = setup();
  store.push([{ type: 'progress', home: HOME, read: 412, total: 1000, done: false }]);
  await until((f) => f.includes('reading 412/1000 sessions') && f.includes('api-root'));
});

test('an empty, loading home is never a blank frame', async () => {
  const store = testStore(initialModelState());
  store.push([{ type: 'progress', home: HOME, read: 0, total: 1000, done: false }]);
  const r = render(<App store={store} clock={clock} tick={false} host={HOST} readOnly={false} actions={recordingPort()} rows={24} columns={100} noColor />);
  await waitFor(() => (r.lastFrame() ?? '').includes('reading 0/1000 sessions'));
  assert.ok((r.lastFrame() ?? '').includes('reading sessions…'));
});

test('a home whose sessions are still being listed: the frame names the home and says it is listing, never "no sessions found"', async () => {
  const store = testStore(initialModelState());
  store.push([{ type: 'progress', home: HOME, read: 0, total: 0, done: false, listing: true }]);
  const r = render(<App store={store} clock={clock} tick={false} host={HOST} readOnly={false} actions={recordingPort()} rows={24} columns={160} noColor />);
  await waitFor(() => (r.lastFrame() ?? '').includes('listing sessions…'));
  const listing = r.lastFrame() ?? '';
  assert.ok(listing.includes(HOME), `the header names the home being read:\n${listing}`);
  assert.ok(!listing.includes('no home yet'), listing);
  assert.ok(!listing.includes('no sessions found'), listing);
  assert.equal(listing.split('listing sessions…').length - 1, 2, `the progress line and the empty table both say so:\n${listing}`);
  // Listed: the count is known, then every session read; an empty home says so only then.
  store.push([{ type: 'progress', home: HOME, read: 0, total: 3, done: false }]);
  await waitFor(() => (r.lastFrame() ?? '').includes('reading 0/3 sessions'));
  assert.ok(!(r.lastFrame() ?? '').includes('listing'), r.lastFrame());
  store.push([{ type: 'progress', home: HOME, read: 0, total: 0, done: true }]);
  await waitFor(() => (r.lastFrame() ?? '').includes('no sessions found yet in ' + HOME));
});

test('a degraded watcher shows a banner', async () => {
  const { until, store } = setup();
  store.push([{ type: 'watch-mode', mode: 'degraded', detail: null, everyMs: 1_000 }]);
  await until((f) => f.includes('file watching degraded - polling every 1 s'));
  // The banner states the sweep's interval as the reader reports it, not a fixed text.
  store.push([{ type: 'watch-mode', mode: 'polling', detail: 'forced', everyMs: 2_500 }]);
  await until((f) => f.includes('file watching degraded - polling every 2.5 s (forced)'));
});

test('/ filters rows by text and Esc clears it', async () => {
  const { r, until, frame } = setup();
  await until((f) => f.includes('ops-root'));
  r.stdin.write('/');
  r.stdin.write('w');
  r.stdin.write('e');
  r.stdin.write('b');
  await until((f) => f.includes('filter: web') && !f.includes('api-root'));
  assert.deepEqual(rowOrder(frame()), ['web-root']);
  r.stdin.write('\u007f'); // 0x7F: Ink reports it as `delete`; it erases in the prompt
  await until((f) => f.includes('filter: we') && !f.includes('filter: web'));
  r.stdin.write(ESC);
  await until((f) => f.includes('api-root') && !f.includes('filter:'));
});

test('a filter that hides the cursor\'s row puts the cursor on the first match; one that keeps it keeps it', async () => {
  const { r, until, cursorLine } = setup();
  await until((f) => f.includes('ops-root'));
  r.stdin.write('G');
  await until(() => cursorLine().includes('ops-root'));
  r.stdin.write('/');
  for (const ch of 'lane') r.stdin.write(ch);
  // api-root shows for its matching lanes; the cursor went to the last match (lane-b) before.
  await until((f) => f.includes('filter: lane') && !f.includes('ops-root'));
  assert.match(cursorLine(), /api-root/);
  r.stdin.write('\r');
  r.stdin.write('j');
  await until(() => cursorLine().includes('lane-a'));
  r.stdin.write('/');
  r.stdin.write('-');
  await until((f) => f.includes('filter: lane-'));
  assert.match(cursorLine(), /lane-a/);
});

test('s cycles the sort mode', async () => {
  const { r, until, frame } = setup();
  await until((f) => f.includes('ops-root'));
  r.stdin.write('s');
  await until((f) => f.includes('sort: name'));
  assert.deepEqual(rowOrder(frame()), ['api-root', 'lane-a', 'lane-b', 'ops-root', 'web-root']);
});

function incident(file: string, over: Partial<IncidentRecord>): ReaderEvent {
  return {
    type: 'incident',
    record: {
      file: `${HOME}/incidents/${file}`,
      home: HOME,
      cls: 'loop-request-wall-clock-ceiling',
      known: true,
      session: ID.api,
      at: NOW - 5 * MIN,
      limit: 'wall-clock',
      attempt: 2,
      exhausted: false,
      movedAside: false,
      summary: 'request cut after 14:00',
      raw: { v: 1, class: 'loop-request-wall-clock-ceiling', session: ID.api },
      ...over,
    },
  };
}

test('incidents view: newest first, filter, and the whole record on Enter', async () => {
  const events = [
    incident('request/a.json', {}),
    incident('ops/b.json', { cls: 'loop-future-thing', known: false, session: ID.web, at: NOW - MIN, limit: null, attempt: null, summary: 'new class', raw: { v: 1, class: 'loop-future-thing', weird: 42 } }),
    { type: 'warnings', file: `${HOME}/sessions/bad.jsonl`, warnings: [{ file: `${HOME}/sessions/bad.jsonl`, line: 3, message: 'invalid JSON', severity: 'error' }] } as ReaderEvent,
  ];
  const { r, until, frame } = setup({ events });
  await until((f) => f.includes('ops-root'));
  r.stdin.write('i');
  await until((f) => f.includes('Incidents (2), newest first'));
  const lines = frame().split('\n');
  const first = lines.findIndex((l) => l.includes('loop-future-thing'));
  const second = lines.findIndex((l) => l.includes('loop-request-wall-clock-ceiling'));
  assert.ok(first >= 0 && second > first, 'newest first');
  assert.ok(frame().includes('sessions/bad.jsonl:3'), 'warnings listed below');
  // Enter on the first (unknown class): raw fields shown.
  r.stdin.write('\r');
  await until((f) => f.includes('Incident record'));
  assert.ok(frame().includes('weird: 42'));
  assert.ok(frame().includes(`${HOME}/incidents/ops/b.json`));
  assert.ok(frame().includes('web-root'), 'linked session by name');
  r.stdin.write(ESC);
  await until((f) => f.includes('Incidents (2)'));
  r.stdin.write('/');
  for (const c of 'wall') r.stdin.write(c);
  await until((f) => f.includes('Incidents (1 of 2)'));
  r.stdin.write('\r'); // keep the filter
  r.stdin.write('\r'); // open the record
  await until((f) => f.includes('Incident record') && f.includes('limit     wall-clock'));
});

test('incidents view: a filter puts the cursor on the newest match when its incident no longer matches; a long path is wrapped whole, not cut', async () => {
  const long = `request/${'x'.repeat(150)}-inactivity-1.json`;
  const events = [
    incident('root/old.json', { at: NOW - 30 * MIN, cls: 'loop-arm-refused', limit: null, summary: 'oldest, arm refused' }),
    incident('request/mid.json', { at: NOW - 20 * MIN, summary: 'middle cut' }),
    incident(long, { at: NOW - 10 * MIN, summary: 'newest cut' }),
  ];
  const { r, until, frame } = setup({ events });
  await until((f) => f.includes('ops-root'));
  r.stdin.write('i');
  await until((f) => f.includes('Incidents (3), newest first'));
  r.stdin.write('G'); // the oldest
  await until((f) => (f.split('\n').find((l) => l.startsWith('›')) ?? '').includes('oldest, arm refused'));
  r.stdin.write('/');
  for (const c of 'wall') r.stdin.write(c);
  await until((f) => f.includes('Incidents (2 of 3)'));
  r.stdin.write('\r');
  await until((f) => (f.split('\n').find((l) => l.startsWith('›')) ?? '').includes('newest cut'));
  r.stdin.write('\r');
  await until((f) => f.includes('Incident record'));
  const joined = frame()
    .split('\n')
    .map((l) => l.replace(/^\s+(file\s+)?/, ''))
    .join('');
  assert.ok(joined.includes(`${HOME}/incidents/${long}`), 'the whole path, wrapped over lines');
  assert.ok(!frame().includes('…'), 'nothing cut');
});

test('an opened local incident shows its file\'s fields once read (reading… until then); a record replaced while open is read again; an unreadable file says why', async () => {
  const { raw: _none, ...local } = (incident('request/a.json', {}) as { record: IncidentRecord }).record;
  const asked: string[] = [];
  const answers: ((f: IncidentFields) => void)[] = [];
  const incidentFields = (file: string) => {
    asked.push(file);
    return new Promise<IncidentFields>((resolve) => answers.push(resolve));
  };
  const { r, until, frame, store } = setup({ events: [{ type: 'incident', record: local }], incidentFields });
  await until((f) => f.includes('ops-root'));
  assert.deepEqual(asked, [], 'nothing read before an incident is opened');
  r.stdin.write('i');
  await until((f) => f.includes('Incidents (1), newest first'));
  r.stdin.write('\r');
  await until((f) => f.includes('Incident record') && f.includes('reading the file…'));
  await waitFor(() => asked.length > 0, 2000, frame);
  assert.deepEqual(asked, [local.file]);
  answers[0]!({ state: 'read', fields: { v: 1, cwd: '/work/x', reason: 'cut at the ceiling' } });
  await until((f) => f.includes('cwd: /work/x') && f.includes('reason: cut at the ceiling'));
  assert.ok(!frame().includes('reading the file…'));
  assert.ok(frame().includes('Raw fields (as the file says them now)'));
  // The file rewritten: its new record is read again, and shows nothing of the old read meanwhile.
  await act(async () => store.push([{ type: 'incident', record: { ...local, summary: 'rewritten' } }]));
  await until((f) => f.includes('reading the file…'));
  await waitFor(() => asked.length > 1, 2000, frame);
  assert.equal(asked.length, 2);
  answers[1]!({ state: 'unreadable', message: 'the file is gone (removed since it was listed)' });
  await until((f) => f.includes('the file is gone (removed since it was listed)'));
  assert.ok(!frame().includes('cwd: /work/x'));
});

test('detail pane: timeline, numbers, first to fire, and the activity sparkline', async () => {
  const { r, until, frame, store } = setup();
  await until((f) => f.includes('ops-root'));
  r.stdin.write('\r');
  await until((f) => f.includes('Clocks'));
  const f = frame();
  assert.match(f, /S.*N.*I═+A/, 'timeline picture');
  assert.ok(f.includes('I inactivity       4:00 left'));
  assert.ok(f.includes('A absolute         1:02:57 left'));
  assert.ok(f.includes('first to fire: inactivity, 58:57 before the next limit'));
  assert.ok(f.includes('no model events seen yet'));
  // A change that moves no request counter (an append) records nothing; the next one that does is recorded.
  store.push([factsEvent(facts(ID.api, 'api-root', { size: 999_999 }))]);
  // The checkpoint shows 30 more model events: the dashboard records them now.
  const cp = requesting(ID.api, 4 * MIN);
  store.push([cpEvent({ ...cp, request: { ...cp.request!, modelEvents: 150 } })]);
  await until((g) => /[▁▂▃▄▅▆▇█]{10,}\s+30 events/.test(g));
});

test('strings from files are sanitised before rendering', async () => {
  const evil = 'evil\u001b]0;pwned\u0007\u001b[31mred\u001b[0m\r\u0007name';
  const { until, r } = setup({ events: [factsEvent(facts(ID.ops, evil, { model: null, continuation: null }))] });
  await until((f) => f.includes('evilrdname') || f.includes('evilredname'));
  const raw = r.lastFrame() ?? '';
  assert.ok(!raw.includes('\u0007'), 'no BEL');
  assert.ok(!raw.includes('\u001b]'), 'no OSC');
  assert.ok(!raw.includes('\r'), 'no carriage return');
  assert.ok(stripAnsi(raw).includes('evilredname'));
});

test('the first frame drawn before Ink loads is the frame the dashboard then renders: its first render rewrites no line, and no second render follows', async () => {
  const store = testStore(fixtureState([{ type: 'progress', home: HOME, read: 1, total: 5, done: false }]));
  const { drawn, sink } = recordingSink();
  const cache = createSnapshotCache();
  drawFirstFrame({ model: store.getState(), now: NOW, host: HOST, cache, feeds: [], audits: null, readOnly: false, noColor: true, rows: 40, columns: 100 }, sink);
  assert.equal(drawn.length, 1);
  assert.ok(drawn[0]!.some((l) => l.includes('api-root')), 'the first frame lists the sessions');
  // Mounted inside act(): React runs the mount's effects, and any render they cause, before it returns.
  const actEnv = globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean };
  actEnv.IS_REACT_ACT_ENVIRONMENT = true;
  try {
    await act(async () => {
      render(<App store={store} clock={clock} tick={false} host={HOST} readOnly={false} actions={recordingPort()} rows={40} columns={100} noColor frame={sink} snapshotCache={cache} />);
    });
  } finally {
    actEnv.IS_REACT_ACT_ENVIRONMENT = false;
  }
  assert.ok(drawn.length >= 2, `${drawn.length} frames`);
  assert.deepEqual(drawn[1], drawn[0], "App's first frame is line for line the one drawn before it");
  // The request counters on screen are the activity's starting point from the mount: no second
  // render for them (it would draw the same frame). (The home is still being read, as at a real
  // mount: no cursor is pinned yet, which would render.)
  assert.equal(drawn.length, 2, 'one render at mount, no second one');
  // Through the real writer: the second frame writes nothing.
  const out: string[] = [];
  const terminal = new TerminalFrame({ isTTY: true, write: (s: string) => out.push(s) });
  terminal.draw(sinkLines(store, cache), 100, true);
  const before = out.length;
  terminal.draw(sinkLines(store, cache), 100, true);
  assert.equal(out.length, before, 'an unchanged frame writes nothing');
});

function sinkLines(store: ReturnType<typeof testStore>, cache: ReturnType<typeof createSnapshotCache>): Line[] {
  let lines: Line[] = [];
  drawFirstFrame({ model: store.getState(), now: NOW, host: HOST, cache, feeds: [], audits: null, readOnly: false, noColor: true, rows: 40, columns: 100 }, { draw: (l) => void (lines = [...l]), done: () => undefined });
  return lines;
}
