/**
 * The detail pane's content for one session, as lines: identity and state, every clock (picture
 * and numbers), activity sparkline, last error, history, timers and watchers, state-log events,
 * linked incidents and owner actions. Pure: the pane windows and scrolls these lines.
 */
import type { ControlAck, JournalEntry } from '../contract/control.js';
import { checkpointAgeMs, type SessionView } from '../model/snapshot.js';
import type { IncidentRecord, SessionHistoryItem } from '../model/types.js';
import { isResumeEvent } from '../readers/state-log.js';
import { activityBuckets, sparkline, squeeze, ACTIVITY_BUCKETS, type ActivityTrack } from './activity.js';
import { formatAge } from './cells.js';
import { plainLine, span, type Line } from './line.js';
import { describeOutcome, journalActions, outcomeOf } from './owner-actions.js';
import { REFRESHED_STATES } from '../contract/checkpoint-states.js';
import { clockLines, timelinePicture } from './timeline.js';
import { formatClockTime, formatDuration, formatRelative } from './time-format.js';

/** Local (not yet journalled) owner actions, as the view state keeps them. */
export interface LocalAction {
  action: string;
  session: string;
  requestId: string | null;
  requestedAt: number;
  status: 'queued' | 'sent' | 'failed';
  error: string | null;
}

export interface DetailContext {
  now: number;
  width: number;
  noColor: boolean;
  incidents: readonly IncidentRecord[];
  journal: readonly JournalEntry[] | undefined;
  acks: ReadonlyMap<string, ControlAck & { session: string }>;
  activity: ActivityTrack | undefined;
  local: readonly LocalAction[];
}

/** How many recent items each list shows. */
const RECENT = 8;

const heading = (text: string): Line => plainLine(text, { bold: true, color: 'cyan' });
const item = (text: string): Line => plainLine(`  ${text}`);

/** Two lists of dated items as one, oldest first (an undated item sorts first, as it was found). */
function mergeByTime(a: readonly SessionHistoryItem[], b: readonly SessionHistoryItem[]): SessionHistoryItem[] {
  return [...a, ...b].sort((x, y) => (x.at ?? -Infinity) - (y.at ?? -Infinity));
}

/** A session file's last activity; a time past `now` is said as ahead of this clock, not as "in …". */
/** The data line of a lane with no session yet (SessionView.placeholder): where it is known from, and since when. */
function placeholderData(v: SessionView, now: number): string {
  // A remote placeholder carries no dispatch: its last activity is the dispatch's time then.
  const at = v.dispatch?.at ?? v.lastActivityAt;
  const from = v.placeholder === 'dispatch' ? `dispatched ${at !== null ? `${formatAge(now - at)} ago` : 'at an unknown time'}` : "known from its run's status.json only";
  const run = v.laneStatus?.lastActivityAt != null ? `, the run last active ${lastActive(v.laneStatus.lastActivityAt, now)}` : '';
  return `no session file or checkpoint yet; ${from}${run}`;
}

function lastActive(at: number | null, now: number): string {
  if (at === null) return 'unknown';
  if (at - now >= 1000) return `${formatDuration(at - now)} ahead of this machine's clock (its writer's or file server's clock is ahead, or --now is before it)`;
  return formatRelative(Math.min(at, now), now);
}

function rawFields(raw: Record<string, unknown>, skip: readonly string[]): string {
  return Object.entries(raw)
    .filter(([k]) => !skip.includes(k))
    .map(([k, val]) => `${k}=${typeof val === 'string' ? val : JSON.stringify(val)}`)
    .join(' ');
}

export function detailLines(v: SessionView, ctx: DetailContext): Line[] {
  const { now } = ctx;
  const at = (t: number | null | undefined) => formatClockTime(t, now);
  const lines: Line[] = [];
  const cp = v.checkpoint;

  // Who and what.
  lines.push([
    span(`${v.name}`, { bold: true }),
    span(`  ${v.role}${v.parent ? ` of ${v.parent}` : ''} · ${v.placeholder ? `no session yet (run ${v.runId ?? '?'})` : `session ${v.session}`}`, { dim: true }),
  ]);
  lines.push([span('state '), span(v.state, { bold: true }), span(` — ${v.why}`)]);
  const liveness = v.liveness ? ` · process: ${v.liveness.status}${v.liveness.detail ? ` (${v.liveness.detail})` : ''}` : '';
  lines.push(item(`model ${v.model ?? 'unknown'}${cp?.thinking ? ` · thinking ${cp.thinking}` : ''}${cp ? ` · pid ${cp.pid} on ${cp.host}` : ''}${liveness}`));
  lines.push(item(`armed ${v.role === 'lane' ? '— (a lane is never resumed; its root decides)' : v.armed === null ? 'unknown' : v.armed ? 'yes' : 'no'}${v.held ? ' · HELD' : ''}${cp?.held ? ` since ${at(cp.held.since)}${cp.held.by ? ` by ${cp.held.by}` : ''}, ${cp.held.heldTurnStarts} turn start(s) held` : ''}${cp?.ownerAbort ? ` · owner abort at ${at(cp.ownerAbort.at)}` : ''}`));
  if (v.cwd) lines.push(item(`cwd ${v.cwd}`));
  if (v.role === 'lane') {
    const ls = v.laneStatus;
    lines.push(
      item(
        `lane ${v.lane ?? '—'} · task ${v.task ?? '—'} · run ${v.runId ?? '—'}${v.deadline !== null ? ` · deadline ${at(v.deadline)} (${formatRelative(v.deadline, now)})` : ''}${
          ls ? ` · run ${ls.state}${ls.currentTool ? `, tool ${ls.currentTool}${ls.currentToolStartedAt !== null ? ` for ${formatDuration(now - ls.currentToolStartedAt)}` : ''}` : ''}` : ''
        }`,
      ),
    );
  }
  const dataAge = v.source.checkpoint
    ? `checkpoint ${formatAge(checkpointAgeMs(v, now))} old${v.source.stale ? (v.checkpoint && REFRESHED_STATES.has(v.checkpoint.state) ? ' (STALE: refreshed at least every 15 s while a request, its tools or a retry wait runs)' : ' (STALE: refreshed at least every 60 s while its session runs; is the extension still running?)') : ''}`
    : v.placeholder
      ? placeholderData(v, now)
      : `no checkpoint; session file last active ${lastActive(v.lastActivityAt, now)}`;
  const skew = v.source.clockSkewMs > 0 ? ` · its writer's clock runs ${formatDuration(v.source.clockSkewMs)} ahead of this machine's: its times are shown moved back by that (from the file's mtime)` : '';
  lines.push(item(`data: ${dataAge}${skew}`));
  if (v.remote) lines.push(item(`remote: from ${v.remote.host} (${v.remote.url}), fetched ${formatAge(now - v.remote.fetchedAt)} ago · read-only here; owner actions stay on ${v.remote.host}`));
  lines.push(item(`limits: inactivity ${formatDuration(v.limits.inactivityMs)} (${v.limits.source.inactivityMs}) · absolute ${formatDuration(v.limits.absoluteMs)} (${v.limits.source.absoluteMs}) · ${v.limits.episodeApplies ? `episode ${formatDuration(v.limits.episodeMs)} × ${v.limits.episodeMaxAttempts} attempts` : 'no retry episode (provider not in loopPi.retryRecovery.providerIds)'}`));

  // Clocks.
  lines.push(heading('Clocks'));
  const picture = timelinePicture(v, now, ctx.width);
  if (picture.length === 0) lines.push(item(`no clock is running (${v.state})`));
  else lines.push(...picture);
  lines.push(...clockLines(v, now, ctx.noColor).map((l) => [span('  '), ...l]));

  // Activity.
  const sparkWidth = Math.max(10, Math.min(ACTIVITY_BUCKETS, ctx.width - 18));
  const buckets = activityBuckets(ctx.activity, now);
  const total = buckets.reduce((a, b) => a + b, 0);
  const perChar = Math.ceil(ACTIVITY_BUCKETS / sparkWidth) * 10;
  lines.push(heading(`Activity: model events per ${perChar} s, last 15 min (as seen by this dashboard)`));
  lines.push(item(ctx.activity && total > 0 ? `${sparkline(squeeze(buckets, sparkWidth))}  ${total} event${total === 1 ? '' : 's'}` : 'no model events seen yet'));

  // Last error.
  if (v.lastError) {
    lines.push(heading('Last error'));
    lines.push([span('  '), span(v.lastError, { color: 'red' })]);
  }
  if (cp?.episode?.lastErrorClass) lines.push(item(`error class ${cp.episode.lastErrorClass}`));
  if (cp?.lastStop) lines.push(item(`last stop ${at(cp.lastStop.at)}: ${[cp.lastStop.reason, cp.lastStop.limit ? `limit ${cp.lastStop.limit}` : null, cp.lastStop.error].filter(Boolean).join(' · ')}`));

  // History: the session file's, with the state log's resume records (SPEC §3.4: an event whose
  // name contains `resume`) in time order.
  const resumes = v.stateLog.filter((e) => isResumeEvent(e));
  const history = resumes.length === 0 ? v.history : mergeByTime(v.history, resumes.map((e) => ({ at: e.at, kind: `state log ${e.ev}${e.by ? ` by ${e.by}` : ''}`, summary: rawFields(e.raw, ['v', 'seq', 'ts', 'ev', 'by']) })));
  if (history.length > 0) {
    lines.push(heading(`Retry / resume history (${history.length})`));
    for (const h of history.slice(-RECENT).reverse()) lines.push(item(`${at(h.at)}  ${h.kind}  ${h.summary}`));
  }

  // Timers and watchers.
  if (v.timers.length > 0 || v.watchers.length > 0) {
    lines.push(heading('Loop-wait timers and watchers'));
    for (const t of v.timers) lines.push(item(`timer ${t.id} at ${at(t.at)} (${formatRelative(t.at, now)})${t.reason ? ` · ${t.reason}` : ''}`));
    for (const w of v.watchers) {
      const r = w.receipt;
      let receipt = 'no receipt';
      if (r) {
        const interval = r.intervalS ?? w.intervalS;
        const stale = r.phase === 'running' && r.lastObservedAt !== null && interval !== null && now - r.lastObservedAt > 2 * interval * 1000;
        receipt = `receipt ${r.phase ?? '?'}, ${r.observations ?? '?'} observations, last ${r.lastObservedAt !== null ? formatRelative(r.lastObservedAt, now) : 'never'}${stale ? ' (STALE: silent for over 2× its interval)' : ''}`;
      }
      lines.push(
        item(`watcher ${w.label ?? w.id} · ${w.phase ?? 'phase ?'}${w.pid !== null ? ` · pid ${w.pid}` : ''}${w.deadline !== null ? ` · deadline ${at(w.deadline)}` : ''}${w.intervalS !== null ? ` · every ${w.intervalS} s` : ''} · ${receipt}`),
      );
    }
  }

  // State log.
  if (v.stateLog.length > 0) {
    lines.push(heading(`State log (${v.stateLog.length} event${v.stateLog.length === 1 ? '' : 's'}; newest first)`));
    for (const e of v.stateLog.slice(-RECENT).reverse()) {
      lines.push(item(`${at(e.at)}  ${e.ev}${e.by ? ` by ${e.by}` : ''}  ${rawFields(e.raw, ['v', 'seq', 'ts', 'ev', 'by'])}`));
    }
  }

  // Incidents.
  // The row's home's: a copy of the home given beside it holds the same files (its INC counts them so).
  const linked = ctx.incidents.filter((i) => i.session === v.session && (v.remote !== undefined || i.home === v.home));
  if (linked.length > 0) {
    lines.push(heading(`Incidents (${linked.length})`));
    for (const i of linked.slice(0, RECENT)) {
      lines.push([span('  '), span(`${at(i.at)}  ${i.cls}`, { color: 'red' }), span(`${i.limit ? ` · limit ${i.limit}` : ''}${i.attempt !== null ? ` · attempt ${i.attempt}` : ''}${i.exhausted ? ' · exhausted' : ''}  ${i.summary}`)]);
    }
  }

  // Owner actions: the journal, plus requests this dashboard made that the journal does not show yet.
  const journalled = journalActions(ctx.journal, v.session);
  const known = new Set(journalled.map((a) => a.id));
  const local = ctx.local.filter((a) => a.session === v.session && (a.requestId === null || !known.has(a.requestId)));
  if (journalled.length > 0 || local.length > 0) {
    // Newest first, as the state log and the incidents above (the requests made here and not yet
    // journalled are the newest).
    lines.push(heading('Owner actions (newest first)'));
    const shown: { at: number; text: string }[] = [];
    for (const a of local) {
      const o =
        a.status === 'failed'
          ? describeOutcome({ status: 'failed', detail: a.error, settledAt: null })
          : a.status === 'queued'
            ? describeOutcome({ status: 'sending', detail: null, settledAt: null })
            : describeOutcome(outcomeOf({ id: a.requestId!, home: v.home, requestedAt: a.requestedAt }, ctx.acks, ctx.journal, now));
      shown.push({ at: a.requestedAt, text: `${at(a.requestedAt)}  ${a.action} → ${o}` });
    }
    for (const a of journalled.slice(-RECENT)) {
      const o = outcomeOf({ id: a.id, home: v.home, requestedAt: a.requestedAt }, ctx.acks, ctx.journal, now);
      shown.push({ at: a.requestedAt, text: `${at(a.requestedAt)}  ${a.action}${a.by ? ` by ${a.by}` : ''} → ${describeOutcome(o)}` });
    }
    // By when each was asked (a request that failed here is never journalled, and may be older).
    shown.sort((x, y) => y.at - x.at);
    for (const x of shown) lines.push(item(x.text));
  }
  return lines;
}
