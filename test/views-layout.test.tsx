import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import chalk from 'chalk';
import { Text } from 'ink';
import { useLayoutEffect, useRef, useState } from 'react';
import { useClock } from '../src/views/use-clock.js';
import { App } from '../src/views/App.js';
import { displayWidth } from '../src/views/text.js';
import type { ReaderEvent } from '../src/model/types.js';
import { clock, cpEvent, fileOf, ID, facts, factsEvent, fixtureState, HOST, recordingPort, renderSized, requesting, stripAnsi, testStore, waitFor } from './views-fixtures.js';

const MIN = 60_000;
const mounted: { instance: { unmount(): void } }[] = [];
afterEach(() => {
  for (const m of mounted.splice(0)) m.instance.unmount();
});

function mount(columns: number, rows: number, opts: { events?: ReaderEvent[]; noColor?: boolean } = {}) {
  const store = testStore(fixtureState(opts.events ?? []));
  const h = renderSized(
    <App store={store} clock={clock} tick={false} host={HOST} readOnly={false} actions={recordingPort()} noColor={opts.noColor ?? true} />,
    columns,
    rows,
  );
  mounted.push(h);
  const frame = () => stripAnsi(h.lastFrame());
  const until = (pred: (f: string) => boolean) => waitFor(() => pred(frame()), 2000, frame);
  return { ...h, frame, until, store };
}

/** The frame stays below the terminal height and no line is wider than the terminal. */
function assertFits(frame: string, columns: number, rows: number, what: string): void {
  const lines = frame.split('\n');
  assert.ok(lines.length <= rows - 1, `${what}: ${lines.length} lines on a ${rows}-row terminal\n${frame}`);
  for (const l of lines) assert.ok(displayWidth(l) <= columns, `${what}: line of ${displayWidth(l)} cells on ${columns} columns: ${l}`);
}

function titles(frame: string): string {
  return frame.split('\n').find((l) => l.includes('NAME')) ?? '';
}

test('80×24: the essential columns stay and every view fits', async () => {
  const m = mount(80, 24);
  await m.until((f) => f.includes('ops-root'));
  const t = titles(m.frame());
  for (const c of ['NAME', 'STATE', 'INACT', 'ABS', 'FIRST', 'AGE']) assert.ok(t.includes(c), `${c} in ${t}`);
  assert.ok(!t.includes('MODEL'), 'model is the first column dropped');
  assertFits(m.frame(), 80, 24, 'table');
  assert.match(m.frame(), /api-root.*requesting\s+4:00\s+1:02:57/);

  m.stdin.write('\r');
  await m.until((f) => f.includes('Clocks'));
  assertFits(m.frame(), 80, 24, 'detail');
  m.stdin.write('\t');
  for (let i = 0; i < 30; i++) m.stdin.write('j');
  await m.until((f) => f.includes('(↑↓ scroll'));
  assertFits(m.frame(), 80, 24, 'detail scrolled');
  m.stdin.write('\u001b');
  // A lone Esc is delivered on the next turn (ESC + x at once would be Alt+x): wait for it.
  await m.until((f) => f.includes('(Tab to scroll'));
  m.stdin.write('x');
  await m.until((f) => f.includes('Owner-abort'));
  assertFits(m.frame(), 80, 24, 'confirm dialog');
  assert.ok(m.frame().includes('nothing restarts it until you arm it'), 'the effect sentence wraps instead of being cut');
  m.stdin.write('n');
  m.stdin.write('?');
  await m.until((f) => f.includes('closes this help'));
  assertFits(m.frame(), 80, 24, 'help');
  m.stdin.write('?');
  m.stdin.write('i');
  await m.until((f) => f.includes('Incidents (0)'));
  assertFits(m.frame(), 80, 24, 'incidents');
});

test('200×50: every column is shown in full', async () => {
  const m = mount(200, 50);
  await m.until((f) => f.includes('ops-root'));
  const t = titles(m.frame());
  for (const c of ['NAME', 'MODEL', 'STATE', 'INACT', 'ABS', 'FIRST', 'EPISODE', 'RESUME', 'ARMED', 'INC', 'AGE', 'ID']) assert.ok(t.includes(c), `${c} in ${t}`);
  assert.match(m.frame(), /anthropic\/claude-sonnet-4/);
  assert.match(m.frame(), /inact by 58:57/);
  // Each row's short id, last: what the CLI's abort takes, and what the dialog's whole id begins with.
  const web = m.frame().split('\n').find((l) => l.includes('web-root'))!;
  assert.ok(web.trimEnd().endsWith(ID.web.slice(0, 8)), web);
  assertFits(m.frame(), 200, 50, 'wide');
});

test('two roots of one name (checkouts of one repo, named by the cwd): their ids tell them apart at 160 columns; at 100 the id goes first', async () => {
  const twin = (id: string) => [factsEvent(facts(id, 'alpha')), cpEvent(requesting(id, 9 * MIN))];
  const a = 'a1a1a1a1-0000-4000-8000-000000000000';
  const b = 'b2b2b2b2-0000-4000-8000-000000000000';
  const m = mount(160, 30, { events: [...twin(a), ...twin(b)] });
  await m.until((f) => f.split('\n').filter((l) => /\balpha\b/.test(l)).length === 2);
  const lines = m.frame().split('\n').filter((l) => /\balpha\b/.test(l));
  assert.deepEqual(lines.map((l) => l.trimEnd().slice(-8)).sort(), ['a1a1a1a1', 'b2b2b2b2'], lines.join('\n'));
  assertFits(m.frame(), 160, 30, '160');
  const narrow = mount(100, 30, { events: [...twin(a), ...twin(b)] });
  await narrow.until((f) => f.includes('alpha'));
  assert.ok(!titles(narrow.frame()).includes(' ID'), titles(narrow.frame()));
});

test('two roots pi started within a minute (time-ordered ids, one first 8 characters): the ID column shows each id to its millisecond', async () => {
  // pi names sessions by UUIDv7: the first 8 characters are the top of the creation time (~65 s).
  const twin = (id: string) => [factsEvent(facts(id, 'alpha')), cpEvent(requesting(id, 9 * MIN))];
  const a = '019af0c2-1b2c-7d3e-8f40-0123456789ab';
  const b = '019af0c2-6f70-7a81-9b92-0123456789ab';
  const m = mount(170, 30, { events: [...twin(a), ...twin(b)] });
  await m.until((f) => f.split('\n').filter((l) => /\balpha\b/.test(l)).length === 2);
  const lines = m.frame().split('\n').filter((l) => /\balpha\b/.test(l));
  assert.deepEqual(lines.map((l) => l.trimEnd().slice(-13)).sort(), ['019af0c2-1b2c', '019af0c2-6f70'], lines.join('\n'));
  assertFits(m.frame(), 170, 30, '170');
});

test('a lane named `<root>/<lane>` is shown by `<lane>` under its root: at 60 columns two such lanes no longer read alike', async () => {
  // The fixture's two lanes, renamed (the same files).
  const laneFile = (id: string) => `${fileOf(ID.api).replace(/\.jsonl$/, '')}/run-${id.slice(0, 4)}/${id}.jsonl`;
  const renamed = [
    factsEvent(facts(ID.laneA, 'api-root/L1', { role: 'lane', rootFile: fileOf(ID.api), runId: 'run-dddd', file: laneFile(ID.laneA), continuation: null })),
    factsEvent(facts(ID.laneB, 'api-root/L2', { role: 'lane', rootFile: fileOf(ID.api), runId: 'run-eeee', file: laneFile(ID.laneB), continuation: null })),
  ];
  const m = mount(60, 20, { events: renamed });
  await m.until((f) => /[├└] L1 /.test(f) && /[├└] L2 /.test(f));
  assert.ok(!m.frame().includes('api-root/') && !m.frame().includes('lane-a'), m.frame());
  assertFits(m.frame(), 60, 20, 'narrow');
});

test('40 sessions on a 10-row terminal: scrolls with the cursor and says +N more', async () => {
  const many: ReaderEvent[] = [];
  for (let i = 0; i < 40; i++) {
    const id = `ffff${String(i).padStart(4, '0')}-0000-4000-8000-000000000000`;
    many.push(factsEvent(facts(id, `bulk-${String(i).padStart(2, '0')}`)), cpEvent(requesting(id, (20 + i) * MIN)));
  }
  const m = mount(100, 10, { events: many });
  await m.until((f) => /\+\d+ more/.test(f));
  assertFits(m.frame(), 100, 10, 'first page');
  m.stdin.write('G');
  await m.until((f) => f.split('\n').some((l) => l.startsWith('›') && l.includes('ops-root')));
  assertFits(m.frame(), 100, 10, 'last page');
  assert.match(m.frame(), /\+\d+ more above/);
});

test('a resize re-lays the table out for the new width', async () => {
  const m = mount(200, 30);
  await m.until((f) => titles(f).includes('MODEL'));
  m.stdout.columns = 80;
  m.stdout.emit('resize');
  await m.until((f) => !titles(f).includes('MODEL') && titles(f).includes('AGE'));
  assertFits(m.frame(), 80, 30, 'after shrinking');
  m.stdout.columns = 200;
  m.stdout.emit('resize');
  await m.until((f) => titles(f).includes('MODEL'));
});

test('the columns stay where they are when the rows shown change: a filter moves none', async () => {
  const m = mount(200, 30);
  await m.until((f) => f.includes('ops-root') && f.includes('lane-a'));
  const before = titles(m.frame());
  m.stdin.write('/');
  for (const ch of 'web') m.stdin.write(ch);
  await m.until((f) => f.includes('web-root') && !f.includes('ops-root') && !f.includes('lane-a'));
  const row = m.frame().split('\n').find((l) => l.includes('web-root'))!;
  assert.equal(titles(m.frame()), before, 'the title line (every column’s place and width) is unchanged');
  // The row’s cells sit under their titles: STATE starts where its title does.
  assert.equal(row.indexOf('requesting'), before.indexOf('STATE'), `${before}\n${row}`);
});

test('NO_COLOR: no escape codes, states still told apart by text', async (t) => {
  const level = chalk.level;
  chalk.level = 1;
  t.after(() => {
    chalk.level = level;
  });
  const plain = mount(100, 24, { noColor: true });
  await plain.until((f) => f.includes('ops-root'));
  const raw = plain.lastFrame();
  assert.ok(!raw.includes('\u001b'), 'no escape sequence at all');
  assert.match(raw, /lane-a.*requesting\s+0:30!!/, 'critical marked !!');
  const warn = mount(100, 24, { noColor: true, events: [cpEvent(requesting('aaaa1111-0000-4000-8000-000000000001', 2 * MIN))] });
  await warn.until((f) => f.includes('ops-root'));
  assert.match(warn.lastFrame(), /api-root.*2:00!/, 'warning marked !');
  assert.ok(raw.includes('unknown') && raw.includes('idle'));

  // With colours on, the same frame does carry colour codes (so the check above means something).
  const coloured = mount(100, 24, { noColor: false });
  await coloured.until((f) => f.includes('ops-root'));
  assert.ok(coloured.lastFrame().includes('\u001b[31m'), 'critical in red');
  assert.ok(!/0:30!!/.test(coloured.frame()), 'markers only stand in for colour');
});

test('q quits through Ink exit()', async () => {
  const m = mount(100, 24);
  await m.until((f) => f.includes('ops-root'));
  const exited = m.instance.waitUntilExit();
  m.stdin.write('q');
  await Promise.race([exited, new Promise((_, reject) => setTimeout(() => reject(new Error('did not exit')), 2000))]);
});

test('the shared clock ticks on period boundaries', async () => {
  const seen: number[] = [];
  const realClock = () => Date.now();
  function Probe() {
    const now = useClock({ clock: realClock, periodMs: 40 });
    seen.push(now);
    return <Text>{now}</Text>;
  }
  const h = renderSized(<Probe />, 40, 5);
  mounted.push(h);
  await waitFor(() => new Set(seen).size >= 4, 3000);
  // After the first read, every value is a boundary, one period apart at most a few periods.
  const ticks = [...new Set(seen)].slice(1);
  for (const t of ticks) assert.equal(t % 40, 0, `tick at ${t % 40} ms past the boundary`);
  for (let i = 1; i < ticks.length; i++) assert.ok(ticks[i]! > ticks[i - 1]!);
});

test('the shared clock sleeps as long as the frame asks: no tick one period after a sleep', async () => {
  const seen: number[] = [];
  const realClock = () => Date.now();
  const SLEEP = 200;
  function Probe() {
    const wake = useRef<number | undefined>(undefined);
    const now = useClock({ clock: realClock, periodMs: 40, wakeAt: wake });
    // Nothing on this frame moves for SLEEP ms after the instant it shows.
    wake.current = now + SLEEP;
    seen.push(now);
    return <Text>{now}</Text>;
  }
  const h = renderSized(<Probe />, 40, 5);
  mounted.push(h);
  await waitFor(() => new Set(seen).size >= 5, 5000);
  const ticks = [...new Set(seen)].slice(1);
  for (let i = 1; i < ticks.length; i++) assert.ok(ticks[i]! - ticks[i - 1]! >= SLEEP, `ticks ${ticks.map((t) => t - ticks[0]!).join(', ')} ms: one came sooner than the frame asked`);
});

test('a render that ends past a second boundary keeps the tick for that second', async () => {
  // A clock under the test's control; the hook's timers are real, their delays taken from it.
  let fake = 990;
  const seen: number[] = [];
  const fakeClock = () => fake;
  let bump: () => void = () => undefined;
  function Probe() {
    const [n, setN] = useState(0);
    bump = () => setN((x) => x + 1);
    const now = useClock({ clock: fakeClock });
    // The second render reads the time at 999.5 and is done at 1000.5, past the boundary.
    useLayoutEffect(() => {
      if (n === 1) fake = 1000.5;
    });
    seen.push(now);
    return <Text>{`${now} ${n}`}</Text>;
  }
  const h = renderSized(<Probe />, 40, 5);
  mounted.push(h);
  // Mounted at 990: the tick for 1000 is due at 1001, ~11 ms away. Now a render at 999.5.
  fake = 999.5;
  bump();
  // Its wake-up is reckoned from when it read the time (due 1001, as before), not from 1000.5
  // (due 2001: the second 1000 would be shown a whole second late).
  await waitFor(() => seen.includes(1000), 400, () => `seen ${seen.join(', ')}`);
});
