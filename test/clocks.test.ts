import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type ClockInput, clockInputFromCheckpoint, computeClocks, formatRemaining } from '../src/model/clocks.js';
import type { Checkpoint } from '../src/contract/checkpoint.js';

const SEC = 1000;
const MIN = 60 * SEC;
/** 3 October, 14:33 UTC: the afternoon of the article. */
const T0 = Date.UTC(2026, 9, 3, 14, 33, 0);
const LIMITS = { inactivityMs: 15 * MIN, absoluteMs: 75 * MIN, episodeMs: 20 * MIN, episodeMaxAttempts: 4 };

function requestInput(lastModelEventAt: number | null, extra: Partial<ClockInput> = {}): ClockInput {
  return { limits: LIMITS, request: { startedAt: T0, lastModelEventAt }, episode: null, recovery: null, ...extra };
}

/** The latest event at or before `now` of a stream that emits every `everyMs` from T0 until `untilMs`. */
function lastEvent(now: number, everyMs: number, untilMs = Number.POSITIVE_INFINITY): number | null {
  const t = Math.min(now, T0 + untilMs);
  if (t < T0 + everyMs) return null;
  return T0 + Math.floor((t - T0) / everyMs) * everyMs;
}

test('a request that streams model events for 60 min and answers is never cut', () => {
  for (let m = 0; m <= 60; m++) {
    const now = T0 + m * MIN;
    const c = computeClocks(requestInput(lastEvent(now, 10 * SEC)), now);
    assert.ok(c.inactivity!.remainingMs > 0, `inactivity still ahead at minute ${m}`);
    assert.ok(c.absolute!.remainingMs > 0, `absolute still ahead at minute ${m}`);
  }
  // It answers at 60:00: no request in flight, no request clocks.
  const done = computeClocks({ limits: LIMITS, request: null, episode: null, recovery: null }, T0 + 60 * MIN);
  assert.equal(done.inactivity, null);
  assert.equal(done.absolute, null);
  assert.equal(done.firstToFire, null);
  assert.equal(done.marginMs, null);
});

test('a keepalive-only request is cut by inactivity at 15:00, 60 min before the absolute limit', () => {
  // Keepalives are not model events: lastModelEventAt stays null.
  const atStart = computeClocks(requestInput(null), T0);
  assert.equal(atStart.inactivity!.remainingMs, 15 * MIN);
  assert.equal(formatRemaining(atStart.inactivity!.remainingMs), '15:00');
  assert.equal(formatRemaining(atStart.absolute!.remainingMs), '1:15:00');

  const cut = computeClocks(requestInput(null), T0 + 15 * MIN);
  assert.deepEqual(cut.inactivity, { at: T0 + 15 * MIN, remainingMs: 0 });
  assert.deepEqual(cut.absolute, { at: T0 + 75 * MIN, remainingMs: 60 * MIN });
  assert.equal(cut.firstToFire, 'inactivity');
  assert.equal(cut.marginMs, 60 * MIN);
  assert.equal(formatRemaining(cut.inactivity!.remainingMs), '0:00');

  const late = computeClocks(requestInput(null), T0 + 15 * MIN + SEC);
  assert.equal(late.inactivity!.remainingMs, -SEC, 'overdue is negative, never clamped');
  assert.equal(formatRemaining(late.inactivity!.remainingMs), '-0:01');
});

test('an endless stream with model events every second hits the absolute limit at 75:00', () => {
  for (let m = 0; m <= 75; m++) {
    const now = T0 + m * MIN;
    const c = computeClocks(requestInput(lastEvent(now, SEC)), now);
    // The inactivity deadline keeps moving: 15 min after the latest event (the one at `now`).
    assert.equal(c.inactivity!.at, now + 15 * MIN);
    assert.equal(c.absolute!.at, T0 + 75 * MIN, 'the absolute deadline never moves');
    // Before minute 60 inactivity would fire first; at 60 they tie (inactivity); after, absolute.
    assert.equal(c.firstToFire, m <= 60 ? 'inactivity' : 'absolute', `minute ${m}`);
    assert.equal(c.marginMs, Math.abs(60 - m) * MIN, `minute ${m}`);
  }
  const end = computeClocks(requestInput(T0 + 75 * MIN), T0 + 75 * MIN);
  assert.equal(end.absolute!.remainingMs, 0);
  assert.equal(end.firstToFire, 'absolute');
  assert.equal(end.marginMs, 15 * MIN);
});

test('events until minute 28 then silence: inactivity fires at 43:00, 32 min before the absolute', () => {
  const now = T0 + 43 * MIN;
  const c = computeClocks(requestInput(lastEvent(now, SEC, 28 * MIN)), now);
  assert.equal(c.inactivity!.at, T0 + 43 * MIN);
  assert.equal(c.inactivity!.remainingMs, 0);
  assert.equal(c.absolute!.remainingMs, 32 * MIN);
  assert.equal(c.firstToFire, 'inactivity');
  assert.equal(c.marginMs, 32 * MIN);
  // At minute 30, two minutes into the silence: 13 min of inactivity left.
  const mid = computeClocks(requestInput(lastEvent(T0 + 30 * MIN, SEC, 28 * MIN)), T0 + 30 * MIN);
  assert.equal(formatRemaining(mid.inactivity!.remainingMs), '13:00');
});

test('ties go to inactivity', () => {
  const limits = { ...LIMITS, inactivityMs: 30 * MIN, absoluteMs: 30 * MIN };
  const c = computeClocks({ limits, request: { startedAt: T0, lastModelEventAt: null }, episode: null, recovery: null }, T0);
  assert.equal(c.firstToFire, 'inactivity');
  assert.equal(c.marginMs, 0);
});

test('an open retry episode joins the race and can fire first', () => {
  // First recoverable failure 10 min before this retry's start: the episode ends at T0 + 10 min.
  const episode = { startedAt: T0 - 10 * MIN, attempts: 2, nextRetryAt: null };
  const c = computeClocks(requestInput(null, { episode }), T0 + 2 * MIN);
  assert.deepEqual(c.episode, { at: T0 + 10 * MIN, remainingMs: 8 * MIN, attempts: 2, maxAttempts: 4, attemptsLeft: 2 });
  assert.equal(c.firstToFire, 'episode');
  assert.equal(c.marginMs, 5 * MIN, 'margin to the next limit: inactivity at T0 + 15 min');
  assert.equal(c.nextRetry, null);

  // An episode that ends after inactivity: margin is between the first and the second earliest.
  const later = computeClocks(requestInput(null, { episode: { startedAt: T0, attempts: 1, nextRetryAt: null } }), T0);
  assert.equal(later.firstToFire, 'inactivity');
  assert.equal(later.marginMs, 5 * MIN);

  // Episode ties with inactivity: inactivity first.
  const tie = computeClocks(requestInput(null, { episode: { startedAt: T0 - 5 * MIN, attempts: 1, nextRetryAt: null } }), T0);
  assert.equal(tie.firstToFire, 'inactivity');
  assert.equal(tie.marginMs, 0);
});

test('retry wait: the episode is the only limit; the recorded next retry is shown', () => {
  const now = T0 + 30 * SEC;
  const c = computeClocks(
    { limits: LIMITS, request: null, episode: { startedAt: T0, attempts: 1, nextRetryAt: T0 + 62 * SEC }, recovery: null },
    now,
  );
  assert.equal(c.inactivity, null);
  assert.equal(c.absolute, null);
  assert.equal(c.firstToFire, 'episode');
  assert.equal(c.marginMs, null);
  assert.equal(c.episode!.attemptsLeft, 3);
  assert.deepEqual(c.nextRetry, { at: T0 + 62 * SEC, remainingMs: 32 * SEC, source: 'recorded' });
});

test('episode attempts left = maxAttempts − attempts, as held by the limits; more attempts than the cap leave none, never a negative count', () => {
  for (const [maxAttempts, attempts, left] of [
    [4, 1, 3],
    [4, 4, 0],
    [5, 2, 3],
    [2, 1, 1],
    [1, 2, 0],
    [4, 7, 0],
  ] as const) {
    const c = computeClocks(
      { limits: { ...LIMITS, episodeMaxAttempts: maxAttempts }, request: null, episode: { startedAt: T0, attempts, nextRetryAt: null }, recovery: null },
      T0,
    );
    assert.equal(c.episode!.maxAttempts, maxAttempts);
    assert.equal(c.episode!.attemptsLeft, left);
  }
});

test('resume ladder: steps 1–6 predicted at 1, 2, 4, 8, 15, 15 min after the stop', () => {
  const stoppedAt = T0;
  const expected = [1, 2, 4, 8, 15, 15];
  for (let resumes = 0; resumes < expected.length; resumes++) {
    const c = computeClocks({ limits: LIMITS, request: null, episode: null, recovery: { stoppedAt, resumes, nextResumeAt: null } }, T0);
    assert.deepEqual(c.nextResume, {
      at: stoppedAt + expected[resumes]! * MIN,
      remainingMs: expected[resumes]! * MIN,
      source: 'predicted',
      step: resumes + 1,
    });
  }
});

test('a scheduled nextResumeAt wins over the prediction', () => {
  const c = computeClocks(
    { limits: LIMITS, request: null, episode: null, recovery: { stoppedAt: T0, resumes: 2, nextResumeAt: T0 + 5 * MIN } },
    T0 + MIN,
  );
  assert.deepEqual(c.nextResume, { at: T0 + 5 * MIN, remainingMs: 4 * MIN, source: 'scheduled', step: 3 });
});

test('an overdue resume is shown negative', () => {
  const c = computeClocks(
    { limits: LIMITS, request: null, episode: null, recovery: { stoppedAt: T0, resumes: 0, nextResumeAt: null } },
    T0 + MIN + 5 * SEC,
  );
  assert.equal(c.nextResume!.remainingMs, -5 * SEC);
  assert.equal(formatRemaining(c.nextResume!.remainingMs), '-0:05');
});

test('non-finite times give unknown clocks, not made-up numbers', () => {
  const c = computeClocks(
    {
      limits: LIMITS,
      request: { startedAt: Number.NaN, lastModelEventAt: null },
      episode: { startedAt: Number.NaN, attempts: 1, nextRetryAt: Number.NaN },
      recovery: null,
    },
    T0,
  );
  assert.equal(c.inactivity, null);
  assert.equal(c.absolute, null);
  assert.equal(c.episode, null);
  assert.equal(c.nextRetry, null);
  assert.equal(c.firstToFire, null);
  assert.equal(c.marginMs, null);
});

test('formatRemaining: exact to the second, ceil, overdue negative', () => {
  const cases: [number | null | undefined, string][] = [
    [15 * MIN, '15:00'],
    [15 * MIN - 1, '15:00'],
    [15 * MIN - SEC, '14:59'],
    [14 * MIN + 59 * SEC + 1, '15:00'],
    [SEC, '0:01'],
    [1, '0:01'],
    [0, '0:00'],
    [-1, '-0:01'],
    [-999, '-0:01'],
    [-SEC, '-0:01'],
    [-SEC - 1, '-0:02'],
    [-5 * SEC, '-0:05'],
    [-(MIN + SEC), '-1:01'],
    [3723 * SEC, '1:02:03'],
    [-3723 * SEC, '-1:02:03'],
    [75 * MIN, '1:15:00'],
    [null, '—'],
    [undefined, '—'],
    [Number.NaN, '—'],
    [Number.POSITIVE_INFINITY, '—'],
  ];
  for (const [ms, text] of cases) assert.equal(formatRemaining(ms), text, String(ms));
});

test('property: remaining is at − now, and the first to fire is the earliest deadline', () => {
  const time = fc.integer({ min: T0 - 200 * MIN, max: T0 + 200 * MIN });
  const ms = fc.integer({ min: 1, max: 120 * MIN });
  fc.assert(
    fc.property(
      time,
      fc.option(time, { nil: null }),
      fc.option(time, { nil: null }),
      ms,
      ms,
      ms,
      time,
      (startedAt, lastModelEventAt, episodeStart, inactivityMs, absoluteMs, episodeMs, now) => {
        const c = computeClocks(
          {
            limits: { inactivityMs, absoluteMs, episodeMs, episodeMaxAttempts: 4 },
            request: { startedAt, lastModelEventAt },
            episode: episodeStart === null ? null : { startedAt: episodeStart, attempts: 1, nextRetryAt: null },
            recovery: null,
          },
          now,
        );
        const all = [c.inactivity, c.absolute, c.episode].filter((d) => d !== null);
        for (const d of all) assert.equal(d.remainingMs, d.at - now);
        const first = c[c.firstToFire!]!;
        assert.ok(all.every((d) => first.at <= d.at));
        assert.ok(c.marginMs! >= 0);
        const sorted = all.map((d) => d.at).sort((a, b) => a - b);
        assert.equal(c.marginMs, sorted[1]! - sorted[0]!);
      },
    ),
  );
});

function checkpoint(over: Partial<Checkpoint>): Checkpoint {
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
    limits: LIMITS,
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

test('from a checkpoint: request clocks only while requesting, episode while busy, resume only when expected', () => {
  const request = { turn: 3, startedAt: T0, lastModelEventAt: T0 + MIN, lastTransportEventAt: T0 + 2 * MIN, modelEvents: 5, keepalives: 9 };
  const episode = { startedAt: T0 - MIN, attempts: 1, lastError: '502', lastErrorClass: 'server', nextRetryAt: null };
  const recovery = { stoppedAt: T0, resumes: 1, nextResumeAt: null, reason: 'provider error' };

  const requesting = clockInputFromCheckpoint(checkpoint({ state: 'requesting', request, episode }), LIMITS, { resumeExpected: false });
  assert.deepEqual(requesting.request, { startedAt: T0, lastModelEventAt: T0 + MIN });
  assert.notEqual(requesting.episode, null);

  const tools = clockInputFromCheckpoint(checkpoint({ state: 'tools', request, episode }), LIMITS, { resumeExpected: false });
  assert.equal(tools.request, null, 'the model request has ended while tools run');
  assert.notEqual(tools.episode, null);

  const idle = clockInputFromCheckpoint(checkpoint({ state: 'idle', request, episode }), LIMITS, { resumeExpected: false });
  assert.equal(idle.request, null);
  assert.equal(idle.episode, null);

  const stopped = checkpoint({ state: 'stopped', recovery });
  assert.equal(clockInputFromCheckpoint(stopped, LIMITS, { resumeExpected: false }).recovery, null);
  const c = computeClocks(clockInputFromCheckpoint(stopped, LIMITS, { resumeExpected: true }), T0);
  assert.deepEqual(c.nextResume, { at: T0 + 2 * MIN, remainingMs: 2 * MIN, source: 'predicted', step: 2 });
});

test('no recovery episode for the provider (episodeApplies false): no episode deadline in the race, pi\'s next retry still shown', () => {
  const now = T0 + 5 * MIN;
  const input: ClockInput = {
    limits: { ...LIMITS, episodeApplies: false },
    request: null,
    episode: { startedAt: T0, attempts: 2, nextRetryAt: now + 30 * SEC, nextRetrySource: 'computed' },
    recovery: null,
  };
  const c = computeClocks(input, now);
  assert.equal(c.episode, null);
  assert.equal(c.firstToFire, null);
  assert.equal(c.nextRetry?.remainingMs, 30 * SEC);
  // The same with the episode covering the provider (or not said): its deadline fires first.
  for (const limits of [{ ...LIMITS, episodeApplies: true }, LIMITS]) {
    const covered = computeClocks({ ...input, limits }, now);
    assert.equal(covered.episode?.remainingMs, 15 * MIN);
    assert.equal(covered.firstToFire, 'episode');
  }
});
