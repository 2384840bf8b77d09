/**
 * The checkpoint's state machine (SPEC §4.1): pi's lifecycle events in, the request checkpoint
 * out. Pure — no fs, no timers, no clock: every event carries its time.
 *
 * A request is one model call: it starts at `turn_start` and ends at the assistant `message_end`.
 * pi's retries are invisible to extensions (no `auto_retry_*` event reaches them), so a retry is
 * inferred: an assistant `message_end` with `stopReason: "error"` puts the session in
 * `retry-wait` (when pi is likely to retry) with a computed `nextRetryAt`; a following
 * `turn_start` confirms the retry, `agent_settled` without one refutes it (`stopped`).
 */
import type {
  Checkpoint,
  CheckpointEpisode,
  CheckpointLimits,
  CheckpointRecovery,
  CheckpointRequest,
  CheckpointState,
} from '../contract/checkpoint.js';
import { DEFAULT_EPISODE_MS, EPISODE_ATTEMPT_CAP, piRetryDelayMs } from '../model/limits.js';
import { classifyError, piRetries, type ErrorClass } from './error-class.js';
import type { StreamActivity } from './stream-activity.js';

/** What does not change during a session: who and where the process is. */
export interface SessionIdentity {
  session: string;
  sessionFile: string | null;
  role: 'root' | 'lane';
  parentSession: string | null;
  runId: string | null;
  agent: string | null;
  cwd: string;
  pid: number;
  pidStart: string | null;
  host: string;
}

/** pi's retry settings, as needed to predict its next retry, and loop-pi's floor for a 429's wait. */
export interface RetrySettings {
  enabled: boolean;
  maxRetries: number;
  baseDelayMs: number;
  maxAgentDelayMs: number;
  /** loop-pi adds to pi's wait after a 429 so it lasts at least this (`loopPi.retryBackoff.rateLimitDelayMs`). */
  rateLimitDelayMs: number;
}

/** The request that ended last (kept for the dashboard's history and the audit's durations). */
export interface LastRequest {
  turn: number;
  startedAt: number;
  endedAt: number;
  stopReason: string;
  modelEvents: number;
  keepalives: number;
}

/** The episode as the checkpoint writes it, plus where `nextRetryAt` came from. */
export type TrackedEpisode = CheckpointEpisode & { nextRetryAtSource: 'computed' | null };

/** The held summary the checkpoint carries (`held`), plus what held it. */
export type HeldSummary = {
  since: number;
  by: string | null;
  heldTurnStarts: number;
  action: 'abort' | 'disarm';
  reason: string | null;
};

/** Everything the tracker knows. */
export interface TrackerState {
  identity: SessionIdentity;
  model: string | null;
  thinking: string | null;
  limits: CheckpointLimits | null;
  retry: RetrySettings;
  state: CheckpointState;
  /** Requests started by this process (the `turn` of the next one is this + 1). */
  turns: number;
  request: CheckpointRequest | null;
  lastRequest: LastRequest | null;
  episode: TrackedEpisode | null;
  recovery: CheckpointRecovery | null;
  lastStop: Checkpoint['lastStop'];
  held: HeldSummary | null;
  ownerAbort: { at: number; requestId: string | null } | null;
  /** An owner abort was applied to the request in flight; its end is the owner's stop. */
  ownerAbortPending: boolean;
  /** Owner input (typed or RPC) arrived since the session last settled. */
  ownerInputSinceSettle: boolean;
  /** A request started since the session last settled: the agent run is not over yet. */
  runOpen: boolean;
  /** loop-pi's follow-up message is starting a run (`before_agent_start`): its turn is that follow-up. */
  followUpPending: boolean;
  /**
   * The request in flight was counted as a resume of the stopped root: what the episode and the
   * recovery were before, in case its turn turns out to be loop-pi's follow-up (whose message can
   * arrive just after the turn started).
   */
  resumedFrom: { episode: TrackedEpisode | null; recovery: CheckpointRecovery | null } | null;
}

/** What happened, in pi's terms. */
export type TrackerEvent =
  | {
      type: 'session-start';
      at: number;
      identity: SessionIdentity;
      model: string | null;
      thinking: string | null;
      limits: CheckpointLimits | null;
      retry: RetrySettings;
      held: HeldSummary | null;
    }
  | { type: 'owner-input'; at: number }
  /** loop-pi's follow-up message starts a run (seen at `before_agent_start`, before its turn). */
  | { type: 'follow-up-starts'; at: number }
  /** loop-pi's follow-up message was added to the conversation (`message_end`; after its turn started). */
  | { type: 'follow-up'; at: number }
  | { type: 'request-start'; at: number; limits: CheckpointLimits | null; retry: RetrySettings }
  | { type: 'stream'; at: number; activity: StreamActivity }
  | { type: 'request-end'; at: number; stopReason: string; errorMessage: string | null }
  | { type: 'tools'; at: number }
  | { type: 'settled'; at: number; aborted: boolean }
  | { type: 'model'; model: string | null }
  | { type: 'thinking'; thinking: string | null }
  | { type: 'held'; held: HeldSummary | null }
  | { type: 'owner-abort'; at: number; requestId: string | null; cutRequest: boolean }
  | { type: 'owner-abort-cleared' }
  | { type: 'shutdown'; at: number };

/** A tracker before `session_start` has been seen. */
export function initialTracker(identity: SessionIdentity, retry: RetrySettings): TrackerState {
  return {
    identity,
    model: null,
    thinking: null,
    limits: null,
    retry,
    state: 'idle',
    turns: 0,
    request: null,
    lastRequest: null,
    episode: null,
    recovery: null,
    lastStop: null,
    held: null,
    ownerAbort: null,
    ownerAbortPending: false,
    ownerInputSinceSettle: false,
    runOpen: false,
    followUpPending: false,
    resumedFrom: null,
  };
}

/**
 * The custom message loop-pi sends after a ceiling abort or an empty length stop (SPEC §3.1); it
 * starts a new turn, at most two in a row.
 */
export const FOLLOW_UP_MESSAGE_TYPE = 'loop-request-incident';

const SUCCESS = new Set(['stop', 'length', 'toolUse', 'deferred']);
/** Errors that need the owner: loop-pi stops with an incident instead of resuming (SPEC §2). */
const NOT_RESUMED: ReadonlySet<ErrorClass> = new Set(['auth', 'quota', 'policy', 'context-length']);

/** Which limit an abort message names, when it names one (loop-pi's ceiling aborts do). */
export function limitNamedIn(message: string | null): string | null {
  if (!message) return null;
  if (/inactivity/i.test(message)) return 'inactivity';
  if (/absolute/i.test(message)) return 'absolute';
  if (/wall.?clock|ceiling/i.test(message)) return 'wall-clock';
  return null;
}

/** Applies one event. Unknown or out-of-order events leave a consistent state. */
export function track(s: TrackerState, e: TrackerEvent): TrackerState {
  switch (e.type) {
    case 'session-start':
      return {
        ...s,
        identity: e.identity,
        model: e.model,
        thinking: e.thinking,
        limits: e.limits,
        retry: e.retry,
        state: 'idle',
        request: null,
        held: e.held,
        runOpen: false,
      };
    case 'owner-input':
      return { ...s, ownerInputSinceSettle: true, followUpPending: false };
    case 'follow-up-starts':
      return { ...s, followUpPending: true };
    case 'follow-up': {
      // Its turn has started and was counted as a resume: it is the follow-up, so undo that.
      const r = s.resumedFrom;
      if (s.state !== 'requesting' || !r) return s;
      return { ...s, episode: r.episode, recovery: r.recovery, resumedFrom: null };
    }
    case 'request-start': {
      let episode = s.episode;
      let recovery = s.recovery;
      // loop-pi's follow-up after a ceiling abort: the same episode runs on (its follow-ups cannot
      // extend it), and it is not a resume of the root — episode and recovery stay as they are.
      const followUp = s.state === 'stopped' && s.followUpPending;
      // pi's own retry: one more attempt in the same episode. A failure the tracker did not expect
      // pi to retry (pi's pattern list is its own) is known to have been retried when a request
      // starts before the run settled: a resume or the owner's next turn comes after the settle.
      const piRetry = !followUp && episode !== null && (s.state === 'retry-wait' || (s.state === 'stopped' && s.runOpen && s.lastStop?.reason !== 'aborted'));
      if (piRetry && episode) episode = { ...episode, attempts: episode.attempts + 1, nextRetryAt: null, nextRetryAtSource: null };
      let resumedFrom: TrackerState['resumedFrom'] = null;
      if (!piRetry && !followUp && s.state === 'stopped') {
        // A new turn after the session stopped: a resume (or the owner taking over) resets the episode.
        if (!s.ownerInputSinceSettle) resumedFrom = { episode, recovery };
        episode = null;
        if (recovery) recovery = s.ownerInputSinceSettle ? null : { ...recovery, resumes: recovery.resumes + 1 };
      }
      const turn = s.turns + 1;
      return {
        ...s,
        limits: e.limits,
        retry: e.retry,
        state: 'requesting',
        turns: turn,
        request: { turn, startedAt: e.at, lastModelEventAt: null, lastTransportEventAt: null, modelEvents: 0, keepalives: 0 },
        episode,
        recovery,
        ownerAbortPending: false,
        runOpen: true,
        followUpPending: false,
        resumedFrom,
      };
    }
    case 'stream': {
      const r = s.request;
      if (!r) return s;
      switch (e.activity) {
        case 'model':
          return { ...s, request: { ...r, modelEvents: r.modelEvents + 1, lastModelEventAt: e.at, lastTransportEventAt: e.at } };
        case 'keepalive':
          return { ...s, request: { ...r, keepalives: r.keepalives + 1, lastTransportEventAt: e.at } };
        case 'transport':
          return { ...s, request: { ...r, lastTransportEventAt: e.at } };
        default: {
          const never: never = e.activity;
          return never;
        }
      }
    }
    case 'request-end':
      return endRequest(s, e);
    case 'tools':
      return s.state === 'requesting' || s.state === 'idle' ? { ...s, state: 'tools' } : s;
    case 'settled':
      return settle(s, e);
    case 'model':
      return { ...s, model: e.model };
    case 'thinking':
      return { ...s, thinking: e.thinking };
    case 'held':
      return { ...s, held: e.held };
    case 'owner-abort':
      return {
        ...s,
        ownerAbort: { at: e.at, requestId: e.requestId },
        ownerAbortPending: e.cutRequest,
        // Nothing restarts an owner abort automatically: no resume, no retry.
        recovery: null,
        episode: s.episode ? { ...s.episode, nextRetryAt: null, nextRetryAtSource: null } : null,
      };
    case 'owner-abort-cleared':
      return { ...s, ownerAbort: null, ownerAbortPending: false };
    case 'shutdown':
      return { ...s, state: 'ended', request: null };
    default: {
      const never: never = e;
      return never;
    }
  }
}

function endRequest(s: TrackerState, e: Extract<TrackerEvent, { type: 'request-end' }>): TrackerState {
  const r = s.request;
  const lastRequest: LastRequest | null = r
    ? { turn: r.turn, startedAt: r.startedAt, endedAt: e.at, stopReason: e.stopReason, modelEvents: r.modelEvents, keepalives: r.keepalives }
    : s.lastRequest;
  const base = { ...s, request: null, lastRequest, resumedFrom: null };
  if (SUCCESS.has(e.stopReason)) {
    const lastStop = e.stopReason === 'length' ? { at: e.at, reason: 'length', error: e.errorMessage, limit: null } : s.lastStop;
    // A successful response ends the retry episode and any recovery (SPEC §2).
    return { ...base, state: e.stopReason === 'toolUse' ? 'tools' : 'idle', episode: null, recovery: null, lastStop };
  }
  if (e.stopReason === 'aborted') {
    const limit = s.ownerAbortPending ? 'owner' : limitNamedIn(e.errorMessage);
    return {
      ...base,
      state: 'stopped',
      // A ceiling abort ends no retry episode (only a success or the owner's input does, SPEC §2):
      // loop-pi's follow-up turn runs inside it. Nothing retries an owner's abort.
      episode: s.ownerAbortPending || !s.episode ? null : { ...s.episode, nextRetryAt: null, nextRetryAtSource: null },
      lastStop: { at: e.at, reason: 'aborted', error: e.errorMessage, limit },
    };
  }
  // error (or a stop reason we do not know: treated as a failure).
  const cls = classifyError(e.errorMessage);
  const episode: TrackedEpisode = s.episode
    ? { ...s.episode, lastError: e.errorMessage, lastErrorClass: cls }
    : { startedAt: e.at, attempts: 1, lastError: e.errorMessage, lastErrorClass: cls, nextRetryAt: null, nextRetryAtSource: null };
  const lastStop = { at: e.at, reason: e.stopReason, error: e.errorMessage, limit: limitNamedIn(e.errorMessage) };
  // pi retries while its retry count (attempts − 1) is below maxRetries; the n-th retry waits
  // baseDelayMs·2^(n−1) capped at maxAgentDelayMs, n = attempts. The episode ends the retries
  // first when it is exhausted: its attempts used up, or its time (SPEC §2: the active work is
  // aborted and nothing automatic restarts that request).
  const exhausted = episodeExhausted(episode, s, e.at);
  const willRetry = s.retry.enabled && episode.attempts <= s.retry.maxRetries && !exhausted && cls !== 'context-length' && piRetries(e.errorMessage) && !s.ownerAbortPending;
  if (willRetry) {
    // loop-pi holds a 429's wait to at least rateLimitDelayMs (plus up to half again at random):
    // the earliest the retry can come.
    const piDelay = piRetryDelayMs(episode.attempts, s.retry);
    const delay = cls === 'rate-limit' ? Math.max(piDelay, s.retry.rateLimitDelayMs) : piDelay;
    return { ...base, state: 'retry-wait', episode: { ...episode, nextRetryAt: e.at + delay, nextRetryAtSource: 'computed' }, lastStop };
  }
  return { ...base, state: 'stopped', episode: { ...episode, nextRetryAt: null, nextRetryAtSource: null }, lastStop };
}

/**
 * The episode has no attempt left (attempts count requests, the first failed one included: at
 * most the limits' `episodeMaxAttempts`, else min(5, maxRetries + 1)), or its time is over at `at`.
 */
function episodeExhausted(episode: TrackedEpisode, s: TrackerState, at: number): boolean {
  // No recovery episode covers this provider: pi's own retry.maxRetries alone ends its retries.
  if (s.limits?.episodeApplies === false) return false;
  const maxAttempts = s.limits?.episodeMaxAttempts ?? (s.retry.enabled ? Math.min(EPISODE_ATTEMPT_CAP, s.retry.maxRetries + 1) : 1);
  const episodeMs = s.limits?.episodeMs ?? DEFAULT_EPISODE_MS;
  return episode.attempts >= maxAttempts || at >= episode.startedAt + episodeMs;
}

function settle(s: TrackerState, e: Extract<TrackerEvent, { type: 'settled' }>): TrackerState {
  // The state after the last request end says how the run ended; a retry pi did not make is a stop.
  const failed = e.aborted || s.state === 'retry-wait' || s.state === 'stopped';
  const next = { ...s, request: null, ownerInputSinceSettle: false, runOpen: false };
  if (!failed) return { ...next, state: 'idle' };
  const episode = s.episode ? { ...s.episode, nextRetryAt: null, nextRetryAtSource: null } : null;
  return { ...next, state: 'stopped', episode, recovery: recoveryAfterStop(s, e.at) };
}

/**
 * A root left stopped by a provider error, a stalled request or a ceiling abort expects a resume
 * (SPEC §2); an owner abort, a lane, and errors that need the owner (auth, quota, policy, context
 * length) do not.
 */
function recoveryAfterStop(s: TrackerState, at: number): CheckpointRecovery | null {
  if (s.identity.role !== 'root' || s.ownerAbort !== null) return null;
  const stop = s.lastStop;
  if (stop && stop.reason !== 'aborted') {
    const cls = s.episode?.lastErrorClass;
    if (cls && NOT_RESUMED.has(cls as ErrorClass)) return null;
  }
  return { stoppedAt: at, resumes: s.recovery?.resumes ?? 0, nextResumeAt: null, reason: stopReasonText(s) };
}

function stopReasonText(s: TrackerState): string | null {
  const stop = s.lastStop;
  if (!stop) return null;
  if (stop.reason === 'aborted') return stop.limit ? `aborted (${stop.limit})` : 'aborted';
  return s.episode?.lastErrorClass ? `error (${s.episode.lastErrorClass})` : stop.reason;
}

/** Fields beyond the contract's minimum that this producer adds (all optional for readers). */
export interface CheckpointExtras {
  producer: 'loop-dash-extension';
  lastRequest: LastRequest | null;
}

/** The checkpoint for `s` at `now` (the `updatedAt`). */
export function toCheckpoint(s: TrackerState, now: number): Checkpoint & CheckpointExtras {
  const id = s.identity;
  return {
    v: 1,
    session: id.session,
    sessionFile: id.sessionFile,
    role: id.role,
    parentSession: id.parentSession,
    runId: id.runId,
    agent: id.agent,
    cwd: id.cwd,
    pid: id.pid,
    pidStart: id.pidStart,
    host: id.host,
    model: s.model,
    thinking: s.thinking,
    limits: s.limits,
    state: s.state,
    request: s.request,
    episode: s.episode,
    recovery: s.recovery,
    lastStop: s.lastStop,
    held: s.held,
    ownerAbort: s.ownerAbort,
    updatedAt: now,
    producer: 'loop-dash-extension',
    lastRequest: s.lastRequest,
  };
}
