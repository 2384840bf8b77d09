/**
 * The clocks of SPEC §2 for one session at one instant: request deadlines, which fires first and
 * by what margin, the retry episode, pi's next retry and the root's next resume. Pure arithmetic;
 * `now` (epoch ms) is always an argument.
 *
 * Decisions (SPEC §2 leaves them to us):
 * - The request clocks (inactivity, absolute) exist only while a model request is in flight:
 *   `request` non-null. loop-pi starts them at the request start and clears them when the
 *   assistant message ends, so a session running tools or waiting to retry has none.
 *   `clockInputFromCheckpoint` passes a request only in the checkpoint state `requesting`.
 * - An open retry episode's deadline joins the race whether or not a request is in flight (loop-pi
 *   aborts the active work when it passes); during a retry wait it is the only contender, so
 *   `firstToFire` is `episode` and `marginMs` is null (no second limit to compare with).
 * - Ties fire in the order inactivity, absolute, episode (SPEC: inactivity wins a tie).
 * - The episode has a deadline only for a provider loop-pi's recovery covers
 *   (`loopPi.retryRecovery.providerIds`, `limits.episodeApplies`); for any other, pi's retries
 *   run with no episode (its `nextRetry` still shows).
 * - `nextRetry` exists only while the episode records a `nextRetryAt`; its source is `recorded`
 *   (the producer wrote it). `computed` is reserved for a future estimate made here.
 * - `nextResume` exists only when `recovery` is given; the caller passes it only when a resume is
 *   expected (see `deriveSessionState`: state `recovering`). The clock does not judge armed/role.
 * - A deadline built from a non-finite time is null (unknown), never a made-up number; remaining
 *   times are never clamped, overdue is negative.
 */
import type { Checkpoint } from '../contract/checkpoint.js';
import { REFRESHED_STATES } from '../contract/checkpoint-states.js';
import { resumeDelayMs } from './limits.js';

/** An instant and how long until it (negative once overdue; never clamped). */
export interface Deadline {
  at: number;
  remainingMs: number;
}

/** Which limit a request or episode runs into first. */
export type LimitName = 'inactivity' | 'absolute' | 'episode';

/** Every clock of one session at one instant (SPEC §2, §6 `clocks`). */
export interface Clocks {
  inactivity: Deadline | null;
  absolute: Deadline | null;
  firstToFire: LimitName | null;
  /** How much earlier the first limit fires than the next one; null with fewer than two limits. */
  marginMs: number | null;
  episode: (Deadline & { attempts: number; maxAttempts: number; attemptsLeft: number }) | null;
  nextRetry: (Deadline & { source: 'computed' | 'recorded' }) | null;
  nextResume: (Deadline & { source: 'scheduled' | 'predicted'; step: number }) | null;
}

/** What the clocks are computed from; null parts are not running. */
export interface ClockInput {
  /**
   * `episodeApplies: false`: loop-pi's recovery episode does not cover the request's provider
   * (`loopPi.retryRecovery.providerIds`): pi's retries run with no episode deadline (absent: it does).
   */
  limits: { inactivityMs: number; absoluteMs: number; episodeMs: number; episodeMaxAttempts: number; episodeApplies?: boolean };
  /** The model request in flight; null = none. */
  request: { startedAt: number; lastModelEventAt: number | null } | null;
  /** The open retry episode; null = none. */
  /** `nextRetrySource`: `computed` when the producer derived the time from pi's retry settings (it cannot observe pi's timer). */
  episode: { startedAt: number; attempts: number; nextRetryAt: number | null; nextRetrySource?: 'computed' | 'recorded' } | null;
  /** A stopped root waiting to be resumed; null = no resume expected. */
  recovery: { stoppedAt: number; resumes: number; nextResumeAt: number | null } | null;
}

const finite = (n: number | null | undefined): n is number => typeof n === 'number' && Number.isFinite(n);

function deadline(at: number, now: number): Deadline | null {
  return finite(at) && finite(now) ? { at, remainingMs: at - now } : null;
}

/** Tie order: the earlier in this list fires first. */
const TIE_ORDER: readonly LimitName[] = ['inactivity', 'absolute', 'episode'];

/** All clocks at `now`. */
export function computeClocks(input: ClockInput, now: number): Clocks {
  const { limits, request, episode, recovery } = input;

  let inactivity: Deadline | null = null;
  let absolute: Deadline | null = null;
  if (request) {
    // Inactivity counts from the latest model event, or the request start when none has arrived.
    const from = request.lastModelEventAt ?? request.startedAt;
    inactivity = deadline(from + limits.inactivityMs, now);
    absolute = deadline(request.startedAt + limits.absoluteMs, now);
  }

  let episodeClock: Clocks['episode'] = null;
  let nextRetry: Clocks['nextRetry'] = null;
  if (episode) {
    // No episode covers a provider loop-pi's recovery is not set for: only pi's next retry runs.
    const d = limits.episodeApplies === false ? null : deadline(episode.startedAt + limits.episodeMs, now);
    if (d) {
      episodeClock = {
        ...d,
        attempts: episode.attempts,
        maxAttempts: limits.episodeMaxAttempts,
        // More attempts than the cap (settings lowered since, or recorded elsewhere) leave none, not -1.
        attemptsLeft: Math.max(0, limits.episodeMaxAttempts - episode.attempts),
      };
    }
    if (episode.nextRetryAt !== null) {
      const r = deadline(episode.nextRetryAt, now);
      if (r) nextRetry = { ...r, source: episode.nextRetrySource ?? 'recorded' };
    }
  }

  const race: { name: LimitName; at: number }[] = [];
  if (inactivity) race.push({ name: 'inactivity', at: inactivity.at });
  if (absolute) race.push({ name: 'absolute', at: absolute.at });
  if (episodeClock) race.push({ name: 'episode', at: episodeClock.at });
  race.sort((a, b) => a.at - b.at || TIE_ORDER.indexOf(a.name) - TIE_ORDER.indexOf(b.name));
  const first = race[0];
  const second = race[1];

  let nextResume: Clocks['nextResume'] = null;
  if (recovery) {
    const step = recovery.resumes + 1;
    const scheduled = finite(recovery.nextResumeAt);
    const at = scheduled ? (recovery.nextResumeAt as number) : recovery.stoppedAt + resumeDelayMs(step);
    const d = deadline(at, now);
    if (d) nextResume = { ...d, source: scheduled ? 'scheduled' : 'predicted', step };
  }

  return {
    inactivity,
    absolute,
    firstToFire: first ? first.name : null,
    marginMs: first && second ? second.at - first.at : null,
    episode: episodeClock,
    nextRetry,
    nextResume,
  };
}

/**
 * The clock input for a checkpoint under the given limits. Request clocks only in state
 * `requesting`; the episode only while the session is busy with the request (`requesting`,
 * `tools`, `retry-wait`); the resume only when the caller says one is expected.
 */
export function clockInputFromCheckpoint(
  checkpoint: Checkpoint,
  limits: ClockInput['limits'],
  opts: { resumeExpected: boolean },
): ClockInput {
  const busy = REFRESHED_STATES.has(checkpoint.state);
  const req = checkpoint.request;
  const ep = checkpoint.episode;
  const rec = checkpoint.recovery;
  return {
    limits,
    request:
      checkpoint.state === 'requesting' && req ? { startedAt: req.startedAt, lastModelEventAt: req.lastModelEventAt } : null,
    episode:
      busy && ep
        ? { startedAt: ep.startedAt, attempts: ep.attempts, nextRetryAt: ep.nextRetryAt, nextRetrySource: ep.nextRetryAtSource === 'computed' ? 'computed' : 'recorded' }
        : null,
    recovery:
      opts.resumeExpected && rec ? { stoppedAt: rec.stoppedAt, resumes: rec.resumes, nextResumeAt: rec.nextResumeAt } : null,
  };
}

/**
 * A remaining time as `m:ss` or `h:mm:ss`, `-` when overdue, `—` when unknown.
 * Whole seconds rounded away from zero, so the sign is always the true one: a 15-minute countdown
 * reads `15:00` at the request start and until a full second has passed, `14:59` one second
 * later, `0:01` in its last second, `0:00` only exactly at the deadline, and `-0:01` as soon as it
 * has passed (during the first second overdue), `-0:02` once a full second has. So it never reads
 * `0:00` while time is left nor once the deadline is past (SPEC §2: overdue is never shown as
 * zero). The exact value stays in `remainingMs`.
 */
export function formatRemaining(ms: number | null | undefined): string {
  if (!finite(ms)) return '—';
  const negative = ms < 0;
  const total = Math.ceil(Math.abs(ms) / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const ss = String(s).padStart(2, '0');
  const body = h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
  return negative ? `-${body}` : body;
}
