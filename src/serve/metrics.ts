/**
 * The Prometheus exporter: a custom prom-client Registry whose gauges are collected on scrape from
 * one `buildSnapshot(state, now)` per scrape, so every value is exact at the instant of the scrape
 * and all series of one scrape agree with each other. Names and labels are documented in
 * docs/METRICS.md (base units, `_seconds`, `_total`, the `loop_dash_` prefix).
 *
 * Cardinality stays bounded: a session that has ended (or is only known from an old session file)
 * leaves the metrics `graceMs` after its last sign of life; incident classes are capped per home.
 */
import path from 'node:path';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { ModelState } from '../model/reducer.js';
import type { SessionState } from '../model/session-state.js';
import { buildSnapshot, checkpointAgeMs, createSnapshotCache, type SessionView, type Snapshot, type SnapshotCache } from '../model/snapshot.js';

/** Every session state, so the state gauge has one series per state (the enum pattern). */
export const SESSION_STATES: readonly SessionState[] = ['lost', 'held', 'requesting', 'tools', 'retry-wait', 'recovering', 'stopped', 'waiting', 'dispatched', 'idle', 'ended', 'unknown'];
/** States that leave the metrics after the grace period: nothing more will happen to them. */
const FINISHED: ReadonlySet<SessionState> = new Set(['ended', 'unknown']);
const WATCH_MODES = ['native', 'polling', 'degraded'] as const;
/** Distinct incident classes kept as label values per home; more are counted as `other`. */
export const MAX_CLASSES_PER_HOME = 64;
/** prom-client default metrics that are gauges named `_total` (left out: they break the naming rules). */
const LINT_FAILING_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];
/** Default time an ended session stays in the metrics. */
export const DEFAULT_GRACE_MS = 10 * 60_000;

/** The labels of every per-session series. */
export const SESSION_LABELS = ['home', 'host', 'session', 'name', 'role', 'root', 'model'] as const;
type SessionLabel = (typeof SESSION_LABELS)[number];
type Labels<K extends string> = Record<K, string>;

export interface ExporterOptions {
  getState: () => ModelState;
  /** This machine's host name (the `host` label of sessions without a checkpoint; liveness). */
  host: string;
  clock: () => number;
  /** How long an ended session stays in the metrics (default 10 min). */
  graceMs?: number;
  version: string;
  /** The homes being read (a home with no session yet still gets its series). */
  homes: readonly string[];
  /** prom-client's process_* and nodejs_* metrics (default true). */
  defaultMetrics?: boolean;
  /** Reader events folded so far (the live store's counter). */
  eventsSeen?: () => number;
  /** Rows kept between scrapes (shared with whoever else builds snapshots of the same store). */
  snapshotCache?: SnapshotCache;
  /** How long the first full read of the homes took, once it is done. */
  initialReadSeconds?: () => number | null;
}

/** The exporter: render the text exposition for a scrape at the clock's instant. */
export interface Exporter {
  registry: Registry;
  contentType: string;
  /** One scrape: builds the snapshot once, collects every metric from it, returns the text. */
  render(): Promise<string>;
}

/** The sessions a scrape exports (roots and lanes, flat) and how many were left out as finished. */
export function exportedSessions(snap: Snapshot, graceMs: number): { kept: { view: SessionView; root: string }[]; pruned: number } {
  const kept: { view: SessionView; root: string }[] = [];
  let pruned = 0;
  for (const root of snap.roots) {
    for (const v of [root, ...root.lanes]) {
      if (isPrunable(v, snap.now, graceMs)) pruned++;
      else kept.push({ view: v, root: v.role === 'root' ? v.session : (v.parent ?? '') });
    }
  }
  return { kept, pruned };
}

/** Ended (or known only from a session file) and silent for longer than the grace period. */
export function isPrunable(v: SessionView, now: number, graceMs: number): boolean {
  if (!FINISHED.has(v.state)) return false;
  const lastSign = v.checkpoint?.updatedAt ?? v.lastActivityAt;
  return lastSign === null || now - lastSign > graceMs;
}

/** The labels of one session's series. */
export function sessionLabels(v: SessionView, root: string, localHost: string): Labels<SessionLabel> {
  return {
    home: v.home,
    host: v.checkpoint?.host ?? localHost,
    session: v.session,
    name: v.name,
    role: v.role,
    root,
    model: v.model ?? '',
  };
}

const seconds = (ms: number) => ms / 1000;

export function createExporter(opts: ExporterOptions): Exporter {
  const graceMs = opts.graceMs ?? DEFAULT_GRACE_MS;
  const registry = new Registry();
  const registers = [registry];

  // One snapshot per scrape, built by the first collector that asks for it.
  let scrape: { snap: Snapshot; kept: { view: SessionView; root: string }[]; pruned: number; collectSeconds: number } | null = null;
  // Rows kept between scrapes: unchanged rows are re-timed, not built again.
  const snapshotCache = opts.snapshotCache ?? createSnapshotCache();
  const current = () => {
    if (!scrape) {
      const t0 = performance.now();
      const snap = buildSnapshot(opts.getState(), opts.clock(), { host: opts.host, cache: snapshotCache });
      const { kept, pruned } = exportedSessions(snap, graceMs);
      scrape = { snap, kept, pruned, collectSeconds: (performance.now() - t0) / 1000 };
    }
    return scrape;
  };

  new Gauge({
    name: 'loop_dash_build_info',
    help: 'Always 1; the loop-dash version in a label.',
    labelNames: ['version'],
    registers,
    collect() {
      this.set({ version: opts.version }, 1);
    },
  });

  // Per session. Each collector resets and refills from the scrape's snapshot, so a session that
  // left the model (or was pruned) leaves the output at once.
  const perSession = <K extends string>(
    name: string,
    help: string,
    extra: readonly K[],
    fill: (v: SessionView, set: (extraLabels: Labels<K>, value: number) => void, now: number) => void,
  ) =>
    new Gauge<SessionLabel | K>({
      name,
      help,
      labelNames: [...SESSION_LABELS, ...extra],
      registers,
      collect() {
        this.reset();
        const s = current();
        for (const { view, root } of s.kept) {
          const base = sessionLabels(view, root, opts.host);
          fill(view, (extraLabels, value) => this.set({ ...base, ...extraLabels } as Labels<SessionLabel | K>, value), s.snap.now);
        }
      },
    });

  perSession('loop_dash_session_state', 'The session state (SPEC §2): 1 for the current state, 0 for every other.', ['state'], (v, set) => {
    for (const state of SESSION_STATES) set({ state }, state === v.state ? 1 : 0);
  });
  perSession(
    'loop_dash_session_limit_remaining_seconds',
    'Seconds left before a limit cuts the request in flight (inactivity, absolute) or ends the open retry episode (episode); negative when overdue. Absent when the clock is not running.',
    ['limit'],
    (v, set) => {
      const c = v.clocks;
      if (c.inactivity) set({ limit: 'inactivity' }, seconds(c.inactivity.remainingMs));
      if (c.absolute) set({ limit: 'absolute' }, seconds(c.absolute.remainingMs));
      if (c.episode) set({ limit: 'episode' }, seconds(c.episode.remainingMs));
    },
  );
  perSession(
    'loop_dash_session_limit_deadline_timestamp_seconds',
    'The instant (Unix seconds) each running limit fires.',
    ['limit'],
    (v, set) => {
      const c = v.clocks;
      if (c.inactivity) set({ limit: 'inactivity' }, seconds(c.inactivity.at));
      if (c.absolute) set({ limit: 'absolute' }, seconds(c.absolute.at));
      if (c.episode) set({ limit: 'episode' }, seconds(c.episode.at));
    },
  );
  perSession(
    'loop_dash_session_limit_fires_first',
    'Which running limit fires first: 1 for that limit, 0 for the other running limits (ties: inactivity, then absolute).',
    ['limit'],
    (v, set) => {
      const c = v.clocks;
      if (c.inactivity) set({ limit: 'inactivity' }, c.firstToFire === 'inactivity' ? 1 : 0);
      if (c.absolute) set({ limit: 'absolute' }, c.firstToFire === 'absolute' ? 1 : 0);
      if (c.episode) set({ limit: 'episode' }, c.firstToFire === 'episode' ? 1 : 0);
    },
  );
  perSession('loop_dash_session_limit_margin_seconds', 'How much earlier the first limit fires than the next one. Absent with fewer than two running limits.', [], (v, set) => {
    if (v.clocks.marginMs !== null) set({}, seconds(v.clocks.marginMs));
  });
  perSession('loop_dash_session_retry_attempts', 'Requests made in the open retry episode, the first failed one included.', [], (v, set) => {
    if (v.clocks.episode) set({}, v.clocks.episode.attempts);
  });
  perSession('loop_dash_session_retry_attempts_max', 'Attempts the open retry episode allows: min(5, retry.maxRetries + 1).', [], (v, set) => {
    if (v.clocks.episode) set({}, v.clocks.episode.maxAttempts);
  });
  perSession('loop_dash_session_retry_attempts_remaining', 'Attempts left in the open retry episode (0: the next failure ends the work).', [], (v, set) => {
    if (v.clocks.episode) set({}, v.clocks.episode.attemptsLeft);
  });
  perSession('loop_dash_session_next_retry_seconds', "Seconds until pi's next retry of a failed request (source: recorded by the producer, or computed from pi's retry settings).", ['source'], (v, set) => {
    const r = v.clocks.nextRetry;
    if (r) set({ source: r.source }, seconds(r.remainingMs));
  });
  perSession('loop_dash_session_next_resume_seconds', 'Seconds until the next resume of a stopped, armed root (source: scheduled by the loop, or predicted from the ladder 1, 2, 4, 8, 15 min).', ['source'], (v, set) => {
    const r = v.clocks.nextResume;
    if (r) set({ source: r.source }, seconds(r.remainingMs));
  });
  perSession('loop_dash_session_resume_step', 'Which step of the resume ladder the next resume is (1 = the first resume).', [], (v, set) => {
    if (v.clocks.nextResume) set({}, v.clocks.nextResume.step);
  });
  perSession('loop_dash_session_checkpoint_age_seconds', "Age of the session's loop-dash checkpoint. Absent when the session has none.", [], (v, set, now) => {
    const age = checkpointAgeMs(v, now);
    if (age !== null) set({}, seconds(age));
  });
  perSession('loop_dash_session_checkpoint_stale', '1 when a checkpoint that should be refreshed every 15 s (a request in flight) has not been for over 20 s.', [], (v, set) => {
    if (v.checkpoint) set({}, v.source.stale ? 1 : 0);
  });
  perSession('loop_dash_session_last_activity_timestamp_seconds', 'The latest sign of activity (model event, request start or session entry), Unix seconds.', [], (v, set) => {
    if (v.lastActivityAt !== null) set({}, seconds(v.lastActivityAt));
  });
  perSession('loop_dash_session_request_start_timestamp_seconds', 'When the request in flight started, Unix seconds.', [], (v, set) => {
    const req = v.checkpoint?.request;
    if (req && v.clocks.absolute) set({}, seconds(req.startedAt));
  });
  perSession('loop_dash_session_request_model_events', 'Model events of the request in flight so far (keepalives excluded).', [], (v, set) => {
    const req = v.checkpoint?.request;
    if (req && v.clocks.absolute) set({}, req.modelEvents);
  });
  perSession('loop_dash_session_armed', '1 when the root is armed (the loop may restart it), 0 when disarmed. Absent when unknown and for lanes.', [], (v, set) => {
    if (v.armed !== null) set({}, v.armed ? 1 : 0);
  });
  perSession('loop_dash_session_held', '1 when the owner holds the session (disarmed or aborted).', [], (v, set) => {
    set({}, v.held ? 1 : 0);
  });
  perSession('loop_dash_session_incidents', 'Incident files linked to the session.', [], (v, set) => {
    set({}, v.incidents);
  });

  // Per home.
  new Gauge({
    name: 'loop_dash_sessions',
    help: 'Sessions known per home, role and state (ended ones included until their files go).',
    labelNames: ['home', 'role', 'state'],
    registers,
    collect() {
      this.reset();
      const s = current();
      const counts = new Map<string, number>();
      for (const home of homesOf(s.snap, opts.homes)) for (const role of ['root', 'lane']) for (const state of SESSION_STATES) counts.set(`${home}\0${role}\0${state}`, 0);
      for (const r of s.snap.roots) for (const v of [r, ...r.lanes]) {
        const key = `${v.home}\0${v.role}\0${v.state}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      for (const [key, n] of counts) {
        const [home, role, state] = key.split('\0') as [string, string, string];
        this.set({ home, role, state }, n);
      }
    },
  });
  new Gauge({
    name: 'loop_dash_sessions_pruned',
    help: 'Finished sessions left out of the per-session metrics (ended or silent for longer than the grace period).',
    registers,
    collect() {
      this.set(current().pruned);
    },
  });

  // Counters of what appeared since the exporter started (files present at start count once).
  const incidentsSeen = new Set<string>();
  const classesByHome = new Map<string, Set<string>>();
  const classLabel = (home: string, cls: string) => {
    let set = classesByHome.get(home);
    if (!set) classesByHome.set(home, (set = new Set()));
    if (set.has(cls)) return cls;
    if (set.size >= MAX_CLASSES_PER_HOME) return 'other';
    set.add(cls);
    return cls;
  };
  new Counter({
    name: 'loop_dash_incidents_total',
    help: 'Incident files seen since the exporter started, by home and class (files present at start are counted once).',
    labelNames: ['home', 'class'],
    registers,
    collect() {
      const s = current();
      const now = new Set<string>();
      for (const i of s.snap.incidents) {
        now.add(i.file);
        if (!incidentsSeen.has(i.file)) this.inc({ home: i.home, class: classLabel(i.home, i.cls) });
      }
      // Forget files that are gone, so the set is bounded by what is on disk.
      incidentsSeen.clear();
      for (const f of now) incidentsSeen.add(f);
    },
  });
  const warningsSeen = new Set<string>();
  new Counter({
    name: 'loop_dash_warnings_total',
    help: 'Distinct warnings (a bad file or line) seen since the exporter started, by home.',
    labelNames: ['home'],
    registers,
    collect() {
      const s = current();
      const homes = homesOf(s.snap, opts.homes);
      for (const home of homes) this.inc({ home }, 0);
      const now = new Set<string>();
      for (const w of s.snap.warnings) {
        const key = `${w.file}\0${w.line ?? ''}\0${w.message}`;
        now.add(key);
        if (!warningsSeen.has(key)) this.inc({ home: homeOfFile(w.file, homes) });
      }
      warningsSeen.clear();
      for (const k of now) warningsSeen.add(k);
    },
  });
  new Gauge({
    name: 'loop_dash_warnings',
    help: 'Warnings standing now (bad files or lines), by home.',
    labelNames: ['home'],
    registers,
    collect() {
      this.reset();
      const s = current();
      const homes = homesOf(s.snap, opts.homes);
      const counts = new Map<string, number>(homes.map((h) => [h, 0]));
      for (const w of s.snap.warnings) {
        const home = homeOfFile(w.file, homes);
        counts.set(home, (counts.get(home) ?? 0) + 1);
      }
      for (const [home, n] of counts) this.set({ home }, n);
    },
  });

  // The exporter's own health.
  new Gauge({
    name: 'loop_dash_home_read_complete',
    help: '1 once the first full read of the home is done.',
    labelNames: ['home'],
    registers,
    collect() {
      this.reset();
      const state = opts.getState();
      for (const home of homesOf(current().snap, opts.homes)) this.set({ home }, state.progress.get(home)?.done ? 1 : 0);
    },
  });
  new Gauge({
    name: 'loop_dash_initial_read_duration_seconds',
    help: 'How long the first full read of every home took. Absent until it is done.',
    registers,
    collect() {
      this.reset();
      const s = opts.initialReadSeconds?.() ?? null;
      if (s !== null) this.set(s);
    },
  });
  new Gauge({
    name: 'loop_dash_watch_mode',
    help: 'How files are followed: 1 for the current mode (native file events, forced polling, or degraded: the directories refused a watch polled).',
    labelNames: ['mode'],
    registers,
    collect() {
      const mode = current().snap.watchMode.mode;
      for (const m of WATCH_MODES) this.set({ mode: m }, m === mode ? 1 : 0);
    },
  });
  new Gauge({
    name: 'loop_dash_watch_degraded',
    help: '1 when the kernel refused a file watch (ENOSPC, EMFILE) and the directories without one are polled.',
    registers,
    collect() {
      this.set(current().snap.watchMode.mode === 'degraded' ? 1 : 0);
    },
  });
  let eventsCounted = 0;
  new Counter({
    name: 'loop_dash_reader_events_total',
    help: 'Reader events folded into the model since the exporter started.',
    registers,
    collect() {
      const seen = opts.eventsSeen?.() ?? 0;
      this.inc(Math.max(0, seen - eventsCounted));
      eventsCounted = Math.max(eventsCounted, seen);
    },
  });
  const scrapes = new Counter({ name: 'loop_dash_scrapes_total', help: 'Scrapes of /metrics served.', registers });
  new Gauge({
    name: 'loop_dash_scrape_collect_duration_seconds',
    help: 'Time this scrape spent building the snapshot and choosing the sessions to export.',
    registers,
    collect() {
      this.set(current().collectSeconds);
    },
  });

  if (opts.defaultMetrics ?? true) {
    collectDefaultMetrics({ register: registry });
    // prom-client names these gauges `_total`, which `promtool check metrics` rightly flags.
    for (const name of LINT_FAILING_DEFAULTS) if (registry.getSingleMetric(name)) registry.removeSingleMetric(name);
  }

  // Scrapes run one at a time: each owns the snapshot its collectors share.
  let queue: Promise<unknown> = Promise.resolve();
  return {
    registry,
    contentType: registry.contentType,
    render() {
      const run = async () => {
        scrape = null;
        scrapes.inc();
        try {
          return await registry.metrics();
        } finally {
          scrape = null;
        }
      };
      const result = queue.then(run, run);
      queue = result.catch(() => undefined);
      return result;
    },
  };
}

/** The homes to give per-home series: the ones being read plus any a session came from. */
function homesOf(snap: Snapshot, homes: readonly string[]): string[] {
  return [...new Set([...homes, ...snap.homes])];
}

/** The home a warning's file belongs to (the longest home prefix), or '' for files outside them (state logs). */
export function homeOfFile(file: string, homes: readonly string[]): string {
  let best = '';
  for (const h of homes) if ((file === h || file.startsWith(h + path.sep)) && h.length > best.length) best = h;
  return best;
}
