/**
 * The text of every cell of a session row, pure and shared by the TUI and the plain `status`
 * table, so the two can never disagree about a number.
 */
import { formatRemaining } from '../model/clocks.js';
import { checkpointAgeMs, hasRunningClock, placeholderKey, retriesWithoutEpisode, type SessionView } from '../model/snapshot.js';

/** Urgency of a countdown: warning under 3 min, critical under 1 min (SPEC §5). */
export type Urgency = 'ok' | 'warning' | 'critical' | 'none';

export function urgency(remainingMs: number | null | undefined): Urgency {
  if (remainingMs === null || remainingMs === undefined || !Number.isFinite(remainingMs)) return 'none';
  if (remainingMs < 60_000) return 'critical';
  if (remainingMs < 180_000) return 'warning';
  return 'ok';
}

/** Column ids, in display order. `home` is shown only when several homes or machines are. */
export const COLUMNS = ['home', 'name', 'model', 'state', 'inactivity', 'absolute', 'first', 'episode', 'resume', 'armed', 'incidents', 'age', 'id'] as const;
export type ColumnId = (typeof COLUMNS)[number];

export const COLUMN_TITLES: Record<ColumnId, string> = {
  home: 'HOME',
  name: 'NAME',
  model: 'MODEL',
  state: 'STATE',
  inactivity: 'INACT',
  absolute: 'ABS',
  first: 'FIRST',
  episode: 'EPISODE',
  resume: 'RESUME',
  armed: 'ARMED',
  incidents: 'INC',
  age: 'AGE',
  id: 'ID',
};

/** The session id prefix shown: 8 characters, as a UUID's first group (13 for a time-ordered id: idPrefix). */
export const ID_WIDTH = 8;

/** A UUIDv7 (pi ≥ 1.x names its sessions so): its first 48 bits are its creation's millisecond. */
const TIME_ORDERED = /^[0-9a-f]{8}-[0-9a-f]{4}-7/i;

/**
 * The part of a session id that tells it from the others, as a prefix (what the owner-action
 * commands take). A UUID's first group, 8 characters — but pi names its sessions by UUIDv7, whose
 * first 8 characters are the top of its creation time and change only every ~65 s: roots a loop
 * starts together share them. Of such an id, its first 13 (`0190a2b3-4c5d`), the whole millisecond.
 */
export function idPrefix(id: string): string {
  return id.slice(0, TIME_ORDERED.test(id) ? 13 : ID_WIDTH);
}

/**
 * A row's short id: what `loop-dash abort|disarm|arm` takes, and what tells apart two rows of one
 * name (two roots in checkouts of one repo are both named by the cwd's basename); the abort
 * dialog names the whole id. A lane with no session yet: `run:` and its run id's.
 */
export function shortId(v: Pick<SessionView, 'session' | 'placeholder' | 'runId'>): string {
  return v.placeholder && v.runId ? placeholderKey(idPrefix(v.runId)) : idPrefix(v.session);
}

export interface Cell {
  text: string;
  urgency: Urgency;
}

const plain = (text: string): Cell => ({ text, urgency: 'none' });

/** Short age: `4s`, `3m`, `2h`, `5d`. */
export function formatAge(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '—';
  if (Math.abs(ms) < 1000) return '0s';
  if (ms < 0) return `-${formatAge(-ms)}`; // a writer's clock ahead of ours: shown, not hidden
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

const FIRST_LABEL = { inactivity: 'inact', absolute: 'abs', episode: 'episode' } as const;

/**
 * `age` is the data age: the checkpoint's, or (prefixed `~`) the session file's last activity.
 * `home` is the label given (empty: one home, or a lane row under its root).
 */
export function sessionCells(v: SessionView, now: number, homeLabel = ''): Record<ColumnId, Cell> {
  const c = v.clocks;
  const first = c.firstToFire;
  const firstRemaining = first === 'inactivity' ? c.inactivity?.remainingMs : first === 'absolute' ? c.absolute?.remainingMs : first === 'episode' ? c.episode?.remainingMs : null;
  return {
    home: plain(homeLabel),
    name: plain(v.name),
    model: plain(v.model ?? '—'),
    state: plain(v.state + (v.source.stale ? ' (stale)' : '')),
    inactivity: { text: formatRemaining(c.inactivity?.remainingMs ?? null), urgency: urgency(c.inactivity?.remainingMs) },
    absolute: { text: formatRemaining(c.absolute?.remainingMs ?? null), urgency: urgency(c.absolute?.remainingMs) },
    first: first
      ? { text: `${FIRST_LABEL[first]}${c.marginMs !== null ? ` by ${formatRemaining(c.marginMs)}` : ''}`, urgency: urgency(firstRemaining) }
      : plain('—'),
    episode: c.episode
      ? { text: `${formatRemaining(c.episode.remainingMs)} ${c.episode.attemptsLeft}/${c.episode.maxAttempts} left`, urgency: urgency(c.episode.remainingMs) }
      : retriesWithoutEpisode(v)
        ? plain('none')
        : plain('—'),
    // A resume or retry coming is expected, not a danger: no colour; overdue (the loop or pi did
    // not restart it when due), a warning.
    resume: c.nextResume
      ? { text: `${formatRemaining(c.nextResume.remainingMs)} #${c.nextResume.step} ${c.nextResume.source === 'scheduled' ? 'sched' : 'pred'}`, urgency: overdue(c.nextResume.remainingMs) }
      : c.nextRetry
        ? { text: `retry ${formatRemaining(c.nextRetry.remainingMs)}`, urgency: overdue(c.nextRetry.remainingMs) }
        : plain('—'),
    armed: plain(v.held ? 'HELD' : v.armed === true ? 'armed' : v.armed === false ? 'disarmed' : '—'),
    incidents: plain(v.incidents ? String(v.incidents) : '·'),
    age: plain(ageText(v, now)),
    id: plain(shortId(v)),
  };
}

/** An expected restart's urgency: a warning once it is overdue, else none. */
function overdue(remainingMs: number): Urgency {
  return remainingMs < 0 ? 'warning' : 'none';
}

/**
 * What {@link sessionCells} shows of the running deadlines' remaining times: each deadline's text
 * and urgency, in one string. Re-timing a row changes nothing else its cells read (the margin, the
 * attempts and the resume step are fixed per deadline), so a row re-timed to another `now` has the
 * same cells as before exactly when this and {@link ageText} are the same. `''` without a clock.
 */
export function countdownKey(v: SessionView): string {
  if (!hasRunningClock(v)) return '';
  const c = v.clocks;
  return `${remainingKey(c.inactivity)},${remainingKey(c.absolute)},${remainingKey(c.episode)},${remainingKey(c.nextResume)},${remainingKey(c.nextRetry)}`;
}

function remainingKey(d: { remainingMs: number } | null): string {
  return d ? `${formatRemaining(d.remainingMs)}/${urgency(d.remainingMs)}` : '-';
}

/**
 * The one cell of {@link sessionCells} that depends on `now` (every other one reads the view,
 * whose countdowns the snapshot re-times): the checkpoint's age, or (`~`) the session file's.
 * Callers that keep cells per view key them on this text.
 */
export function ageText(v: SessionView, now: number): string {
  // A session file's time past `now` (its writer's or file server's clock ahead, or `--now` before
  // the data) is no negative age: it reads 0s, and the detail pane says by how much it is ahead.
  return v.source.checkpoint ? `${formatAge(checkpointAgeMs(v, now))}${v.source.stale ? '!' : ''}` : v.lastActivityAt !== null ? `~${formatAge(Math.max(0, now - v.lastActivityAt))}` : '—';
}
