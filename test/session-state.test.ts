import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Checkpoint } from '../src/contract/checkpoint.js';
import { type SessionState, type SessionStateInput, deriveSessionState } from '../src/model/session-state.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 9, 3, 14, 33, 0);
const NOW = T0 + 10 * MIN;

function checkpoint(over: Partial<Checkpoint> = {}): Checkpoint {
  return {
    v: 1,
    session: 's1',
    sessionFile: null,
    role: 'root',
    parentSession: null,
    cwd: '/repo',
    pid: 4242,
    pidStart: '123',
    host: 'h',
    model: 'm',
    thinking: null,
    limits: null,
    state: 'idle',
    request: null,
    episode: null,
    recovery: null,
    lastStop: null,
    held: null,
    ownerAbort: null,
    updatedAt: T0,
    ...over,
  };
}

const request = { turn: 1, startedAt: T0, lastModelEventAt: null, lastTransportEventAt: null, modelEvents: 0, keepalives: 3 };
const recovery = { stoppedAt: T0, resumes: 0, nextResumeAt: null, reason: 'provider error' };
const held = { since: T0, by: 'owner', heldTurnStarts: 0 };
const ownerAbort = { at: T0, requestId: 'r1' };

function input(over: Partial<SessionStateInput>): SessionStateInput {
  return { checkpoint: checkpoint(), liveness: 'alive', armed: true, heldByEntry: null, waitState: null, role: 'root', ...over };
}

const CASES: { name: string; input: SessionStateInput; state: SessionState; why?: RegExp }[] = [
  // lost
  { name: 'pid gone', input: input({ liveness: 'gone' }), state: 'lost', why: /gone/ },
  { name: 'pid reused', input: input({ liveness: 'pid-reused' }), state: 'lost', why: /another process/ },
  { name: 'remote checkpoint older than 60 s', input: input({ liveness: 'remote-stale' }), state: 'lost', why: /60 s/ },
  {
    name: 'a lost session that was requesting is lost',
    input: input({ liveness: 'gone', checkpoint: checkpoint({ state: 'requesting', request }) }),
    state: 'lost',
  },
  {
    name: 'lost outranks held',
    input: input({ liveness: 'pid-reused', checkpoint: checkpoint({ state: 'requesting', request, held }) }),
    state: 'lost',
  },
  { name: 'an ended checkpoint of a gone pid is not lost', input: input({ liveness: 'gone', checkpoint: checkpoint({ state: 'ended' }) }), state: 'ended' },
  { name: 'liveness unknown is not lost', input: input({ liveness: 'unknown' }), state: 'idle' },
  { name: 'remote and fresh is not lost', input: input({ liveness: 'remote-fresh' }), state: 'idle' },

  // held
  {
    name: 'a held session that is also requesting is held',
    input: input({ checkpoint: checkpoint({ state: 'requesting', request, held }) }),
    state: 'held',
    why: /disarmed/,
  },
  { name: 'owner abort not cleared', input: input({ checkpoint: checkpoint({ state: 'stopped', ownerAbort }) }), state: 'held', why: /aborted/ },
  {
    name: 'an owner abort is never recovering (armed, recovery open)',
    input: input({ checkpoint: checkpoint({ state: 'stopped', ownerAbort, recovery }) }),
    state: 'held',
  },
  {
    name: 'the last loop-dash-control entry says held',
    input: input({ heldByEntry: true, checkpoint: checkpoint({ state: 'tools' }) }),
    state: 'held',
    why: /loop-dash-control/,
  },
  { name: 'held entry with no checkpoint', input: input({ checkpoint: null, heldByEntry: true }), state: 'held' },
  // SPEC §3.1: loop-wait's heldMessages present = wakes held after an owner abort (an empty list too).
  {
    name: 'loop-wait holds wakes (heldMessages) while idle with a timer',
    input: input({ waitState: { timers: [{ at: NOW + MIN }], watchers: [], heldMessages: ['wake: CI done'] } }),
    state: 'held',
    why: /loop-wait holds 1 wake \(after an owner abort\)/,
  },
  { name: 'loop-wait heldMessages empty but present', input: input({ waitState: { timers: [], watchers: [], heldMessages: [] } }), state: 'held' },
  { name: 'loop-wait heldMessages with no checkpoint', input: input({ checkpoint: null, waitState: { timers: [], watchers: [], heldMessages: ['a', 'b'] } }), state: 'held', why: /no checkpoint; loop-wait holds 2 wakes/ },
  { name: 'loop-wait heldMessages null holds nothing', input: input({ waitState: { timers: [{ at: NOW + MIN }], watchers: [], heldMessages: null } }), state: 'waiting' },
  {
    name: 'loop-wait heldMessages, then the session armed from the dashboard (a later loop-dash-control entry): not held',
    input: input({ waitState: { at: NOW - 5000, timers: [{ at: NOW + MIN }], watchers: [], heldMessages: ['w'] }, dashControl: { at: NOW - 1000, held: false } }),
    state: 'waiting',
  },
  {
    name: 'loop-wait heldMessages written after an arm: held',
    input: input({ waitState: { at: NOW - 1000, timers: [], watchers: [], heldMessages: ['w'] }, dashControl: { at: NOW - 5000, held: false } }),
    state: 'held',
  },
  { name: 'loop-wait heldMessages while a request runs: requesting', input: input({ checkpoint: checkpoint({ state: 'requesting', request }), waitState: { timers: [], watchers: [], heldMessages: ['w'] } }), state: 'requesting' },
  { name: 'loop-wait heldMessages on an ended session: ended', input: input({ checkpoint: checkpoint({ state: 'ended' }), waitState: { timers: [], watchers: [], heldMessages: ['w'] } }), state: 'ended' },
  { name: 'held and ended', input: input({ checkpoint: checkpoint({ state: 'ended', held }) }), state: 'held' },

  // busy states
  { name: 'requesting', input: input({ checkpoint: checkpoint({ state: 'requesting', request }) }), state: 'requesting' },
  { name: 'tools', input: input({ checkpoint: checkpoint({ state: 'tools' }) }), state: 'tools' },
  { name: 'retry-wait', input: input({ checkpoint: checkpoint({ state: 'retry-wait' }) }), state: 'retry-wait' },
  { name: 'an entry saying not held does not hold', input: input({ heldByEntry: false, checkpoint: checkpoint({ state: 'tools' }) }), state: 'tools' },

  // recovering / stopped
  { name: 'armed root stopped with a recovery open', input: input({ checkpoint: checkpoint({ state: 'stopped', recovery }) }), state: 'recovering', why: /resume 1/ },
  {
    name: 'a lane is never recovering',
    input: input({ role: 'lane', checkpoint: checkpoint({ role: 'lane', state: 'stopped', recovery }) }),
    state: 'stopped',
    why: /lane/,
  },
  { name: 'disarmed root stopped', input: input({ armed: false, checkpoint: checkpoint({ state: 'stopped', recovery }) }), state: 'stopped', why: /disarmed/ },
  { name: 'armed unknown is not assumed', input: input({ armed: null, checkpoint: checkpoint({ state: 'stopped', recovery }) }), state: 'stopped', why: /unknown/ },
  { name: 'stopped with nothing recorded to resume it', input: input({ checkpoint: checkpoint({ state: 'stopped' }) }), state: 'stopped' },
  ...(['authentication failed', 'insufficient_quota', 'content policy refusal', 'context-length exceeded', 'error (auth)', '401 Unauthorized', 'OAuth token expired', 'authorization_error', 'error (policy)', 'content_policy_violation', 'refused by policy'] as const).map((reason) => ({
    name: `stopped by ${reason}: not resumed`,
    input: input({
      checkpoint: checkpoint({ state: 'stopped', recovery, lastStop: { at: T0, reason, error: null, limit: null } }),
    }),
    state: 'stopped' as const,
    why: /not resumed/,
  })),
  ...(['502 from api.example.com/v1/authors', 'upstream authority unavailable', '429: rate limit policy, retry later'] as const).map((error) => ({
    name: `stopped by "${error}" (no authentication or policy error): resumed`,
    input: input({ checkpoint: checkpoint({ state: 'stopped', recovery, lastStop: { at: T0, reason: 'error', error, limit: null } }) }),
    state: 'recovering' as const,
  })),
  {
    name: 'stopped by a ceiling abort: resumed',
    input: input({
      checkpoint: checkpoint({ state: 'stopped', recovery, lastStop: { at: T0, reason: 'ceiling-abort', error: null, limit: 'inactivity' } }),
    }),
    state: 'recovering',
  },

  // waiting / idle
  { name: 'idle with a timer in the future', input: input({ waitState: { timers: [{ at: NOW + MIN }], watchers: [] } }), state: 'waiting' },
  { name: 'idle with only a past timer', input: input({ waitState: { timers: [{ at: NOW - 1 }], watchers: [] } }), state: 'idle' },
  { name: 'idle with a timer at exactly now', input: input({ waitState: { timers: [{ at: NOW }], watchers: [] } }), state: 'idle' },
  { name: 'idle with a timer of unknown time', input: input({ waitState: { timers: [{ at: null }], watchers: [] } }), state: 'waiting' },
  { name: 'idle with a running watcher', input: input({ waitState: { timers: [], watchers: [{ phase: 'running' }] } }), state: 'waiting' },
  { name: 'idle with a starting watcher', input: input({ waitState: { timers: [], watchers: [{ phase: 'starting' }] } }), state: 'waiting' },
  {
    name: 'idle with done and failed watchers only',
    input: input({ waitState: { timers: [], watchers: [{ phase: 'done' }, { phase: 'failed' }] } }),
    state: 'idle',
  },
  { name: 'idle, empty wait state', input: input({ waitState: { timers: [], watchers: [] } }), state: 'idle' },
  { name: 'idle', input: input({}), state: 'idle' },
  {
    name: 'a wait state does not make a stopped root waiting',
    input: input({ armed: false, checkpoint: checkpoint({ state: 'stopped' }), waitState: { timers: [{ at: NOW + MIN }], watchers: [] } }),
    state: 'stopped',
  },

  // ended / unknown
  { name: 'ended', input: input({ checkpoint: checkpoint({ state: 'ended' }) }), state: 'ended' },
  { name: 'no checkpoint', input: input({ checkpoint: null }), state: 'unknown', why: /session file/ },
  { name: 'no checkpoint, entry says not held', input: input({ checkpoint: null, heldByEntry: false }), state: 'unknown' },
];

for (const c of CASES) {
  test(`state: ${c.name} → ${c.state}`, () => {
    const got = deriveSessionState(c.input, NOW);
    assert.equal(got.state, c.state);
    assert.ok(got.why.length > 0);
    if (c.why) assert.match(got.why, c.why);
  });
}

test('every state of the precedence list is reached by the table', () => {
  const all: SessionState[] = ['lost', 'held', 'requesting', 'tools', 'retry-wait', 'recovering', 'stopped', 'waiting', 'idle', 'ended', 'unknown'];
  const reached = new Set(CASES.map((c) => deriveSessionState(c.input, NOW).state));
  assert.deepEqual(all.filter((s) => !reached.has(s)), []);
});
