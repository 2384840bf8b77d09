/**
 * RELIABILITY.md group D — control requests — end to end, where the existing tests stop at one
 * side: the dashboard's write path (src/control), the real consumer (the extension runtime and
 * its control inbox, driven by a stand-in for pi's event API), the live store reading the acks and
 * the journal back, and the words the views show. D1, D2, D5 (disk faults), D6 (no consumer) and
 * D7 are covered by test/control-faults.test.ts, D3 (same id) and D4 (dashboard side) by
 * test/control.test.ts; those tests carry the case ids.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CONTROL_TTL_MS, type ControlAck } from '../src/contract/control.js';
import { homePaths } from '../src/contract/paths.js';
import { AtomicWriteError, awaitAck, controlDirFor, nodeControlFs, requestAction, type ControlFs, type Requester } from '../src/control/index.js';
import { registerLoopDash } from '../src/extension/index.js';
import type { PiApi, PiContext } from '../src/extension/pi-api.js';
import type { ModelState } from '../src/model/reducer.js';
import { buildSnapshot } from '../src/model/snapshot.js';
import { describeOutcome, journalActions, NO_ANSWER_MS, outcomeOf } from '../src/views/owner-actions.js';
import { faultHome, newSession, removeHome, shown, startProbe, wake, watchLoop } from './support/fault-home.js';
import { runWriter } from './support/fault-writer.js';

const CASE = { timeout: 30_000 };
const BY: Requester = { user: 'owner', host: os.hostname(), pid: process.pid, tool: 'reliability' };
const SESSION = 'd-sess';

/** A stand-in for pi's extension API: enough events to run one session's loop-dash runtime. */
function fakePi(session = SESSION) {
  const handlers = new Map<string, (e: unknown, ctx: PiContext) => unknown>();
  const calls = { abort: 0 };
  const ctx: PiContext = {
    cwd: '/work/d',
    sessionManager: { getSessionId: () => session, getSessionFile: () => undefined, getHeader: () => null, getBranch: () => [] },
    model: { provider: 'scripted', id: 'm' },
    thinkingLevel: 'off',
    isIdle: () => false,
    abort: () => {
      calls.abort++;
    },
  };
  const pi = {
    on: (event: string, h: (e: unknown, ctx: PiContext) => unknown) => handlers.set(event, h),
    appendEntry: () => undefined,
    sendUserMessage: () => undefined,
    sendMessage: () => undefined,
    getSettings: () => ({}),
  } as unknown as PiApi;
  const emit = (event: string, e: Record<string, unknown> = {}) => handlers.get(event)?.({ type: event, ...e }, ctx);
  return { pi, calls, emit };
}

/** One incarnation of the session: a runtime started, with a request in flight from `startedAt`. */
function incarnation(home: string, pid: number, startedAt: number, now?: () => number, session = SESSION) {
  const f = fakePi(session);
  const rt = registerLoopDash(f.pi, { home, pid, host: os.hostname(), pidStart: () => String(pid), controlPollMs: 50, now });
  f.emit('session_start', { reason: 'startup' });
  f.emit('turn_start', { turnIndex: 0, timestamp: startedAt });
  f.emit('message_update', { assistantMessageEvent: { type: 'text_delta', delta: 'working' } });
  return { ...f, rt, stop: () => f.emit('session_shutdown', { reason: 'quit' }) };
}

const outcomeIn = (s: ModelState, home: string, id: string, requestedAt: number, now: number) => outcomeOf({ id, home, requestedAt }, s.acks, s.journal.get(home), now);

test('D3: the owner presses abort twice, and retries a disarm after a timeout → one request id each, the consumer acts once, the UI shows one pending request, then applied', CASE, async () => {
  const home = faultHome();
  const p = await startProbe(home, { reconcileMs: 60_000 });
  const live = incarnation(home, 4101, Date.now() - 30_000);
  let later: ReturnType<typeof incarnation> | null = null;
  try {
    p.always('one owner action shown per session', (s) => ([SESSION, 'd-sess-2'].some((x) => journalActions(s.journal.get(home), x).length > 1) ? 'two actions' : null));
    // Two presses at once on a live session: one request, one abort.
    await p.until((s) => buildSnapshot(s, Date.now(), { host: os.hostname() }).roots.some((r) => r.checkpoint?.request), 'the request in flight on the dashboard', 5_000);
    const seen = buildSnapshot(p.state(), Date.now(), { host: os.hostname() }).roots.find((r) => r.session === SESSION)!.checkpoint!.request!;
    const target = { turn: seen.turn, startedAt: seen.startedAt };
    const [a, b] = await Promise.all([
      requestAction(home, { session: SESSION, action: 'abort', reason: 'first press', target }, { now: Date.now, by: BY }),
      requestAction(home, { session: SESSION, action: 'abort', reason: 'second press', target }, { now: Date.now, by: BY }),
    ]);
    assert.equal(a.id, b.id);
    assert.equal((await awaitAck(home, SESSION, a.id, { timeoutMs: 5_000, pollMs: 20 })).status, 'applied');
    assert.equal(live.calls.abort, 1, 'the consumer cut the request once');

    // A session whose consumer is not up yet: press, press, retry after the 10 s timeout.
    const T = Date.now();
    const x = await requestAction(home, { session: 'd-sess-2', action: 'disarm', reason: 'press' }, { now: () => T, by: BY });
    const y = await requestAction(home, { session: 'd-sess-2', action: 'disarm', reason: 'press again' }, { now: () => T + 300, by: BY });
    const retry = await requestAction(home, { session: 'd-sess-2', action: 'disarm', reason: 'retry' }, { now: () => T + NO_ANSWER_MS + 2_000, by: BY });
    assert.deepEqual([y.id, retry.id], [x.id, x.id]);
    assert.deepEqual([y.reused, retry.reused], [true, true]);
    await p.until((s) => journalActions(s.journal.get(home), 'd-sess-2').length === 1, 'the pending request on the dashboard', 5_000);
    assert.equal(outcomeIn(p.state(), home, x.id, T, T + 1_000).status, 'pending');
    later = incarnation(home, 4102, Date.now(), undefined, 'd-sess-2');
    assert.equal((await awaitAck(home, 'd-sess-2', x.id, { timeoutMs: 5_000, pollMs: 20 })).status, 'applied');
    await p.until((s) => s.acks.has(`${home}\0${a.id}`) && s.acks.has(`${home}\0${x.id}`), 'both acks on the dashboard', 5_000);
    for (const [session, id] of [[SESSION, a.id], [' d-sess-2'.trim(), x.id]] as const) {
      const dir = controlDirFor(home, session);
      assert.deepEqual(fs.readdirSync(dir).filter((n) => !n.startsWith('.')).sort(), [`${id}.ack.json`, `${id}.json`], `${session}: one request, one answer`);
      // The consumer journals what it did (source: extension); the dashboard journals what it saw.
      const acted = (p.state().journal.get(home) ?? []).filter((e) => e.id === id && e.kind === 'outcome' && e.source === 'extension');
      assert.equal(acted.length, 1, `${session}: acted on once`);
      const actions = journalActions(p.state().journal.get(home), session);
      assert.equal(actions.length, 1);
      assert.equal(outcomeIn(p.state(), home, id, actions[0]!.requestedAt, Date.now()).status, 'applied');
    }
    assert.deepEqual(p.violations(), []);
  } finally {
    live.stop();
    later?.stop();
    await p.stop();
    removeHome(home);
  }
});

test('D4: an abort aimed at a request of the previous incarnation (the session restarted) → the consumer rejects it as stale; the UI says "rejected: … restarted", never done', CASE, async () => {
  const home = faultHome();
  const t1 = Date.now() - 60_000;
  const first = incarnation(home, 4201, t1);
  const p = await startProbe(home, { reconcileMs: 60_000 });
  try {
    await p.until((s) => buildSnapshot(s, Date.now(), { host: os.hostname() }).roots[0]?.checkpoint?.request?.startedAt === t1, 'the first incarnation on the dashboard', 5_000);
    // What the owner saw before the restart.
    const seen = buildSnapshot(p.state(), Date.now(), { host: os.hostname() }).roots[0]!.checkpoint!.request!;
    first.stop();
    const second = incarnation(home, 4202, Date.now());
    try {
      const handle = await requestAction(home, { session: SESSION, action: 'abort', reason: 'cut it', target: { turn: seen.turn, startedAt: seen.startedAt } }, { now: Date.now, by: BY });
      let applied = false;
      p.always('never shown as done', (s) => {
        const o = outcomeIn(s, home, handle.id, Date.now() - 1, Date.now());
        applied ||= o.status === 'applied';
        return applied ? 'applied' : null;
      });
      const ack = await awaitAck(home, SESSION, handle.id, { timeoutMs: 5_000, pollMs: 20 });
      assert.equal(ack.status, 'stale-target');
      assert.match(ack.ack?.detail ?? '', /not the one in flight/);
      await p.until((s) => s.acks.has(`${home}\0${handle.id}`), 'the ack on the dashboard', 5_000);
      const o = outcomeIn(p.state(), home, handle.id, Date.now() - 1, Date.now());
      assert.equal(o.status, 'stale-target');
      assert.match(describeOutcome(o), /^rejected: the session restarted/);
      assert.equal(second.calls.abort, 0, 'the new incarnation was not cut');
      assert.equal(first.calls.abort, 0);
      assert.deepEqual(p.violations(), []);
    } finally {
      second.stop();
    }
  } finally {
    await p.stop();
    removeHome(home);
  }
});

test('D5: ENOSPC while writing a request → a clear error in the UI, no partial file, the dashboard keeps reading (event loop free)', CASE, async () => {
  const home = faultHome();
  const file = newSession(home, SESSION, [wake('D5 before')]);
  const p = await startProbe(home, { reconcileMs: 60_000 });
  const full: ControlFs = {
    ...nodeControlFs,
    open: async (f, flags, mode) => {
      const real = await nodeControlFs.open(f, flags, mode);
      if (!f.startsWith(homePaths(home).control) || flags === 'r') return real;
      return {
        ...real,
        write: async (buf, offset, length, position) => {
          await real.write(buf, offset, Math.floor(length / 2), position);
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        },
        sync: () => real.sync(),
        chmod: (m: number) => real.chmod(m),
        close: () => real.close(),
      };
    },
  };
  const loop = watchLoop();
  try {
    const started = Date.now();
    const err = await requestAction(home, { session: SESSION, action: 'disarm', reason: 'night' }, { now: Date.now, by: BY, fs: full }).then(
      () => assert.fail('the write must fail'),
      (e: unknown) => e,
    );
    const took = Date.now() - started;
    assert.ok(err instanceof AtomicWriteError && err.code === 'ENOSPC', String(err));
    assert.deepEqual(fs.readdirSync(controlDirFor(home, SESSION)), [], 'no partial request, no temp');
    // The outcome reaches the UI through the journal.
    await p.until((s) => (s.journal.get(home) ?? []).some((e) => e.status === 'write-failed'), 'the write-failed journal line', 5_000);
    const line = p.state().journal.get(home)!.find((e) => e.status === 'write-failed')!;
    const o = outcomeIn(p.state(), home, line.id, line.at, Date.now());
    assert.equal(o.status, 'failed');
    assert.match(describeOutcome(o), /^could not write the request: .*ENOSPC/);
    const seen = loop.stop(); // (the writer below is the test's own process spawn: not measured)
    // Still responsive: the store goes on reading, and nothing blocked the loop.
    await runWriter([{ op: 'append', file, text: wake('D5 after') }]);
    await p.until((s) => shown(s, file).join() === 'D5 before,D5 after', 'an append after the failure', 5_000);
    assert.ok(took < 1_000, `the failure took ${took} ms`);
    assert.ok(seen.maxBusyMs <= 50, `event loop blocked ${seen.maxBusyMs.toFixed(1)} ms (longest gap ${seen.maxGapMs.toFixed(1)} ms)`);
  } finally {
    loop.stop();
    await p.stop();
    removeHome(home);
  }
});

test('D6: consumer down, the request outlives its TTL → "no consumer answered in 10 s" in the UI; a consumer that starts later does not execute it', CASE, async () => {
  const home = faultHome();
  const T = Date.now();
  const p = await startProbe(home, { reconcileMs: 60_000 });
  try {
    const handle = await requestAction(home, { session: SESSION, action: 'abort', reason: 'late', target: { turn: 1, startedAt: T - 5_000 } }, { now: () => T, by: BY });
    await p.until((s) => journalActions(s.journal.get(home), SESSION).length === 1, 'the pending request on the dashboard', 5_000);
    const pending = outcomeIn(p.state(), home, handle.id, T, T + NO_ANSWER_MS - 1);
    assert.equal(pending.status, 'pending');
    const silent = outcomeIn(p.state(), home, handle.id, T, T + NO_ANSWER_MS);
    assert.equal(silent.status, 'no-answer');
    assert.equal(describeOutcome(silent), 'no consumer answered in 10 s (is the loop-dash extension loaded in this root?)');
    // The session comes up after the TTL, with that very request in flight: it must not be cut.
    const late = incarnation(home, 4601, T - 5_000, () => T + CONTROL_TTL_MS + 1_000);
    try {
      const ack = await awaitAck(home, SESSION, handle.id, { timeoutMs: 5_000, pollMs: 20 });
      assert.equal(ack.status, 'expired');
      assert.equal(late.calls.abort, 0, 'not executed late');
      await p.until((s) => s.acks.has(`${home}\0${handle.id}`), 'the ack on the dashboard', 5_000);
      const o = outcomeIn(p.state(), home, handle.id, T, T + CONTROL_TTL_MS + 2_000);
      assert.equal(o.status, 'expired');
      assert.match(describeOutcome(o), /^expired before it was applied/);
      const ackFile = JSON.parse(fs.readFileSync(path.join(controlDirFor(home, SESSION), `${handle.id}.ack.json`), 'utf8')) as ControlAck;
      assert.equal(ackFile.status, 'expired');
    } finally {
      late.stop();
    }
  } finally {
    await p.stop();
    removeHome(home);
  }
});
