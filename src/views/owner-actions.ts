/**
 * Owner actions as the views show them: what a confirmation says will happen, and where a request
 * stands (pending → applied/refused/expired/stale-target, or nobody answered) from the acks and
 * the owner's journal in the model.
 */
import type { ControlAck, ControlAction, JournalEntry } from '../contract/control.js';
import { abortScope, placeholderRefusal, sameTarget, targetFromCheckpoint, targetStartedHere } from '../control/index.js';
import { formatRemaining } from '../model/clocks.js';
import type { SessionView } from '../model/snapshot.js';
import { formatClockTime } from './time-format.js';

/** SPEC §4.2: after this long without an ack, say plainly that no consumer answered. */
export const NO_ANSWER_MS = 10_000;
export const NO_CONSUMER_TEXT = 'no consumer answered in 10 s (is the loop-dash extension loaded in this root?)';
/** How long a settled outcome stays in the flash line. */
export const FLASH_MS = 6_000;

/** Where a request stands. */
export type OutcomeStatus = 'sending' | 'pending' | 'applied' | 'refused' | 'expired' | 'stale-target' | 'no-answer' | 'failed';

export interface Outcome {
  status: OutcomeStatus;
  detail: string | null;
  /** When it settled (null while sending/pending). */
  settledAt: number | null;
}

/** The ack key in `ModelState.acks`. */
export const ackKey = (home: string, id: string) => `${home}\0${id}`;

/** Where request `id` stands at `now`, from the ack, else the journal's outcome line, else the clock. */
export function outcomeOf(
  req: { id: string; home: string; requestedAt: number },
  acks: ReadonlyMap<string, ControlAck & { session: string }>,
  journal: readonly JournalEntry[] | undefined,
  now: number,
): Outcome {
  const ack = acks.get(ackKey(req.home, req.id));
  if (ack) return { status: ack.status, detail: ack.detail || null, settledAt: Math.min(now, Math.max(ack.at, req.requestedAt)) };
  const logged = journal?.filter((e) => e.id === req.id && e.kind === 'outcome' && e.status && e.status !== 'pending').pop();
  if (logged?.status) {
    const s = logged.status;
    const status: OutcomeStatus = s === 'write-failed' ? 'failed' : s;
    return { status, detail: logged.detail ?? null, settledAt: Math.min(now, logged.at) };
  }
  if (now - req.requestedAt >= NO_ANSWER_MS) return { status: 'no-answer', detail: NO_CONSUMER_TEXT, settledAt: req.requestedAt + NO_ANSWER_MS };
  return { status: 'pending', detail: null, settledAt: null };
}

/** An outcome in words. */
export function describeOutcome(o: Outcome): string {
  switch (o.status) {
    case 'sending':
      return 'sending…';
    case 'pending':
      return 'pending (waiting for the session to answer)';
    case 'applied':
      return `applied${o.detail ? `: ${o.detail}` : ''}`;
    case 'refused':
      return `refused${o.detail ? `: ${o.detail}` : ''}`;
    case 'expired':
      return `expired before it was applied${o.detail ? `: ${o.detail}` : ''}`;
    case 'stale-target':
      return `rejected: the session restarted or moved on to another request${o.detail ? ` (${o.detail})` : ''}`;
    case 'no-answer':
      return NO_CONSUMER_TEXT;
    case 'failed':
      return `could not write the request${o.detail ? `: ${o.detail}` : ''}`;
    default: {
      const never: never = o.status;
      return never;
    }
  }
}

/** One owner action of a session, assembled from the journal (newest last). */
export interface JournalAction {
  id: string;
  action: ControlAction;
  requestedAt: number;
  by: string | null;
}

/** The requests the journal records for `session`. */
export function journalActions(journal: readonly JournalEntry[] | undefined, session: string): JournalAction[] {
  const byId = new Map<string, JournalAction>();
  for (const e of journal ?? []) {
    if (e.session !== session || !e.action) continue; // an unreadable request has no action to show
    const seen = byId.get(e.id);
    if (!seen) byId.set(e.id, { id: e.id, action: e.action, requestedAt: e.at, by: e.by ?? null });
    else if (e.kind === 'requested') {
      // An outcome can be journalled before its request's line (another process answered first).
      seen.requestedAt = e.at;
      seen.by = e.by ?? seen.by;
    }
  }
  return [...byId.values()].sort((a, b) => a.requestedAt - b.requestedAt);
}

/** Why an owner action cannot be sent from here for this row, or null when it can. */
export function refusalReason(v: Pick<SessionView, 'remote' | 'session' | 'placeholder' | 'runId'>): string | null {
  if (!v.remote) return v.placeholder ? placeholderRefusal(v) : null;
  return `This row is read from ${v.remote.host} (${v.remote.url}) and is read-only here: owner actions stay on the machine that owns the root, whose extension reads its own control directory. Run \`loop-dash\` or \`loop-dash abort|disarm|arm ${v.session}\` on ${v.remote.host}.`;
}

/**
 * The confirmation dialog's words for an action on a session at `now`; `refused` is set when the
 * action cannot be sent from here (a remote row) and the dialog only says why.
 */
export function confirmText(
  action: ControlAction,
  v: SessionView,
  now: number,
  captured: SessionView = v,
): { title: string; facts: string[]; effect: string; refused?: string } {
  // An abort targets the request in flight when the key was pressed (`captured`), whatever runs
  // by the time of `y`: the owner never cuts a request they did not see (SPEC §4.2).
  const live = targetFromCheckpoint(v);
  const req = action === 'abort' ? targetFromCheckpoint(captured) : live;
  const moved = action === 'abort' && !sameTarget(req, live);
  // What the abort stops, as seen when x was pressed.
  const scope = abortScope(captured);
  // A target is in the session's own time; shown in ours (clock-skew.ts).
  const ago = (t: { turn: number; startedAt: number }) => now - targetStartedHere(v, t);
  const who = v.role === 'root' ? 'the root' : 'the lane';
  // An abort of a session already held keeps it held rather than holding it.
  const hold = v.held ? `keep ${who} held` : `hold ${who}`;
  // No checkpoint (the extension not loaded, or not yet written): whether a request is in flight
  // cannot be seen here — said so, not shown as none (SPEC §2: never a made-up value).
  const unseen = !v.source.checkpoint && !v.remote && !v.placeholder;
  const facts = [
    `session  ${v.session}`,
    `name     ${v.name}${v.role === 'lane' ? ' (lane)' : ''}`,
    `model    ${v.model ?? 'unknown'}`,
    req
      ? `request  turn ${req.turn}, started ${formatRemaining(ago(req))} ago (${formatClockTime(now - ago(req), now)})${scope === 'tools' ? '; ended, its tools are running' : ''}`
      : unseen
        ? 'request  unknown: no loop-dash checkpoint, so whether one is in flight cannot be seen'
        : `request  none in flight${scope === 'retry' ? "; pi's retry of the failed one is pending" : ''}`,
    ...(moved ? [`now      ${live ? `turn ${live.turn} is in flight, started ${formatRemaining(ago(live))} ago` : 'that request has ended; none is in flight'} — CHANGED since you pressed x`] : []),
    `state    ${v.state}${v.armed === false ? ', disarmed' : v.armed === true ? ', armed' : ''}${v.held && v.state !== 'held' ? ', held' : ''}`,
  ];
  const refused = refusalReason(v);
  if (refused) {
    facts.push(v.remote ? `machine  ${v.remote.host} (remote, read-only here)` : `run      ${v.runId ?? '?'} (no session yet)`);
    return { title: v.remote ? `Cannot ${action} ${v.name} from this machine` : `Cannot ${action} ${v.name}: it has no session yet`, facts, effect: refused, refused };
  }
  if (v.state === 'lost' || v.state === 'ended') facts.push(`note     the session looks ${v.state === 'lost' ? 'lost (its process is gone)' : 'ended'}: nothing may be there to answer`);
  else if (!v.source.checkpoint) facts.push('note     no loop-dash checkpoint: the extension may not be loaded here, so nothing may answer');
  switch (action) {
    case 'abort':
      return {
        title: `Owner-abort ${v.name}?`,
        facts,
        effect: moved
          ? `The session moved on since you pressed x: y still sends the abort for what you saw (${req ? `turn ${req.turn}` : 'no request in flight'}), which the session will refuse, cutting and holding nothing. Press any other key, then x again, to act on what runs now.`
          : req && scope === 'tools'
            ? `This will stop the tools turn ${req.turn} asked for (unless a later request has started) and ${hold}: no request follows them, nothing restarts it until you arm it.`
            : req
              ? `This will cut the in-flight request turn ${req.turn} (started ${formatRemaining(ago(req))} ago) and ${hold}; nothing restarts it until you arm it.`
              : unseen
                ? `Whether a request is in flight cannot be seen here (no checkpoint). If the loop-dash extension runs in this session, it cuts the request in flight, if any, and ${hold}; if it does not, nothing answers and nothing changes.`
                : scope === 'retry'
                ? `No request is in flight: this cancels pi's pending retry and ${v.held ? `keeps ${who} held` : `holds ${who}`}; nothing restarts it until you arm it.`
                : v.held
                  ? `No request is in flight and ${who} is already held: this cuts nothing and changes nothing but the owner's record (a retry pi may still have pending is cancelled); it stays held until you arm it.`
                  : `No request is in flight: this cuts nothing and will only hold ${who} (a retry pi may still have pending is cancelled); nothing restarts it until you arm it.`,
      };
    case 'disarm':
      return {
        title: `Disarm ${v.name}?`,
        facts,
        effect: v.held
          ? `${v.name} is already held: disarming it again changes nothing but the owner's record; no automatic nudge, wake or resume starts a turn until you arm it.`
          : `This will hold ${who}: no automatic nudge, wake or resume starts a turn until you arm it. A request already running is not cut.`,
      };
    case 'arm':
      return {
        title: `Arm ${v.name}?`,
        facts,
        effect: v.held
          ? `This will clear the hold${v.checkpoint?.held?.heldTurnStarts ? ` and release ${v.checkpoint.held.heldTurnStarts} held turn start(s) as one message` : ''}; the loop may then restart ${who} by itself.`
          : `${v.name} is not held; arming it again lets the loop restart ${who} by itself (no change if it already can).`,
      };
    default: {
      const never: never = action;
      return never;
    }
  }
}
