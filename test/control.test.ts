import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CONTROL_MAX_BYTES,
  CONTROL_TTL_MS,
  controlRequestSchema,
  journalEntrySchema,
  type ControlAck,
  type JournalEntry,
} from '../src/contract/control.js';
import { homePaths } from '../src/contract/paths.js';
import { actionPort } from '../src/app/run-dashboard.js';
import type { SessionView } from '../src/model/snapshot.js';
import { journalActions } from '../src/views/owner-actions.js';
import {
  ackPathFor,
  appendLineDurable,
  awaitAck,
  buildControlRequest,
  controlDirFor,
  ControlInputError,
  describeAckResult,
  describePlannedAction,
  ensurePrivateDir,
  findSession,
  isTempName,
  makeRequestId,
  pendingRequestFor,
  removeStaleTemps,
  requestAction,
  requestIdTime,
  runControlCommand,
  submitControlRequest,
  targetFromCheckpoint,
  abortScope,
  writeFileAtomic,
  type ControlCommandIo,
  type ControlSessionLike,
  type ControlTarget,
  type Requester,
} from '../src/control/index.js';

const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
const BY: Requester = { user: 'owner', host: os.hostname(), pid: process.pid, tool: 'test' };

function tempHome(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-control-'));
}

function modeOf(p: string): number {
  return fs.statSync(p).mode & 0o777;
}

function journal(home: string): JournalEntry[] {
  const file = homePaths(home).journal;
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => journalEntrySchema.parse(JSON.parse(line)));
}

/** Waits for a condition, polling, with a bound. */
async function waitFor(cond: () => boolean, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

// --- A fake consumer: what the pi extension will do, reduced to the contract (SPEC §4.2). -------

/** Reads every unanswered request of `session` and writes its ack; returns the acks written. */
async function consumeOnce(home: string, session: string, opts: { now: number; inFlight: ControlTarget | null }): Promise<ControlAck[]> {
  const dir = controlDirFor(home, session);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const acks: ControlAck[] = [];
  for (const name of names) {
    const m = /^([A-Za-z0-9_-]{1,80})\.json$/.exec(name); // temp and dot files never match
    if (!m) continue;
    const id = m[1]!;
    if (names.includes(`${id}.ack.json`)) continue;
    const file = path.join(dir, name);
    const st = fs.lstatSync(file);
    let status: ControlAck['status'] = 'applied';
    let detail = '';
    const parsed = st.isFile() && st.size <= CONTROL_MAX_BYTES ? controlRequestSchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8'))) : null;
    if (!parsed?.success) [status, detail] = ['refused', 'not a valid request'];
    else if (parsed.data.session !== session) [status, detail] = ['refused', 'for another session'];
    else if (parsed.data.expiresAt <= opts.now) [status, detail] = ['expired', 'older than its TTL'];
    else if (parsed.data.action === 'abort' && parsed.data.target) {
      const t = parsed.data.target;
      if (!opts.inFlight || opts.inFlight.turn !== t.turn || opts.inFlight.startedAt !== t.startedAt) [status, detail] = ['stale-target', 'session restarted'];
      else detail = `cut turn ${t.turn}`;
    } else detail = parsed.data.action === 'abort' ? 'held (nothing in flight)' : parsed.data.action;
    const ack: ControlAck = { v: 1, id, status, at: opts.now, detail };
    await writeFileAtomic(ackPathFor(home, session, id), JSON.stringify(ack));
    acks.push(ack);
  }
  return acks;
}

/** Runs `consumeOnce` every few ms until stopped. */
function startConsumer(home: string, session: string, opts: { now: () => number; inFlight: ControlTarget | null }): () => Promise<ControlAck[]> {
  const all: ControlAck[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      all.push(...(await consumeOnce(home, session, { now: opts.now(), inFlight: opts.inFlight })));
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    return all;
  };
}

// --- ids and building --------------------------------------------------------------------------

test('request ids are unique, sortable by time, file-name safe, and carry their time', () => {
  const ids = new Set<string>();
  for (let i = 0; i < 5000; i++) ids.add(makeRequestId(T0));
  assert.equal(ids.size, 5000);
  for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{1,80}$/);
  const a = makeRequestId(T0, () => 'ffff');
  const b = makeRequestId(T0 + 1, () => '0000');
  const c = makeRequestId(T0 + 86_400_000 * 365, () => '0000');
  assert.deepEqual([c, a, b].sort(), [a, b, c]);
  assert.equal(requestIdTime(a), T0);
  assert.equal(requestIdTime('hand-made'), null);
});

test('a built request has the contract fields and a 30 s lifetime; abort carries the target it saw', () => {
  const r = buildControlRequest({ session: 's1', action: 'abort', reason: 'runaway', target: { turn: 4, startedAt: T0 - 5000 }, now: T0, by: BY });
  assert.equal(controlRequestSchema.safeParse(r).success, true);
  assert.equal(r.v, 1);
  assert.equal(r.requestedAt, T0);
  assert.equal(r.expiresAt, T0 + CONTROL_TTL_MS);
  assert.deepEqual(r.target, { turn: 4, startedAt: T0 - 5000 });
  assert.deepEqual(r.by, BY);
  const hold = buildControlRequest({ session: 's1', action: 'abort', reason: '', target: null, now: T0, by: BY });
  assert.equal(hold.target, null);
  const disarm = buildControlRequest({ session: 's1', action: 'disarm', reason: '', now: T0, by: BY });
  assert.equal('target' in disarm, false);
});

test('bad input is refused with ControlInputError', () => {
  const base = { action: 'disarm' as const, reason: '', now: T0, by: BY };
  for (const session of ['../etc', 'a/b', 'a..b', '', '.hidden', 'a\\b', 'x\n']) {
    assert.throws(() => buildControlRequest({ ...base, session }), ControlInputError, session);
  }
  assert.throws(() => buildControlRequest({ ...base, session: 's', target: { turn: 1, startedAt: T0 } }), ControlInputError);
  assert.throws(() => buildControlRequest({ ...base, session: 's', reason: 'x'.repeat(501) }), ControlInputError);
  assert.throws(() => buildControlRequest({ ...base, session: 's', action: 'abort', target: { turn: -1, startedAt: T0 } }), ControlInputError);
  assert.throws(() => buildControlRequest({ ...base, session: 's', action: 'explode' as 'arm' }), ControlInputError);
  // Over CONTROL_MAX_BYTES: consumers would refuse it, so it is never written.
  assert.throws(() => buildControlRequest({ ...base, session: 's', by: { ...BY, user: 'u'.repeat(CONTROL_MAX_BYTES) } }), /4096/);
});

// --- submitting -------------------------------------------------------------------------------

test('a request lands with the right fields, 0700 dirs and 0600 files regardless of umask, and a requested journal line', async () => {
  const home = tempHome();
  const old = process.umask(0o277); // without explicit chmod this would give 0500 dirs, 0400 files
  try {
    const r = buildControlRequest({ session: 'sess-1', action: 'abort', reason: 'stuck', target: { turn: 2, startedAt: T0 - 1 }, now: T0, by: BY });
    const res = await submitControlRequest(home, r, { now: T0 });
    assert.equal(res.file, path.join(home, 'loop-dash', 'control', 'sess-1', `${r.id}.json`));
    assert.equal(res.created, true);
    assert.equal(res.journalError, null);
    assert.deepEqual(JSON.parse(fs.readFileSync(res.file, 'utf8')), r);
    for (const d of [homePaths(home).dash, homePaths(home).control, path.dirname(res.file)]) assert.equal(modeOf(d), 0o700, d);
    assert.equal(modeOf(res.file), 0o600);
    assert.equal(modeOf(homePaths(home).journal), 0o600);
    const lines = journal(home);
    assert.equal(lines.length, 1);
    assert.deepEqual(
      { kind: lines[0]!.kind, id: lines[0]!.id, session: lines[0]!.session, action: lines[0]!.action, status: lines[0]!.status, at: lines[0]!.at, detail: lines[0]!.detail },
      { kind: 'requested', id: r.id, session: 'sess-1', action: 'abort', status: 'pending', at: T0, detail: 'stuck' },
    );
    // No temp file is left beside it.
    assert.deepEqual(fs.readdirSync(path.dirname(res.file)), [`${r.id}.json`]);
  } finally {
    process.umask(old);
  }
});

test('an unsafe session id is refused before any write: nothing is created under the home', async () => {
  const home = tempHome();
  for (const session of ['../escape', 'a/b', 'x..y']) {
    const forged = { ...buildControlRequest({ session: 'ok', action: 'disarm', reason: '', now: T0, by: BY }), session };
    await assert.rejects(submitControlRequest(home, forged, { now: T0 }), ControlInputError);
    await assert.rejects(requestAction(home, { session, action: 'disarm', reason: '' }, { now: () => T0, by: BY }), ControlInputError);
    assert.throws(() => controlDirFor(home, session), ControlInputError);
  }
  assert.deepEqual(fs.readdirSync(home), []);
  assert.equal(fs.existsSync(path.join(path.dirname(home), 'escape')), false);
});

test('an already expired request is not written', async () => {
  const home = tempHome();
  const r = buildControlRequest({ session: 's', action: 'arm', reason: '', now: T0, by: BY });
  await assert.rejects(submitControlRequest(home, r, { now: T0 + CONTROL_TTL_MS }), ControlInputError);
  assert.deepEqual(fs.readdirSync(home), []);
});

test('D3: submitting the same request twice writes one file and one journal line; a different request under that id is refused', async () => {
  const home = tempHome();
  const r = buildControlRequest({ session: 's', action: 'disarm', reason: 'night', now: T0, by: BY });
  const first = await submitControlRequest(home, r, { now: T0 });
  const again = await submitControlRequest(home, r, { now: T0 + 2000 });
  assert.equal(first.created, true);
  assert.equal(again.created, false);
  assert.equal(again.file, first.file);
  assert.deepEqual(fs.readdirSync(path.dirname(first.file)), [`${r.id}.json`]);
  assert.equal(journal(home).length, 1);
  const other = buildControlRequest({ session: 's', action: 'arm', reason: '', now: T0, by: BY, id: r.id });
  await assert.rejects(submitControlRequest(home, other, { now: T0 }), /already names a different request/);
  assert.equal(JSON.parse(fs.readFileSync(first.file, 'utf8')).action, 'disarm');
});

test('D3: pressing twice (at once, or again later) re-uses the pending id: one file, one journal line', async () => {
  const home = tempHome();
  let now = T0;
  const deps = { now: () => now, by: BY };
  const target = { turn: 7, startedAt: T0 - 60_000 };
  const [a, b] = await Promise.all([
    requestAction(home, { session: 's', action: 'abort', reason: 'x', target }, deps),
    requestAction(home, { session: 's', action: 'abort', reason: 'x', target }, deps),
  ]);
  assert.equal(a.id, b.id);
  assert.deepEqual([a.reused, b.reused].sort(), [false, true]);
  now = T0 + 12_000; // a retry after a 10 s timeout
  const c = await requestAction(home, { session: 's', action: 'abort', reason: 'x', target }, deps);
  assert.equal(c.id, a.id);
  assert.equal(c.reused, true);
  assert.equal(c.expiresAt, T0 + CONTROL_TTL_MS);
  const dir = controlDirFor(home, 's');
  assert.deepEqual(fs.readdirSync(dir), [`${a.id}.json`]);
  assert.equal(journal(home).filter((e) => e.kind === 'requested').length, 1);

  // A different request in flight is a different target: a new request, never the old one.
  const d = await requestAction(home, { session: 's', action: 'abort', reason: 'x', target: { turn: 8, startedAt: T0 } }, deps);
  assert.notEqual(d.id, a.id);
  // Once answered (or expired), a press makes a new request.
  await consumeOnce(home, 's', { now, inFlight: target });
  const e = await requestAction(home, { session: 's', action: 'abort', reason: 'x', target }, deps);
  assert.notEqual(e.id, a.id);
  now = T0 + CONTROL_TTL_MS + 1;
  assert.equal(await pendingRequestFor(home, 's', 'abort', now, { target: { turn: 8, startedAt: T0 } }), null);
  // Another process's pending request is not ours to re-use.
  assert.equal(await pendingRequestFor(home, 's', 'abort', T0 + 13_000, { pid: process.pid + 1 }), null);
});

// --- the write primitives ---------------------------------------------------------------------

test('writeFileAtomic replaces whole files, exclusive mode never replaces, and no temp is left', async () => {
  const dir = path.join(tempHome(), 'a', 'b');
  await ensurePrivateDir(dir);
  assert.equal(modeOf(dir), 0o700);
  assert.equal(modeOf(path.dirname(dir)), 0o700);
  const f = path.join(dir, 'x.json');
  assert.equal(await writeFileAtomic(f, 'one'), 'written');
  assert.equal(await writeFileAtomic(f, 'two'), 'written');
  assert.equal(fs.readFileSync(f, 'utf8'), 'two');
  assert.equal(await writeFileAtomic(f, 'three', { exclusive: true }), 'exists');
  assert.equal(fs.readFileSync(f, 'utf8'), 'two');
  assert.equal(await writeFileAtomic(path.join(dir, 'y.json'), 'y', { exclusive: true, mode: 0o640 }), 'written');
  assert.equal(modeOf(path.join(dir, 'y.json')), 0o640);
  assert.deepEqual(fs.readdirSync(dir).sort(), ['x.json', 'y.json']);
});

test('removeStaleTemps removes only old temp names', async () => {
  const dir = tempHome();
  const now = Date.now();
  const old = path.join(dir, '.abc.json.tmp-123-deadbeef');
  const fresh = path.join(dir, '.def.json.tmp-123-cafe');
  const request = path.join(dir, 'abc.json');
  const oddDot = path.join(dir, '.keep');
  for (const f of [old, fresh, request, oddDot]) fs.writeFileSync(f, '{');
  fs.utimesSync(old, new Date(now - 600_000), new Date(now - 600_000));
  fs.utimesSync(request, new Date(now - 600_000), new Date(now - 600_000));
  assert.equal(isTempName(path.basename(old)), true);
  assert.equal(isTempName('abc.json'), false);
  assert.deepEqual(await removeStaleTemps(dir, 60_000, now), [old]);
  assert.deepEqual(fs.readdirSync(dir).sort(), ['.def.json.tmp-123-cafe', '.keep', 'abc.json']);
  assert.deepEqual(await removeStaleTemps(path.join(dir, 'missing'), 1, now), []);
});

test('appendLineDurable appends whole lines to a 0600 file and refuses embedded line breaks', async () => {
  const file = path.join(tempHome(), 'j', 'actions.jsonl');
  await appendLineDurable(file, '{"a":1}');
  await appendLineDurable(file, '{"a":2}');
  assert.equal(fs.readFileSync(file, 'utf8'), '{"a":1}\n{"a":2}\n');
  assert.equal(modeOf(file), 0o600);
  assert.equal(modeOf(path.dirname(file)), 0o700);
  await assert.rejects(appendLineDurable(file, 'a\nb'), TypeError);
  assert.equal(fs.readFileSync(file, 'utf8'), '{"a":1}\n{"a":2}\n');
});

// --- waiting for the answer -------------------------------------------------------------------

async function submitted(home: string, action: 'abort' | 'disarm' | 'arm', target?: ControlTarget | null) {
  const r = buildControlRequest({ session: 's', action, reason: '', target, now: Date.now(), by: BY });
  await submitControlRequest(home, r, { now: r.requestedAt });
  return r;
}

test('awaitAck returns applied when the consumer acks, woken by the directory watch, and journals the outcome', async () => {
  const home = tempHome();
  const target = { turn: 3, startedAt: Date.now() - 1000 };
  const r = await submitted(home, 'abort', target);
  const started = Date.now();
  // Poll only once a minute: only the watch can wake us in time.
  const waiting = awaitAck(home, 's', r.id, { pollMs: 60_000, timeoutMs: 5000, action: 'abort' });
  await consumeOnce(home, 's', { now: Date.now(), inFlight: target });
  const res = await waiting;
  assert.equal(res.status, 'applied');
  assert.equal(res.ack?.id, r.id);
  assert.ok(Date.now() - started < 2000);
  assert.equal(describeAckResult(res), 'applied: cut turn 3');
  const outcome = journal(home).find((e) => e.kind === 'outcome');
  assert.equal(outcome?.status, 'applied');
  assert.equal(outcome?.id, r.id);
});

test("the dashboard's action port journals 'no-answer' only for a request that expired unanswered, and nothing of its own for one the session acked", async () => {
  const home = tempHome();
  const view = (session: string) => ({ session, home, name: session, model: null, role: 'root', checkpoint: null, remote: null }) as unknown as SessionView;
  const followed = new Map<string, string>();
  let shift = 0;
  const port = actionPort(() => Date.now() + shift, { noAnswerMs: 300, followed: (id, status) => followed.set(id, status) });
  const silent = await port.request('disarm', view('quiet'));
  assert.ok('id' in silent, JSON.stringify(silent));
  const answered = await port.request('disarm', view('s'));
  assert.ok('id' in answered, JSON.stringify(answered));
  await consumeOnce(home, 's', { now: Date.now(), inFlight: null });
  // Both waits over (bounded: 300 ms each, 5 s at most).
  const over = async (n: number) => {
    const deadline = Date.now() + 5_000;
    while (followed.size < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  };
  await over(2);
  assert.deepEqual([followed.get(silent.id), followed.get(answered.id)], ['no-answer', 'applied']);
  const outcomes = (id: string) => journal(home).filter((e) => e.id === id && e.kind === 'outcome');
  assert.deepEqual(outcomes(silent.id), [], 'unanswered but still valid: the session may yet apply it, so no outcome is journalled');
  // The dashboard wrote no outcome for the answered one (the extension journals what it acks;
  // this test's consumer writes the ack alone).
  assert.deepEqual(outcomes(answered.id), []);

  // One that has expired unanswered by the end of the wait gets its line: nothing can apply it now.
  const expired = await port.request('arm', view('gone'));
  assert.ok('id' in expired, JSON.stringify(expired));
  shift = CONTROL_TTL_MS + 1;
  await over(3);
  assert.equal(followed.get(expired.id), 'no-answer');
  assert.deepEqual(outcomes(expired.id).map((e) => e.status), ['no-answer'], 'the request nobody answered has its outcome');
});

test('the journal: the session’s outcome may land before the request’s own line; the owner is still read from it', () => {
  const at = Date.now();
  const lines = [
    { v: 1, at: at + 5, kind: 'outcome', id: 'x1', session: 's', action: 'abort', status: 'applied', detail: 'cut', source: 'extension' },
    { v: 1, at, kind: 'requested', id: 'x1', session: 's', action: 'abort', status: 'pending', detail: '', by: 'ann@box' },
  ].map((l) => journalEntrySchema.parse(l));
  assert.deepEqual(journalActions(lines, 's'), [{ id: 'x1', action: 'abort', requestedAt: at, by: 'ann@box' }]);
});

test('D4 (dashboard side): awaitAck returns stale-target when the request in flight is not the one the owner saw', async () => {
  const home = tempHome();
  const r = await submitted(home, 'abort', { turn: 3, startedAt: 1000 });
  const waiting = awaitAck(home, 's', r.id, { timeoutMs: 5000 }); // action read from the request file
  await consumeOnce(home, 's', { now: Date.now(), inFlight: { turn: 1, startedAt: 5000 } });
  const res = await waiting;
  assert.equal(res.status, 'stale-target');
  assert.match(describeAckResult(res), /^rejected, nothing was cut.*session restarted/);
  assert.notEqual(res.status, 'applied');
  const outcome = journal(home).find((e) => e.kind === 'outcome');
  assert.deepEqual([outcome?.status, outcome?.action], ['stale-target', 'abort']);
});

test('the poll backstop finds the ack when no watch is possible; an expired request is answered expired', async () => {
  const home = tempHome();
  const r = await submitted(home, 'disarm');
  const waiting = awaitAck(home, 's', r.id, { pollMs: 10, timeoutMs: 5000, watchDir: () => () => undefined });
  await consumeOnce(home, 's', { now: r.expiresAt + 1, inFlight: null });
  const res = await waiting;
  assert.equal(res.status, 'expired');
  assert.match(describeAckResult(res), /^expired/);
});

test('an invalid ack is not an answer: no-answer names it; an aborted wait rejects and journals nothing', async () => {
  const home = tempHome();
  const r = await submitted(home, 'arm');
  fs.writeFileSync(ackPathFor(home, 's', r.id), '{"v":1,"id":"x"');
  const res = await awaitAck(home, 's', r.id, { timeoutMs: 100, pollMs: 10 });
  assert.equal(res.status, 'no-answer');
  assert.match(res.status === 'no-answer' ? res.detail : '', /no consumer answered within 0\.1 s.*not valid JSON/);

  const r2 = await submitted(home, 'arm');
  const ac = new AbortController();
  const waiting = awaitAck(home, 's', r2.id, { timeoutMs: 5000, signal: ac.signal });
  ac.abort(new Error('quit'));
  await assert.rejects(waiting, /quit/);
  assert.equal(journal(home).filter((e) => e.id === r2.id && e.kind === 'outcome').length, 0);
});

// --- the command ------------------------------------------------------------------------------

// A SessionView must fit the structural type the command needs (compile-time check).
const _fits: (v: SessionView) => ControlSessionLike = (v) => v;
void _fits;

function rowsFor(home: string, now: number): ControlSessionLike[] {
  return [
    {
      session: 'aaaa1111-root',
      name: 'api loop',
      model: 'anthropic/claude-x',
      home,
      role: 'root',
      checkpoint: { state: 'requesting', request: { turn: 3, startedAt: now - 192_000 } },
      lanes: [{ session: 'aaaa2222-lane', name: 'lane one', model: 'openai/gpt-y', home, role: 'lane', checkpoint: { state: 'idle', request: null } }],
    },
    { session: 'bbbb', name: null, model: null, home, role: 'root', checkpoint: null },
  ];
}

function ioFor(opts: { isTTY: boolean; answer?: string; now: number }) {
  const out: string[] = [];
  const err: string[] = [];
  const asked: string[] = [];
  const io: ControlCommandIo = {
    out: (s) => out.push(s),
    err: (s) => err.push(s),
    isTTY: opts.isTTY,
    now: () => opts.now,
    ask: async (q) => {
      asked.push(q);
      return opts.answer ?? '';
    },
  };
  return { io, out, err, asked, text: () => out.join('') + err.join('') };
}

test('the command finds sessions by id, unique prefix or name, through lanes, and names the candidates on ambiguity', () => {
  const rows = rowsFor('/h', T0);
  const lane = findSession(rows, 'aaaa2');
  assert.equal('session' in lane ? lane.session.session : null, 'aaaa2222-lane');
  const amb = findSession(rows, 'aaaa');
  assert.match('error' in amb ? amb.error : '', /matches 2 sessions[\s\S]*aaaa1111-root \(api loop\)[\s\S]*aaaa2222-lane/);
  const none = findSession(rows, 'zz');
  assert.match('error' in none ? none.error : '', /no session matches "zz"/);
  const exact = findSession([...rows, { ...rows[1]!, session: 'bbbb-2' }], 'bbbb');
  assert.equal('session' in exact ? exact.session.session : null, 'bbbb'); // a full id wins over being a prefix
  // The name the dashboard shows, when no id starts with it; a name two sessions share lists both ids.
  const named = findSession(rows, 'lane one');
  assert.equal('session' in named ? named.session.session : null, 'aaaa2222-lane');
  // A lane by the name shown under its root; two roots' lanes of that name list both.
  const laneRows: ControlSessionLike[] = [
    { ...rows[0]!, lanes: [{ ...rows[0]!.lanes![0]!, session: 'dd01-lane', name: 'api loop/L1' }] },
    { ...rows[1]!, session: 'cccc', name: 'web', lanes: [{ ...rows[0]!.lanes![0]!, session: 'dd02-lane', name: 'web/L1' }] },
  ];
  assert.match('error' in findSession(laneRows, 'L1') ? (findSession(laneRows, 'L1') as { error: string }).error : '', /"L1" matches 2 sessions; name one by its id[\s\S]*dd01-lane[\s\S]*dd02-lane/);
  const oneLane = findSession([laneRows[0]!], 'L1');
  assert.equal('session' in oneLane ? oneLane.session.session : null, 'dd01-lane');
  // An id prefix in capitals, as read off a screen.
  const upper = findSession(rows, 'AAAA1111');
  assert.equal('session' in upper ? upper.session.session : null, 'aaaa1111-root');
  const twins = findSession([...rows, { ...rows[1]!, session: 'cccc', name: 'api loop' }], 'api loop');
  assert.match('error' in twins ? twins.error : '', /"api loop" matches 2 sessions; name one by its id[\s\S]*aaaa1111-root[\s\S]*cccc/);
  const idFirst = findSession([...rows, { ...rows[1]!, session: 'dddd', name: 'bbbb' }], 'bbbb');
  assert.equal('session' in idFirst ? idFirst.session.session : null, 'bbbb', 'an id (or prefix) match wins over a name');
  assert.deepEqual(targetFromCheckpoint(rows[0]!), { turn: 3, startedAt: T0 - 192_000 });
  assert.equal(targetFromCheckpoint({ ...rows[0]!, checkpoint: { state: 'retry-wait', request: { turn: 3, startedAt: 1 } } }), null);
});

test('the command says when the session looks lost or ended, as the dashboard dialog does', () => {
  const row: ControlSessionLike = { session: 'llll', name: 'gone', model: 'm', home: '/h', role: 'root', state: 'lost', checkpoint: { state: 'requesting', request: { turn: 2, startedAt: T0 - 3000 } } };
  assert.match(describePlannedAction(row, 'abort', targetFromCheckpoint(row), T0), /note {5}the session looks lost \(its process is gone\): nothing may be there to answer/);
  assert.match(describePlannedAction({ ...row, state: 'ended' }, 'arm', null, T0), /note {5}the session looks ended/);
  assert.doesNotMatch(describePlannedAction({ ...row, state: 'requesting' }, 'abort', targetFromCheckpoint(row), T0), /note/);
});

test('an abort while tools run targets the request that asked for them; in a retry wait it cancels the retry', () => {
  const base: ControlSessionLike = { session: 'tttt', name: 'tooling', model: 'm', home: '/h', role: 'root', checkpoint: null };
  const tools = { ...base, checkpoint: { state: 'tools', request: null, lastRequest: { turn: 4, startedAt: T0 - 65_000, endedAt: T0 - 5_000, stopReason: 'toolUse' } } };
  assert.deepEqual(targetFromCheckpoint(tools), { turn: 4, startedAt: T0 - 65_000 });
  assert.equal(abortScope(tools), 'tools');
  assert.equal(targetFromCheckpoint({ ...base, checkpoint: { state: 'tools', request: null, lastRequest: { turn: 'x', startedAt: 1 } } }), null, 'a malformed lastRequest is no target');
  assert.equal(targetFromCheckpoint({ ...base, checkpoint: { state: 'idle', request: null, lastRequest: { turn: 4, startedAt: 1 } } }), null, 'an ended request is a target only while its tools run');
  const toolsText = describePlannedAction(tools, 'abort', targetFromCheckpoint(tools), T0);
  assert.match(toolsText, /request  turn 4 ended \(started 1m 05s ago[^)]*\); its tools are running/);
  assert.match(toolsText, /effect   stop the tools of this turn/);
  const retry = { ...base, checkpoint: { state: 'retry-wait', request: null } };
  assert.equal(abortScope(retry), 'retry');
  assert.match(describePlannedAction(retry, 'abort', null, T0), /pi's retry of the failed one is pending[\s\S]*effect   cancel pi's pending retry/);
  assert.equal(abortScope({ ...base, checkpoint: { state: 'idle', request: null } }), 'none');
});

test('the command refuses bad input with 2 and writes nothing', async () => {
  const home = tempHome();
  const loader = async () => ({ roots: rowsFor(home, T0) });
  const run = (session: string, action: string, isTTY = false, extra = {}) => {
    const h = ioFor({ isTTY, now: T0 });
    return runControlCommand({ homes: [home], session, action, snapshotLoader: loader, io: h.io, ...extra }).then((code) => ({ code, h }));
  };
  const amb = await run('aaaa', 'abort', false, { yes: true });
  assert.equal(amb.code, 2);
  assert.match(amb.h.err.join(''), /matches 2 sessions/);
  assert.equal((await run('nope', 'abort', false, { yes: true })).code, 2);
  assert.equal((await run('bbbb', 'explode', false, { yes: true })).code, 2);
  assert.equal((await run('bbbb', 'arm', false, { yes: true, reason: 'r'.repeat(501) })).code, 2);
  const noTty = await run('aaaa1', 'abort');
  assert.equal(noTty.code, 2);
  assert.match(noTty.h.err.join(''), /add --yes/);
  assert.equal(noTty.h.asked.length, 0);
  const failing = await runControlCommand({ homes: [home], session: 'x', action: 'arm', snapshotLoader: async () => Promise.reject(new Error('boom')), io: ioFor({ isTTY: false, now: T0 }).io });
  assert.equal(failing, 2);
  assert.deepEqual(fs.readdirSync(home), []);
});

test('the command asks on a TTY, showing session, name, model, request age, turn and effect; "n" cancels with 1', async () => {
  const home = tempHome();
  const h = ioFor({ isTTY: true, answer: 'n', now: T0 });
  const code = await runControlCommand({ homes: [home], session: 'aaaa1', action: 'abort', snapshotLoader: async () => ({ roots: rowsFor(home, T0) }), io: h.io });
  assert.equal(code, 1);
  assert.equal(h.asked.length, 1);
  const shown = h.out.join('');
  for (const part of ['ABORT root aaaa1111-root', '"api loop"', 'anthropic/claude-x', 'turn 3, running for 3m 12s', 'cut this request', 'cancelled']) {
    assert.ok(shown.includes(part), `${part} in:\n${shown}`);
  }
  assert.deepEqual(fs.readdirSync(home), []);
});

test('names and models from files are shown without terminal escapes; absurd times do not crash', () => {
  const row: ControlSessionLike = { session: 's', name: 'evil\u001b]0;owned\u0007\u001b[2J', model: 'm\r\n', home: '/h', role: 'root', checkpoint: { state: 'requesting', request: { turn: 1, startedAt: 1e300 } } };
  const text = describePlannedAction(row, 'abort', targetFromCheckpoint(row), T0);
  assert.doesNotMatch(text, /[\u0000-\u0009\u000b-\u001f\u007f]/);
  assert.match(text, /"evil\?\]0;owned\?\?\[2J"/);
  assert.match(text, /since 1e\+300/);
});

test('abort --yes sends the checkpoint target, waits for the ack and exits 0 when applied', async () => {
  const home = tempHome();
  const startedAt = Date.now() - 192_000;
  const rows = rowsFor(home, Date.now());
  rows[0]!.checkpoint = { state: 'requesting', request: { turn: 3, startedAt } };
  const stop = startConsumer(home, 'aaaa1111-root', { now: () => Date.now(), inFlight: { turn: 3, startedAt } });
  const h = ioFor({ isTTY: false, now: Date.now() });
  h.io.now = () => Date.now();
  const code = await runControlCommand({ homes: [home], session: 'aaaa1111-root', action: 'abort', reason: 'runaway', yes: true, snapshotLoader: async () => ({ roots: rows }), io: h.io, by: BY, pollMs: 10 });
  const acks = await stop();
  assert.equal(code, 0, h.text());
  assert.equal(acks.length, 1);
  const req = controlRequestSchema.parse(JSON.parse(fs.readFileSync(path.join(controlDirFor(home, 'aaaa1111-root'), `${acks[0]!.id}.json`), 'utf8')));
  assert.deepEqual(req.target, { turn: 3, startedAt });
  assert.equal(req.reason, 'runaway');
  assert.match(h.out.join(''), /abort: applied: cut turn 3/);
  assert.deepEqual(journal(home).map((e) => [e.kind, e.status]), [['requested', 'pending'], ['outcome', 'applied']]);
});

test('abort on a session whose request changed exits 1 with "rejected"; disarm on a lane after "y" exits 0', async () => {
  const home = tempHome();
  const rows = rowsFor(home, Date.now());
  const stop = startConsumer(home, 'aaaa1111-root', { now: () => Date.now(), inFlight: { turn: 4, startedAt: Date.now() } });
  const h = ioFor({ isTTY: false, now: Date.now() });
  h.io.now = () => Date.now();
  const code = await runControlCommand({ homes: [home], session: 'aaaa1', action: 'abort', yes: true, snapshotLoader: async () => ({ roots: rows }), io: h.io, pollMs: 10 });
  await stop();
  assert.equal(code, 1);
  assert.match(h.err.join(''), /rejected, nothing was cut/);

  const stopLane = startConsumer(home, 'aaaa2222-lane', { now: () => Date.now(), inFlight: null });
  const h2 = ioFor({ isTTY: true, answer: 'y', now: Date.now() });
  h2.io.now = () => Date.now();
  const code2 = await runControlCommand({ homes: [home], session: 'aaaa2222-lane', action: 'disarm', snapshotLoader: async () => ({ roots: rows }), io: h2.io, pollMs: 10 });
  const laneAcks = await stopLane();
  assert.equal(code2, 0, h2.text());
  assert.match(h2.out.join(''), /DISARM lane aaaa2222-lane[\s\S]*effect   hold the session/);
  const req = JSON.parse(fs.readFileSync(path.join(controlDirFor(home, 'aaaa2222-lane'), `${laneAcks[0]!.id}.json`), 'utf8'));
  assert.equal('target' in req, false);
});

test('abort with no request in flight sends a null target and says it only holds; no consumer → exit 1 after the timeout', async () => {
  const home = tempHome();
  const h = ioFor({ isTTY: false, now: Date.now() });
  h.io.now = () => Date.now();
  // Its checkpoint says idle: nothing is in flight (without one, that is unknown: views-units).
  const idle = () => rowsFor(home, Date.now()).map((r) => (r.session === 'bbbb' ? { ...r, checkpoint: { state: 'idle', request: null } } : r));
  const code = await runControlCommand({ homes: [home], session: 'bbbb', action: 'abort', yes: true, snapshotLoader: async () => ({ roots: idle() }), io: h.io, timeoutMs: 100, pollMs: 10 });
  assert.equal(code, 1);
  assert.match(h.out.join(''), /request  none in flight[\s\S]*nothing is cut/);
  assert.match(h.err.join(''), /no consumer answered within 0\.1 s[\s\S]*stays valid until/);
  const dir = controlDirFor(home, 'bbbb');
  const [name] = fs.readdirSync(dir);
  assert.equal(JSON.parse(fs.readFileSync(path.join(dir, name!), 'utf8')).target, null);
  assert.deepEqual(journal(home).map((e) => e.status), ['pending'], 'still valid: no outcome journalled, the session may yet apply it');
});
