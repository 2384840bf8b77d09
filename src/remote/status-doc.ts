/**
 * Another machine's `/api/status` document (the `status --json` shape of SPEC §6), validated at the
 * boundary, and turned into dashboard rows for a local `now`. Every countdown is recomputed from
 * the remote `at` instants against our clock — never taken from the remote `remainingMs`, which
 * is already as old as the fetch. Rows are marked `remote`: owner actions stay on that machine.
 */
import { isEpochMs } from '../contract/epoch.js';
import { z } from 'zod';
import type { Clocks, Deadline } from '../model/clocks.js';
import { effectiveLimits, limitsFromSettings, type EffectiveLimits, type LimitSource } from '../model/limits.js';
import type { SessionState } from '../model/session-state.js';
import { compareViews, type LivenessStatus, type RemoteOrigin, type SessionView } from '../model/snapshot.js';
import type { IncidentRecord } from '../model/types.js';

const STATES: Record<SessionState, true> = {
  lost: true,
  held: true,
  requesting: true,
  tools: true,
  'retry-wait': true,
  recovering: true,
  stopped: true,
  waiting: true,
  idle: true,
  ended: true,
  unknown: true,
  dispatched: true,
};
const LIVENESS: Record<LivenessStatus, true> = { alive: true, gone: true, 'pid-reused': true, unknown: true, 'remote-fresh': true, 'remote-stale': true };
const LIMIT_SOURCES: Record<LimitSource, true> = { checkpoint: true, settings: true, default: true };

const isoOrNull = z.string().nullable().optional();
const deadlineJson = z.looseObject({ at: z.string().nullable() }).nullable().optional();

const sessionSchema = z.looseObject({
  session: z.string().min(1),
  name: z.string(),
  cwd: z.string().nullable().optional(),
  model: z.string().nullable().optional(),
  role: z.enum(['root', 'lane']),
  armed: z.boolean().nullable().optional(),
  held: z.boolean().optional(),
  state: z.string(),
  why: z.string().optional(),
  lastActivityAt: isoOrNull,
  clocks: z.looseObject({
    inactivity: deadlineJson,
    absolute: deadlineJson,
    firstToFire: z.enum(['inactivity', 'absolute', 'episode']).nullable().optional(),
    marginMs: z.number().nullable().optional(),
    episode: z.looseObject({ at: z.string().nullable(), attempts: z.number(), maxAttempts: z.number() }).nullable().optional(),
    nextRetry: z.looseObject({ at: z.string().nullable(), source: z.string().optional() }).nullable().optional(),
    nextResume: z.looseObject({ at: z.string().nullable(), source: z.enum(['scheduled', 'predicted']), step: z.number() }).nullable().optional(),
  }),
  source: z.looseObject({ checkpoint: z.boolean(), checkpointAgeMs: z.number().nullable().optional(), stale: z.boolean().optional() }).optional(),
  liveness: z.looseObject({ status: z.string(), detail: z.string().optional() }).nullable().optional(),
  timers: z.array(z.looseObject({ id: z.string(), at: isoOrNull, reason: z.string().nullable().optional() })).optional(),
  incidents: z.number().optional(),
  home: z.string().optional(),
  lastError: z.string().nullable().optional(),
  limits: z
    .looseObject({
      inactivityMs: z.number(),
      absoluteMs: z.number(),
      episodeMs: z.number(),
      episodeMaxAttempts: z.number(),
      episodeApplies: z.boolean().optional(),
      source: z.record(z.string(), z.string()).optional(),
    })
    .optional(),
  runId: z.string().nullable().optional(),
  lane: z.string().nullable().optional(),
  task: z.string().nullable().optional(),
  deadline: isoOrNull,
  placeholder: z.enum(['dispatch', 'status']).optional().catch(undefined),
  lanes: z.array(z.unknown()).optional(),
});

const incidentSchema = z.looseObject({
  file: z.string(),
  class: z.string(),
  known: z.boolean().optional(),
  session: z.string().nullable().optional(),
  at: isoOrNull,
  limit: z.string().nullable().optional(),
  attempt: z.number().nullable().optional(),
  exhausted: z.boolean().optional(),
  movedAside: z.boolean().optional(),
  summary: z.string().optional(),
});

const docSchema = z.looseObject({
  v: z.literal(1),
  now: z.string(),
  home: z.string().nullable().optional(),
  host: z.string().optional(),
  roots: z.array(z.unknown()),
  incidents: z.array(z.unknown()).optional(),
  warnings: z.array(z.unknown()).optional(),
});

type RemoteSessionJson = z.infer<typeof sessionSchema> & { lanesParsed: z.infer<typeof sessionSchema>[] };

/** A validated remote document (times still as the remote wrote them). */
export interface RemoteStatusDoc {
  /** The remote's `now` (its clock), epoch ms. */
  now: number;
  home: string | null;
  host: string | null;
  roots: RemoteSessionJson[];
  incidents: z.infer<typeof incidentSchema>[];
  warnings: number;
  /** Sessions or incidents of the document that did not validate (left out, counted). */
  invalid: number;
}

const ms = (iso: string | null | undefined): number | null => {
  if (typeof iso !== 'string') return null;
  const t = Date.parse(iso);
  return isEpochMs(t) ? t : null;
};

/** Validates a parsed JSON value as a status document; bad sessions are counted, not fatal. */
export function parseStatusDoc(json: unknown): { doc: RemoteStatusDoc } | { error: string } {
  const top = docSchema.safeParse(json);
  if (!top.success) {
    const issue = top.error.issues[0];
    return { error: `not a loop-dash status document (${issue ? `${issue.path.join('.') || 'document'}: ${issue.message}` : 'invalid'})` };
  }
  const now = ms(top.data.now);
  if (now === null) return { error: `not a loop-dash status document (now: "${top.data.now}" is not a time)` };
  let invalid = 0;
  const session = (x: unknown) => {
    const r = sessionSchema.safeParse(x);
    if (!r.success) invalid++;
    return r.success ? r.data : null;
  };
  const roots: RemoteSessionJson[] = [];
  for (const raw of top.data.roots) {
    const root = session(raw);
    if (!root) continue;
    const lanesParsed = (root.lanes ?? []).map(session).filter((l): l is z.infer<typeof sessionSchema> => l !== null);
    roots.push({ ...root, lanesParsed });
  }
  const incidents: z.infer<typeof incidentSchema>[] = [];
  for (const raw of top.data.incidents ?? []) {
    const r = incidentSchema.safeParse(raw);
    if (r.success) incidents.push(r.data);
    else invalid++;
  }
  return { doc: { now, home: top.data.home ?? null, host: top.data.host ?? null, roots, incidents, warnings: top.data.warnings?.length ?? 0, invalid } };
}

const DEFAULT_LIMITS = effectiveLimits(limitsFromSettings(null).limits, null);

function limitsOf(s: RemoteSessionJson | z.infer<typeof sessionSchema>): EffectiveLimits {
  const l = s.limits;
  if (!l) return DEFAULT_LIMITS;
  const src = (k: keyof EffectiveLimits['source']): LimitSource => {
    const v = l.source?.[k];
    return v && v in LIMIT_SOURCES ? (v as LimitSource) : 'default';
  };
  return {
    inactivityMs: l.inactivityMs,
    absoluteMs: l.absoluteMs,
    episodeMs: l.episodeMs,
    episodeMaxAttempts: l.episodeMaxAttempts,
    // A serve from before the field computed every episode as bounded.
    episodeApplies: l.episodeApplies ?? true,
    source: { inactivityMs: src('inactivityMs'), absoluteMs: src('absoluteMs'), episodeMs: src('episodeMs'), episodeMaxAttempts: src('episodeMaxAttempts') },
  };
}

/** The clocks at our `now`, from the remote instants. */
export function remoteClocks(c: z.infer<typeof sessionSchema>['clocks'], now: number): Clocks {
  const dl = (iso: string | null | undefined): Deadline | null => {
    const at = ms(iso);
    return at === null ? null : { at, remainingMs: at - now };
  };
  const episodeAt = dl(c.episode?.at);
  const retryAt = dl(c.nextRetry?.at);
  const resumeAt = dl(c.nextResume?.at);
  return {
    inactivity: dl(c.inactivity?.at),
    absolute: dl(c.absolute?.at),
    firstToFire: c.firstToFire ?? null,
    marginMs: c.marginMs ?? null,
    episode:
      episodeAt && c.episode
        ? { ...episodeAt, attempts: c.episode.attempts, maxAttempts: c.episode.maxAttempts, attemptsLeft: c.episode.maxAttempts - c.episode.attempts }
        : null,
    nextRetry: retryAt ? { ...retryAt, source: c.nextRetry?.source === 'computed' ? 'computed' : 'recorded' } : null,
    nextResume: resumeAt && c.nextResume ? { ...resumeAt, source: c.nextResume.source, step: c.nextResume.step } : null,
  };
}

/**
 * The document's roots (with their lanes) as rows at our `now`. `stale`: the feed has not answered
 * lately; its rows are marked so (the state cell says `(stale)`).
 */
export function remoteViews(doc: RemoteStatusDoc, origin: RemoteOrigin, now: number, stale: boolean): SessionView[] {
  const view = (s: z.infer<typeof sessionSchema>, parent: string | null): SessionView => {
    const state = s.state in STATES ? (s.state as SessionState) : 'unknown';
    const src = s.source;
    // The checkpoint was updated at remoteNow − age; its age is then measured on our clock.
    const checkpointUpdatedAt = src?.checkpointAgeMs != null ? doc.now - src.checkpointAgeMs : null;
    const liveness = s.liveness ? { status: s.liveness.status in LIVENESS ? (s.liveness.status as LivenessStatus) : 'unknown', detail: s.liveness.detail ?? '' } : null;
    return {
      session: s.session,
      home: s.home ?? doc.home ?? '',
      name: s.name,
      cwd: s.cwd ?? null,
      model: s.model ?? null,
      role: s.role,
      armed: s.role === 'root' ? (s.armed ?? null) : null,
      held: !!s.held,
      state,
      why: `${s.why ?? state} (on ${origin.host}, as of ${new Date(origin.fetchedAt).toISOString()})`,
      lastActivityAt: ms(s.lastActivityAt),
      clocks: remoteClocks(s.clocks, now),
      limits: limitsOf(s),
      source: { checkpoint: !!src?.checkpoint, checkpointUpdatedAt, stale: !!src?.stale || stale, sessionFile: null, checkpointFile: null, clockSkewMs: 0 },
      liveness,
      checkpoint: null,
      timers: (s.timers ?? []).map((t) => ({ id: t.id, at: ms(t.at), reason: t.reason ?? null })),
      watchers: [],
      incidents: s.incidents ?? 0,
      lastError: s.lastError ?? null,
      history: [],
      stateLogFile: null,
      stateLog: [],
      runId: s.runId ?? null,
      lane: s.lane ?? null,
      task: s.task ?? null,
      deadline: ms(s.deadline),
      laneStatus: null,
      parent,
      lanes: [],
      remote: origin,
      ...(s.placeholder ? { placeholder: s.placeholder } : {}),
    };
  };
  const roots = doc.roots.map((r) => {
    const root = view(r, null);
    root.lanes = r.lanesParsed.map((l) => view(l, r.role === 'root' ? r.session : null)).sort(compareViews);
    return root;
  });
  return roots.sort(compareViews);
}

/** The document's incidents, their file names prefixed with the feed so they never clash with ours. */
export function remoteIncidents(doc: RemoteStatusDoc, origin: RemoteOrigin): IncidentRecord[] {
  return doc.incidents.map((i) => ({
    file: `${origin.url}#${i.file}`,
    home: doc.home ?? '',
    cls: i.class,
    known: i.known ?? false,
    session: i.session ?? null,
    at: ms(i.at),
    limit: i.limit ?? null,
    attempt: i.attempt ?? null,
    exhausted: !!i.exhausted,
    movedAside: !!i.movedAside,
    summary: i.summary ?? '',
    raw: { ...i, remote: origin.url, host: origin.host },
  }));
}
