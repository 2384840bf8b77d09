/** The `status --json` document of SPEC §6: field names are a contract; more fields may be added. */
import type { Clocks, Deadline } from './clocks.js';
import { checkpointAgeMs, type SessionView, type Snapshot } from './snapshot.js';

const iso = (ms: number | null | undefined): string | null =>
  typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : null;

const deadlineJson = (d: Deadline | null) => (d ? { at: iso(d.at), remainingMs: d.remainingMs } : null);

export function clocksJson(c: Clocks) {
  return {
    inactivity: deadlineJson(c.inactivity),
    absolute: deadlineJson(c.absolute),
    firstToFire: c.firstToFire,
    marginMs: c.marginMs,
    episode: c.episode
      ? { at: iso(c.episode.at), remainingMs: c.episode.remainingMs, attempts: c.episode.attempts, maxAttempts: c.episode.maxAttempts }
      : null,
    nextRetry: c.nextRetry ? { at: iso(c.nextRetry.at), remainingMs: c.nextRetry.remainingMs, source: c.nextRetry.source } : null,
    nextResume: c.nextResume
      ? { at: iso(c.nextResume.at), remainingMs: c.nextResume.remainingMs, source: c.nextResume.source, step: c.nextResume.step }
      : null,
  };
}

/**
 * One session of the document. `top`: an entry of `roots`, which always has `lanes` (SPEC §6) —
 * also a lane shown at the top because its root's session file is not there (an orphan lane).
 */
export function sessionJson(v: SessionView, now: number, top = false): Record<string, unknown> {
  const base: Record<string, unknown> = {
    session: v.session,
    name: v.name,
    cwd: v.cwd,
    model: v.model,
    role: v.role,
    armed: v.armed,
    held: v.held,
    state: v.state,
    why: v.why,
    lastActivityAt: iso(v.lastActivityAt),
    clocks: clocksJson(v.clocks),
    source: {
      checkpoint: v.source.checkpoint,
      checkpointAgeMs: checkpointAgeMs(v, now),
      stale: v.source.stale,
      sessionFile: v.source.sessionFile,
      checkpointFile: v.source.checkpointFile,
      clockSkewMs: v.source.clockSkewMs,
    },
    liveness: v.liveness,
    timers: v.timers.map((t) => ({ id: t.id, at: iso(t.at), reason: t.reason })),
    incidents: v.incidents,
    home: v.home,
    lastError: v.lastError,
    limits: {
      inactivityMs: v.limits.inactivityMs,
      absoluteMs: v.limits.absoluteMs,
      episodeMs: v.limits.episodeMs,
      episodeMaxAttempts: v.limits.episodeMaxAttempts,
      episodeApplies: v.limits.episodeApplies,
      source: v.limits.source,
    },
  };
  if (v.role === 'lane') Object.assign(base, { runId: v.runId, lane: v.lane, task: v.task, deadline: iso(v.deadline) });
  // A lane with no session yet (its key is `run:<runId>`, not a session id): where it is known from.
  if (v.placeholder) base.placeholder = v.placeholder;
  if (v.role !== 'lane' || top) base.lanes = v.lanes.map((lane) => sessionJson(lane, now));
  return base;
}

/**
 * The `status --json` document. `given`: the homes in the order the user named them (`--home`
 * first to last); `home` is the first of them and `homes` lists them in that order (the snapshot
 * sorts its homes, which made `home` the alphabetically first of several).
 */
export function statusJson(snap: Snapshot, given: readonly string[] = []): Record<string, unknown> {
  const homes = [...given.filter((h) => snap.homes.includes(h)), ...snap.homes.filter((h) => !given.includes(h))];
  return {
    v: 1,
    home: homes[0] ?? null,
    homes,
    now: iso(snap.now),
    roots: snap.roots.map((root) => sessionJson(root, snap.now, true)),
    incidents: snap.incidents.map((i) => ({
      file: i.file,
      class: i.cls,
      known: i.known,
      session: i.session,
      at: iso(i.at),
      limit: i.limit,
      attempt: i.attempt,
      exhausted: i.exhausted,
      movedAside: i.movedAside,
      summary: i.summary,
    })),
    warnings: snap.warnings.map((w) => ({ file: w.file, line: w.line, message: w.message, ...(w.offset !== undefined ? { offset: w.offset } : {}) })),
    // With --remote: each feed, so a script sees one that failed (it said so only in the text table).
    ...(snap.remotes?.length
      ? { remotes: snap.remotes.map((f) => ({ url: f.url, host: f.host, fetchedAt: iso(f.fetchedAt), stale: f.stale, error: f.error, roots: f.roots, hidden: f.hidden })) }
      : {}),
  };
}
