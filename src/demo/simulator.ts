/**
 * Keeps a demo home moving (SPEC §6 `loop-dash demo`): streaming requests get model events, the
 * silent request only keepalives until its inactivity deadline passes and it is cut (incident,
 * stop, then resumed along the ladder), the 429 episode retries and succeeds, lanes are dispatched
 * and return, watcher receipts keep observing, and now and then an incident appears.
 *
 * It writes like the real producers: checkpoints, lane statuses, receipts and incidents atomically
 * (temp file + rename); JSONL by appending one line per write, sometimes in two writes a moment
 * apart, so readers meet partial lines. Time comes from `opts.clock`; timers only pace the work,
 * are `unref()`'d and are all cleared by `stop()`.
 */
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { checkpointRequestRefSchema, checkpointSchema, REFRESHED_STATES, type Checkpoint } from '../contract/checkpoint.js';
import type { ControlRequest } from '../contract/control.js';
import { staleTargetReason } from '../extension/control-check.js';
import { abortApplied, ControlInbox, disarmApplied, type ActionOutcome } from '../extension/control-inbox.js';
import { holdEntry, holdSummary, restoreHold, startHold, HOLD_ENTRY_TYPE, type Hold } from '../extension/hold.js';
import { homePaths, utcStamp } from '../contract/paths.js';
import { entryLine, type DemoManifest, type DemoManifestSession } from './generate.js';
import {
  DEMO,
  demoId,
  demoLimits,
  demoShortId,
  GEMINI,
  iso,
  ladderDelayMs,
  laneSessionFile,
  laneStatusFileFor,
  MIN,
  modelRef,
  RATE_LIMIT_ERROR,
  reportFor,
  RESUME_TEXT,
  SEC,
  SOL,
  SONNET,
  stateLogFor,
  stateLogTs,
  Timeline,
  type DemoModel,
  type EntrySpec,
} from './scenarios.js';
import { makeDir, writeFileAtomic, writeJsonAtomic } from './write-atomic.js';

/** Options of {@link startSimulator}. */
export interface SimulatorOptions {
  /** The simulated "now" in epoch ms; may run faster than real time (tests). */
  clock: () => number;
  /** Real milliseconds between steps; default 250. */
  intervalMs?: number;
  /**
   * Compress the story for a newcomer: the silent request is moved closer to its cut, and
   * request lengths, tool runs, retry waits and resume waits are divided by `speed`. Every time
   * written stays consistent with `clock`. Default 1 (real time).
   */
  speed?: number;
  /** Seed of the pseudo-random choices (request lengths, split lines); default 1. */
  seed?: number;
  /** Share of JSONL lines written in two parts; default 0.2. */
  splitRate?: number;
}

/** Counters of what the simulator did, for tests and diagnostics. */
export interface SimulatorStats {
  ticks: number;
  writes: number;
  appends: number;
  splitAppends: number;
  cuts: number;
  resumes: number;
  retries: number;
  dispatches: number;
  returns: number;
  incidents: number;
  errors: number;
  lastError: string | null;
  /** Timers of this simulator still pending (0 after `stop()`). */
  activeTimers: number;
}

/** A running simulator. */
export interface Simulator {
  /**
   * Resolves once the simulator has loaded the home and written what loading changes (the silent
   * request moved closer to its cut at `speed` > 1): a dashboard opened after it never shows the
   * generated times the first step replaces.
   */
  ready(): Promise<void>;
  /** Stop stepping, finish pending writes (no torn line is left behind), clear every timer. */
  stop(): Promise<void>;
  stats(): SimulatorStats;
}

/** Real delay between the two halves of a split line. */
const SPLIT_DELAY_MS = 120;
/** A request whose last model event is older than this at start is treated as gone silent. */
const SILENT_AFTER_MS = 2 * MIN;
const KEEPALIVE_EVERY_MS = 15 * SEC;
/** An idle, stopped or held session's checkpoint is rewritten this often, as the extension does. */
const IDLE_REFRESH_MS = 30 * SEC;
/** SPEC §4.1: a checkpoint at most once per second on model events, at least every 15 s in flight. */
const CHECKPOINT_MIN_GAP_MS = SEC;
const CHECKPOINT_MAX_GAP_MS = 15 * SEC;
const HEARTBEAT_EVERY_MS = 5 * MIN;

interface LaneInfo {
  lane: string;
  runId: string;
  statusFile: string;
  status: Record<string, unknown>;
  turnsLeft: number;
}

/** One session the simulator drives. */
interface Actor {
  name: string;
  session: string;
  role: 'root' | 'lane';
  cpFile: string;
  cp: Checkpoint;
  model: DemoModel;
  file: string;
  fileExists: boolean;
  /** Header and first entries, written when pi would create the file (after the first reply). */
  initial: { header: Record<string, unknown>; entries: EntrySpec[] } | null;
  lastEntryId: string | null;
  seq: number;
  turn: number;
  armed: boolean;
  silent: boolean;
  endAt: number | null;
  toolsUntil: number | null;
  pendingTool: { callId: string; name: string; result: string } | null;
  lastCheckpointWrite: number;
  lastKeepalive: number;
  wake: { at: number; id: string; reason: string; watchers: unknown[] } | null;
  flaky: { turnsUntilEpisode: number; failuresLeft: number } | null;
  // Roots
  stateLog: string | null;
  stateSeq: number;
  nextHeartbeatAt: number;
  hostsLanes: boolean;
  laneCount: number;
  nextDispatchAt: number | null;
  /** A lane this root dispatched before the start with no session yet (a placeholder): its pi starts at `at`. */
  pendingLane: { lane: string; runId: string; agent: string; task: string; at: number } | null;
  lanes: Actor[];
  // Lanes
  root: Actor | null;
  laneInfo: LaneInfo | null;
  /** Answers the owner's control requests, as the loop-dash extension in its pi would (null once ended). */
  inbox: ControlInbox | null;
  /** The owner's hold, kept and persisted as the extension does (hold.ts). */
  hold: Hold | null;
}

interface Receipt {
  file: string;
  body: Record<string, unknown>;
  nextAt: number;
}

const TOOL_TURNS: readonly { name: string; args: Record<string, unknown>; result: string }[] = [
  { name: 'read', args: { path: 'src/http/retry.ts' }, result: 'export const retryable = (status: number) => status === 429 || status >= 500;' },
  { name: 'bash', args: { command: 'npm test -- --reporter=dot' }, result: '221 passing (10s)' },
  { name: 'edit', args: { path: 'src/api/orders.ts', oldText: 'fetch(', newText: 'request(' }, result: 'Applied 1 edit.' },
  { name: 'grep', args: { pattern: 'TODO\\(loop\\)', path: 'src' }, result: 'src/api/billing.ts:88' },
];

/** Start moving the home; see the module comment. */
export function startSimulator(home: string, manifest: DemoManifest, opts: SimulatorOptions): Simulator {
  const clock = opts.clock;
  const intervalMs = Math.max(1, opts.intervalMs ?? 250);
  const inboxPollEvery = Math.max(1, Math.round(1000 / intervalMs));
  const speed = opts.speed !== undefined && opts.speed > 0 ? opts.speed : 1;
  const splitRate = opts.splitRate ?? 0.2;
  const rng = mulberry32(opts.seed ?? 1);
  const paths = homePaths(home);
  const stats: Omit<SimulatorStats, 'activeTimers'> = {
    ticks: 0,
    writes: 0,
    appends: 0,
    splitAppends: 0,
    cuts: 0,
    resumes: 0,
    retries: 0,
    dispatches: 0,
    returns: 0,
    incidents: 0,
    errors: 0,
    lastError: null,
  };

  const actors: Actor[] = [];
  const receipts: Receipt[] = [];
  const checkpoints = new Map<string, Checkpoint>();
  let stopped = false;
  let busy = false;
  let current: Promise<void> = Promise.resolve();
  let nextIncidentAt = 0;
  let incidentTurn = 0;

  // ---- write queues: one chain per file keeps writes to it in order -------------------------
  const queues = new Map<string, Promise<void>>();
  const pending = new Set<Promise<void>>();
  const delays = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();

  const noteError = (err: unknown): void => {
    stats.errors += 1;
    stats.lastError = err instanceof Error ? err.message : String(err);
  };

  function enqueue(key: string, job: () => Promise<void>): void {
    const prev = queues.get(key) ?? Promise.resolve();
    const next = prev.then(job).catch(noteError);
    queues.set(key, next);
    pending.add(next);
    void next.then(() => {
      pending.delete(next);
      if (queues.get(key) === next) queues.delete(key);
    });
  }

  /** A real pause that `stop()` cuts short. */
  function delay(ms: number): Promise<void> {
    if (stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const entry = {
        timer: setTimeout(() => {
          delays.delete(entry);
          resolve();
        }, ms),
        resolve,
      };
      entry.timer.unref();
      delays.add(entry);
    });
  }

  /** Create a directory inside the home, but never resurrect a home that was removed. */
  async function ensureDir(dir: string): Promise<void> {
    if (!existsSync(home)) throw new Error(`demo home is gone: ${home}`);
    makeDir(dir);
  }

  function writeJson(file: string, value: unknown, mkdir = false): void {
    const text = JSON.stringify(value, null, 2) + '\n';
    enqueue(file, async () => {
      if (mkdir) await ensureDir(path.dirname(file));
      await writeFileAtomic(file, text);
      stats.writes += 1;
    });
  }

  /** Append whole lines; some are written in two parts a moment apart. */
  function appendLines(file: string, lines: string[]): void {
    const plan = lines.map((line) => {
      const buf = Buffer.from(line);
      const split = buf.length > 2 && rng() < splitRate ? 1 + Math.floor(rng() * (buf.length - 1)) : 0;
      return { buf, split };
    });
    enqueue(file, async () => {
      for (const { buf, split } of plan) {
        if (split > 0) {
          await appendBytes(file, buf.subarray(0, split));
          await delay(SPLIT_DELAY_MS);
          await appendBytes(file, buf.subarray(split));
          stats.splitAppends += 1;
        } else {
          await appendBytes(file, buf);
        }
        stats.appends += 1;
      }
    });
  }

  // ---- session files ------------------------------------------------------------------------
  function appendEntries(a: Actor, specs: EntrySpec[]): void {
    const lines: string[] = [];
    const number = (spec: EntrySpec): void => {
      a.seq += 1;
      const id = demoShortId(`${a.session}:sim:${a.seq}`);
      lines.push(entryLine(spec, id, a.lastEntryId));
      a.lastEntryId = id;
    };
    if (!a.fileExists) {
      // pi creates the file with its first reply: header, the entries so far, and this one.
      a.fileExists = true;
      const initial = a.initial ?? { header: headerFor(a), entries: [] };
      a.lastEntryId = null;
      initial.entries.forEach(number);
      specs.forEach(number);
      const text = JSON.stringify(initial.header) + '\n' + lines.join('');
      const file = a.file;
      enqueue(file, async () => {
        await ensureDir(path.dirname(file));
        // Appear whole (temp + rename); should the file exist after all, only append the new entries.
        if (existsSync(file)) await appendBytes(file, Buffer.from(lines.slice(initial.entries.length).join('')));
        else await writeFileAtomic(file, text);
        stats.writes += 1;
      });
      return;
    }
    specs.forEach(number);
    appendLines(a.file, lines);
  }

  function headerFor(a: Actor): Record<string, unknown> {
    const created = stampTime(path.basename(a.file)) ?? a.cp.request?.startedAt ?? clock();
    return {
      type: 'session',
      version: 3,
      id: a.session,
      timestamp: iso(created),
      cwd: a.cp.cwd,
      ...(a.role === 'lane' && a.root ? { parentSession: a.root.file } : {}),
    };
  }

  function assistant(a: Actor, at: number, startedAt: number, o: Parameters<Timeline['assistant']>[2]): { specs: EntrySpec[]; callId: string | null } {
    a.seq += 1;
    const tl = new Timeline(`${a.session}:sim:${a.seq}`, a.model);
    const callId = tl.assistant(at, startedAt, o);
    return { specs: tl.entries, callId };
  }

  function notice(at: number, customType: string, content: string, details?: unknown): EntrySpec {
    return { at, body: { type: 'custom_message', customType, content, display: true, ...(details === undefined ? {} : { details }) } };
  }

  function appendStateLog(root: Actor | null, at: number, ev: string, by: string, fields: Record<string, unknown>): void {
    if (!root?.stateLog) return;
    root.stateSeq += 1;
    appendLines(root.stateLog, [JSON.stringify({ v: 1, seq: root.stateSeq, ts: stateLogTs(at), ev, by, ...fields }) + '\n']);
  }

  // ---- checkpoints --------------------------------------------------------------------------
  function saveCheckpoint(a: Actor, t: number): void {
    a.cp.updatedAt = t;
    a.lastCheckpointWrite = t;
    writeJson(a.cpFile, a.cp);
  }

  const limitsOf = (a: Actor): NonNullable<Checkpoint['limits']> => a.cp.limits ?? demoLimits;

  // ---- request lifecycle --------------------------------------------------------------------
  function requestLength(a: Actor): number {
    const base = a.role === 'lane' ? 30 * SEC + rng() * 60 * SEC : 40 * SEC + rng() * 110 * SEC;
    return base / speed;
  }

  function startRequest(a: Actor, t: number, endAfter: number | null = requestLength(a)): void {
    a.turn += 1;
    a.cp.state = 'requesting';
    a.cp.request = { turn: a.turn, startedAt: t, lastModelEventAt: null, lastTransportEventAt: t, modelEvents: 0, keepalives: 0 };
    a.endAt = endAfter === null ? null : t + endAfter;
    a.toolsUntil = null;
    saveCheckpoint(a, t);
    updateLaneStatus(a, t);
  }

  function stepRequest(a: Actor, t: number): void {
    const req = a.cp.request;
    if (!req) return startRequest(a, t);
    const limits = limitsOf(a);
    if (a.silent) {
      const deadline = (req.lastModelEventAt ?? req.startedAt) + limits.inactivityMs;
      if (t >= deadline) return cut(a, t, 'inactivity', deadline);
      // Keepalives keep the connection open but are not model events: inactivity is not moved.
      if (t - a.lastKeepalive >= KEEPALIVE_EVERY_MS) {
        req.lastTransportEventAt = t;
        req.keepalives += 1;
        a.lastKeepalive = t;
      }
      // Written at least every 15 s by the tick's refresh.
      return;
    }
    const absolute = req.startedAt + limits.absoluteMs;
    if (t >= absolute) return cut(a, t, 'absolute', absolute);
    req.lastModelEventAt = t;
    req.lastTransportEventAt = t;
    req.modelEvents += 1 + Math.floor(rng() * 24);
    if (a.endAt !== null && t >= a.endAt) return endRequest(a, t);
    if (t - a.lastCheckpointWrite >= CHECKPOINT_MIN_GAP_MS) saveCheckpoint(a, t);
  }

  /** A ceiling abort at `at` (the deadline); an armed root then waits for its resume. */
  function cut(a: Actor, t: number, limit: 'inactivity' | 'absolute', at: number): void {
    const req = a.cp.request!;
    const limits = limitsOf(a);
    const elapsedMs = at - req.startedAt;
    const limitMs = limit === 'inactivity' ? limits.inactivityMs : limits.absoluteMs;
    const error =
      limit === 'inactivity' ? `no model event for ${Math.round(limitMs / MIN)} min (inactivity limit)` : `absolute limit (${Math.round(limitMs / MIN)} min) reached`;
    const aborted = assistant(a, at, req.startedAt, { stopReason: 'aborted', errorMessage: `Request aborted by request-ceiling: ${error}` });
    appendEntries(a, [
      ...aborted.specs,
      notice(at + 200, 'loop-request-incident', `The last request was aborted: ${error}. Continue from your last completed step.`, {
        kind: limit,
        attempt: 1,
        exhausted: false,
        elapsedMs,
      }),
    ]);
    writeIncident(`request/${a.session}-${utcStamp(at)}-${limit}-1.json`, {
      v: 1,
      session: a.session,
      class: `loop-request-${limit}-ceiling`,
      at: iso(at),
      home,
      cwd: a.cp.cwd,
      model: a.cp.model,
      elapsed_ms: elapsedMs,
      wall_clock_ms: limits.absoluteMs,
      attempt: 1,
      limit,
      [`${limit}_ms`]: limitMs,
    });
    a.cp.state = 'stopped';
    a.cp.request = null;
    a.cp.episode = null;
    a.cp.lastStop = { at, reason: 'ceiling-abort', error, limit };
    a.silent = false;
    a.endAt = null;
    stats.cuts += 1;
    if (a.role === 'lane') {
      // Lanes are never resumed (their root sees the failure); the lane's pi process ends.
      a.cp.recovery = null;
      a.cp.state = 'ended';
      saveCheckpoint(a, t);
      laneReturn(a, t, 'failed');
      return;
    }
    const resumes = a.cp.recovery?.resumes ?? 0;
    a.cp.recovery = a.armed
      ? { stoppedAt: at, resumes, nextResumeAt: speed > 1 ? at + ladderDelayMs(resumes + 1) / speed : null, reason: 'ceiling-abort' }
      : null;
    saveCheckpoint(a, t);
  }

  function resumeDue(a: Actor): number | null {
    const rec = a.cp.recovery;
    if (a.role !== 'root' || !a.armed || !rec || a.cp.held || a.cp.ownerAbort) return null;
    return rec.nextResumeAt ?? rec.stoppedAt + ladderDelayMs(rec.resumes + 1);
  }

  function resume(a: Actor, t: number): void {
    const rec = a.cp.recovery!;
    const step = rec.resumes + 1;
    rec.resumes = step;
    rec.nextResumeAt = null;
    appendEntries(a, [notice(t, 'loop-continuation', RESUME_TEXT, { reason: 'root-recovery', step, stoppedAt: rec.stoppedAt })]);
    appendStateLog(a, t, 'resume', 'ext', { step, reason: rec.reason, stoppedAt: stateLogTs(rec.stoppedAt) });
    stats.resumes += 1;
    startRequest(a, t);
  }

  function endRequest(a: Actor, t: number): void {
    const req = a.cp.request!;
    if (a.flaky && a.flaky.failuresLeft > 0) return failAttempt(a, t);
    const timing = { firstTokenAt: req.startedAt + 1_500, attempts: a.cp.episode ? a.cp.episode.attempts : 1, processingMs: 900, headers: {} };
    if (a.laneInfo && a.laneInfo.turnsLeft <= 1) {
      const done = assistant(a, t, req.startedAt, { text: `${a.laneInfo.lane} done: changes committed on the lane branch.`, stopReason: 'stop', loopPiTiming: timing });
      appendEntries(a, done.specs);
      a.cp.state = 'ended';
      a.cp.request = null;
      saveCheckpoint(a, t);
      laneReturn(a, t, 'complete');
      return;
    }
    const tool = TOOL_TURNS[Math.floor(rng() * TOOL_TURNS.length)]!;
    const call = assistant(a, t, req.startedAt, {
      thinking: 'Next step of the plan.',
      tool: { name: tool.name, args: tool.args },
      stopReason: 'toolUse',
      loopPiTiming: timing,
    });
    appendEntries(a, call.specs);
    a.pendingTool = { callId: call.callId!, name: tool.name, result: tool.result };
    // A normal response ends the retry episode and the root's recovery.
    a.cp.episode = null;
    a.cp.recovery = null;
    if (a.flaky) {
      a.flaky.turnsUntilEpisode -= 1;
      if (a.flaky.turnsUntilEpisode <= 0) {
        a.flaky.failuresLeft = 2;
        a.flaky.turnsUntilEpisode = 3;
      }
    }
    if (a.laneInfo) a.laneInfo.turnsLeft -= 1;
    a.cp.state = 'tools';
    a.cp.request = null;
    // As the extension writes it: the request that asked for the tools (an abort's target now).
    Object.assign(a.cp, { lastRequest: { turn: req.turn, startedAt: req.startedAt, endedAt: t, stopReason: 'toolUse', modelEvents: req.modelEvents, keepalives: req.keepalives } });
    a.endAt = null;
    a.toolsUntil = t + (3 * SEC + rng() * 12 * SEC) / speed;
    saveCheckpoint(a, t);
  }

  function finishTools(a: Actor, t: number): void {
    if (a.pendingTool) {
      const { callId, name, result } = a.pendingTool;
      appendEntries(a, [
        {
          at: t,
          body: { type: 'message', message: { role: 'toolResult', toolCallId: callId, toolName: name, content: [{ type: 'text', text: result }], isError: false, timestamp: t } },
        },
      ]);
      a.pendingTool = null;
      if (a.laneInfo) {
        const tools = a.laneInfo.status['toolCount'];
        a.laneInfo.status['toolCount'] = (typeof tools === 'number' ? tools : 0) + 1;
      }
    }
    startRequest(a, t);
  }

  /** A 429: the episode opens (or goes on) and pi waits before the next attempt. */
  function failAttempt(a: Actor, t: number): void {
    const req = a.cp.request!;
    const attempt = a.cp.episode ? a.cp.episode.attempts : 1;
    const failed = assistant(a, t, req.startedAt, {
      stopReason: 'error',
      errorMessage: RATE_LIMIT_ERROR,
      loopPiRecovery: { attemptId: `${a.session.slice(0, 8)}-${t}`, code: 'rate_limit', status: 429, disposition: 'retry', reason: 'rate limited: waiting at least 60 s' },
    });
    appendEntries(a, failed.specs);
    const episode = a.cp.episode ?? { startedAt: t, attempts: attempt, lastError: null, lastErrorClass: null, nextRetryAt: null };
    episode.lastError = RATE_LIMIT_ERROR;
    episode.lastErrorClass = 'rate-limit';
    // A 429 waits at least 60 s plus up to half again (SPEC §2).
    episode.nextRetryAt = t + (60 * SEC + rng() * 30 * SEC) / speed;
    a.cp.episode = episode;
    a.cp.state = 'retry-wait';
    a.cp.request = null;
    a.endAt = null;
    if (a.flaky) a.flaky.failuresLeft -= 1;
    saveCheckpoint(a, t);
  }

  function retry(a: Actor, t: number): void {
    const episode = a.cp.episode!;
    episode.attempts += 1;
    episode.nextRetryAt = null;
    stats.retries += 1;
    startRequest(a, t, (20 * SEC + rng() * 20 * SEC) / speed);
  }

  function wake(a: Actor, t: number): void {
    const w = a.wake!;
    a.wake = null;
    appendEntries(a, [
      notice(t, 'loop-wake', `Timer ${w.id}: ${w.reason}.`, { id: w.id }),
      { at: t + 1, body: { type: 'custom', customType: 'loop-wait-state', data: { timers: [], watchers: w.watchers } } },
    ]);
    startRequest(a, t);
  }

  // ---- lanes --------------------------------------------------------------------------------
  function updateLaneStatus(a: Actor, t: number): void {
    const info = a.laneInfo;
    if (!info) return;
    info.status['lastActivityAt'] = t;
    info.status['turnCount'] = a.turn;
    writeJson(info.statusFile, info.status);
  }

  function laneReturn(a: Actor, t: number, status: 'complete' | 'failed'): void {
    const info = a.laneInfo!;
    const agent = a.cp.agent ?? 'worker';
    info.status = {
      ...info.status,
      state: status,
      endedAt: t,
      lastActivityAt: t,
      ...(status === 'failed' ? { error: a.cp.lastStop?.error ?? 'request aborted' } : {}),
      steps: [{ agent, model: a.cp.model, status, sessionFile: a.file }],
    };
    writeJson(info.statusFile, info.status);
    const root = a.root;
    appendStateLog(root, t, 'return', 'dispatcher', { lane: info.lane, run: info.runId, status });
    if (root) {
      appendEntries(root, [
        notice(t, 'subagent-notify', `Lane ${info.lane} (${agent}) finished: ${status}.`, { runId: info.runId, status }),
      ]);
      root.nextDispatchAt = t + (20 * SEC) / speed;
    }
    stats.returns += 1;
  }

  /** A new lane of `root`: dispatched in its state log, and started at once. */
  function dispatch(root: Actor, t: number): void {
    root.laneCount += 1;
    const lane = `L${root.laneCount}`;
    const runId = demoShortId(`sim-run:${root.session}:${lane}`);
    const agent = root.laneCount % 2 === 1 ? 'worker' : 'reviewer';
    const task = `T${root.laneCount + 2}`;
    startLane(root, t, { lane, runId, agent, task }, true);
  }

  /**
   * A lane's pi starting: its session file, checkpoint and pi-subagents status; `dispatched`: the
   * dispatch is written to the root's state log first (a lane the home shows dispatched already,
   * a placeholder, was).
   */
  function startLane(root: Actor, t: number, def: { lane: string; runId: string; agent: string; task: string }, dispatched: boolean): void {
    const { lane, runId, agent, task } = def;
    const key = `${root.name}/${lane}`;
    const session = demoId(`sim:${root.session}:${lane}`);
    const file = laneSessionFile(root.file, runId, t, session);
    const cp: Checkpoint = {
      v: 1,
      session,
      sessionFile: file,
      role: 'lane',
      parentSession: root.session,
      runId,
      agent,
      cwd: root.cp.cwd,
      pid: root.cp.pid,
      pidStart: root.cp.pidStart,
      host: root.cp.host,
      model: root.cp.model,
      thinking: 'low',
      limits: root.cp.limits,
      state: 'requesting',
      request: null,
      episode: null,
      recovery: null,
      lastStop: null,
      held: null,
      ownerAbort: null,
      updatedAt: t,
    };
    const tl = new Timeline(session, root.model);
    // No session name of its own (pi-subagents' lanes write none): the row keeps the dispatch's
    // lane name from its placeholder on, not a name its first reply would bring.
    tl.setup(t, 'low', null);
    tl.user(t + 1, `Task ${task} of ${root.name}: migrate the next caller to request() and run the tests.`);
    const statusFile = laneStatusFileFor(home, runId);
    const status: Record<string, unknown> = {
      runId,
      sessionId: root.file,
      state: 'running',
      pid: root.cp.pid,
      startedAt: t,
      lastActivityAt: t,
      deadlineAt: t + 60 * MIN,
      timeoutMs: 60 * MIN,
      turnCount: 0,
      toolCount: 0,
      sessionFile: file,
      steps: [{ agent, model: root.cp.model, status: 'running', sessionFile: file }],
    };
    const actor = newActor({
      name: key,
      session,
      role: 'lane',
      cpFile: path.join(paths.checkpoints, `${session}.json`),
      cp,
      file,
      fileExists: false,
      initial: { header: { type: 'session', version: 3, id: session, timestamp: iso(t), cwd: root.cp.cwd, parentSession: root.file }, entries: tl.entries },
    });
    actor.root = root;
    actor.laneInfo = { lane, runId, statusFile, status, turnsLeft: 2 + Math.floor(rng() * 2) };
    root.lanes.push(actor);
    actors.push(actor);
    writeJson(statusFile, status, true);
    if (dispatched) {
      appendStateLog(root, t, 'dispatch', 'dispatcher', {
        lane,
        task,
        agent,
        run: runId,
        base: demoShortId(`base:${root.session}`),
        deadline: stateLogTs(t + 60 * MIN),
        model: root.cp.model,
        kind: 'code',
      });
      stats.dispatches += 1;
    }
    startRequest(actor, t);
  }

  // ---- incidents and receipts ---------------------------------------------------------------
  function writeIncident(rel: string, body: Record<string, unknown>): void {
    // One JSON object per file, written in one go (SPEC §3.2).
    writeJson(path.join(paths.incidents, rel), body);
    stats.incidents += 1;
  }

  function occasionalIncident(t: number): void {
    incidentTurn += 1;
    const held = manifest.sessions.find((s) => s.name === DEMO.held);
    const ops = manifest.sessions.find((s) => s.name === DEMO.streaming);
    const target = incidentTurn % 2 === 1 ? held : ops;
    const cp = target ? checkpoints.get(target.session) : undefined;
    if (!target || !cp) return;
    if (target === held) {
      writeIncident(`root/${target.session}-${utcStamp(t)}-arm-refused.json`, {
        v: 1, session: target.session, class: 'loop-arm-refused', at: iso(t), cwd: cp.cwd, reason: 'root is held by its owner (loop-dash); not arming',
      });
    } else {
      writeIncident(`ops/${target.session}-${utcStamp(t)}.json`, {
        v: 1,
        session: target.session,
        class: 'loop-ops-grants-rejected',
        at: iso(t),
        reason: 'grant for `npm publish` is outside the standing orders',
        grants_path: path.join(manifest.repoDir, 'codex', 'ops-grants.json'),
      });
    }
  }

  function stepReceipt(r: Receipt, t: number): void {
    if (r.body['phase'] !== 'running' || t < r.nextAt) return;
    const deadline = typeof r.body['deadline'] === 'number' ? r.body['deadline'] : Infinity;
    const interval = typeof r.body['interval_s'] === 'number' ? r.body['interval_s'] * SEC : 30 * SEC;
    r.body['observations'] = (typeof r.body['observations'] === 'number' ? r.body['observations'] : 0) + 1;
    r.body['last_observed_at'] = t;
    if (t >= deadline) {
      r.body['phase'] = 'done';
      r.body['result'] = { conclusion: 'success' };
    }
    r.nextAt = t + interval;
    writeJson(r.file, r.body);
  }

  // ---- stepping -----------------------------------------------------------------------------
  function step(a: Actor, t: number): void {
    switch (a.cp.state) {
      case 'requesting':
        return stepRequest(a, t);
      case 'tools':
        if (a.toolsUntil === null || t >= a.toolsUntil) finishTools(a, t);
        return;
      case 'retry-wait': {
        const at = a.cp.episode?.nextRetryAt;
        if (at === null || at === undefined || t >= at) retry(a, t);
        return;
      }
      case 'stopped': {
        const due = resumeDue(a);
        if (due !== null && t >= due) resume(a, t);
        return;
      }
      case 'idle':
        if (a.wake && t >= a.wake.at && !a.cp.held) wake(a, t);
        return;
      case 'ended':
        return;
      default: {
        const never: never = a.cp.state;
        return never;
      }
    }
  }

  function tick(): void {
    const t = clock();
    stats.ticks += 1;
    for (const a of [...actors]) {
      try {
        step(a, t);
        // A request in flight, tools running or a retry awaited: rewritten at least every 15 s
        // (readers mark such a checkpoint stale past 20 s); any other but an ended one every 30 s
        // (stale past 75 s) — as the extension does.
        const gap = REFRESHED_STATES.has(a.cp.state) ? CHECKPOINT_MAX_GAP_MS : IDLE_REFRESH_MS;
        if (a.cp.state !== 'ended' && t - a.lastCheckpointWrite >= gap) saveCheckpoint(a, t);
        syncInbox(a);
        if (a.role === 'root' && a.stateLog && t >= a.nextHeartbeatAt && a.cp.state !== 'ended') {
          appendStateLog(a, t, 'heartbeat', 'daemon', { at: stateLogTs(t) });
          a.nextHeartbeatAt = t + HEARTBEAT_EVERY_MS;
        }
        // (Like a dispatch, not while the root is stopped: it waits for the root's resume.)
        if (a.pendingLane && t >= a.pendingLane.at && a.cp.state !== 'stopped' && a.cp.state !== 'ended') {
          const { at: _at, ...def } = a.pendingLane;
          a.pendingLane = null;
          startLane(a, t, def, false);
        }
        if (a.hostsLanes && a.nextDispatchAt !== null && t >= a.nextDispatchAt && a.lanes.every((l) => l.cp.state === 'ended')) {
          a.nextDispatchAt = null;
          if (a.cp.state !== 'stopped' && a.laneCount < 40) dispatch(a, t);
        }
      } catch (err) {
        noteError(err);
      }
    }
    // The inboxes' backstop poll, about once a second for all of them (their watches wake them sooner).
    if (stats.ticks % inboxPollEvery === 0) for (const a of actors) a.inbox?.pollOnce();
    for (const r of receipts) stepReceipt(r, t);
    if (t >= nextIncidentAt) {
      occasionalIncident(t);
      nextIncidentAt = t + (6 * MIN) / speed;
    }
  }

  function newActor(init: Pick<Actor, 'name' | 'session' | 'role' | 'cpFile' | 'cp' | 'file' | 'fileExists' | 'initial'>): Actor {
    const t = clock();
    return {
      ...init,
      model: modelOf(init.cp.model),
      lastEntryId: null,
      seq: 0,
      turn: init.cp.request?.turn ?? 0,
      armed: true,
      silent: false,
      endAt: null,
      toolsUntil: null,
      pendingTool: null,
      lastCheckpointWrite: t,
      lastKeepalive: t,
      wake: null,
      flaky: null,
      stateLog: null,
      stateSeq: 0,
      nextHeartbeatAt: t + HEARTBEAT_EVERY_MS,
      hostsLanes: false,
      laneCount: 0,
      nextDispatchAt: null,
      pendingLane: null,
      lanes: [],
      root: null,
      laneInfo: null,
      inbox: null,
      hold: null,
    };
  }

  /** Read the home's current state once: checkpoints, session tails, state logs, receipts. */
  async function load(): Promise<void> {
    const t0 = clock();
    nextIncidentAt = t0 + (4 * MIN) / speed;
    const driven = new Set(['requesting', 'retry-wait', 'recovering', 'waiting']);
    const answering = new Set(['held', 'stopped', 'idle']);
    const byRoot = new Map<string, DemoManifestSession[]>();
    for (const s of manifest.sessions) {
      if (s.root) byRoot.set(s.root, [...(byRoot.get(s.root) ?? []), s]);
    }
    for (const s of manifest.sessions) {
      if (!s.checkpoint) continue;
      const cp = await readCheckpoint(s.checkpoint);
      if (!cp) continue;
      checkpoints.set(s.session, cp);
      // Held, stopped and idle sessions only answer the owner's actions (a live process whose
      // extension reads its control directory); lost and ended ones have nothing to answer.
      const passive = !driven.has(s.expect.state);
      if (passive && !answering.has(s.expect.state)) continue;
      const file = s.file ?? cp.sessionFile ?? null;
      if (!file) continue;
      const a = newActor({ name: s.name, session: s.session, role: s.role, cpFile: s.checkpoint, cp, file, fileExists: s.file !== null, initial: null });
      const tail = a.fileExists ? await readTail(file) : [];
      a.lastEntryId = lastEntryId(tail);
      a.hold = restoreHold(tail as { type: string; customType?: string; data?: unknown }[]);
      a.turn = cp.request?.turn ?? tail.filter((e) => isAssistant(e)).length;
      const cont = lastCustom(tail, 'loop-continuation-state');
      a.armed = cont ? (cont as { armed?: unknown }).armed !== false : true;
      const req = cp.request;
      if (cp.state === 'requesting' && req) {
        a.silent = req.lastModelEventAt !== null && t0 - req.lastModelEventAt > SILENT_AFTER_MS;
        if (a.silent && speed > 1) compressSilence(a, t0);
        // Short first requests so the story moves; a request reasoning for over an hour goes on.
        a.endAt = t0 - req.startedAt > 60 * MIN ? null : t0 + (25 * SEC + rng() * 30 * SEC) / speed;
      }
      if (cp.state === 'retry-wait') a.flaky = { turnsUntilEpisode: 3, failuresLeft: 0 };
      if (s.role === 'root') {
        if (!a.fileExists) a.initial = freshRootFile(s, cp, file);
        a.stateLog = stateLogFor(manifest.repoDir, s.name);
        const { seq, lanes: dispatched, byRun } = await stateLogTail(a.stateLog);
        a.stateSeq = seq;
        const lanes = byRoot.get(s.session) ?? [];
        a.hostsLanes = lanes.length > 0;
        // The next lane's name follows every lane dispatched, also one with no session yet.
        a.laneCount = Math.max(lanes.length, dispatched);
        // A lane dispatched with no session yet (the home shows it as a placeholder): its pi starts
        // a little later, as a real one would once pi-subagents got to it.
        const waiting = manifest.placeholders.find((p) => p.root === s.session);
        const d = waiting ? byRun.get(waiting.runId) : undefined;
        if (waiting && d) {
          a.pendingLane = { lane: waiting.lane, runId: waiting.runId, agent: typeof d['agent'] === 'string' ? d['agent'] : 'worker', task: typeof d['task'] === 'string' ? d['task'] : 'T?', at: t0 + (40 * SEC) / speed };
        }
      }
      if (cp.state === 'idle' && !passive) {
        const wait = lastCustom(tail, 'loop-wait-state') as { timers?: unknown; watchers?: unknown } | null;
        const timers = Array.isArray(wait?.timers) ? (wait.timers as Record<string, unknown>[]) : [];
        const next = timers.find((x) => typeof x['at'] === 'number');
        if (next) a.wake = { at: next['at'] as number, id: String(next['id'] ?? 'timer'), reason: String(next['reason'] ?? 'timer'), watchers: Array.isArray(wait?.watchers) ? wait.watchers : [] };
      }
      if (s.role === 'lane' && cp.runId) {
        const statusFile = laneStatusFileFor(home, cp.runId);
        const status = (await readJsonObject(statusFile)) ?? { runId: cp.runId, sessionId: null, state: 'running', startedAt: t0 };
        a.laneInfo = { lane: s.name.split('/').pop() ?? s.name, runId: cp.runId, statusFile, status, turnsLeft: 1 };
      }
      actors.push(a);
    }
    for (const a of actors) {
      if (a.role !== 'lane') continue;
      const s = manifest.sessions.find((x) => x.session === a.session);
      a.root = actors.find((r) => r.session === s?.root) ?? null;
      a.root?.lanes.push(a);
    }
    await loadReceipts(t0);
  }

  /**
   * `speed` > 1: shift the silent request back in time (its start and its last model event alike,
   * so its story is unchanged) until its cut comes `speed` times sooner.
   */
  function compressSilence(a: Actor, t0: number): void {
    const req = a.cp.request!;
    const limits = limitsOf(a);
    const last = req.lastModelEventAt ?? req.startedAt;
    const remaining = last + limits.inactivityMs - t0;
    if (remaining <= 0) return;
    const shift = remaining - remaining / speed;
    req.startedAt -= shift;
    if (req.lastModelEventAt !== null) req.lastModelEventAt -= shift;
    saveCheckpoint(a, t0);
  }

  function freshRootFile(s: DemoManifestSession, cp: Checkpoint, file: string): { header: Record<string, unknown>; entries: EntrySpec[] } {
    const created = stampTime(path.basename(file)) ?? cp.request?.startedAt ?? clock();
    const tl = new Timeline(s.session, modelOf(cp.model));
    tl.setup(created, cp.thinking ?? 'medium', null);
    tl.custom(created + SEC, 'loop-continuation-state', {
      armed: true,
      launch: { report: reportFor(manifest.repoDir, s.name), loop: 'loop1', launchTs: iso(created) },
      nudgeCount: 0,
      chainIncidentWritten: false,
    });
    tl.user(created + 2 * SEC, `Run loop1 of codex/plan-${s.name}.md.`);
    return { header: { type: 'session', version: 3, id: s.session, timestamp: iso(created), cwd: cp.cwd }, entries: tl.entries };
  }

  async function loadReceipts(t0: number): Promise<void> {
    const sids = await fs.readdir(paths.loopWait).catch(() => [] as string[]);
    for (const sid of sids) {
      const dir = path.join(paths.loopWait, sid, 'receipts');
      const names = await fs.readdir(dir).catch(() => [] as string[]);
      for (const name of names) {
        if (!name.endsWith('.json') || name.startsWith('.')) continue;
        const file = path.join(dir, name);
        const body = await readJsonObject(file);
        if (body) receipts.push({ file, body, nextAt: t0 });
      }
    }
  }

  // ---- owner actions: the demo's pi processes answer them as the extension would --------------
  /** Starts the actor's inbox while its process lives, stops it once the session ended. */
  function syncInbox(a: Actor): void {
    if (a.cp.state === 'ended' || stopped) {
      a.inbox?.stop();
      a.inbox = null;
      return;
    }
    if (a.inbox) return;
    a.inbox = new ControlInbox({
      dir: path.join(paths.control, a.session),
      session: a.session,
      journalFile: paths.journal,
      now: clock,
      // The inbox tells each outcome (the owner sees it in the ack and the journal); only failures count.
      log: (message, err) => {
        if (err !== undefined) noteError(new Error(`${message}: ${err instanceof Error ? err.message : String(err)}`));
      },
      apply: (request) => ownerAction(a, request),
      // No timer per session: the simulator's tick polls every inbox (see tick).
      pollMs: null,
    });
    a.inbox.start();
  }

  function ownerAction(a: Actor, request: ControlRequest): ActionOutcome {
    const t = clock();
    const by = `${request.by.user}@${request.by.host}`;
    const reason = request.reason.length > 0 ? request.reason : null;
    // The hold as the extension keeps it: its summary in the checkpoint, its entry in the session.
    const setHold = (hold: Hold | null): void => {
      a.hold = hold;
      a.cp.held = holdSummary(hold);
      appendEntries(a, [{ at: t, body: { type: 'custom', customType: HOLD_ENTRY_TYPE, data: holdEntry(hold, t, by, reason, request.id) } }]);
    };
    switch (request.action) {
      case 'abort': {
        const inFlight = a.cp.state === 'requesting' ? a.cp.request : null;
        const ref = a.cp.state === 'tools' ? checkpointRequestRefSchema.safeParse((a.cp as { lastRequest?: unknown }).lastRequest) : null;
        const tools = ref?.success ? ref.data : null;
        const stale = staleTargetReason(request.target, inFlight ?? (tools ? { ...tools, tools: true } : null));
        if (stale) return { status: 'stale-target', detail: `${stale}; nothing was cut` };
        const retryWait = a.cp.state === 'retry-wait';
        if (inFlight) {
          appendEntries(a, assistant(a, t, inFlight.startedAt, { stopReason: 'aborted', errorMessage: 'Request was aborted' }).specs);
          a.cp.lastStop = { at: t, reason: 'aborted', error: 'Request was aborted', limit: 'owner' };
        }
        if (tools && a.pendingTool) {
          // pi ends an aborted tool call with an error result, and no request follows it.
          const { callId, name } = a.pendingTool;
          appendEntries(a, [{ at: t, body: { type: 'message', message: { role: 'toolResult', toolCallId: callId, toolName: name, content: [{ type: 'text', text: 'Operation aborted' }], isError: true, timestamp: t } } }]);
          a.pendingTool = null;
          a.toolsUntil = null;
          a.cp.lastStop = { at: t, reason: 'aborted', error: 'Operation aborted', limit: 'owner' };
        }
        if (inFlight || tools || retryWait) {
          a.cp.state = 'stopped';
          a.cp.request = null;
          if (a.cp.episode) a.cp.episode.nextRetryAt = null;
        }
        a.silent = false;
        a.endAt = null;
        a.cp.ownerAbort = { at: t, requestId: request.id };
        a.cp.recovery = null; // an owner abort is never resumed
        setHold(startHold(a.hold, t, by, reason, 'abort'));
        saveCheckpoint(a, t);
        const ran = inFlight ?? tools;
        return abortApplied(ran ? { kind: inFlight ? 'request' : 'tools', turn: ran.turn, startedAt: ran.startedAt } : { kind: retryWait ? 'retry' : 'none' }, t);
      }
      case 'disarm': {
        const since = a.hold?.since ?? a.cp.held?.since ?? null;
        setHold(startHold(a.hold, t, by, reason, 'disarm'));
        saveCheckpoint(a, t);
        return disarmApplied(since);
      }
      case 'arm': {
        const was = a.hold ?? a.cp.held;
        const aborted = a.cp.ownerAbort !== null;
        a.cp.ownerAbort = null;
        setHold(null);
        // What the owner cut or held goes on: a stopped or idle session gets its next turn soon.
        if (was && (a.cp.state === 'stopped' || a.cp.state === 'idle') && (aborted || a.cp.state === 'idle')) {
          a.cp.state = 'idle';
          a.wake = { at: t + (5 * SEC) / speed, id: 'armed', reason: 'armed by the owner', watchers: [] };
        }
        saveCheckpoint(a, t);
        return { status: 'applied', detail: was ? 'armed; the loop may restart the session by itself' : 'the session was not held; nothing to release' };
      }
      default: {
        const never: never = request.action;
        return never;
      }
    }
  }

  // ---- the loop -----------------------------------------------------------------------------
  // Loading starts at once, not at the first step, so that ready() does not wait an interval.
  const loading = load().catch(noteError);
  const ready = loading.then(() => Promise.all([...pending])).then(() => undefined);

  async function run(): Promise<void> {
    try {
      await loading;
      if (!stopped) tick();
    } catch (err) {
      noteError(err);
    }
  }

  const interval = setInterval(() => {
    if (busy || stopped) return;
    busy = true;
    current = run().finally(() => {
      busy = false;
    });
  }, intervalMs);
  interval.unref();
  let intervalCleared = false;

  let stopping: Promise<void> | null = null;
  return {
    ready: () => ready,
    stop(): Promise<void> {
      stopping ??= (async () => {
        stopped = true;
        clearInterval(interval);
        intervalCleared = true;
        await loading;
        await current;
        for (const a of actors) syncInbox(a);
        // Split lines are finished at once rather than after their pause.
        for (;;) {
          for (const d of delays) {
            clearTimeout(d.timer);
            d.resolve();
          }
          delays.clear();
          if (pending.size === 0) break;
          await Promise.race([...pending]);
        }
      })();
      return stopping;
    },
    stats(): SimulatorStats {
      return { ...stats, activeTimers: delays.size + (intervalCleared ? 0 : 1) };
    },
  };
}

// ---- small helpers ------------------------------------------------------------------------------

async function appendBytes(file: string, bytes: Uint8Array): Promise<void> {
  // 'a' never creates missing directories, so a removed home stays removed.
  const fh = await fs.open(file, 'a');
  try {
    await fh.write(bytes);
  } finally {
    await fh.close();
  }
}

function modelOf(ref: string | null): DemoModel {
  return [SOL, SONNET, GEMINI].find((m) => modelRef(m) === ref || m.id === ref) ?? SOL;
}

async function readCheckpoint(file: string): Promise<Checkpoint | null> {
  const obj = await readJsonObject(file);
  const parsed = checkpointSchema.safeParse(obj);
  return parsed.success ? parsed.data : null;
}

async function readJsonObject(file: string): Promise<Record<string, unknown> | null> {
  try {
    const value: unknown = JSON.parse(await fs.readFile(file, 'utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The complete lines of the last `bytes` of a JSONL file, parsed (bad lines skipped). */
async function readTail(file: string, bytes = 256 * 1024): Promise<Record<string, unknown>[]> {
  let text: string;
  let fromStart: boolean;
  try {
    const fh = await fs.open(file, 'r');
    try {
      const { size } = await fh.stat();
      const start = Math.max(0, size - bytes);
      const buf = Buffer.alloc(size - start);
      await fh.read(buf, 0, buf.length, start);
      text = buf.toString('utf8');
      fromStart = start === 0;
    } finally {
      await fh.close();
    }
  } catch {
    return [];
  }
  const lines = text.split('\n');
  if (!fromStart) lines.shift();
  lines.pop(); // empty after the last newline, or a torn line
  const out: Record<string, unknown>[] = [];
  for (const line of lines) {
    try {
      const v: unknown = JSON.parse(line);
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) out.push(v as Record<string, unknown>);
    } catch {
      // A bad line is the readers' business; the simulator only needs the last good entry.
    }
  }
  return out;
}

function lastEntryId(tail: Record<string, unknown>[]): string | null {
  const last = tail[tail.length - 1];
  if (!last || last['type'] === 'session') return null;
  return typeof last['id'] === 'string' ? last['id'] : null;
}

const isAssistant = (e: Record<string, unknown>): boolean =>
  e['type'] === 'message' && (e['message'] as { role?: unknown } | undefined)?.role === 'assistant';

function lastCustom(tail: Record<string, unknown>[], customType: string): unknown {
  for (let i = tail.length - 1; i >= 0; i -= 1) {
    const e = tail[i]!;
    if (e['type'] === 'custom' && e['customType'] === customType) return e['data'] ?? null;
  }
  return null;
}

/** A state log's last `seq`, how many lanes its tail dispatched, and each run's dispatch. */
async function stateLogTail(file: string): Promise<{ seq: number; lanes: number; byRun: Map<string, Record<string, unknown>> }> {
  const tail = await readTail(file, 64 * 1024);
  let max = 0;
  const lanes = new Set<unknown>();
  const byRun = new Map<string, Record<string, unknown>>();
  for (const e of tail) {
    if (typeof e['seq'] === 'number' && e['seq'] > max) max = e['seq'];
    if (e['ev'] === 'dispatch') {
      lanes.add(e['lane']);
      if (typeof e['run'] === 'string') byRun.set(e['run'], e);
    }
  }
  return { seq: max, lanes: lanes.size, byRun };
}

/** Epoch ms of the `<UTC>` stamp at the start of a session file name. */
function stampTime(name: string): number | null {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})-(\d{3})Z_/.exec(name);
  if (!m) return null;
  const ms = Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`);
  return Number.isFinite(ms) ? ms : null;
}

/** A small seeded PRNG (mulberry32): deterministic demo runs. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
