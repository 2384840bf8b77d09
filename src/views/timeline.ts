/**
 * Every clock of one session as a small text picture plus the numbers behind it. The axis runs
 * from the earliest mark (request start, first failure, or stop) to the latest deadline; `─` is
 * time before the first limit fires and `═` time after it (the request will not get it):
 *
 *   S───e────N──I══════════A      S start, e last model event, N now, I inactivity, A absolute
 *
 * Each number line starts with its mark, so the picture needs no separate legend.
 */
import type { Clocks } from '../model/clocks.js';
import { retriesWithoutEpisode, type SessionView } from '../model/snapshot.js';
import { plainLine, span, type Line, type Tone } from './line.js';
import { urgency } from './cells.js';
import { urgencyMarker } from './table-layout.js';
import { formatClockTime, formatDuration, formatLeft, formatRelative } from './time-format.js';

/** A point on the axis. Higher `rank` wins a contested cell. */
export interface TimelineMark {
  at: number;
  ch: string;
  rank: number;
}

/** The axis drawn in `width` cells over [from, to]; `cut` is where `─` turns into `═`. */
export function drawAxis(marks: readonly TimelineMark[], from: number, to: number, width: number, cut: number | null): string {
  if (width <= 0) return '';
  const span_ = Math.max(1, to - from);
  const pos = (t: number) => Math.max(0, Math.min(width - 1, Math.round(((t - from) / span_) * (width - 1))));
  const cells: string[] = Array.from({ length: width }, (_, i) => (cut !== null && from + (i / Math.max(1, width - 1)) * span_ > cut ? '═' : '─'));
  // The instant of the mark holding each cell.
  const taken = new Array<number | undefined>(width).fill(undefined);
  for (const m of [...marks].sort((a, b) => b.rank - a.rank)) {
    const p = pos(m.at);
    // Nudge a contested mark one cell aside rather than hide it — to the side its instant lies on
    // (a request started a moment ago read `NS`, now before the start).
    const before = taken[p] !== undefined && m.at < taken[p]!;
    if (before && (p === 0 || taken[p - 1] !== undefined) && p + 1 < width && taken[p + 1] === undefined) {
      // No room on the left: the mark holding the cell steps right instead.
      cells[p + 1] = cells[p]!;
      taken[p + 1] = taken[p];
      cells[p] = m.ch;
      taken[p] = m.at;
      continue;
    }
    const slot = (before ? [p, p - 1, p + 1] : [p, p + 1, p - 1]).find((q) => q >= 0 && q < width && taken[q] === undefined);
    if (slot === undefined) continue;
    cells[slot] = m.ch;
    taken[slot] = m.at;
  }
  return cells.join('');
}

const finite = (n: number | null | undefined): n is number => typeof n === 'number' && Number.isFinite(n);

function deadlineOfFirst(c: Clocks): number | null {
  switch (c.firstToFire) {
    case 'inactivity':
      return c.inactivity?.at ?? null;
    case 'absolute':
      return c.absolute?.at ?? null;
    case 'episode':
      return c.episode?.at ?? null;
    case null:
      return null;
    default: {
      const never: never = c.firstToFire;
      return never;
    }
  }
}

/** The marks of a session's running clocks, or null when none runs. */
export function timelineMarks(v: SessionView, now: number): { marks: TimelineMark[]; cut: number | null; episode: [number, number] | null } | null {
  const c = v.clocks;
  const cp = v.checkpoint;
  const marks: TimelineMark[] = [];
  const req = cp?.request;
  if (c.inactivity || c.absolute) {
    if (req && finite(req.startedAt)) marks.push({ at: req.startedAt, ch: 'S', rank: 5 });
    if (req && finite(req.lastModelEventAt)) marks.push({ at: req.lastModelEventAt, ch: 'e', rank: 4 });
  }
  if (c.inactivity) marks.push({ at: c.inactivity.at, ch: 'I', rank: 9 });
  if (c.absolute) marks.push({ at: c.absolute.at, ch: 'A', rank: 8 });
  let episode: [number, number] | null = null;
  if (c.episode && cp?.episode && finite(cp.episode.startedAt)) {
    marks.push({ at: cp.episode.startedAt, ch: 'F', rank: 3 });
    marks.push({ at: c.episode.at, ch: 'E', rank: 7 });
    episode = [cp.episode.startedAt, c.episode.at];
  }
  if (c.nextRetry) marks.push({ at: c.nextRetry.at, ch: 'r', rank: 6 });
  if (c.nextResume) {
    if (cp?.recovery && finite(cp.recovery.stoppedAt)) marks.push({ at: cp.recovery.stoppedAt, ch: 'X', rank: 5 });
    marks.push({ at: c.nextResume.at, ch: 'R', rank: 7 });
  }
  if (marks.length === 0) return null;
  marks.push({ at: now, ch: 'N', rank: 10 });
  return { marks, cut: deadlineOfFirst(c), episode };
}

/** The picture (one or two lines), indented by `indent` cells. */
export function timelinePicture(v: SessionView, now: number, width: number, indent = 2): Line[] {
  const t = timelineMarks(v, now);
  if (!t) return [];
  const from = Math.min(...t.marks.map((m) => m.at));
  const to = Math.max(...t.marks.map((m) => m.at));
  const w = Math.max(10, Math.min(100, width - indent - 1));
  const pad = ' '.repeat(indent);
  const lines: Line[] = [plainLine(pad + drawAxis(t.marks, from, to, w, t.cut))];
  if (t.episode) {
    const pos = (x: number) => Math.max(0, Math.min(w - 1, Math.round(((x - from) / Math.max(1, to - from)) * (w - 1))));
    const a = pos(t.episode[0]);
    const b = Math.max(a + 1, pos(t.episode[1]));
    const bar = ' '.repeat(a) + '[' + '-'.repeat(Math.max(0, b - a - 1)) + ']';
    lines.push([span(pad + bar.slice(0, w)), span(' retry episode', { dim: true })]);
  }
  return lines;
}

function tone(ms: number | null | undefined, noColor: boolean): { style: { color?: Tone; bold?: boolean }; marker: string } {
  const u = urgency(ms);
  if (noColor) return { style: {}, marker: urgencyMarker(u) ? ` ${urgencyMarker(u)}` : '' };
  return { style: u === 'critical' ? { color: 'red', bold: true } : u === 'warning' ? { color: 'yellow' } : {}, marker: '' };
}

/** The numbers: each mark with its time left and its wall-clock instant, then which fires first. */
export function clockLines(v: SessionView, now: number, noColor: boolean): Line[] {
  const c = v.clocks;
  const cp = v.checkpoint;
  const req = cp?.request ?? null;
  const lines: Line[] = [];
  const at = (t: number) => formatClockTime(t, now);
  const src = (k: keyof SessionView['limits']['source']) => v.limits.source[k];

  if (c.inactivity || c.absolute) {
    if (req) {
      lines.push(plainLine(`S request start   ${at(req.startedAt)} (${formatRelative(req.startedAt, now)}) · turn ${req.turn}`));
      lines.push(
        plainLine(
          req.lastModelEventAt !== null
            ? `e last model event ${at(req.lastModelEventAt)} (${formatRelative(req.lastModelEventAt, now)}) · ${req.modelEvents} events, ${req.keepalives} keepalives`
            : `e last model event none yet · ${req.keepalives} keepalives (keepalives do not move the clock)`,
        ),
      );
      // The stream's own last sign of life, when it came after the model's last event: a stall that
      // still gets keepalives or raw events is told from a dead connection (neither moves the clock).
      const heard = req.lastTransportEventAt;
      if (finite(heard) && heard - (req.lastModelEventAt ?? req.startedAt) >= 1000) {
        lines.push(plainLine(`  stream activity ${at(heard)} (${formatRelative(heard, now)}) · keepalives or raw events since the last model event: the connection is alive`));
      }
    }
  }
  const episodeStart = cp?.episode?.startedAt;
  if (c.episode && finite(episodeStart)) lines.push(plainLine(`F first failure    ${at(episodeStart)} (${formatRelative(episodeStart, now)}) · opened the retry episode`));
  const stoppedAt = cp?.recovery?.stoppedAt;
  if (c.nextResume && finite(stoppedAt)) lines.push(plainLine(`X stopped          ${at(stoppedAt)} (${formatRelative(stoppedAt, now)})${cp?.recovery?.reason ? ` · ${cp.recovery.reason}` : ''}`));
  lines.push(plainLine(`N now              ${at(now)}`));
  if (c.inactivity) {
    const t = tone(c.inactivity.remainingMs, noColor);
    lines.push([
      span('I inactivity       '),
      span(`${formatLeft(c.inactivity.remainingMs)}${t.marker}`, t.style),
      span(`  at ${at(c.inactivity.at)} · ${formatDuration(v.limits.inactivityMs)} without a model event (${src('inactivityMs')})`),
    ]);
  }
  if (c.absolute) {
    const t = tone(c.absolute.remainingMs, noColor);
    lines.push([
      span('A absolute         '),
      span(`${formatLeft(c.absolute.remainingMs)}${t.marker}`, t.style),
      span(`  at ${at(c.absolute.at)} · ${formatDuration(v.limits.absoluteMs)} from the request start (${src('absoluteMs')})`),
    ]);
  }
  if (c.episode) {
    const t = tone(c.episode.remainingMs, noColor);
    lines.push([
      span('E retry episode    '),
      span(`${formatLeft(c.episode.remainingMs)}${t.marker}`, t.style),
      span(
        `  at ${at(c.episode.at)} · attempts ${c.episode.attempts} of ${c.episode.maxAttempts} (${c.episode.attemptsLeft} left) · ${formatDuration(v.limits.episodeMs)} window (${src('episodeMs')})`,
      ),
    ]);
  }
  if (!c.episode && retriesWithoutEpisode(v) && cp?.episode) {
    const provider = v.model?.includes('/') ? v.model.slice(0, v.model.indexOf('/')) : 'its provider';
    lines.push(plainLine(`E retry episode    none: ${provider} is not in loopPi.retryRecovery.providerIds · pi's retries (attempt ${cp.episode.attempts} so far) have no time bound`));
  }
  if (c.nextRetry) {
    lines.push(plainLine(`r next retry       ${formatLeft(c.nextRetry.remainingMs)}  at ${at(c.nextRetry.at)} (${c.nextRetry.source})`));
  }
  if (c.nextResume) {
    lines.push(
      plainLine(
        `R next resume      ${formatLeft(c.nextResume.remainingMs)}  at ${at(c.nextResume.at)} · step ${c.nextResume.step} of the ladder · ${
          c.nextResume.source === 'scheduled' ? 'scheduled (written by the loop)' : 'predicted (from the ladder; nothing recorded it)'
        }`,
      ),
    );
  }
  if (c.firstToFire) {
    const first = { inactivity: 'inactivity', absolute: 'absolute', episode: 'retry episode' }[c.firstToFire];
    lines.push(
      plainLine(`first to fire: ${first}${c.marginMs !== null ? `, ${formatDuration(c.marginMs)} before the next limit` : ' (the only limit running)'}`, { bold: true }),
    );
  }
  return lines;
}
