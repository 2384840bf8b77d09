import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_ABSOLUTE_MS,
  DEFAULT_EPISODE_MS,
  DEFAULT_INACTIVITY_MS,
  MAX_TIMER_MS,
  effectiveLimits,
  limitsFromSettings,
  piRetryDelayMs,
  resumeDelayMs,
} from '../src/model/limits.js';

const MIN = 60_000;

test('no settings: every default of SPEC §2 and pi, no notes', () => {
  for (const settings of [null, {}]) {
    const { limits, notes } = limitsFromSettings(settings);
    assert.deepEqual(notes, []);
    assert.equal(limits.inactivityMs, 15 * MIN);
    assert.equal(limits.absoluteMs, 75 * MIN);
    assert.equal(limits.absoluteSource, 'default');
    assert.equal(limits.episodeMs, 20 * MIN);
    assert.equal(limits.maxRetries, 3);
    assert.equal(limits.episodeMaxAttempts, 4, "pi's default of 3 retries holds the episode to 4 attempts");
    assert.equal(limits.baseDelayMs, 2000);
    assert.equal(limits.maxAgentDelayMs, 60_000);
    assert.equal(limits.maxFollowUps, 2);
    assert.equal(limits.rateLimitDelayMs, 60_000);
    assert.equal(limits.httpIdleTimeoutMs, 300_000);
    assert.equal(limits.providerTimeoutMs, null);
    assert.ok(Object.values(limits.sources).every((s) => s === 'default'));
  }
});

test('settings override each limit', () => {
  const { limits, notes } = limitsFromSettings({
    loopPi: {
      requestCeiling: { inactivityMs: 10 * MIN, absoluteMs: 90 * MIN, wallClockMs: 14 * MIN, maxFollowUps: 5 },
      retryRecovery: { episodeMs: 30 * MIN, providerIds: ['x'] },
      retryBackoff: { rateLimitDelayMs: 90_000 },
    },
    retry: { maxRetries: 2, baseDelayMs: 1000, maxAgentDelayMs: 30_000, provider: { timeoutMs: 120_000 } },
    httpIdleTimeoutMs: 600_000,
  });
  assert.deepEqual(notes, []);
  assert.equal(limits.inactivityMs, 10 * MIN);
  assert.equal(limits.absoluteMs, 90 * MIN);
  assert.equal(limits.absoluteSource, 'absoluteMs', 'absoluteMs wins over the legacy wallClockMs');
  assert.equal(limits.episodeMs, 30 * MIN);
  assert.equal(limits.maxRetries, 2);
  assert.equal(limits.episodeMaxAttempts, 3);
  assert.equal(limits.baseDelayMs, 1000);
  assert.equal(limits.maxAgentDelayMs, 30_000);
  assert.equal(limits.maxFollowUps, 5);
  assert.equal(limits.rateLimitDelayMs, 90_000);
  assert.equal(limits.httpIdleTimeoutMs, 600_000);
  assert.equal(limits.providerTimeoutMs, 120_000);
  assert.ok(Object.values(limits.sources).every((s) => s === 'settings'));
});

test('timer range edges 1 and 2147483647 are accepted', () => {
  const { limits, notes } = limitsFromSettings({ loopPi: { requestCeiling: { inactivityMs: 1, absoluteMs: MAX_TIMER_MS } } });
  assert.deepEqual(notes, []);
  assert.equal(limits.inactivityMs, 1);
  assert.equal(limits.absoluteMs, MAX_TIMER_MS);
});

const INVALID_MS: [unknown, string][] = [
  [0, '0'],
  [-1, '-1'],
  [Number.NaN, 'NaN'],
  ['600000', '"600000"'],
  [2147483648, '2147483648'],
  [Number.POSITIVE_INFINITY, 'Infinity'],
  [null, 'null'],
];
const MS_LIMITS: { path: string; key: 'inactivityMs' | 'absoluteMs' | 'episodeMs'; fallback: number }[] = [
  { path: 'loopPi.requestCeiling.inactivityMs', key: 'inactivityMs', fallback: DEFAULT_INACTIVITY_MS },
  { path: 'loopPi.requestCeiling.absoluteMs', key: 'absoluteMs', fallback: DEFAULT_ABSOLUTE_MS },
  { path: 'loopPi.retryRecovery.episodeMs', key: 'episodeMs', fallback: DEFAULT_EPISODE_MS },
];

function nested(path: string, value: unknown): Record<string, unknown> {
  const parts = path.split('.');
  let node: unknown = value;
  for (const part of parts.reverse()) node = { [part]: node };
  return node as Record<string, unknown>;
}

for (const { path, key, fallback } of MS_LIMITS) {
  for (const [bad, shown] of INVALID_MS) {
    test(`${path} = ${shown} falls back to its default with a note (never turns the limit off)`, () => {
      const { limits, notes } = limitsFromSettings(nested(path, bad));
      assert.equal(limits[key], fallback);
      assert.equal(limits.sources[key], 'default');
      assert.equal(notes.length, 1);
      assert.ok(notes[0]!.startsWith(`${path}: ${shown} `), notes[0]);
      assert.ok(notes[0]!.includes(String(fallback)), notes[0]);
    });
  }
}

test('legacy wallClockMs (14 min) is the absolute limit only when absoluteMs is absent', () => {
  const legacy = limitsFromSettings({ loopPi: { requestCeiling: { wallClockMs: 14 * MIN } } });
  assert.equal(legacy.limits.absoluteMs, 14 * MIN);
  assert.equal(legacy.limits.absoluteSource, 'wallClockMs');
  assert.equal(legacy.limits.sources.absoluteMs, 'settings');
  assert.equal(legacy.limits.inactivityMs, 15 * MIN, 'inactivity keeps its own default');
  assert.deepEqual(legacy.notes, []);

  const both = limitsFromSettings({ loopPi: { requestCeiling: { absoluteMs: 80 * MIN, wallClockMs: 14 * MIN } } });
  assert.equal(both.limits.absoluteMs, 80 * MIN);
  assert.equal(both.limits.absoluteSource, 'absoluteMs');

  // Present but invalid absoluteMs is not "absent": default, not wallClockMs.
  const badAbs = limitsFromSettings({ loopPi: { requestCeiling: { absoluteMs: 0, wallClockMs: 14 * MIN } } });
  assert.equal(badAbs.limits.absoluteMs, 75 * MIN);
  assert.equal(badAbs.limits.absoluteSource, 'default');
  assert.equal(badAbs.notes.length, 1);
  assert.match(badAbs.notes[0]!, /^loopPi\.requestCeiling\.absoluteMs: 0 /);

  // A present but bad wallClockMs: the legacy ceiling's own default, 14 min (not the newer 75).
  const badWall = limitsFromSettings({ loopPi: { requestCeiling: { wallClockMs: -1 } } });
  assert.equal(badWall.limits.absoluteMs, 14 * MIN);
  assert.equal(badWall.limits.absoluteSource, 'wallClockMs');
  assert.equal(badWall.limits.sources.absoluteMs, 'default');
  assert.match(badWall.notes[0]!, /^loopPi\.requestCeiling\.wallClockMs: -1 /);
  // Neither present: the newer default.
  const none = limitsFromSettings({ loopPi: { requestCeiling: {} } });
  assert.equal(none.limits.absoluteMs, 75 * MIN);
  assert.equal(none.limits.absoluteSource, 'default');
});

test('episode attempts: min(5, retry.maxRetries + 1)', () => {
  const cases: [unknown, number][] = [
    [undefined, 4],
    [3, 4],
    [10, 5],
    [4, 5],
    [1, 2],
    [0, 1],
  ];
  for (const [maxRetries, attempts] of cases) {
    const settings = maxRetries === undefined ? {} : { retry: { maxRetries } };
    const { limits, notes } = limitsFromSettings(settings);
    assert.equal(limits.episodeMaxAttempts, attempts, `maxRetries ${String(maxRetries)}`);
    assert.deepEqual(notes, []);
  }
});

test('pi retry disabled: one attempt per episode', () => {
  const { limits } = limitsFromSettings({ retry: { enabled: false, maxRetries: 10 } });
  assert.equal(limits.episodeMaxAttempts, 1);
  assert.equal(limits.sources.episodeMaxAttempts, 'settings');
});

test('counts and waits follow their producers: 0 is valid where it means something', () => {
  const zero = limitsFromSettings({
    loopPi: { requestCeiling: { maxFollowUps: 0 }, retryBackoff: { rateLimitDelayMs: 0 } },
    retry: { maxRetries: 0, baseDelayMs: 0 },
  });
  assert.deepEqual(zero.notes, []);
  assert.equal(zero.limits.maxFollowUps, 0);
  assert.equal(zero.limits.rateLimitDelayMs, 0);
  assert.equal(zero.limits.maxRetries, 0);
  assert.equal(zero.limits.baseDelayMs, 0);

  const bad = limitsFromSettings({
    loopPi: { requestCeiling: { maxFollowUps: -1 }, retryBackoff: { rateLimitDelayMs: 2147483648 } },
    retry: { maxRetries: 2.5, baseDelayMs: 'fast', maxAgentDelayMs: Number.NaN },
  });
  assert.equal(bad.limits.maxFollowUps, 2);
  assert.equal(bad.limits.rateLimitDelayMs, 60_000);
  assert.equal(bad.limits.maxRetries, 3);
  assert.equal(bad.limits.episodeMaxAttempts, 4);
  assert.equal(bad.limits.baseDelayMs, 2000);
  assert.equal(bad.limits.maxAgentDelayMs, 60_000);
  assert.deepEqual(
    bad.notes.map((n) => n.split(':')[0]),
    [
      'retry.maxRetries',
      'retry.baseDelayMs',
      'retry.maxAgentDelayMs',
      'loopPi.requestCeiling.maxFollowUps',
      'loopPi.retryBackoff.rateLimitDelayMs',
    ],
  );
  assert.ok(bad.notes.some((n) => n.includes('"fast"')));
});

test("httpIdleTimeoutMs reads like pi's parser; provider timeout is unknown unless set", () => {
  assert.equal(limitsFromSettings({ httpIdleTimeoutMs: 'disabled' }).limits.httpIdleTimeoutMs, 0);
  assert.equal(limitsFromSettings({ httpIdleTimeoutMs: '600000' }).limits.httpIdleTimeoutMs, 600_000);
  assert.equal(limitsFromSettings({ httpIdleTimeoutMs: 0 }).limits.httpIdleTimeoutMs, 0);
  const bad = limitsFromSettings({ httpIdleTimeoutMs: -5, retry: { provider: { timeoutMs: 'x' } } });
  assert.equal(bad.limits.httpIdleTimeoutMs, 300_000);
  assert.equal(bad.limits.providerTimeoutMs, null);
  assert.equal(bad.notes.length, 2);
  assert.ok(bad.notes.some((n) => n.startsWith('httpIdleTimeoutMs: -5 ')));
  assert.ok(bad.notes.some((n) => n.startsWith('retry.provider.timeoutMs: "x" ')));
});

test('a section that is not an object is noted once and its defaults apply', () => {
  const { limits, notes } = limitsFromSettings({ loopPi: 5, retry: [1] });
  assert.equal(limits.inactivityMs, 15 * MIN);
  assert.equal(limits.episodeMaxAttempts, 4);
  assert.equal(notes.filter((n) => n.startsWith('loopPi: 5')).length, 1);
  assert.equal(notes.filter((n) => n.startsWith('retry: [1]')).length, 1);
  assert.equal(notes.length, 2);
});

test('inherited properties are not settings', () => {
  const settings = JSON.parse('{"__proto__": {"loopPi": {"requestCeiling": {"inactivityMs": 1000}}}}') as Record<string, unknown>;
  const { limits } = limitsFromSettings(settings);
  assert.equal(limits.inactivityMs, 15 * MIN);
});

test("the checkpoint's limits win over settings for that request", () => {
  const home = limitsFromSettings({ loopPi: { requestCeiling: { inactivityMs: 10 * MIN } } }).limits;
  const eff = effectiveLimits(home, { inactivityMs: 5 * MIN, absoluteMs: 30 * MIN, episodeMs: 7 * MIN, episodeMaxAttempts: 2 });
  assert.deepEqual(
    { i: eff.inactivityMs, a: eff.absoluteMs, e: eff.episodeMs, m: eff.episodeMaxAttempts },
    { i: 5 * MIN, a: 30 * MIN, e: 7 * MIN, m: 2 },
  );
  assert.deepEqual(eff.source, {
    inactivityMs: 'checkpoint',
    absoluteMs: 'checkpoint',
    episodeMs: 'checkpoint',
    episodeMaxAttempts: 'checkpoint',
  });

  const none = effectiveLimits(home, null);
  assert.equal(none.inactivityMs, 10 * MIN);
  assert.equal(none.absoluteMs, 75 * MIN);
  assert.equal(none.episodeMaxAttempts, 4);
  assert.deepEqual(none.source, {
    inactivityMs: 'settings',
    absoluteMs: 'default',
    episodeMs: 'default',
    episodeMaxAttempts: 'default',
  });
});

test('a checkpoint limit that is not a usable number falls back to the home, field by field', () => {
  const home = limitsFromSettings(null).limits;
  const eff = effectiveLimits(home, {
    inactivityMs: Number.NaN,
    absoluteMs: 30 * MIN,
    episodeMs: -1,
    episodeMaxAttempts: 0,
  });
  assert.equal(eff.inactivityMs, 15 * MIN);
  assert.equal(eff.source.inactivityMs, 'default');
  assert.equal(eff.absoluteMs, 30 * MIN);
  assert.equal(eff.source.absoluteMs, 'checkpoint');
  assert.equal(eff.episodeMs, 20 * MIN);
  assert.equal(eff.episodeMaxAttempts, 4);
});

test("pi's retry wait: baseDelayMs·2^(n−1) capped at maxAgentDelayMs", () => {
  const pi = limitsFromSettings(null).limits;
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7].map((n) => piRetryDelayMs(n, pi)),
    [2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000],
  );
  assert.equal(piRetryDelayMs(0, pi), 2000, 'n below 1 is the first retry, as in pi');
  assert.equal(piRetryDelayMs(5000, pi), 60_000, 'no overflow past the cap');
  assert.equal(piRetryDelayMs(3, { baseDelayMs: 1000, maxAgentDelayMs: 1500 }), 1500);
});

test('resume ladder: 1, 2, 4, 8, 15, 15, … minutes', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7, 100].map((n) => resumeDelayMs(n) / MIN),
    [1, 2, 4, 8, 15, 15, 15, 15],
  );
  assert.equal(resumeDelayMs(0), MIN);
});

test('the recovery episode covers a provider of loopPi.retryRecovery.providerIds: as the checkpoint says, else as the home says for its model', () => {
  const { limits: home, notes } = limitsFromSettings({ loopPi: { retryRecovery: { providerIds: ['openai', 3, 'google'] } } });
  assert.deepEqual(home.episodeProviders, ['openai', 'google'], 'the strings of the array, as loop-pi takes them');
  assert.deepEqual(notes, []);
  const cp = { inactivityMs: 5 * MIN, absoluteMs: 30 * MIN, episodeMs: 7 * MIN, episodeMaxAttempts: 2 };
  assert.equal(effectiveLimits(home, cp, 'openai/gpt-x').episodeApplies, true);
  assert.equal(effectiveLimits(home, cp, 'anthropic/claude').episodeApplies, false);
  assert.equal(effectiveLimits(home, cp, 'gpt-x').episodeApplies, false, 'a bare id names no provider');
  assert.equal(effectiveLimits(home, null, null).episodeApplies, false);
  assert.equal(effectiveLimits(home, { ...cp, episodeApplies: false }, 'openai/gpt-x').episodeApplies, false, "the checkpoint's word wins");
  assert.equal(effectiveLimits(home, { ...cp, episodeApplies: true }, 'anthropic/claude').episodeApplies, true);
  assert.deepEqual(limitsFromSettings({}).limits.episodeProviders, [], 'none by default');
  const bad = limitsFromSettings({ loopPi: { retryRecovery: { providerIds: 'openai' } } });
  assert.deepEqual(bad.limits.episodeProviders, []);
  assert.match(bad.notes[0]!, /^loopPi\.retryRecovery\.providerIds: .* is not an array of provider ids/);
});
