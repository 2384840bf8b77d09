import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Key } from 'ink';
import { buildSnapshot, createSnapshotCache, retimeBase, type SessionView } from '../src/model/snapshot.js';
import { activityBuckets, recordActivity, sameObservations, sparkline, squeeze, type ActivityLog, type ActivityObservation } from '../src/views/activity.js';
import { detailLines } from '../src/views/detail-lines.js';
import { headerLines } from '../src/views/header-lines.js';
import { warningLines } from '../src/views/incident-lines.js';
import { footerHints, helpSections, KEYMAP, matchAction, readKeypress } from '../src/views/keymap.js';
import { clipLine, lineText, windowLines } from '../src/views/line.js';
import { footerLine } from '../src/views/footer-lines.js';
import { confirmText, NO_CONSUMER_TEXT, outcomeOf } from '../src/views/owner-actions.js';
import { describePlannedAction } from '../src/control/index.js';
import { treeRows, type TreeRow } from '../src/views/session-rows.js';
import { COLUMN_HOLD_MS, ColumnWidths, layoutColumns, rowCells, rowCellsCached, rowLine, rowLineCached, type RowCells } from '../src/views/table-layout.js';
import { ageText, countdownKey, sessionCells } from '../src/views/cells.js';
import { displayWidth, fit, sanitize, takeWidth, truncate, wrapWords } from '../src/views/text.js';
import { clockLines, drawAxis } from '../src/views/timeline.js';
import { initialViewState, viewReducer, type KeyContext } from '../src/views/view-state.js';
import type { Checkpoint } from '../src/contract/checkpoint.js';
import { checkpoint, cpEvent, facts, factsEvent, fixtureState, HOME, HOST, ID, NOW, requesting } from './views-fixtures.js';
import { statusJson } from '../src/model/status-json.js';
import { parseStatusDoc, remoteViews } from '../src/remote/status-doc.js';

const MIN = 60_000;

function key(over: Partial<Key> = {}): Key {
  return {
    upArrow: false,
    downArrow: false,
    leftArrow: false,
    rightArrow: false,
    pageDown: false,
    pageUp: false,
    home: false,
    end: false,
    return: false,
    escape: false,
    ctrl: false,
    shift: false,
    tab: false,
    backspace: false,
    delete: false,
    meta: false,
    super: false,
    hyper: false,
    capsLock: false,
    numLock: false,
    ...over,
  };
}

const rw = { readOnly: false };
const ro = { readOnly: true };

test('matcher: default keys, Ink quirks, chords', () => {
  assert.equal(matchAction('', key({ upArrow: true }), rw), 'up');
  assert.equal(matchAction('k', key(), rw), 'up');
  assert.equal(matchAction('j', key(), rw), 'down');
  assert.equal(matchAction('h', key(), rw), 'collapse');
  assert.equal(matchAction('', key({ rightArrow: true }), rw), 'expand');
  assert.equal(matchAction('\r', key({ return: true }), rw), 'detail');
  assert.equal(matchAction('\t', key({ tab: true }), rw), 'switchPane');
  assert.equal(matchAction('/', key(), rw), 'filter');
  assert.equal(matchAction('?', key({ shift: true }), rw), 'help');
  assert.equal(matchAction('q', key(), rw), 'quit');
  // Esc arrives with meta set: still `back`.
  assert.equal(matchAction('', key({ escape: true, meta: true }), rw), 'back');
  // Alt+x (meta + x) is not x; Ctrl+a is not a.
  assert.equal(matchAction('x', key({ meta: true }), rw), null);
  assert.equal(matchAction('a', key({ ctrl: true }), rw), null);
  // A paste is not a key.
  assert.equal(matchAction('xq', key(), rw), null);
  // 0x7F arrives as `delete`: an erase in text entry, never an action.
  const bs = readKeypress('', key({ delete: true }), rw);
  assert.equal(bs.action, null);
  assert.equal(bs.erase, true);
  assert.equal(bs.text, '');
  assert.equal(readKeypress('web', key(), rw).text, 'web');
});

test('read-only unbinds the dangerous actions everywhere', () => {
  for (const k of ['x', 'd', 'a']) {
    assert.notEqual(matchAction(k, key(), rw), null);
    assert.equal(matchAction(k, key(), ro), null);
  }
  const dangerous = KEYMAP.filter((b) => b.dangerous).map((b) => b.action);
  assert.deepEqual(dangerous.sort(), ['abort', 'arm', 'disarm']);
  assert.ok(!footerHints(ro).some((h) => dangerous.includes(h.action)));
  assert.ok(footerHints(rw).some((h) => h.action === 'abort'));
  assert.ok(!helpSections(ro).some((s) => s.bindings.some((b) => b.dangerous)));
  // Each key is bound to one action only.
  const seen = new Map<string, string>();
  for (const b of KEYMAP) for (const k of b.keys) {
    const id = JSON.stringify(k);
    assert.ok(!seen.has(id), `${id} bound twice (${seen.get(id)}, ${b.action})`);
    seen.set(id, b.action);
  }
});

test('sanitize strips escapes, controls and bidi overrides; widths count wide characters', () => {
  assert.equal(sanitize('a\u001b[31mb\u001b[0mc'), 'abc');
  assert.equal(sanitize('x\u001b]0;title\u0007y'), 'xy');
  assert.equal(sanitize('x\u001b]8;;http://e\u001b\\link\u001b]8;;\u001b\\y'), 'xlinky');
  assert.equal(sanitize('bell\u0007cr\rnl\nnul\u0000del\u007f'), 'bellcrnl nuldel');
  assert.equal(sanitize('\u202eevil'), 'evil');
  assert.equal(sanitize('unterminated\u001b]0;rest'), 'unterminated');
  assert.equal(displayWidth('日本'), 4);
  assert.equal(displayWidth('e\u0301'), 1);
  assert.equal(truncate('日本語テキスト', 7), '日本語…');
  assert.equal(displayWidth(fit('日本語テキスト', 8)), 8);
  assert.equal(fit('ab', 4, 'right'), '  ab');
  assert.deepEqual(wrapWords('one two three four', 9), ['one two', 'three', 'four']);
  const clipped = clipLine([{ text: 'abc' }, { text: 'defgh', color: 'red' }], 6);
  assert.equal(lineText(clipped), 'abcde…');
  assert.equal(clipped[1]!.color, 'red');
});

test('displayWidth and takeWidth go by code point as a for-of over the string does (astral characters, lone surrogates, combining marks, wide characters; property)', () => {
  // The reference: the string's own iterator, one code point at a time, each measured alone.
  const byIterator = (text: string) => {
    let w = 0;
    for (const ch of text) w += displayWidth(ch);
    return w;
  };
  const takeByIterator = (text: string, width: number) => {
    let out = '';
    let w = 0;
    for (const ch of text) {
      if (w + displayWidth(ch) > width) break;
      out += ch;
      w += displayWidth(ch);
    }
    return out;
  };
  const pieces = ['a', 'Z', ' ', 'é', 'e\u0301', '日', 'テ', '😀', '👍🏽', '\u{1F1FA}\u{1F1F8}', '\ud800', '\udc00', '\u200b', '—', '›', '…'];
  const text = fc.array(fc.constantFrom(...pieces), { maxLength: 30 }).map((p) => p.join(''));
  fc.assert(
    fc.property(text, fc.integer({ min: 0, max: 40 }), (t, width) => {
      assert.equal(displayWidth(t), byIterator(t));
      assert.equal(takeWidth(t, width), takeByIterator(t, width));
    }),
    { numRuns: 2000 },
  );
  assert.equal(displayWidth('😀x'), 3, 'an astral wide character counts two cells, once');
  assert.equal(takeWidth('ab😀c', 3), 'ab', 'a wide astral character that does not fit is left out whole');
});

test('windowLines says how many lines are hidden', () => {
  const lines = Array.from({ length: 10 }, (_, i) => [{ text: `l${i}` }]);
  const w = windowLines(lines, 4, 20);
  assert.equal(w.lines.length, 4);
  assert.equal(lineText(w.lines[3]!), '+7 more lines (7 above)');
  assert.equal(windowLines(lines, 20, 5).lines.length, 10);
});

test('columns narrow in a fixed order and keep the essentials at 80', () => {
  const snap = buildSnapshot(fixtureState(), NOW, { host: HOST });
  const rows = treeRows(snap.roots, { sort: 'first-limit', filter: '', collapsed: new Set() });
  const cells = rows.map((r) => rowCells(r, NOW, false));
  const wide = layoutColumns(cells, 200);
  // Every column but HOME (one home), the short id last.
  assert.equal(wide.columns.length, 12);
  assert.equal(wide.columns.at(-1)!.id, 'id');
  assert.ok(wide.columns.every((c) => !c.compact));
  const narrow = layoutColumns(cells, 80);
  const ids = narrow.columns.map((c) => c.id);
  for (const id of ['name', 'state', 'inactivity', 'absolute', 'first', 'age'] as const) assert.ok(ids.includes(id), id);
  assert.deepEqual(narrow.dropped.slice(0, 2), ['id', 'model']);
  const total = 2 + narrow.columns.reduce((n, c) => n + c.width, 0) + narrow.columns.length - 1;
  assert.ok(total <= 80, `table is ${total} wide`);
  const tiny = layoutColumns(cells, 60);
  assert.deepEqual(
    tiny.columns.map((c) => c.id),
    ['name', 'state', 'inactivity', 'absolute', 'first', 'age'],
  );
});

test('held column widths: a column widens at once and narrows only after a minute unneeded, or at a resize', () => {
  const snap = buildSnapshot(fixtureState(), NOW, { host: HOST });
  const rows = treeRows(snap.roots, { sort: 'first-limit', filter: '', collapsed: new Set() });
  const cells = rows.map((r) => rowCells(r, NOW, false));
  // One row's cells with wider texts: a state flagged stale, a countdown past the hour.
  const wideCells = (c: RowCells): RowCells => ({ ...c, state: { ...c.state, text: 'requesting (stale)', compact: 'requesting*' }, first: { ...c.first, text: 'inact by 1:00:00', compact: 'inact+1:00:00' } });
  const wider = cells.map((c, i) => (i === 0 ? wideCells(c) : c));
  const widthsOf = (l: ReturnType<typeof layoutColumns>) => l.columns.map((c) => `${c.id}:${c.width}${c.compact ? 'c' : ''}`).join(' ');
  const plainWide = widthsOf(layoutColumns(wider, 200));
  const plainNarrow = widthsOf(layoutColumns(cells, 200));
  assert.notEqual(plainWide, plainNarrow, 'without held widths the columns follow their cells');

  const held = new ColumnWidths();
  assert.equal(widthsOf(layoutColumns(cells, 200, held, NOW)), plainNarrow, 'the first layout is the cells\' own');
  assert.equal(widthsOf(layoutColumns(wider, 200, held, NOW + 1_000)), plainWide, 'wider cells widen the columns at once');
  // The wide cells stay on screen, with no layout made, until the narrower ones come at +2 min:
  // the widths are held for a minute from then, not from the wide layout.
  const narrowFrom = NOW + 2 * MIN;
  assert.equal(widthsOf(layoutColumns(cells.slice(), 200, held, narrowFrom)), plainWide, 'narrower cells: the widths are kept');
  assert.equal(widthsOf(layoutColumns(cells, 200, held, narrowFrom + COLUMN_HOLD_MS - 1)), plainWide, 'within the minute: still kept');
  assert.equal(widthsOf(layoutColumns(cells, 200, held, narrowFrom + COLUMN_HOLD_MS)), plainNarrow, 'a minute unneeded: the columns narrow');

  // At a width where the wide texts make the model column abbreviate, it stays abbreviated.
  const fits = (l: ReturnType<typeof layoutColumns>) => 2 + l.columns.reduce((n, c) => n + c.width, 0) + l.columns.length - 1;
  // (The width where the narrow cells fit in full but for the short id, which goes first.)
  const full = layoutColumns(cells, 300);
  const edge = fits(full) - (full.columns.find((c) => c.id === 'id')!.width + 1) + 1;
  assert.ok(layoutColumns(wider, edge).columns.find((c) => c.id === 'model')!.compact, 'the wide texts abbreviate the model column at this width');
  assert.ok(!layoutColumns(cells, edge).columns.find((c) => c.id === 'model')!.compact, 'the narrow ones do not');
  const atEdge = new ColumnWidths();
  layoutColumns(wider, edge, atEdge, NOW);
  assert.ok(layoutColumns(cells, edge, atEdge, NOW + 1_000).columns.find((c) => c.id === 'model')!.compact, 'held: still abbreviated a second later');

  // A resize starts again from the cells' own widths.
  const later = narrowFrom + 3 * COLUMN_HOLD_MS;
  layoutColumns(wider, 200, held, later);
  layoutColumns(wider, 199, held, later);
  assert.equal(widthsOf(layoutColumns(cells, 200, held, later + 1)), plainNarrow, 'after a resize nothing is held');
});

test('warnings: the message first, wrapped; the file, line and offset after it, wrapped; nothing cut at a narrow width', () => {
  const file = '/home/someone/.pi/agent/sessions/--home-someone-work-a-rather-long-project-name--/2026-12-07T16-00-00-000Z_99999999-9999-4999-8999-999999999999.jsonl';
  const message = 'invalid entry at offset 1304: loop-continuation-state data.armed: Invalid input: expected boolean, received string';
  const lines = warningLines([{ file, line: 8, offset: 1304, message, severity: 'error' }], 60).map(lineText);
  assert.match(lines[1]!, /^  error {3}invalid entry at offset 1304:/, 'the message leads');
  for (const l of lines) assert.ok(displayWidth(l) <= 60, `${displayWidth(l)} cells: ${l}`);
  const text = lines.slice(1).map((l) => l.trim()).join(' ');
  assert.ok(text.replace(/ /g, '').includes(`${file}:8@1304`.replace(/ /g, '')), `the whole place is there: ${text}`);
  assert.ok(text.includes('expected boolean, received string'), 'the whole message is there');
});

test('header: a held session whose request runs on (a disarm does not cut it) counts as live', () => {
  const header = (state: ReturnType<typeof fixtureState>) => lineText(headerLines({ snapshot: buildSnapshot(state, NOW, { host: HOST }), sort: 'first-limit', filter: '', filterEditing: false, readOnly: false })[0]!);
  const before = /(\d+) live/.exec(header(fixtureState()))![1]!;
  const held = header(fixtureState([cpEvent(requesting(ID.web, 10 * MIN, { held: { since: NOW - MIN, by: 'ann@box', heldTurnStarts: 0 } }))]));
  assert.match(held, new RegExp(`\\b${before} live`), held);
  const snap = buildSnapshot(fixtureState([cpEvent(requesting(ID.web, 10 * MIN, { held: { since: NOW - MIN, by: 'ann@box', heldTurnStarts: 0 } }))]), NOW, { host: HOST });
  assert.equal(snap.roots.find((r) => r.session === ID.web)?.state, 'held');
  const idleHeld = header(fixtureState([cpEvent(requesting(ID.web, 10 * MIN, { state: 'idle', request: null, held: { since: NOW - MIN, by: 'ann@box', heldTurnStarts: 0 } }))]));
  assert.match(idleHeld, new RegExp(`\\b${Number(before) - 1} live`), 'held and idle is not live');
});

test('a resume coming has no colour; one overdue (nothing restarted the root when due) is a warning', () => {
  // Stopped 90 s ago after its first resume: the second is predicted 2 min after the stop.
  const state = fixtureState([cpEvent(checkpoint(ID.ops, { state: 'stopped', recovery: { stoppedAt: NOW - 90_000, resumes: 1, nextResumeAt: null, reason: 'stalled request' } })), factsEvent(facts(ID.ops, 'ops-root'))]);
  const at = (t: number) => buildSnapshot(state, t, { host: HOST }).roots.find((r) => r.session === ID.ops)!;
  const coming = sessionCells(at(NOW), NOW).resume;
  assert.match(coming.text, /^0:30 #\d+ pred$/);
  assert.equal(coming.urgency, 'none');
  const late = sessionCells(at(NOW + 94_000), NOW + 94_000).resume;
  assert.match(late.text, /^-1:04 #\d+ pred$/);
  assert.equal(late.urgency, 'warning');
});

test('an idle or stopped checkpoint is stale past 75 s (it is rewritten every 30 s); an ended one never', () => {
  const row = (over: Partial<Checkpoint>) => buildSnapshot(fixtureState([cpEvent(checkpoint(ID.ops, over))]), NOW, { host: HOST }).roots.find((r) => r.session === ID.ops)!;
  assert.equal(row({ state: 'idle', request: null, updatedAt: NOW - 74_000 }).source.stale, false);
  const idle = row({ state: 'idle', request: null, updatedAt: NOW - 76_000 });
  assert.equal(idle.source.stale, true);
  assert.match(detailLines(idle, { now: NOW, width: 200, noColor: true, incidents: [], journal: undefined, acks: new Map(), activity: undefined, local: [] }).map(lineText).join('\n'), /STALE: refreshed at least every 60 s/);
  assert.equal(row({ state: 'stopped', request: null, updatedAt: NOW - 76_000 }).source.stale, true);
  assert.equal(row({ state: 'ended', request: null, updatedAt: NOW - 3_600_000 }).source.stale, false);
});

test('stale checkpoints are marked in the row', () => {
  const state = fixtureState([cpEvent(requesting(ID.web, 10 * MIN, { updatedAt: NOW - 45_000 }))]);
  const snap = buildSnapshot(state, NOW, { host: HOST });
  const web = snap.roots.find((r) => r.session === ID.web)!;
  const c = rowCells({ id: web.session, view: web, depth: 0, parent: null, last: false, laneCount: 0, collapsed: false }, NOW, true);
  assert.equal(c.state.text, 'requesting (stale)');
  assert.equal(c.state.compact, 'requesting*');
  assert.equal(c.age.text, '45s!');
});

test('activity: increases recorded when seen, bucketed per 10 s, drawn as a sparkline', () => {
  let log: ActivityLog = new Map();
  log = recordActivity(log, [{ session: 's', turn: 1, count: 100 }], NOW - 60_000);
  assert.equal(log.get('s')!.samples.length, 0, 'the first sight records nothing');
  const same = recordActivity(log, [{ session: 's', turn: 1, count: 100 }], NOW - 50_000);
  assert.equal(same, log, 'no change, same object');
  log = recordActivity(log, [{ session: 's', turn: 1, count: 130 }], NOW - 25_000);
  log = recordActivity(log, [{ session: 's', turn: 2, count: 5 }], NOW - 5_000); // new turn: all 5 are new
  const b = activityBuckets(log.get('s'), NOW);
  assert.equal(b.length, 90);
  assert.equal(b[89], 5);
  assert.equal(b[87], 30);
  assert.equal(b.reduce((x, y) => x + y, 0), 35);
  assert.equal(sparkline([0, 1, 2, 4]), '▁▃▅█');
  assert.equal(sparkline([0, 1, 100]), '▁▂█', 'any event shows above the floor');
  assert.deepEqual(squeeze([1, 1, 1, 1, 1, 1], 3), [2, 2, 2]);
});

test('timeline axis: marks placed in time order, ─ before the first limit and ═ after', () => {
  const axis = drawAxis(
    [
      { at: 0, ch: 'S', rank: 5 },
      { at: 40, ch: 'N', rank: 10 },
      { at: 50, ch: 'I', rank: 9 },
      { at: 100, ch: 'A', rank: 8 },
    ],
    0,
    100,
    21,
    50,
  );
  assert.equal(axis, 'S───────N─I═════════A');
  // Two marks on one cell: the lower rank moves aside rather than vanish.
  const crowded = drawAxis([{ at: 0, ch: 'S', rank: 1 }, { at: 0, ch: 'N', rank: 2 }, { at: 10, ch: 'A', rank: 3 }], 0, 10, 5, null);
  assert.equal(crowded, 'NS──A', 'at one instant: aside to the right');
  // A request started a moment before now, on now's cell: the start goes to the left of now, on
  // the side of its instant (it read `NS`, now before the start).
  const started = drawAxis([{ at: 100, ch: 'S', rank: 5 }, { at: 101, ch: 'N', rank: 10 }, { at: 1000, ch: 'I', rank: 9 }], 0, 1000, 5, null);
  assert.equal(started, 'SN──I');
  const after = drawAxis([{ at: 101, ch: 'e', rank: 4 }, { at: 100, ch: 'N', rank: 10 }, { at: 1000, ch: 'I', rank: 9 }], 0, 1000, 5, null);
  assert.equal(after, 'Ne──I', 'a mark after now: to its right');
});

test('owner action outcome: ack, journal, or no answer after 10 s', () => {
  const acks = new Map([[`${HOME}\0r1`, { v: 1 as const, id: 'r1', status: 'refused' as const, at: NOW, detail: 'not in flight', session: ID.api }]]);
  assert.equal(outcomeOf({ id: 'r1', home: HOME, requestedAt: NOW - 1000 }, acks, [], NOW).status, 'refused');
  assert.equal(outcomeOf({ id: 'r2', home: HOME, requestedAt: NOW - 9_000 }, acks, [], NOW).status, 'pending');
  const none = outcomeOf({ id: 'r2', home: HOME, requestedAt: NOW - 10_000 }, acks, [], NOW);
  assert.equal(none.status, 'no-answer');
  assert.equal(none.detail, NO_CONSUMER_TEXT);
  const journal = [{ v: 1 as const, at: NOW - 2000, kind: 'outcome' as const, id: 'r3', session: ID.api, action: 'arm' as const, status: 'stale-target' as const }];
  assert.equal(outcomeOf({ id: 'r3', home: HOME, requestedAt: NOW - 60_000 }, acks, journal, NOW).status, 'stale-target');
});

test('detail lines: owner actions from the journal, receipts staleness, lane status', () => {
  const state = fixtureState([
    cpEvent(checkpoint(ID.ops, { state: 'stopped', recovery: { stoppedAt: NOW - 30_000, resumes: 1, nextResumeAt: null, reason: 'provider error' } })),
    {
      type: 'journal',
      home: HOME,
      reset: true,
      entries: [
        { v: 1, at: NOW - 15_000, kind: 'requested', id: 'j1', session: ID.ops, action: 'disarm', by: 'owner' },
        { v: 1, at: NOW - 5_000, kind: 'requested', id: 'j2', session: ID.ops, action: 'arm', by: 'owner' },
      ],
    },
  ]);
  const snap = buildSnapshot(state, NOW, { host: HOST });
  const ops = snap.roots.find((r) => r.session === ID.ops)!;
  const text = detailLines(ops, { now: NOW, width: 120, noColor: true, incidents: [], journal: state.journal.get(HOME), acks: state.acks, activity: undefined, local: [] })
    .map(lineText)
    .join('\n');
  assert.ok(text.includes(`disarm by owner → ${NO_CONSUMER_TEXT}`), text);
  assert.ok(text.includes('Owner actions (newest first)'));
  // Newest first, as the state log and the incidents.
  assert.ok(text.indexOf('arm by owner → pending') < text.indexOf('disarm by owner'), text);
  // A request that failed here (never journalled) goes by when it was asked, not above the rest.
  const failed = detailLines(ops, { now: NOW, width: 120, noColor: true, incidents: [], journal: state.journal.get(HOME), acks: state.acks, activity: undefined, local: [{ action: 'abort', session: ID.ops, requestId: null, requestedAt: NOW - 60_000, status: 'failed', error: 'ENOSPC' }] })
    .map(lineText)
    .join('\n');
  assert.ok(failed.indexOf('disarm by owner') < failed.indexOf('abort → could not write the request: ENOSPC'), failed);
});

test('view reducer: keys in one batch each see the previous result; y queues one action', () => {
  const snap = buildSnapshot(fixtureState(), NOW, { host: HOST });
  const ctx: KeyContext = { roots: snap.roots, incidents: [], now: NOW, tableRows: 10, detailLines: 0, detailRows: 0, incidentRows: 5, recordLines: 0 };
  const press = (input: string, k: Partial<Key> = {}) => ({ type: 'key' as const, press: readKeypress(input, key(k), rw), ctx });
  let s = initialViewState();
  s = viewReducer(s, press('j'));
  s = viewReducer(s, press('j'));
  s = viewReducer(s, press('j'));
  assert.equal(s.cursor, ID.web);
  s = viewReducer(s, press('x'));
  assert.equal(s.confirm?.session, ID.web);
  s = viewReducer(s, press('q')); // anything but y cancels, even q
  assert.equal(s.confirm, null);
  assert.equal(s.quit, false);
  assert.equal(s.pending.length, 0);
  s = viewReducer(s, press('a'));
  s = viewReducer(s, press('y'));
  assert.equal(s.pending.length, 1);
  assert.equal(s.pending[0]!.action, 'arm');
  assert.equal(s.pending[0]!.status, 'queued');
  s = viewReducer(s, { type: 'request-answered', localId: 1, result: { id: 'same' }, at: NOW });
  s = viewReducer(s, press('a'));
  s = viewReducer(s, press('y'));
  s = viewReducer(s, { type: 'request-answered', localId: 2, result: { id: 'same' }, at: NOW });
  assert.equal(s.pending.length, 1, 'a repeated request with the same id shows once');
});

test('detail lines: retry episode, predicted resume, stale watcher receipt', () => {
  const state = fixtureState([
    cpEvent(checkpoint(ID.web, { state: 'retry-wait', episode: { startedAt: NOW - 3 * MIN, attempts: 2, lastError: '429 rate limited', lastErrorClass: 'rate-limit', nextRetryAt: NOW + 45_000 } })),
    cpEvent(checkpoint(ID.ops, { state: 'stopped', recovery: { stoppedAt: NOW - 90_000, resumes: 1, nextResumeAt: null, reason: 'stalled request' } })),
    factsEvent(
      facts(ID.ops, 'ops-root', {
        waitState: { at: NOW, timers: [], watchers: [{ id: 'w1', label: 'ci', pid: 99, phase: 'running', command: 'gh run watch', deadline: NOW + 20 * MIN, intervalS: 10 }], heldMessages: null },
      }),
    ),
    { type: 'receipt', receipt: { file: 'r', home: HOME, session: ID.ops, id: 'w1', phase: 'running', observations: 4, lastObservedAt: NOW - 60_000, deadline: null, result: null, pid: 99, command: 'gh', intervalS: 10, label: 'ci', note: null } },
  ]);
  const snap = buildSnapshot(state, NOW, { host: HOST });
  const text = (id: string) =>
    detailLines(snap.roots.find((r) => r.session === id)!, { now: NOW, width: 200, noColor: true, incidents: [], journal: undefined, acks: state.acks, activity: undefined, local: [] })
      .map(lineText)
      .join('\n');
  const web = text(ID.web);
  assert.match(web, /F─+N───r─+E/, web);
  assert.ok(web.includes('E retry episode    17:00 left'));
  assert.ok(web.includes('attempts 2 of 5 (3 left)'));
  assert.ok(web.includes('r next retry       0:45 left'));
  assert.ok(web.includes('429 rate limited'));
  const ops = text(ID.ops);
  assert.ok(ops.includes('R next resume      0:30 left'), ops);
  assert.ok(ops.includes('step 2 of the ladder · predicted'));
  assert.ok(ops.includes('receipt running, 4 observations, last 1:00 ago (STALE'));
});

test('a layout and a footer are reused only for the same inputs, and equal a fresh one', () => {
  const snap = buildSnapshot(fixtureState(), NOW, { host: HOST });
  const rows = treeRows(snap.roots, { sort: 'first-limit', filter: '', collapsed: new Set() });
  const cells = rows.map((r) => rowCellsCached(r, NOW, false));
  const wide = layoutColumns(cells, 200);
  assert.equal(layoutColumns(cells.slice(), 200), wide, 'the same cells objects in the same width: the same layout');
  assert.notEqual(layoutColumns(cells, 80), wide, 'another width: laid out again');
  const again = layoutColumns(cells, 200);
  assert.deepEqual(again, wide);
  // One row's cells replaced by an equal copy, then by cells that are wider: laid out again each time.
  const copy = cells.map((c, i) => (i === 0 ? structuredClone(c) : c));
  const relaid = layoutColumns(copy, 200);
  assert.notEqual(relaid, again);
  assert.deepEqual(relaid, again);
  const longName = 'a-session-name-much-longer-than-any-other-row-has-it';
  const wider = cells.map((c, i) => (i === 0 ? { ...c, name: { ...c.name, text: longName } } : c));
  const widerLayout = layoutColumns(wider, 200);
  assert.ok(widerLayout.columns.find((c) => c.id === 'name')!.width > wide.columns.find((c) => c.id === 'name')!.width, 'the wider name widens its column');
  assert.deepEqual(layoutColumns(cells.slice(0, -1), 200), layoutColumns(structuredClone(cells.slice(0, -1)), 200), 'fewer rows: a fresh layout');

  const footer = footerLine({ readOnly: false }, 120);
  assert.equal(footerLine({ readOnly: false }, 120), footer);
  const readOnly = footerLine({ readOnly: true }, 120);
  assert.notDeepEqual(readOnly, footer, 'read-only drops the owner actions from the hints');
  assert.ok(lineText(footerLine({ readOnly: false }, 40)).length <= 40);
  // However narrow, the way out and the help are said (at 60 it read `… s sort  ? help`).
  for (const w of [30, 40, 60]) assert.match(lineText(footerLine({ readOnly: false }, w)), /q quit {2}\? help$/, `at ${w}`);
  assert.match(lineText(footerLine({ readOnly: false }, 60)), /^↑↓ move/);
  // A view over the table says its own keys, not the table's (x did nothing in the incidents view).
  assert.equal(lineText(footerLine({ readOnly: false }, 120, null, 'incidents')), '↑↓ move  ⏎ open  / filter  Esc back  q quit  ? help');
  assert.equal(lineText(footerLine({ readOnly: false }, 120, null, 'audit')), '↑↓ scroll  Esc back  q quit  ? help');
  assert.equal(lineText(footerLine({ readOnly: false }, 120, null, 'help')), '↑↓ scroll  Esc close  q quit');
  assert.match(lineText(footerLine({ readOnly: false }, 120)), /x abort/, 'and the table its own again');
  assert.deepEqual(footerLine({ readOnly: false }, 120), footer, 'back to the first inputs: the same hints');
});

test('row cells, row lines and clipped lines are reused only while nothing they show changed', () => {
  const snap = buildSnapshot(fixtureState([cpEvent(requesting(ID.web, 10 * MIN))]), NOW, { host: HOST });
  const rows = treeRows(snap.roots, { sort: 'first-limit', filter: '', collapsed: new Set() });
  assert.ok(rows.some((r) => r.depth === 1) && rows.length >= 3, 'roots and lanes');
  const fresh = (r: TreeRow, now: number, noColor: boolean) => rowCells(r, now, noColor);
  for (const r of rows) {
    const a = rowCellsCached(r, NOW, false);
    assert.deepEqual(a, fresh(r, NOW, false));
    assert.equal(rowCellsCached({ ...r }, NOW, false), a, 'the same view, place and second: the same cells');
    // Each input the cells depend on gives the cells built afresh.
    const variants: [TreeRow, number, boolean][] = [
      [r, NOW + 1_000, false],
      [r, NOW + 1_000, true],
      [{ ...r, home: 'elsewhere' }, NOW + 1_000, true],
      [{ ...r, last: !r.last }, NOW + 1_000, true],
      [{ ...r, collapsed: !r.collapsed, laneCount: r.laneCount + 2 }, NOW + 1_000, true],
      [{ ...r, collapsed: true, laneCount: r.laneCount + 2 }, NOW + 1_000, true],
      [{ ...r, collapsed: true, laneCount: r.laneCount + 3 }, NOW + 1_000, true],
      [{ ...r, depth: r.depth === 0 ? 1 : 0 }, NOW + 1_000, true],
    ];
    for (const [row, now, noColor] of variants) assert.deepEqual(rowCellsCached(row, now, noColor), fresh(row, now, noColor), `${r.id} at ${now - NOW} ms`);
  }
  // `now` is in the key: a cache that ignored it would show the checkpoint's age of the last second.
  const web = rows.find((r) => r.id === ID.web)!;
  assert.notEqual(rowCellsCached(web, NOW, false).age.text, rowCellsCached(web, NOW + 5_000, false).age.text);
  // Another instant with the same age text (a later batch within the second): the same cells.
  assert.equal(ageText(web.view, NOW + 200), ageText(web.view, NOW + 300));
  assert.equal(rowCellsCached(web, NOW + 300, false), rowCellsCached(web, NOW + 200, false));

  const cells = rowCellsCached(web, NOW, false);
  const wide = layoutColumns([cells], 200);
  const line = rowLineCached(cells, wide, false, false);
  assert.deepEqual(line, rowLine(cells, wide, false, false));
  assert.equal(rowLineCached(cells, layoutColumns([cells], 200), false, false), line, 'a layout of the same columns and widths: the same line');
  const narrow = layoutColumns([cells], 60);
  for (const [layout, selected, noColor] of [[wide, true, false], [narrow, true, false], [narrow, true, true]] as const) {
    assert.deepEqual(rowLineCached(cells, layout, selected, noColor), rowLine(cells, layout, selected, noColor));
  }
  const clipped = clipLine(line, 40);
  assert.equal(clipLine(line, 40), clipped);
  assert.equal(displayWidth(lineText(clipped)), 40);
  assert.deepEqual(clipLine(line, 30), clipLine([...line], 30), 'another width: clipped afresh');
  assert.equal(displayWidth(lineText(clipLine(line, 30))), 30);
});

test('a row built again with nothing on screen changed keeps the cells it was drawn with, so the layout and its line are the last frame\'s; a row whose text changed gets new ones', () => {
  const snap = buildSnapshot(fixtureState([cpEvent(requesting(ID.web, 10 * MIN))]), NOW, { host: HOST });
  const rows = treeRows(snap.roots, { sort: 'first-limit', filter: '', collapsed: new Set() });
  const cells = rows.map((r) => rowCellsCached(r, NOW, false));
  const layout = layoutColumns(cells, 200);
  const i = rows.findIndex((r) => r.id === ID.web);
  const web = rows[i]!;
  // A new view object (as a patch makes for an append's new facts) that shows the same: the same cells.
  const rebuilt: TreeRow = { ...web, view: { ...web.view, lastActivityAt: (web.view.lastActivityAt ?? NOW) + 1 } };
  const again = rowCellsCached(rebuilt, NOW, false);
  assert.equal(again, cells[i], 'equal cells: the cells drawn last');
  const next = cells.map((c, k) => (k === i ? again : c));
  assert.equal(layoutColumns(next, 200), layout, 'so the same layout');
  assert.equal(rowLineCached(again, layout, false, false), rowLineCached(cells[i]!, layout, false, false), 'and the same line');
  // A view whose name changed: new cells, and the layout is made again (from cells of their own).
  const renamed: TreeRow = { ...web, view: { ...web.view, name: 'renamed-session' } };
  const changed = rowCellsCached(renamed, NOW, false);
  assert.notEqual(changed, cells[i]);
  assert.match(changed.name.text, /renamed-session$/);
  assert.deepEqual(changed, rowCells(renamed, NOW, false));
  assert.notEqual(layoutColumns(cells.map((c, k) => (k === i ? changed : c)), 200), layout);
  // And back, in a view built again once more: the original text, not the renamed cells the row
  // was last given (they are not reused for it).
  const back: TreeRow = { ...web, view: { ...web.view, lastActivityAt: (web.view.lastActivityAt ?? NOW) + 2 } };
  const backCells = rowCellsCached(back, NOW, false);
  assert.notEqual(backCells, changed);
  assert.deepEqual(backCells, rowCells(web, NOW, false));
});

test('a row with running countdowns keeps its cells across re-timed copies while the countdowns\' and age\'s texts are the same', () => {
  const cache = createSnapshotCache();
  // The inactivity deadline half a second off the age's second, so each can move alone.
  const state = fixtureState([cpEvent(requesting(ID.web, 10 * MIN + 500))]);
  const webAt = (now: number): TreeRow => {
    const snap = buildSnapshot(state, now, { host: HOST, cache });
    return treeRows(snap.roots, { sort: 'first-limit', filter: '', collapsed: new Set() }).find((r) => r.id === ID.web)!;
  };
  const a = webAt(NOW + 100);
  const b = webAt(NOW + 200);
  assert.notEqual(a.view, b.view, 'each snapshot re-times the row into a new copy');
  assert.ok(a.view.clocks.inactivity && b.view.clocks.inactivity, 'a running countdown');
  assert.equal(retimeBase(a.view), retimeBase(b.view), 'copies of the same base row');
  assert.equal(countdownKey(a.view), countdownKey(b.view));
  assert.equal(rowCellsCached(b, NOW + 200, false), rowCellsCached(a, NOW + 100, false), 'the same texts: the same cells');
  // The countdown's text moves (its second changes) while the age's does not: cells built afresh.
  const c = webAt(NOW + 300);
  const d = webAt(NOW + 700);
  assert.equal(ageText(c.view, NOW + 300), ageText(d.view, NOW + 700));
  assert.notEqual(countdownKey(c.view), countdownKey(d.view));
  const cc = rowCellsCached(c, NOW + 300, false);
  const dc = rowCellsCached(d, NOW + 700, false);
  assert.notEqual(dc.inactivity.text, cc.inactivity.text);
  assert.deepEqual(dc, rowCells(d, NOW + 700, false));
  // Every instant, every row, either colour mode: the kept cells are the ones built afresh.
  for (let now = NOW; now < NOW + 8_000; now += 137) {
    const snap = buildSnapshot(state, now, { host: HOST, cache });
    for (const r of treeRows(snap.roots, { sort: 'first-limit', filter: '', collapsed: new Set() })) {
      for (const noColor of [false, true]) assert.deepEqual(rowCellsCached(r, now, noColor), rowCells(r, now, noColor), `${r.id} at ${now - NOW} ms`);
    }
    // Cells' widths are measured once per cells object: the layout of kept cells is that of copies.
    const cells = treeRows(snap.roots, { sort: 'first-limit', filter: '', collapsed: new Set() }).map((r) => rowCellsCached(r, now, false));
    for (const width of [200, 120, 80, 60]) assert.deepEqual(layoutColumns(cells, width), layoutColumns(structuredClone(cells), width), `layout at ${width} columns`);
  }
});

test('sameObservations: only lists that would record nothing new are the same', () => {
  const a: ActivityObservation[] = [
    { session: 's1', turn: 3, count: 10 },
    { session: 's2', turn: null, count: 0 },
  ];
  assert.ok(sameObservations(a, a));
  assert.ok(sameObservations(a, a.map((o) => ({ ...o }))), 'equal values in other objects');
  assert.ok(sameObservations([], []));
  assert.ok(!sameObservations(a, [a[0]!]), 'a shorter list');
  for (const b of [
    [...a, { session: 's3', turn: 1, count: 1 }],
    [{ ...a[0]!, count: 11 }, a[1]!],
    [{ ...a[0]!, turn: 4 }, a[1]!],
    [a[0]!, { ...a[1]!, session: 's3' }],
  ]) {
    assert.ok(!sameObservations(a, b), JSON.stringify(b));
    // And folding such a list into a log that holds `a` changes it: the check skips nothing the log would record.
    const log = recordActivity(recordActivity(new Map(), a, NOW), a, NOW + 1_000);
    assert.notEqual(recordActivity(log, b, NOW + 2_000), log);
  }
});

test("a root's rows are reused only while the sort, filter, folding and home label are the same", () => {
  const snap = buildSnapshot(fixtureState([cpEvent(requesting(ID.web, 10 * MIN))]), NOW, { host: HOST });
  const roots = snap.roots;
  assert.ok(roots.some((r) => r.lanes.length >= 2), 'a root with lanes');
  // Copies of the roots are new objects: nothing cached for them, so their rows are built afresh.
  const fresh = (rs: readonly SessionView[], opts: Parameters<typeof treeRows>[1]) => treeRows(rs.map((r) => ({ ...r })), opts);
  const withLanes = roots.find((r) => r.lanes.length >= 2)!;
  // The lanes in the reverse of their names' order: 'first-limit' keeps them so, 'name' sorts them.
  const reversed = roots.map((r) => (r === withLanes ? { ...r, lanes: [...r.lanes].sort((a, b) => b.name.localeCompare(a.name)) } : r));
  const steps: [readonly SessionView[], Parameters<typeof treeRows>[1]][] = [
    [roots, { sort: 'first-limit', filter: '', collapsed: new Set() }],
    [reversed, { sort: 'first-limit', filter: '', collapsed: new Set() }],
    [reversed, { sort: 'name', filter: '', collapsed: new Set() }],
    [roots, { sort: 'name', filter: '', collapsed: new Set() }],
    [roots, { sort: 'activity', filter: '', collapsed: new Set() }],
    [roots, { sort: 'activity', filter: 'lane-a', collapsed: new Set() }],
    [roots, { sort: 'activity', filter: 'lane-a', collapsed: new Set([withLanes.session]) }],
    [roots, { sort: 'activity', filter: 'lane-a', collapsed: new Set() }],
    [roots, { sort: 'activity', filter: '', collapsed: new Set() }],
    // Another home appears: every root is labelled with its home.
    [[...roots, { ...roots[0]!, session: 'elsewhere-root', home: '/srv/other/.pi/agent', lanes: [] }], { sort: 'activity', filter: '', collapsed: new Set() }],
    // A root replaced (a lane dropped): its rows are built again; the others' kept.
    [roots.map((r) => (r === withLanes ? { ...r, lanes: r.lanes.slice(1) } : r)), { sort: 'activity', filter: '', collapsed: new Set() }],
  ];
  let before: TreeRow[] | null = null;
  for (const [rs, opts] of steps) {
    const rows = treeRows(rs, opts);
    assert.deepEqual(rows, fresh(rs, opts), JSON.stringify({ sort: opts.sort, filter: opts.filter, collapsed: [...opts.collapsed], roots: rs.length }));
    before = rows;
  }
  // Asked again with nothing changed: the same row objects.
  const again = treeRows(steps.at(-1)![0], steps.at(-1)![1]);
  assert.ok(before !== null && again.length === before.length && again.every((r, i) => r === before![i]));
});

test('the detail pane\'s resume history takes the state log\'s resume records (an event whose name contains resume), in time order', () => {
  const row = buildSnapshot(fixtureState([cpEvent(checkpoint(ID.ops, { state: 'idle', request: null, updatedAt: NOW - 1000 }))]), NOW, { host: HOST }).roots.find((r) => r.session === ID.ops)!;
  const ev = (seq: number, ev: string, at: number) => ({ file: '/r/codex/state-x-loop1.jsonl', line: seq, seq, at, ev, by: 'ext', raw: { v: 1, seq, ts: new Date(at).toISOString(), ev, by: 'ext', n: seq } });
  const view = {
    ...row,
    history: [{ at: NOW - 300_000, kind: 'assistant-error', summary: '503 overloaded' }],
    stateLog: [ev(1, 'dispatch', NOW - 400_000), ev(2, 'root-resume', NOW - 200_000), ev(3, 'heartbeat', NOW - 100_000)],
  };
  const text = detailLines(view, { now: NOW, width: 200, noColor: true, incidents: [], journal: undefined, acks: new Map(), activity: undefined, local: [] }).map(lineText);
  const start = text.findIndex((l) => l.startsWith('Retry / resume history (2)'));
  assert.ok(start >= 0, text.join('\n'));
  // Newest first: the resume (200 s ago), then the error (300 s ago); no dispatch or heartbeat.
  assert.match(text[start + 1]!, /state log root-resume by ext {2}n=2/);
  assert.match(text[start + 2]!, /assistant-error {2}503 overloaded/);
});

test('a retry of a provider loop-pi\'s recovery does not cover: EPISODE reads none, the detail pane says why, pi\'s next retry still shows', () => {
  const episode = { startedAt: NOW - 3 * MIN, attempts: 2, lastError: '503 overloaded', lastErrorClass: 'server', nextRetryAt: NOW + 45_000 };
  const row = (episodeApplies: boolean) =>
    buildSnapshot(fixtureState([cpEvent(checkpoint(ID.web, { state: 'retry-wait', episode, limits: { inactivityMs: 15 * MIN, absoluteMs: 75 * MIN, episodeMs: 20 * MIN, episodeMaxAttempts: 5, episodeApplies } }))]), NOW, { host: HOST }).roots.find(
      (r) => r.session === ID.web,
    )!;
  const uncovered = row(false);
  assert.equal(uncovered.clocks.episode, null);
  assert.equal(sessionCells(uncovered, NOW).episode.text, 'none');
  assert.equal(sessionCells(uncovered, NOW).resume.text, 'retry 0:45');
  const text = detailLines(uncovered, { now: NOW, width: 200, noColor: true, incidents: [], journal: undefined, acks: new Map(), activity: undefined, local: [] }).map(lineText).join('\n');
  assert.match(text, /E retry episode {4}none: anthropic is not in loopPi\.retryRecovery\.providerIds · pi's retries \(attempt 2 so far\) have no time bound/);
  assert.match(text, /r next retry {7}0:45 left/);
  // Covered: the episode's countdown.
  assert.match(sessionCells(row(true), NOW).episode.text, /^17:00 3\/5 left$/);
  // Read from another machine's `loop-dash serve`: the row has no checkpoint, pi's next retry tells the retry.
  const remoteRow = (v: typeof uncovered) => {
    const parsed = parseStatusDoc(JSON.parse(JSON.stringify(statusJson({ ...buildSnapshot(fixtureState(), NOW, { host: HOST }), roots: [v] }))));
    assert.ok('doc' in parsed);
    return remoteViews(parsed.doc, { url: 'http://studio:8099/api/status', host: 'studio', fetchedAt: NOW }, NOW, false).find((r) => r.session === ID.web)!;
  };
  assert.equal(sessionCells(remoteRow(uncovered), NOW).episode.text, 'none');
  assert.match(sessionCells(remoteRow(row(true)), NOW).episode.text, /^17:00 3\/5 left$/);
  const waiting = buildSnapshot(fixtureState([cpEvent(checkpoint(ID.web, { state: 'requesting', episode: null, limits: { inactivityMs: 15 * MIN, absoluteMs: 75 * MIN, episodeMs: 20 * MIN, episodeMaxAttempts: 5, episodeApplies: false } }))]), NOW, { host: HOST }).roots.find((r) => r.session === ID.web)!;
  assert.equal(sessionCells(remoteRow(waiting), NOW).episode.text, '—', 'no retry pending: no episode to speak of');
});

test('the dialogs on a root already held say so: abort and disarm change nothing but the owner\'s record', () => {
  const held = checkpoint(ID.web, { state: 'idle', held: { since: NOW - 60_000, by: 'owner', heldTurnStarts: 0 } } as Partial<Checkpoint>);
  const snap = buildSnapshot(fixtureState([cpEvent(held)]), NOW, { host: HOST });
  const web = snap.roots.find((r) => r.session === ID.web)!;
  assert.equal(web.held, true);
  assert.match(confirmText('abort', web, NOW).effect, /already held: this cuts nothing and changes nothing but the owner's record/);
  assert.match(confirmText('disarm', web, NOW).effect, /already held: disarming it again changes nothing/);
  // Held with a request in flight: the abort cuts it and keeps the root held.
  const heldRequesting = buildSnapshot(fixtureState([cpEvent(requesting(ID.web, 5 * 60_000, { held: { since: NOW - 60_000, by: 'owner', heldTurnStarts: 0 } } as Partial<Checkpoint>))]), NOW, { host: HOST }).roots.find((r) => r.session === ID.web)!;
  assert.match(confirmText('abort', heldRequesting, NOW).effect, /^This will cut the in-flight request turn 7 \(started [\d:]+ ago\) and keep the root held;/);
  // Not held: the usual words.
  const free = snap.roots.find((r) => r.session === ID.api)!;
  assert.match(confirmText('disarm', free, NOW).effect, /^This will hold the root/);
});

test('the abort dialog and command on a session without a checkpoint: the request is unknown, not "none in flight" (pi streamed while it read none)', () => {
  const snap = buildSnapshot(fixtureState(), NOW, { host: HOST });
  const bare = [...snap.roots, ...snap.roots.flatMap((r) => r.lanes)].find((v) => !v.source.checkpoint && !v.placeholder)!;
  assert.ok(bare, 'the fixture has a session without a checkpoint');
  const t = confirmText('abort', bare, NOW);
  assert.ok(t.facts.includes('request  unknown: no loop-dash checkpoint, so whether one is in flight cannot be seen'), t.facts.join('\n'));
  assert.doesNotMatch(t.facts.join('\n') + t.effect, /none in flight|No request is in flight/);
  assert.match(t.effect, /^Whether a request is in flight cannot be seen here \(no checkpoint\)/);
  const cli = describePlannedAction({ ...bare, checkpoint: null }, 'abort', null, NOW);
  assert.match(cli, /request {2}unknown: no loop-dash checkpoint/);
  assert.doesNotMatch(cli, /none in flight/);
  // With a checkpoint that says none runs: none in flight, as before.
  const idle = buildSnapshot(fixtureState([cpEvent(checkpoint(bare.session, { state: 'idle' }))]), NOW, { host: HOST });
  const seen = [...idle.roots, ...idle.roots.flatMap((r) => r.lanes)].find((v) => v.session === bare.session)!;
  assert.ok(confirmText('abort', seen, NOW).facts.includes('request  none in flight'));
});

test('the detail pane says when the stream was last heard from, after the model fell silent (keepalives: alive, not progress)', () => {
  const rowWith = (lastModelAgo: number, lastTransportAgo: number) => {
    const cp = requesting(ID.web, 15 * MIN - lastModelAgo);
    cp.request = { ...cp.request!, lastTransportEventAt: NOW - lastTransportAgo };
    return buildSnapshot(fixtureState([cpEvent(cp)]), NOW, { host: HOST }).roots.find((r) => r.session === ID.web)!;
  };
  const text = (v: ReturnType<typeof rowWith>) => clockLines(v, NOW, true).map((l) => l.map((s) => s.text).join('')).join('\n');
  // Silent for 4 minutes, a keepalive 3 s ago.
  assert.match(text(rowWith(4 * MIN, 3000)), /\n {2}stream activity \S+ \(0:03 ago\) · keepalives or raw events since the last model event: the connection is alive/);
  // Streaming: its last byte is the model's.
  assert.doesNotMatch(text(rowWith(2000, 2000)), /stream activity/);
});

test('an incident that names no session is listed, and counted in no row', () => {
  const rec = (file: string, session: string | null) => ({ file, home: HOME, cls: 'loop-x', known: false, session, at: NOW, limit: null, attempt: null, exhausted: false, movedAside: false, summary: '', raw: {} });
  const snap = buildSnapshot(fixtureState([{ type: 'incident', record: rec(`${HOME}/incidents/none.json`, null) }, { type: 'incident', record: rec(`${HOME}/incidents/web.json`, ID.web) }]), NOW, { host: HOST });
  assert.deepEqual(snap.incidents.map((i) => i.file).sort(), [`${HOME}/incidents/none.json`, `${HOME}/incidents/web.json`]);
  assert.equal(snap.roots.find((r) => r.session === ID.web)!.incidents, 1);
  assert.equal(snap.roots.reduce((n, r) => n + r.incidents + r.lanes.reduce((k, l) => k + l.incidents, 0), 0), 1);
});

test('rows read from another machine are placed as local ones: requests streaming in one minute by name, not by the instant that moves at each refresh', () => {
  // alpha's last event 0.8 s after zeta's: by their instants zeta goes first, by name alpha. Both
  // streaming (each checkpoint written at its last event).
  const stream = (id: string, name: string, lastAgo: number) => {
    const at = NOW - lastAgo;
    return [factsEvent(facts(id, name)), cpEvent(checkpoint(id, { state: 'requesting', updatedAt: at, request: { turn: 2, startedAt: NOW - 5 * MIN, lastModelEventAt: at, lastTransportEventAt: at, modelEvents: 5, keepalives: 0 } }))];
  };
  const a = 'a0a0a0a0-0000-4000-8000-000000000000';
  const b = 'b0b0b0b0-0000-4000-8000-000000000000';
  const local = buildSnapshot(fixtureState([...stream(a, 'zeta', 1_000), ...stream(b, 'alpha', 200)]), NOW, { host: HOST });
  const streaming = (roots: readonly SessionView[]) => roots.filter((r) => r.session === a || r.session === b).map((r) => r.name);
  assert.deepEqual(streaming(local.roots), ['alpha', 'zeta'], 'by name within the minute (by instant: zeta first)');
  const parsed = parseStatusDoc(JSON.parse(JSON.stringify(statusJson(local))));
  assert.ok('doc' in parsed);
  const remote = remoteViews(parsed.doc, { url: 'http://studio:8099/api/status', host: 'studio', fetchedAt: NOW }, NOW, false);
  assert.deepEqual(streaming(remote), ['alpha', 'zeta'], 'and so read from another machine, whose rows carry no checkpoint');
});
