/**
 * The one-word state of a session (SPEC §2 "Session state"), derived from its checkpoint, the
 * liveness of its process and the loop state found in its session file. Pure; `now` is an argument.
 */
import type { Checkpoint } from '../contract/checkpoint.js';

/** A session's state, in SPEC §2's order of precedence. */
export type SessionState =
  | 'lost'
  | 'held'
  | 'requesting'
  | 'tools'
  | 'retry-wait'
  | 'recovering'
  | 'stopped'
  | 'waiting'
  | 'idle'
  | 'ended'
  | 'unknown'
  /**
   * A lane its root's state log dispatched (or pi-subagents lists as running) with no session
   * file or checkpoint to read yet: a placeholder row (snapshot.ts placeholderView).
   */
  | 'dispatched';

/** What a reader could tell about the checkpoint's process. */
export type Liveness = 'alive' | 'gone' | 'pid-reused' | 'unknown' | 'remote-fresh' | 'remote-stale';

/** Everything `deriveSessionState` looks at. */
export interface SessionStateInput {
  checkpoint: Checkpoint | null;
  /** Same host: by pid and pidStart; another host: by checkpoint age (remote-stale = older than 60 s). */
  liveness: Liveness;
  /** The root's last `loop-continuation-state.armed`; null when unknown. */
  armed: boolean | null;
  /** The last `loop-dash-control` entry says held; null when there is none. */
  heldByEntry: boolean | null;
  /** The last `loop-wait-state`; null when there is none. `heldMessages` absent or null: no wakes held. */
  waitState: { at?: number | null; timers: { at: number | null }[]; watchers: { phase: string | null }[]; heldMessages?: readonly unknown[] | null } | null;
  /** The last `loop-dash-control` entry (when it was written and whether it held), if any. */
  dashControl?: { at: number | null; held: boolean } | null;
  role: 'root' | 'lane';
}

/** A state and the reason for it, in words for the detail pane. */
export interface DerivedState {
  state: SessionState;
  why: string;
}

/** Stops that loop-pi ends with an incident instead of resuming (SPEC §2). */
// Substrings, not words: producers write `insufficient_quota`, `unauthorized`, `OAuth`, `context_length_exceeded`.
// Authentication by its words only (auth, OAuth, authentication, authorization, unauthorized, the
// extension's `error (auth)`), so an error naming an author or authority is not taken for one.
// A policy stop likewise: a content, safety or usage policy, a violation or a refusal by policy, the
// extension's `error (policy)` — not any text with "policy" in it (a provider's "rate limit policy").
const NOT_RESUMED =
  /(?<![a-z])(?:o?auth|unauth)(?:enticat\w*|ori[sz]\w*)?(?![a-z])|quota|billing|\(policy\)|(?:content|safety|usage)[-_ ]?polic|polic(?:y|ies)[-_ ]?violat|by polic|context[-_ ]?(length|overflow|window)/i;

/** The reason a stopped root will not be resumed, or null when nothing says so. */
function nonResumableStop(cp: Checkpoint): string | null {
  const texts = [cp.recovery?.reason, cp.lastStop?.reason, cp.lastStop?.error, cp.lastStop?.limit];
  for (const text of texts) {
    if (typeof text === 'string' && NOT_RESUMED.test(text)) return text;
  }
  return null;
}

/** A watcher phase that is over: it will not wake the session. */
const WATCHER_OVER = new Set(['done', 'failed']);

/**
 * The session's state by SPEC §2's precedence: lost → held → requesting → tools → retry-wait →
 * recovering → stopped → waiting → idle → ended → unknown.
 *
 * Decisions: `held` also holds for a session with no checkpoint whose last loop-dash-control entry
 * says held (the session file shows it, and SPEC ranks held above unknown). `recovering` needs
 * `armed === true` (unknown armed is not assumed), a root, no owner abort, a `recovery` record and
 * no stop reason that loop-pi ends with an incident (auth, quota, policy, context length).
 * `waiting` counts a timer whose time is still ahead, or unknown, and a watcher not done/failed
 * (a phase we cannot read is counted as armed: it is listed in the loop's wait state).
 */
export function deriveSessionState(input: SessionStateInput, now: number): DerivedState {
  const { checkpoint: cp, liveness, armed, heldByEntry, waitState, role } = input;

  if (!cp) {
    if (heldByEntry === true) return { state: 'held', why: 'no checkpoint; the last loop-dash-control entry says held' };
    if (wakesHeld(waitState, input.dashControl ?? null)) return { state: 'held', why: `no checkpoint; ${heldWakes(waitState!.heldMessages!)}` };
    return { state: 'unknown', why: 'no checkpoint: state inferred from the session file only' };
  }

  if (cp.state !== 'ended') {
    if (liveness === 'gone') return { state: 'lost', why: `process ${cp.pid} is gone but its checkpoint says ${cp.state}` };
    if (liveness === 'pid-reused') {
      return { state: 'lost', why: `pid ${cp.pid} now belongs to another process (start identity differs)` };
    }
    if (liveness === 'remote-stale') {
      return { state: 'lost', why: `checkpoint from host ${cp.host} not updated for over 60 s` };
    }
  }

  if (cp.ownerAbort) return { state: 'held', why: 'owner aborted the request; held until armed' };
  if (cp.held) return { state: 'held', why: `owner disarmed${cp.held.by ? ` (${cp.held.by})` : ''}; held until armed` };
  if (heldByEntry === true) return { state: 'held', why: 'the last loop-dash-control entry says held' };
  // A request, tools or a retry under way, or the session ended, is what the session does now.
  if ((cp.state === 'idle' || cp.state === 'stopped') && wakesHeld(waitState, input.dashControl ?? null)) return { state: 'held', why: heldWakes(waitState!.heldMessages!) };

  switch (cp.state) {
    case 'requesting':
      return { state: 'requesting', why: 'a model request is in flight' };
    case 'tools':
      return { state: 'tools', why: 'running tool calls' };
    case 'retry-wait':
      return { state: 'retry-wait', why: 'waiting to retry a failed request' };
    case 'stopped':
      return stoppedState(cp, role, armed);
    case 'idle':
      return idleState(waitState, now);
    case 'ended':
      return { state: 'ended', why: 'the session has ended' };
    default: {
      const never: never = cp.state;
      return { state: 'unknown', why: `unrecognised checkpoint state ${String(never)}` };
    }
  }
}

/**
 * SPEC §3.1: the last `loop-wait-state` has `heldMessages` (even an empty list): wakes held after
 * an owner abort — unless a later `loop-dash-control` entry armed the session.
 */
function wakesHeld(waitState: SessionStateInput['waitState'], dashControl: { at: number | null; held: boolean } | null): boolean {
  if (!waitState?.heldMessages) return false;
  const armedAfter = dashControl !== null && !dashControl.held && dashControl.at !== null && (waitState.at == null || dashControl.at >= waitState.at);
  return !armedAfter;
}

/** SPEC §3.1: a `loop-wait-state` with `heldMessages` (even an empty list) holds wakes after an owner abort. */
function heldWakes(messages: readonly unknown[]): string {
  return `loop-wait holds ${messages.length} wake${messages.length === 1 ? '' : 's'} (after an owner abort)`;
}

function stoppedState(cp: Checkpoint, role: 'root' | 'lane', armed: boolean | null): DerivedState {
  if (role === 'lane') return { state: 'stopped', why: 'a lane is never resumed; its root sees the failure' };
  if (armed !== true) {
    return { state: 'stopped', why: armed === false ? 'stopped and disarmed' : 'stopped; armed state unknown' };
  }
  const blocker = nonResumableStop(cp);
  if (blocker) return { state: 'stopped', why: `stopped by an error that is not resumed: ${blocker}` };
  if (!cp.recovery) return { state: 'stopped', why: 'stopped; no resume recorded' };
  return { state: 'recovering', why: `armed root stopped; resume ${cp.recovery.resumes + 1} expected` };
}

function idleState(waitState: SessionStateInput['waitState'], now: number): DerivedState {
  if (waitState) {
    const timer = waitState.timers.find((t) => t.at === null || t.at > now);
    if (timer) {
      return { state: 'waiting', why: timer.at === null ? 'idle; a loop-wait timer is armed' : 'idle until a loop-wait timer' };
    }
    const watcher = waitState.watchers.find((w) => w.phase === null || !WATCHER_OVER.has(w.phase));
    if (watcher) return { state: 'waiting', why: `idle; a watcher is ${watcher.phase ?? 'armed'}` };
  }
  return { state: 'idle', why: 'idle' };
}
