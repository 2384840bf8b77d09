/**
 * The demo pi home as data: every root and lane with its session entries, checkpoint, lane status,
 * state log, watcher receipts and incidents, and beside each one what the dashboard must show for
 * it (`expect`). The expected clocks are written here as the plain SPEC §2 arithmetic on the same
 * inputs — never by calling the model code — so a test can hold `status --json --now` against them.
 *
 * All times are relative to `ctx.now`; ids are derived from names, so a plan is deterministic.
 */
import type { SessionState } from '../model/session-state.js';
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Checkpoint, CheckpointLimits } from '../contract/checkpoint.js';
import { cwdSlug, homePaths, stateLogPathFromReport, utcStamp } from '../contract/paths.js';

export const SEC = 1_000;
export const MIN = 60 * SEC;
export const HOUR = 60 * MIN;

/** `settings.json` of the demo home: SPEC §2 defaults, with pi's retry count set explicitly. */
export const demoSettings = {
  defaultProvider: 'openai',
  defaultModel: 'gpt-6.1-sol',
  defaultThinkingLevel: 'medium',
  // maxRetries 3 holds the loop's 5-attempt episode to 4 attempts (SPEC §2).
  retry: { enabled: true, maxRetries: 3, baseDelayMs: 2_000, maxAgentDelayMs: 60_000, provider: { timeoutMs: 120_000 } },
  httpIdleTimeoutMs: 300_000,
  loopPi: {
    requestCeiling: { inactivityMs: 15 * MIN, absoluteMs: 75 * MIN, maxFollowUps: 2 },
    retryRecovery: { episodeMs: 20 * MIN, providerIds: ['openai'] },
    retryBackoff: { rateLimitDelayMs: 60 * SEC },
  },
} as const;

/** `models.json` of the demo home (no keys: pi keeps those in auth.json, which we never touch). */
export const demoModels = {
  providers: {
    openai: {
      baseUrl: 'https://llm-proxy.example.internal/v1',
      api: 'openai-responses',
      models: [{ id: 'gpt-6.1-sol', name: 'GPT-6.1 Sol', reasoning: true, contextWindow: 400_000, maxTokens: 128_000 }],
      // The home caps Sol's output so a runaway hits its length stop early.
      modelOverrides: { 'gpt-6.1-sol': { maxTokens: 80_000 } },
    },
    anthropic: {
      api: 'anthropic-messages',
      models: [{ id: 'claude-sonnet-4-5', name: 'Claude Sonnet 4.5', reasoning: true, contextWindow: 200_000, maxTokens: 64_000 }],
    },
    google: {
      api: 'google-generative-ai',
      models: [{ id: 'gemini-2.5-pro', name: 'Gemini 2.5 Pro', reasoning: true, contextWindow: 1_000_000, maxTokens: 65_536 }],
    },
  },
} as const;

/** The limits every demo checkpoint carries, read from {@link demoSettings} with SPEC §2's rules. */
export const demoLimits: CheckpointLimits = {
  inactivityMs: demoSettings.loopPi.requestCeiling.inactivityMs,
  absoluteMs: demoSettings.loopPi.requestCeiling.absoluteMs,
  episodeMs: demoSettings.loopPi.retryRecovery.episodeMs,
  episodeMaxAttempts: Math.min(5, demoSettings.retry.maxRetries + 1),
};

/** SPEC §2 resume ladder: the n-th resume is due min(2^(n−1), 15) minutes after the stop. */
export function ladderDelayMs(step: number): number {
  return Math.min(2 ** (step - 1), 15) * MIN;
}

/** A model as the demo uses it; `tokPerS` shapes realistic usage for `audit`. */
export interface DemoModel {
  provider: string;
  id: string;
  api: string;
  tokPerS: number;
}

export const SOL: DemoModel = { provider: 'openai', id: 'gpt-6.1-sol', api: 'openai-responses', tokPerS: 46 };
export const SONNET: DemoModel = { provider: 'anthropic', id: 'claude-sonnet-4-5', api: 'anthropic-messages', tokPerS: 71 };
export const GEMINI: DemoModel = { provider: 'google', id: 'gemini-2.5-pro', api: 'google-generative-ai', tokPerS: 93 };

/** `provider/id`, as checkpoints and lane steps name a model. */
export const modelRef = (m: DemoModel): string => `${m.provider}/${m.id}`;

/** A uuid-shaped id derived from a label (stable across runs). */
export function demoId(label: string): string {
  const h = createHash('sha256').update(`loop-dash-demo:${label}`).digest('hex');
  const variant = ((parseInt(h.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** An 8-hex-digit id derived from a label (entry ids, run ids). */
export function demoShortId(label: string): string {
  return createHash('sha256').update(`loop-dash-demo:${label}`).digest('hex').slice(0, 8);
}

export const iso = (ms: number): string => new Date(ms).toISOString();
/** SPEC §3.4 state-log time: `YYYY-MM-DDTHH:MM:SSZ`. */
export const stateLogTs = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

// ---- where things go -------------------------------------------------------------------------

/** `<home>/sessions/--<slug>--/<UTC>_<id>.jsonl` (SPEC §3.1). */
export function rootSessionFile(home: string, cwd: string, createdAt: number, id: string): string {
  return path.join(homePaths(home).sessions, cwdSlug(cwd), `${utcStamp(createdAt)}_${id}.jsonl`);
}

/** `<root dir>/<root basename without .jsonl>/<runId>/<UTC>_<id>.jsonl` (SPEC §3.1 lanes). */
export function laneSessionFile(rootFile: string, runId: string, createdAt: number, id: string): string {
  return path.join(path.dirname(rootFile), path.basename(rootFile, '.jsonl'), runId, `${utcStamp(createdAt)}_${id}.jsonl`);
}

export const checkpointFileFor = (home: string, id: string): string => path.join(homePaths(home).checkpoints, `${id}.json`);
export const laneStatusFileFor = (home: string, runId: string): string => path.join(homePaths(home).laneRuns, runId, 'status.json');
export const receiptFileFor = (home: string, sid: string, id: string): string =>
  path.join(homePaths(home).loopWait, sid, 'receipts', `${id}.json`);
/** The `launch.report` of a demo root. */
export const reportFor = (repoDir: string, name: string): string => path.join(repoDir, 'codex', `report-${name}-loop1.md`);
/** The state log of a demo root (SPEC §3.4, from its report). */
export const stateLogFor = (repoDir: string, name: string): string => stateLogPathFromReport(reportFor(repoDir, name));

// ---- plan types ------------------------------------------------------------------------------

/** SPEC §2 session states (the type only: expected values are still computed here, independently). */
export type ExpectedState = SessionState;

/** What the dashboard must show for one session at `now` (epoch ms). */
export interface DemoExpect {
  state: ExpectedState;
  firstToFire: 'inactivity' | 'absolute' | 'episode' | null;
  inactivityAt: number | null;
  absoluteAt: number | null;
  episode: { at: number; attempts: number; maxAttempts: number } | null;
  nextRetryAt: number | null;
  nextResume: { at: number; source: 'scheduled' | 'predicted'; step: number } | null;
  incidents: number;
}

/** One session-file entry before it gets its `id`/`parentId`: the time and the rest of its fields. */
export interface EntrySpec {
  at: number;
  body: { type: string } & Record<string, unknown>;
}

/** One session of the plan, fully resolved. */
export interface SessionPlan {
  key: string;
  id: string;
  name: string;
  role: 'root' | 'lane';
  rootId: string | null;
  runId: string | null;
  agent: string | null;
  cwd: string;
  model: DemoModel;
  thinking: string;
  createdAt: number;
  /** Where pi writes (or will write) the session file. */
  sessionFile: string;
  /** False when pi has not written the file yet (no reply so far). */
  writeFile: boolean;
  header: Record<string, unknown>;
  entries: EntrySpec[];
  checkpoint: Checkpoint | null;
  checkpointFile: string | null;
  expect: Omit<DemoExpect, 'incidents'>;
  /** Pad the file with filler entries inserted before `entries[fill.index]` (benchmark homes). */
  fill?: { bytes: number; index: number };
}

/** One incident file of the plan. */
export interface IncidentPlan {
  file: string;
  cls: string;
  session: string;
  /** The limit or rule the file names (what the dashboard must report), or null. */
  limit: string | null;
  body: Record<string, unknown>;
}

/** Everything the generator writes. */
export interface HomePlan {
  home: string;
  repoDir: string;
  now: number;
  settings: unknown;
  models: unknown;
  sessions: SessionPlan[];
  /** Lane status files and watcher receipts. */
  jsonFiles: { file: string; body: unknown }[];
  stateLogs: { file: string; lines: Record<string, unknown>[] }[];
  textFiles: { file: string; text: string }[];
  incidents: IncidentPlan[];
  /** Runs a root's state log dispatched with no session yet: each a placeholder lane (`run:<runId>`). */
  placeholders: { runId: string; root: string; lane: string }[];
  /** Directories that exist in a real home even when empty. */
  dirs: string[];
}

/** What the plan is built from. */
export interface ScenarioContext {
  now: number;
  home: string;
  repoDir: string;
  host: string;
  livePid: number;
  livePidStart: string | null;
  deadPid: number;
}

// ---- session entries -------------------------------------------------------------------------

const TOOLS: readonly { name: string; args: Record<string, unknown>; result: string }[] = [
  { name: 'read', args: { path: 'src/http/client.ts' }, result: 'export async function request(opts: RequestOptions) {\n  …\n}' },
  { name: 'bash', args: { command: 'npm test -- --reporter=dot' }, result: '214 passing (9s)' },
  { name: 'edit', args: { path: 'src/api/users.ts', oldText: 'fetch(', newText: 'request(' }, result: 'Applied 1 edit.' },
  { name: 'grep', args: { pattern: 'fetch\\(', path: 'src' }, result: 'src/api/orders.ts:41\nsrc/api/billing.ts:17' },
  { name: 'write', args: { path: 'codex/notes.md', content: '- migrated users and orders' }, result: 'Wrote 28 bytes.' },
];

/** A deterministic value in [0, 1) for the i-th item. */
const wobble = (i: number): number => (i * 0.6180339887) % 1;

/** Builds the entries of one session file in time order. */
export class Timeline {
  readonly entries: EntrySpec[] = [];
  /** Assistant messages so far (one per request). */
  assistants = 0;
  tools = 0;
  private calls = 0;

  constructor(
    readonly sessionId: string,
    readonly model: DemoModel,
  ) {}

  add(at: number, body: EntrySpec['body']): this {
    this.entries.push({ at: Math.round(at), body });
    return this;
  }

  /** pi's first entries: model, thinking level and (when given) the session name. */
  setup(at: number, thinking: string, name: string | null): this {
    this.add(at, { type: 'model_change', provider: this.model.provider, modelId: this.model.id });
    this.add(at, { type: 'thinking_level_change', thinkingLevel: thinking });
    if (name !== null) this.add(at + 500, { type: 'session_info', name });
    return this;
  }

  user(at: number, text: string): this {
    return this.add(at, { type: 'message', message: { role: 'user', content: [{ type: 'text', text }], timestamp: Math.round(at) } });
  }

  custom(at: number, customType: string, data: unknown): this {
    return this.add(at, { type: 'custom', customType, data });
  }

  notice(at: number, customType: string, content: string, details?: unknown): this {
    return this.add(at, {
      type: 'custom_message',
      customType,
      content,
      display: true,
      ...(details === undefined ? {} : { details }),
    });
  }

  /**
   * One assistant message ending at `at` for a request started at `startedAt`. Output tokens follow
   * the model's rate unless given. Returns the tool call id when a tool was called.
   */
  assistant(
    at: number,
    startedAt: number,
    opts: {
      text?: string;
      thinking?: string;
      tool?: { name: string; args: Record<string, unknown> };
      stopReason: 'stop' | 'length' | 'toolUse' | 'error' | 'aborted';
      errorMessage?: string;
      output?: number;
      loopPiRecovery?: Record<string, unknown>;
      loopPiTiming?: Record<string, unknown>;
    },
  ): string | null {
    this.assistants += 1;
    const n = this.assistants;
    const content: Record<string, unknown>[] = [];
    if (opts.thinking) content.push({ type: 'thinking', thinking: opts.thinking });
    if (opts.text) content.push({ type: 'text', text: opts.text });
    let callId: string | null = null;
    if (opts.tool) {
      this.calls += 1;
      callId = `call_${demoShortId(`${this.sessionId}:call:${this.calls}`)}`;
      content.push({ type: 'toolCall', id: callId, name: opts.tool.name, arguments: opts.tool.args });
    }
    const failed = opts.stopReason === 'error' || opts.stopReason === 'aborted';
    const seconds = Math.max(0, at - startedAt) / 1000;
    const output = opts.output ?? (failed ? 0 : Math.round(this.model.tokPerS * (0.75 + 0.5 * wobble(n)) * seconds));
    const input = 18_000 + 1_400 * n;
    const cacheRead = Math.round(input * 0.8);
    this.add(at, {
      type: 'message',
      message: {
        role: 'assistant',
        content,
        api: this.model.api,
        provider: this.model.provider,
        model: this.model.id,
        usage: {
          input,
          output,
          cacheRead,
          cacheWrite: 0,
          totalTokens: input + output,
          cost: {
            input: round6(input * 1.25e-6),
            output: round6(output * 1e-5),
            cacheRead: round6(cacheRead * 1.25e-7),
            cacheWrite: 0,
            total: round6(input * 1.25e-6 + output * 1e-5 + cacheRead * 1.25e-7),
          },
        },
        stopReason: opts.stopReason,
        ...(opts.errorMessage === undefined ? {} : { errorMessage: opts.errorMessage }),
        timestamp: Math.round(at),
        ...(opts.loopPiRecovery === undefined ? {} : { loopPiRecovery: opts.loopPiRecovery }),
        ...(opts.loopPiTiming === undefined ? {} : { loopPiTiming: opts.loopPiTiming }),
      },
    });
    return callId;
  }

  toolResult(at: number, callId: string, toolName: string, text: string): this {
    this.tools += 1;
    return this.add(at, {
      type: 'message',
      message: { role: 'toolResult', toolCallId: callId, toolName, content: [{ type: 'text', text }], isError: false, timestamp: Math.round(at) },
    });
  }

  /**
   * Regular tool turns from `from` to `to`: each request runs three quarters of a step and ends in
   * a tool call whose result arrives at the end of the step (the last one exactly at `to`).
   */
  work(from: number, to: number, stepMs: number): this {
    const n = Math.max(1, Math.floor((to - from) / stepMs));
    const step = (to - from) / n;
    for (let i = 0; i < n; i += 1) {
      const start = from + i * step;
      const end = start + step * 0.75;
      const tool = TOOLS[(this.assistants + i) % TOOLS.length]!;
      const callId = this.assistant(end, start, {
        thinking: 'Checking what is left of the plan before the next edit.',
        tool: { name: tool.name, args: tool.args },
        stopReason: 'toolUse',
        loopPiTiming: { firstTokenAt: Math.round(start + 1_800), attempts: 1, processingMs: 1_200, headers: {} },
      });
      this.toolResult(i === n - 1 ? to : start + step, callId!, tool.name, tool.result);
    }
    return this;
  }

  /** A request that ended in an answer at `at`. */
  answer(at: number, startedAt: number, text: string): this {
    this.assistant(at, startedAt, { text, stopReason: 'stop' });
    return this;
  }
}

const round6 = (n: number): number => Math.round(n * 1e6) / 1e6;

// ---- building blocks -------------------------------------------------------------------------

const quiet = (state: ExpectedState): Omit<DemoExpect, 'incidents'> => ({
  state,
  firstToFire: null,
  inactivityAt: null,
  absoluteAt: null,
  episode: null,
  nextRetryAt: null,
  nextResume: null,
});

type LiveFields = Partial<
  Pick<Checkpoint, 'request' | 'episode' | 'recovery' | 'lastStop' | 'held' | 'ownerAbort' | 'limits' | 'pid' | 'pidStart'>
> &
  Pick<Checkpoint, 'state' | 'updatedAt'>;

function checkpointOf(ctx: ScenarioContext, s: SessionPlan, live: LiveFields): Checkpoint {
  return {
    v: 1,
    session: s.id,
    sessionFile: s.sessionFile,
    role: s.role,
    parentSession: s.rootId,
    runId: s.runId,
    agent: s.agent,
    cwd: s.cwd,
    pid: live.pid ?? ctx.livePid,
    pidStart: live.pidStart !== undefined ? live.pidStart : ctx.livePidStart,
    host: ctx.host,
    model: modelRef(s.model),
    thinking: s.thinking,
    limits: live.limits ?? demoLimits,
    state: live.state,
    request: live.request ?? null,
    episode: live.episode ?? null,
    recovery: live.recovery ?? null,
    lastStop: live.lastStop ?? null,
    held: live.held ?? null,
    ownerAbort: live.ownerAbort ?? null,
    updatedAt: live.updatedAt,
  };
}

/** The state log of one root, built in any order and numbered by time. */
class StateLog {
  private readonly events: { at: number; line: Record<string, unknown> }[] = [];
  constructor(readonly file: string) {}
  ev(at: number, ev: string, by: 'root' | 'dispatcher' | 'ext' | 'daemon', fields: Record<string, unknown> = {}): this {
    this.events.push({ at, line: { ev, by, ...fields } });
    return this;
  }
  lines(): Record<string, unknown>[] {
    return [...this.events]
      .sort((a, b) => a.at - b.at)
      .map((e, i) => ({ v: 1, seq: i + 1, ts: stateLogTs(e.at), ...e.line }));
  }
}

/** Collects the plan while the scenarios are written. */
class PlanBuilder {
  readonly plan: HomePlan;
  constructor(readonly ctx: ScenarioContext) {
    const p = homePaths(ctx.home);
    this.plan = {
      home: ctx.home,
      repoDir: ctx.repoDir,
      now: ctx.now,
      settings: demoSettings,
      models: demoModels,
      sessions: [],
      jsonFiles: [],
      stateLogs: [],
      textFiles: [],
      incidents: [],
      placeholders: [],
      dirs: [
        p.sessions,
        path.join(p.incidents, 'request'),
        path.join(p.incidents, 'root'),
        path.join(p.incidents, 'ops'),
        path.join(p.incidents, 'bad'),
        p.laneRuns,
        p.loopWait,
        p.checkpoints,
        p.control,
        path.join(ctx.repoDir, 'codex'),
      ],
    };
  }

  /** A root session: header, the first entries (with loop state when `armed` is not null). */
  root(def: { name: string; cwd: string; createdAt: number; model: DemoModel; thinking: string; armed: boolean | null; named?: boolean }): {
    s: SessionPlan;
    tl: Timeline;
    log: StateLog | null;
    continuation: (armed: boolean, extra?: Record<string, unknown>) => Record<string, unknown>;
  } {
    const { ctx } = this;
    const id = demoId(`session:${def.name}`);
    const sessionFile = rootSessionFile(ctx.home, def.cwd, def.createdAt, id);
    const s: SessionPlan = {
      key: def.name,
      id,
      name: def.name,
      role: 'root',
      rootId: null,
      runId: null,
      agent: null,
      cwd: def.cwd,
      model: def.model,
      thinking: def.thinking,
      createdAt: def.createdAt,
      sessionFile,
      writeFile: true,
      header: { type: 'session', version: 3, id, timestamp: iso(def.createdAt), cwd: def.cwd },
      entries: [],
      checkpoint: null,
      checkpointFile: null,
      expect: quiet('unknown'),
    };
    const tl = new Timeline(id, def.model);
    s.entries = tl.entries;
    tl.setup(def.createdAt, def.thinking, def.named === false ? null : def.name);
    const report = reportFor(ctx.repoDir, def.name);
    const continuation = (armed: boolean, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      armed,
      launch: { report, loop: 'loop1', launchTs: iso(def.createdAt) },
      nudgeCount: 0,
      chainIncidentWritten: false,
      ...extra,
    });
    let log: StateLog | null = null;
    if (def.armed !== null) {
      tl.custom(def.createdAt + SEC, 'loop-continuation-state', continuation(def.armed));
      log = new StateLog(stateLogFor(ctx.repoDir, def.name));
      log.ev(def.createdAt, 'open', 'root', { name: def.name, loop: 1, plan: `codex/plan-${def.name}.md`, report: path.relative(ctx.repoDir, report) });
      this.plan.stateLogs.push({ file: log.file, lines: [] });
      this.plan.textFiles.push({
        file: report,
        text: `# ${def.name} — loop 1\n\nOpened ${iso(def.createdAt)}. Progress is logged in \`${path.basename(log.file)}\`.\n`,
      });
    }
    this.plan.sessions.push(s);
    return { s, tl, log, continuation };
  }

  /** A run `root` dispatched as lane `lane` with no session of it written: a placeholder lane. Returns the run id. */
  placeholder(root: SessionPlan, runId: string, lane: string): string {
    this.plan.placeholders.push({ runId, root: root.id, lane });
    return runId;
  }

  /** A lane of `root`, dispatched as `runId` (pi-subagents). */
  lane(root: SessionPlan, def: { lane: string; agent: string; createdAt: number; model: DemoModel; thinking: string }): { s: SessionPlan; tl: Timeline; runId: string } {
    const key = `${root.key}/${def.lane}`;
    const id = demoId(`session:${key}`);
    const runId = demoShortId(`run:${key}`);
    const sessionFile = laneSessionFile(root.sessionFile, runId, def.createdAt, id);
    const s: SessionPlan = {
      key,
      id,
      name: key,
      role: 'lane',
      rootId: root.id,
      runId,
      agent: def.agent,
      cwd: root.cwd,
      model: def.model,
      thinking: def.thinking,
      createdAt: def.createdAt,
      sessionFile,
      writeFile: true,
      header: { type: 'session', version: 3, id, timestamp: iso(def.createdAt), cwd: root.cwd, parentSession: root.sessionFile },
      entries: [],
      checkpoint: null,
      checkpointFile: null,
      expect: quiet('unknown'),
    };
    const tl = new Timeline(id, def.model);
    s.entries = tl.entries;
    tl.setup(def.createdAt, def.thinking, key);
    this.plan.sessions.push(s);
    return { s, tl, runId };
  }

  checkpoint(s: SessionPlan, live: LiveFields): void {
    s.checkpoint = checkpointOf(this.ctx, s, live);
    s.checkpointFile = checkpointFileFor(this.ctx.home, s.id);
  }

  finishLog(log: StateLog | null): void {
    if (!log) return;
    const slot = this.plan.stateLogs.find((l) => l.file === log.file);
    if (slot) slot.lines = log.lines();
  }

  /** An incident of SPEC §3.2; `rel` is the path below `<home>/incidents`. */
  incident(rel: string, s: SessionPlan, cls: string, at: number, limit: string | null, fields: Record<string, unknown>): void {
    this.plan.incidents.push({
      file: path.join(homePaths(this.ctx.home).incidents, rel),
      cls,
      session: s.id,
      limit,
      body: { v: 1, session: s.id, class: cls, at: iso(at), ...fields },
    });
  }

  /** `incidents/request/<sid>-<UTC>-<kind>-<attempt>[-exhausted].json` with the published fields. */
  requestIncident(
    s: SessionPlan,
    at: number,
    kind: string,
    attempt: number,
    opts: { cls: string; limit: string | null; exhausted?: boolean; elapsedMs: number; extra?: Record<string, unknown>; dir?: string },
  ): void {
    const name = `${s.id}-${utcStamp(at)}-${kind}-${attempt}${opts.exhausted ? '-exhausted' : ''}.json`;
    this.incident(path.join(opts.dir ?? 'request', name), s, opts.cls, at, opts.limit, {
      home: this.ctx.home,
      cwd: s.cwd,
      model: modelRef(s.model),
      elapsed_ms: opts.elapsedMs,
      wall_clock_ms: opts.extra?.['wall_clock_ms'] ?? demoLimits.absoluteMs,
      attempt,
      ...opts.extra,
    });
  }
}

// ---- the scenarios ---------------------------------------------------------------------------

/** The run api-refactor dispatched a moment before the demo's `now`: no session of it yet (a placeholder lane). */
export const DEMO_PLACEHOLDER_RUN = demoShortId('run:api-refactor/L3');

/** Every scenario session's name, for the simulator and tests. */
export const DEMO = {
  streaming: 'api-refactor',
  streamingLane: 'api-refactor/L1',
  returnedLane: 'api-refactor/L2',
  silent: 'docs-sweep',
  longThink: 'long-think',
  retry: 'flaky-provider',
  ladder: 'night-run',
  scheduled: 'scheduled-run',
  held: 'held-root',
  waiting: 'waiting-root',
  crashed: 'crashed-root',
  noCheckpoint: 'orphan-notes',
  fresh: 'fresh-start',
  quota: 'quota-stop',
} as const;

/** What loop-pi persists when an empty length stop is rewritten as an error. */
export const EMPTY_LENGTH_ERROR =
  'Empty length stop: the response reached its output limit with no text and no tool call (rewritten as a non-retryable error).';
/** A provider's 429 as pi records it. */
export const RATE_LIMIT_ERROR = '429 Too Many Requests: Rate limit reached for gpt-6.1-sol on tokens per min.';
/** The message loop-continuation sends when it resumes a stopped root. */
export const RESUME_TEXT =
  'Resuming after the last request failed. Tool calls from the failed request never ran; completed tool results did. Reconcile from your state files before carrying on.';

/** The whole demo home at `ctx.now`. */
export function demoPlan(ctx: ScenarioContext): HomePlan {
  const b = new PlanBuilder(ctx);
  const { now, repoDir } = ctx;
  const ago = (ms: number): number => now - ms;
  const worktree = (name: string): string => path.join(repoDir, 'worktrees', name);
  const L = demoLimits;

  // api-refactor: armed, a request streaming (model event 2 s ago, started 12 min ago), two lanes.
  {
    const { s, tl, log } = b.root({ name: DEMO.streaming, cwd: repoDir, createdAt: ago(3 * HOUR), model: SOL, thinking: 'medium', armed: true });
    tl.user(s.createdAt + 2 * SEC, 'Run loop1 of codex/plan-api-refactor.md: move every HTTP call behind src/http/client.ts.');
    tl.work(s.createdAt + 2 * SEC, ago(14 * MIN + 30 * SEC), 6 * MIN);

    const l2 = b.lane(s, { lane: 'L2', agent: 'reviewer', createdAt: ago(50 * MIN) + 3 * SEC, model: SONNET, thinking: 'high' });
    l2.tl.user(l2.s.createdAt + SEC, 'Review the public API of src/http/client.ts against codex/plan-api-refactor.md (task T3).');
    l2.tl.work(l2.s.createdAt + SEC, ago(15 * MIN), 5 * MIN);
    l2.tl.answer(ago(14 * MIN + 5 * SEC), ago(15 * MIN), 'Review done: two naming fixes, retry policy belongs in the client. Report in codex/lanes/L2.md.');
    b.checkpoint(l2.s, { state: 'ended', updatedAt: ago(14 * MIN) });
    l2.s.expect = quiet('ended');
    b.plan.jsonFiles.push({
      file: laneStatusFileFor(ctx.home, l2.runId),
      body: {
        runId: l2.runId,
        sessionId: s.sessionFile,
        state: 'complete',
        startedAt: ago(50 * MIN),
        endedAt: ago(14 * MIN),
        lastActivityAt: ago(14 * MIN + 5 * SEC),
        timeoutMs: HOUR,
        turnCount: l2.tl.assistants,
        toolCount: l2.tl.tools,
        sessionFile: l2.s.sessionFile,
        steps: [{ agent: 'reviewer', model: modelRef(SONNET), status: 'complete', sessionFile: l2.s.sessionFile }],
      },
    });

    // L1 started under a stricter inactivity limit; a checkpoint's own limits win (SPEC §2).
    const l1Limits = { ...L, inactivityMs: 10 * MIN };
    const l1 = b.lane(s, { lane: 'L1', agent: 'worker', createdAt: ago(20 * MIN) + 2 * SEC, model: SOL, thinking: 'low' });
    l1.tl.user(l1.s.createdAt + SEC, 'Migrate the callers in src/api/ to request() (task T4). Run the tests after each file.');
    l1.tl.work(l1.s.createdAt + SEC, ago(11 * MIN), 4 * MIN);
    l1.tl.assistant(ago(10 * MIN), ago(11 * MIN), { stopReason: 'error', errorMessage: EMPTY_LENGTH_ERROR, output: 2_760 });
    l1.tl.notice(ago(10 * MIN) + 200, 'loop-request-incident', 'The last request stopped on its length limit with no text or tool call. Continue from your last completed step.', {
      kind: 'empty-length',
      attempt: 1,
      exhausted: false,
      elapsedMs: MIN,
    });
    b.requestIncident(l1.s, ago(10 * MIN), 'empty-length', 1, { cls: 'loop-request-empty-length-stop', limit: 'empty-length', elapsedMs: MIN });
    l1.tl.work(ago(10 * MIN) + 200, ago(3 * MIN), 3.5 * MIN);
    const l1Start = ago(3 * MIN);
    const l1Last = ago(5 * SEC);
    b.checkpoint(l1.s, {
      state: 'requesting',
      limits: l1Limits,
      request: { turn: l1.tl.assistants + 1, startedAt: l1Start, lastModelEventAt: l1Last, lastTransportEventAt: l1Last, modelEvents: 260, keepalives: 0 },
      updatedAt: l1Last,
    });
    l1.s.expect = {
      ...quiet('requesting'),
      inactivityAt: l1Last + l1Limits.inactivityMs,
      absoluteAt: l1Start + l1Limits.absoluteMs,
      firstToFire: 'inactivity',
    };
    b.plan.jsonFiles.push({
      file: laneStatusFileFor(ctx.home, l1.runId),
      body: {
        runId: l1.runId,
        sessionId: s.sessionFile,
        state: 'running',
        pid: ctx.livePid,
        startedAt: ago(20 * MIN),
        lastActivityAt: l1Last,
        deadlineAt: ago(20 * MIN) + HOUR,
        timeoutMs: HOUR,
        turnCount: l1.tl.assistants + 1,
        toolCount: l1.tl.tools,
        sessionFile: l1.s.sessionFile,
        steps: [{ agent: 'worker', model: modelRef(SOL), status: 'running', sessionFile: l1.s.sessionFile }],
      },
    });

    tl.notice(ago(14 * MIN), 'subagent-notify', 'Lane L2 (reviewer) finished: complete. Report: codex/lanes/L2.md', { runId: l2.runId, status: 'complete' });
    tl.work(ago(14 * MIN), ago(12 * MIN), 2 * MIN);
    const started = ago(12 * MIN);
    const last = ago(2 * SEC);
    b.checkpoint(s, {
      state: 'requesting',
      request: { turn: tl.assistants + 1, startedAt: started, lastModelEventAt: last, lastTransportEventAt: last, modelEvents: 1_430, keepalives: 3 },
      updatedAt: last,
    });
    // Inactivity: 15 min after the last model event; absolute: 75 min after the start.
    s.expect = { ...quiet('requesting'), inactivityAt: last + L.inactivityMs, absoluteAt: started + L.absoluteMs, firstToFire: 'inactivity' };

    const base = demoShortId('base:api-refactor') + demoShortId('base2:api-refactor').slice(0, 4);
    log!.ev(s.createdAt + MIN, 'admit', 'root', { task: 'T3' }).ev(s.createdAt + MIN, 'admit', 'root', { task: 'T4' });
    log!.ev(ago(2 * HOUR), 'heartbeat', 'daemon', { at: stateLogTs(ago(2 * HOUR)) });
    log!.ev(ago(HOUR), 'heartbeat', 'daemon', { at: stateLogTs(ago(HOUR)) });
    log!.ev(ago(50 * MIN), 'dispatch', 'dispatcher', {
      lane: 'L2', task: 'T3', agent: 'reviewer', run: l2.runId, base, deadline: stateLogTs(ago(50 * MIN) + HOUR), model: modelRef(SONNET), kind: 'review',
    });
    log!.ev(ago(20 * MIN), 'dispatch', 'dispatcher', {
      lane: 'L1', task: 'T4', agent: 'worker', run: l1.runId, base, deadline: stateLogTs(ago(20 * MIN) + HOUR), model: modelRef(SOL), kind: 'code',
    });
    log!.ev(ago(14 * MIN), 'return', 'dispatcher', { lane: 'L2', run: l2.runId, status: 'complete', report: 'codex/lanes/L2.md' });
    log!.ev(ago(4 * MIN), 'heartbeat', 'daemon', { at: stateLogTs(ago(4 * MIN)) });
    // Dispatched a moment ago: no session file or checkpoint of the run yet, so a placeholder lane.
    log!.ev(ago(20 * SEC), 'dispatch', 'dispatcher', {
      lane: 'L3', task: 'T5', agent: 'worker', run: b.placeholder(s, DEMO_PLACEHOLDER_RUN, 'L3'), base, deadline: stateLogTs(ago(20 * SEC) + HOUR), model: modelRef(SOL), kind: 'code',
    });
    b.finishLog(log);
    b.incident(`ops/${s.id}-${utcStamp(ago(2 * HOUR))}.json`, s, 'loop-ops-grants-rejected', ago(2 * HOUR), null, {
      reason: 'grant for `git push --force` is outside the standing orders',
      grants_path: path.join(repoDir, 'codex', 'ops-grants.json'),
    });
  }

  // docs-sweep: gone silent — last model event 11 min ago, keepalives still arriving (3 s ago).
  {
    const { s, tl, log } = b.root({ name: DEMO.silent, cwd: repoDir, createdAt: ago(2 * HOUR + 10 * MIN), model: SONNET, thinking: 'high', armed: true });
    tl.user(s.createdAt + 2 * SEC, 'Run loop1 of codex/plan-docs-sweep.md: bring every README in packages/ up to date.');
    tl.work(s.createdAt + 2 * SEC, ago(46 * MIN), 7 * MIN);
    tl.assistant(ago(45 * MIN), ago(46 * MIN), { stopReason: 'error', errorMessage: EMPTY_LENGTH_ERROR, output: 4_200 });
    tl.notice(ago(45 * MIN) + 200, 'loop-request-incident', 'The last request stopped on its length limit with no text or tool call. Continue from your last completed step.', {
      kind: 'empty-length', attempt: 1, exhausted: false, elapsedMs: MIN,
    });
    b.requestIncident(s, ago(45 * MIN), 'empty-length', 1, { cls: 'loop-request-empty-length-stop', limit: 'empty-length', elapsedMs: MIN });
    tl.work(ago(45 * MIN) + 200, ago(14 * MIN), 6 * MIN);
    const started = ago(14 * MIN);
    const lastModel = ago(11 * MIN);
    b.checkpoint(s, {
      state: 'requesting',
      request: { turn: tl.assistants + 1, startedAt: started, lastModelEventAt: lastModel, lastTransportEventAt: ago(3 * SEC), modelEvents: 212, keepalives: 44 },
      updatedAt: ago(3 * SEC),
    });
    // Keepalives do not move inactivity: 15 min after the model event of 11 min ago = 4 min left.
    s.expect = { ...quiet('requesting'), inactivityAt: lastModel + L.inactivityMs, absoluteAt: started + L.absoluteMs, firstToFire: 'inactivity' };
    log!.ev(ago(HOUR), 'heartbeat', 'daemon', { at: stateLogTs(ago(HOUR)) });
    log!.ev(ago(7 * MIN), 'heartbeat', 'daemon', { at: stateLogTs(ago(7 * MIN)) });
    b.finishLog(log);
  }

  // long-think: reasoning for over an hour (68 min, events every second) → absolute fires in 7 min.
  {
    const { s, tl, log } = b.root({ name: DEMO.longThink, cwd: repoDir, createdAt: ago(4 * HOUR), model: SOL, thinking: 'medium', armed: true });
    tl.user(s.createdAt + 2 * SEC, 'Run loop1 of codex/plan-long-think.md: find the cause of the flaky settlement totals.');
    tl.work(s.createdAt + 2 * SEC, ago(3 * HOUR + 55 * MIN), 2.5 * MIN);
    const cutAt = ago(2 * HOUR + 40 * MIN);
    tl.assistant(cutAt, ago(3 * HOUR + 55 * MIN), {
      thinking: 'Still tracing the rounding path through the ledger.',
      stopReason: 'aborted',
      errorMessage: 'Request aborted by request-ceiling: absolute limit (75 min) reached',
    });
    tl.notice(cutAt + 200, 'loop-request-incident', 'The last request ran for 75 minutes and was aborted (absolute limit). Continue from your last completed step.', {
      kind: 'absolute', attempt: 1, exhausted: false, elapsedMs: 75 * MIN,
    });
    b.requestIncident(s, cutAt, 'absolute', 1, {
      cls: 'loop-request-absolute-ceiling', limit: 'absolute', elapsedMs: 75 * MIN, extra: { kind: 'absolute', absolute_ms: L.absoluteMs },
    });
    // The same record, moved aside by an external watchdog as a duplicate.
    b.requestIncident(s, cutAt + 5, 'absolute', 1, {
      cls: 'loop-request-absolute-ceiling', limit: 'absolute', elapsedMs: 75 * MIN, dir: 'bad', extra: { kind: 'absolute', absolute_ms: L.absoluteMs },
    });
    tl.work(cutAt + 200, ago(68 * MIN), 8 * MIN);
    const started = ago(68 * MIN);
    const last = ago(SEC);
    b.checkpoint(s, {
      state: 'requesting',
      request: { turn: tl.assistants + 1, startedAt: started, lastModelEventAt: last, lastTransportEventAt: last, modelEvents: 4_080, keepalives: 0 },
      updatedAt: last,
    });
    // absolute: 68 min ago + 75 min = in 7 min, before inactivity (in 15 min − 1 s).
    s.expect = { ...quiet('requesting'), inactivityAt: last + L.inactivityMs, absoluteAt: started + L.absoluteMs, firstToFire: 'absolute' };
    log!.ev(ago(2 * HOUR), 'heartbeat', 'daemon', { at: stateLogTs(ago(2 * HOUR)) });
    log!.ev(ago(HOUR), 'heartbeat', 'daemon', { at: stateLogTs(ago(HOUR)) });
    b.finishLog(log);
  }

  // flaky-provider: a 429 retry episode — started 6 min ago, 2 attempts, next retry in 45 s.
  {
    const { s, tl, log } = b.root({ name: DEMO.retry, cwd: repoDir, createdAt: ago(90 * MIN), model: SOL, thinking: 'medium', armed: true });
    tl.user(s.createdAt + 2 * SEC, 'Run loop1 of codex/plan-flaky-provider.md: port the importer to streaming parsing.');
    tl.work(s.createdAt + 2 * SEC, ago(6 * MIN + 20 * SEC), 6 * MIN);
    const episodeStart = ago(6 * MIN);
    tl.assistant(episodeStart, ago(6 * MIN + 20 * SEC), {
      stopReason: 'error',
      errorMessage: RATE_LIMIT_ERROR,
      loopPiRecovery: { attemptId: `${s.id.slice(0, 8)}-1`, code: 'rate_limit', status: 429, disposition: 'retry', reason: 'rate limited: waiting at least 60 s' },
    });
    tl.assistant(ago(30 * SEC), ago(4 * MIN + 40 * SEC), {
      thinking: 'Splitting the CSV reader into a transform stream.',
      stopReason: 'error',
      errorMessage: RATE_LIMIT_ERROR,
      loopPiRecovery: { attemptId: `${s.id.slice(0, 8)}-2`, code: 'rate_limit', status: 429, disposition: 'retry', reason: 'rate limited: waiting at least 60 s' },
    });
    const nextRetryAt = now + 45 * SEC;
    b.checkpoint(s, {
      state: 'retry-wait',
      episode: { startedAt: episodeStart, attempts: 2, lastError: RATE_LIMIT_ERROR, lastErrorClass: 'rate-limit', nextRetryAt },
      updatedAt: ago(3 * SEC),
    });
    // No request in flight: the episode (started 6 min ago, 20 min long) is the only clock running.
    s.expect = {
      ...quiet('retry-wait'),
      firstToFire: 'episode',
      episode: { at: episodeStart + L.episodeMs, attempts: 2, maxAttempts: L.episodeMaxAttempts },
      nextRetryAt,
    };
    log!.ev(ago(HOUR), 'heartbeat', 'daemon', { at: stateLogTs(ago(HOUR)) });
    b.finishLog(log);
  }

  // night-run: stopped by provider errors and resumed along the ladder: 2 resumes made, stopped
  // again 3 min ago → step 3 is predicted at stoppedAt + 4 min.
  {
    const { s, tl, log } = b.root({ name: DEMO.ladder, cwd: worktree(DEMO.ladder), createdAt: ago(5 * HOUR), model: SOL, thinking: 'medium', armed: true });
    tl.user(s.createdAt + 2 * SEC, 'Run loop1 of codex/plan-night-run.md overnight: upgrade the ORM and fix what breaks.');
    tl.work(s.createdAt + 2 * SEC, ago(4 * HOUR + 14 * MIN), 10 * MIN);
    tl.assistant(ago(4 * HOUR), ago(4 * HOUR + 14 * MIN), { stopReason: 'aborted', errorMessage: 'Request aborted: wall-clock ceiling (14 min) reached' });
    tl.notice(ago(4 * HOUR) + 200, 'loop-request-incident', 'The last request ran past the 14-minute ceiling and was aborted. Continue from your last completed step.', {
      kind: 'wall-clock', attempt: 1, exhausted: false, elapsedMs: 14 * MIN,
    });
    b.requestIncident(s, ago(4 * HOUR), 'wall-clock', 1, {
      cls: 'loop-request-wall-clock-ceiling', limit: 'wall-clock', elapsedMs: 14 * MIN, extra: { wall_clock_ms: 14 * MIN },
    });
    tl.work(ago(4 * HOUR) + 200, ago(13 * MIN), 12 * MIN);
    const stop = (at: number, startedAt: number): void => {
      tl.assistant(at, startedAt, {
        stopReason: 'error',
        errorMessage: '502 Bad Gateway',
        loopPiRecovery: { attemptId: `${s.id.slice(0, 8)}-${at}`, code: 'server_error', status: 502, disposition: 'stop', reason: 'provider error' },
      });
    };
    const resume = (at: number, step: number, stoppedAt: number): void => {
      tl.notice(at, 'loop-continuation', RESUME_TEXT, { reason: 'root-recovery', step, stoppedAt });
      log!.ev(at, 'resume', 'ext', { step, reason: 'provider-error', stoppedAt: stateLogTs(stoppedAt) });
    };
    stop(ago(12 * MIN), ago(13 * MIN));
    resume(ago(11 * MIN), 1, ago(12 * MIN)); // step 1: 1 min after the stop
    stop(ago(9 * MIN), ago(11 * MIN));
    resume(ago(7 * MIN), 2, ago(9 * MIN)); // step 2: 2 min after the stop
    const stoppedAt = ago(3 * MIN);
    stop(stoppedAt, ago(7 * MIN));
    b.checkpoint(s, {
      state: 'stopped',
      recovery: { stoppedAt, resumes: 2, nextResumeAt: null, reason: 'provider-error' },
      lastStop: { at: stoppedAt, reason: 'provider-error', error: '502 Bad Gateway', limit: null },
      updatedAt: ago(3 * SEC),
    });
    // Resume 3 (2 made + 1): min(2^2, 15) = 4 min after the stop; nothing recorded → predicted.
    s.expect = { ...quiet('recovering'), nextResume: { at: stoppedAt + 4 * MIN, source: 'predicted', step: 3 } };
    log!.ev(ago(3 * HOUR), 'heartbeat', 'daemon', { at: stateLogTs(ago(3 * HOUR)) });
    b.finishLog(log);
  }

  // scheduled-run: stopped by an inactivity cut; the loop wrote its next resume (differs from the ladder).
  {
    const { s, tl, log } = b.root({ name: DEMO.scheduled, cwd: worktree(DEMO.scheduled), createdAt: ago(2 * HOUR), model: SONNET, thinking: 'medium', armed: true });
    tl.user(s.createdAt + 2 * SEC, 'Run loop1 of codex/plan-scheduled-run.md: split the monolith test suite.');
    tl.work(s.createdAt + 2 * SEC, ago(22 * MIN), 7 * MIN);
    tl.assistant(ago(21 * MIN), ago(22 * MIN), {
      stopReason: 'error',
      errorMessage: '503 Service Unavailable',
      loopPiRecovery: { attemptId: `${s.id.slice(0, 8)}-1`, code: 'server_error', status: 503, disposition: 'stop', reason: 'provider error' },
    });
    tl.notice(ago(20 * MIN), 'loop-continuation', RESUME_TEXT, { reason: 'root-recovery', step: 1, stoppedAt: ago(21 * MIN) });
    log!.ev(ago(20 * MIN), 'resume', 'ext', { step: 1, reason: 'provider-error', stoppedAt: stateLogTs(ago(21 * MIN)) });
    const stoppedAt = ago(5 * MIN);
    tl.assistant(stoppedAt, ago(20 * MIN), {
      stopReason: 'aborted',
      errorMessage: 'Request aborted by request-ceiling: no model event for 15 min (inactivity limit)',
    });
    tl.notice(stoppedAt + 200, 'loop-request-incident', 'The last request went 15 minutes without a model event and was aborted (inactivity limit).', {
      kind: 'inactivity', attempt: 1, exhausted: false, elapsedMs: 15 * MIN,
    });
    b.requestIncident(s, stoppedAt, 'inactivity', 1, {
      cls: 'loop-request-inactivity-ceiling', limit: 'inactivity', elapsedMs: 15 * MIN, extra: { limit: 'inactivity', inactivity_ms: L.inactivityMs },
    });
    const nextResumeAt = now + 90 * SEC;
    b.checkpoint(s, {
      state: 'stopped',
      recovery: { stoppedAt, resumes: 1, nextResumeAt, reason: 'ceiling-abort' },
      lastStop: { at: stoppedAt, reason: 'ceiling-abort', error: 'no model event for 15 min', limit: 'inactivity' },
      updatedAt: ago(4 * SEC),
    });
    // The ladder would say step 2 at stoppedAt + 2 min (3 min ago); the loop's own time wins.
    s.expect = { ...quiet('recovering'), nextResume: { at: nextResumeAt, source: 'scheduled', step: 2 } };
    b.finishLog(log);
    b.incident(`ops/${s.id}-${utcStamp(ago(70 * MIN))}.json`, s, 'loop-standing-rejected', ago(70 * MIN), null, {
      reason: 'standing orders refer to a file that does not exist: codex/standing/deploy.md',
      standing_path: path.join(repoDir, 'codex', 'standing.json'),
    });
  }

  // held-root: disarmed by the owner in loop-dash.
  {
    const { s, tl, log, continuation } = b.root({ name: DEMO.held, cwd: worktree(DEMO.held), createdAt: ago(6 * HOUR), model: SOL, thinking: 'high', armed: true });
    tl.user(s.createdAt + 2 * SEC, 'Run loop1 of codex/plan-held-root.md: migrate the schema to v7.');
    tl.work(s.createdAt + 2 * SEC, ago(HOUR), 15 * MIN);
    tl.custom(ago(HOUR), 'loop-continuation-state', continuation(true, { nudgeCount: 3, chainIncidentWritten: true }));
    b.incident(`${s.id}-${utcStamp(ago(HOUR))}.json`, s, 'loop-continuation-chain-exhausted', ago(HOUR), null, { home: ctx.home, cwd: s.cwd });
    tl.user(ago(45 * MIN), 'Carry on with the migration, one table at a time.');
    tl.work(ago(45 * MIN), ago(23 * MIN), 8 * MIN);
    tl.answer(ago(22 * MIN), ago(23 * MIN), 'Tables users and orders migrated; next: invoices.');
    tl.custom(ago(20 * MIN), 'loop-dash-control', { held: true, by: 'owner', reason: 'reviewing the migration plan before it goes on', at: ago(20 * MIN) });
    b.incident(`root/${s.id}-${utcStamp(ago(19 * MIN))}-arm-refused.json`, s, 'loop-arm-refused', ago(19 * MIN), null, {
      cwd: s.cwd,
      reason: 'root is held by its owner (loop-dash); not arming',
    });
    b.checkpoint(s, { state: 'idle', held: { since: ago(20 * MIN), by: 'owner', heldTurnStarts: 1 }, updatedAt: ago(5 * SEC) });
    s.expect = quiet('held');
    b.finishLog(log);
  }

  // waiting-root: idle until a loop-wait timer, with a watcher whose receipt says running.
  {
    const { s, tl, log } = b.root({ name: DEMO.waiting, cwd: worktree(DEMO.waiting), createdAt: ago(HOUR), model: GEMINI, thinking: 'medium', armed: true });
    tl.user(s.createdAt + 2 * SEC, 'Run loop1 of codex/plan-waiting-root.md: ship the release branch once CI is green.');
    tl.work(s.createdAt + 2 * SEC, ago(5 * MIN), 6 * MIN);
    tl.answer(ago(4 * MIN), ago(5 * MIN), 'Pushed the release branch; waiting for CI run 4242.');
    const command = 'gh run watch 4242 --exit-status';
    tl.custom(ago(4 * MIN) + 100, 'loop-wait-state', {
      timers: [{ id: 't-ci', at: now + 9 * MIN, reason: 're-check CI after the deploy window' }],
      watchers: [{ id: 'w-ci', label: 'ci', pid: ctx.livePid, phase: 'running', command, deadline: now + 30 * MIN, interval_s: 30 }],
    });
    tl.notice(ago(4 * MIN) + 200, 'loop-watch', 'Watching CI run 4242 every 30 s for up to 34 min.', { id: 'w-ci', op: 'start' });
    log!.ev(ago(4 * MIN), 'watch', 'ext', { op: 'start', what: 'CI run 4242', deadline: stateLogTs(now + 30 * MIN) });
    b.plan.jsonFiles.push({
      file: receiptFileFor(ctx.home, s.id, 'w-ci'),
      body: {
        phase: 'running',
        observations: 7,
        last_observed_at: ago(10 * SEC),
        deadline: now + 30 * MIN,
        result: null,
        pid: ctx.livePid,
        command,
        interval_s: 30,
        label: 'ci',
        note: 'run 4242: 5 of 9 jobs done',
      },
    });
    b.checkpoint(s, { state: 'idle', updatedAt: ago(4 * SEC) });
    s.expect = quiet('waiting');
    b.finishLog(log);
    b.incident(`ops/${s.id}-${utcStamp(ago(50 * MIN))}.json`, s, 'loop-audit-grants-rejected', ago(50 * MIN), null, {
      reason: 'audit grants file is not signed by the owner',
      audit_grants_path: path.join(repoDir, 'codex', 'audit-grants.json'),
    });
  }

  // crashed-root: its process died during a tool call; the checkpoint was never ended.
  {
    const { s, tl, log } = b.root({ name: DEMO.crashed, cwd: worktree(DEMO.crashed), createdAt: ago(3 * HOUR), model: SOL, thinking: 'medium', armed: true });
    tl.user(s.createdAt + 2 * SEC, 'Run loop1 of codex/plan-crashed-root.md: regenerate the API client.');
    tl.work(s.createdAt + 2 * SEC, ago(63 * MIN), 9 * MIN);
    tl.assistant(ago(62 * MIN), ago(63 * MIN), { stopReason: 'error', errorMessage: EMPTY_LENGTH_ERROR, output: 80_000 });
    tl.notice(ago(62 * MIN) + 200, 'loop-request-incident', 'The last request stopped on its length limit with no text or tool call.', {
      kind: 'empty-length', attempt: 1, exhausted: false, elapsedMs: MIN,
    });
    tl.assistant(ago(60 * MIN), ago(62 * MIN) + 200, { stopReason: 'error', errorMessage: EMPTY_LENGTH_ERROR, output: 80_000 });
    tl.notice(ago(60 * MIN) + 200, 'loop-request-incident', 'Two empty length stops in a row: no more follow-ups.', {
      kind: 'empty-length', attempt: 2, exhausted: true, elapsedMs: 2 * MIN,
    });
    b.requestIncident(s, ago(60 * MIN), 'empty-length', 2, {
      cls: 'loop-request-empty-length-stop-exhausted', limit: 'empty-length', exhausted: true, elapsedMs: 2 * MIN,
    });
    tl.user(ago(45 * MIN), 'Regenerate only the users client, then stop.');
    tl.assistant(ago(40 * MIN), ago(45 * MIN), { stopReason: 'error', errorMessage: 'context_length_exceeded: prompt is too long: 412000 tokens > 400000 maximum' });
    b.incident(`root/${s.id}-${utcStamp(ago(40 * MIN))}-context-overflow.json`, s, 'loop-root-context-overflow', ago(40 * MIN), 'context-length', {
      home: ctx.home,
      cwd: s.cwd,
      live_runs: [],
      detail: 'prompt is too long: 412000 tokens > 400000 maximum',
    });
    tl.work(ago(39 * MIN), ago(26 * MIN), 6 * MIN);
    tl.assistant(ago(25 * MIN), ago(26 * MIN), { tool: { name: 'bash', args: { command: 'npm run generate:client' } }, stopReason: 'toolUse' });
    b.checkpoint(s, { state: 'tools', pid: ctx.deadPid, pidStart: '4242424242', updatedAt: ago(25 * MIN) });
    s.expect = quiet('lost');
    b.finishLog(log);
  }

  // orphan-notes: a plain pi session with no checkpoint (no loop-dash extension) → unknown.
  {
    const { s, tl } = b.root({ name: DEMO.noCheckpoint, cwd: worktree(DEMO.noCheckpoint), createdAt: ago(2 * HOUR), model: SONNET, thinking: 'off', armed: null });
    tl.user(s.createdAt + 2 * SEC, 'Summarise codex/notes.md into a changelog entry.');
    tl.work(s.createdAt + 2 * SEC, ago(HOUR + 30 * MIN), 10 * MIN);
    tl.answer(ago(HOUR + 29 * MIN), ago(HOUR + 30 * MIN), 'Changelog entry drafted in CHANGELOG.md.');
    s.expect = quiet('unknown');
  }

  // fresh-start: first request still running, so pi has not written the session file yet.
  {
    const { s, tl, log } = b.root({ name: DEMO.fresh, cwd: worktree(DEMO.fresh), createdAt: ago(45 * SEC), model: SOL, thinking: 'medium', armed: true, named: false });
    tl.user(s.createdAt + 2 * SEC, 'Run loop1 of codex/plan-fresh-start.md.');
    s.writeFile = false;
    const started = ago(40 * SEC);
    b.checkpoint(s, {
      state: 'requesting',
      request: { turn: 1, startedAt: started, lastModelEventAt: null, lastTransportEventAt: ago(SEC), modelEvents: 0, keepalives: 2 },
      updatedAt: ago(SEC),
    });
    // No model event yet: inactivity counts from the request start.
    s.expect = { ...quiet('requesting'), inactivityAt: started + L.inactivityMs, absoluteAt: started + L.absoluteMs, firstToFire: 'inactivity' };
    b.finishLog(log);
  }

  // quota-stop: stopped by a quota error; loop-pi ends the run with an incident instead of resuming.
  {
    const { s, tl, log, continuation } = b.root({ name: DEMO.quota, cwd: worktree(DEMO.quota), createdAt: ago(80 * MIN), model: SOL, thinking: 'medium', armed: true });
    tl.user(s.createdAt + 2 * SEC, 'Run loop1 of codex/plan-quota-stop.md: translate the UI strings.');
    tl.work(s.createdAt + 2 * SEC, ago(31 * MIN), 7 * MIN);
    const error = '429 insufficient_quota: You exceeded your current quota, please check your plan and billing details.';
    tl.assistant(ago(30 * MIN), ago(31 * MIN), {
      stopReason: 'error',
      errorMessage: error,
      loopPiRecovery: { attemptId: `${s.id.slice(0, 8)}-1`, code: 'insufficient_quota', status: 429, disposition: 'stop', reason: 'quota' },
    });
    tl.custom(ago(30 * MIN) + 100, 'loop-continuation-state', continuation(false));
    tl.notice(ago(30 * MIN) + 200, 'loop-recovery-stopped', 'Stopped instead of resuming: the provider reports a quota error. The owner must act.', { reason: 'quota' });
    b.incident(`root/${s.id}-${utcStamp(ago(30 * MIN))}-recovery-stopped.json`, s, 'loop-root-recovery-stopped', ago(30 * MIN), 'quota', {
      home: ctx.home,
      cwd: s.cwd,
      reason: 'quota',
      error,
    });
    b.checkpoint(s, { state: 'stopped', lastStop: { at: ago(30 * MIN), reason: 'quota', error, limit: null }, updatedAt: ago(5 * SEC) });
    s.expect = quiet('stopped');
    b.finishLog(log);
  }

  return b.plan;
}

/** Size of a benchmark home (`generateHome` `opts.scale`). */
export interface DemoScale {
  roots: number;
  lanesPerRoot: number;
  /** Bytes of each bulk root's session file (lanes stay small). */
  sessionBytes: number;
}

/** Extra roots and lanes for benchmark homes, added to `plan`: idle roots, every 4th streaming. */
export function addScale(plan: HomePlan, ctx: ScenarioContext, scale: DemoScale): void {
  const b = new PlanBuilder(ctx);
  const { now } = ctx;
  const L = demoLimits;
  const width = String(Math.max(1, scale.roots)).length;
  for (let r = 0; r < scale.roots; r += 1) {
    const name = `bulk-${String(r + 1).padStart(width, '0')}`;
    const createdAt = now - 2 * HOUR - r * 37 * SEC;
    const model = r % 3 === 0 ? SONNET : SOL;
    const { s, tl, log, continuation } = b.root({ name, cwd: path.join(ctx.repoDir, 'bulk', name), createdAt, model, thinking: 'medium', armed: true });
    tl.user(createdAt + 2 * SEC, `Run loop1 of codex/plan-${name}.md.`);
    const fillIndex = tl.entries.length;
    tl.work(createdAt + 2 * SEC, now - 10 * MIN, 9 * MIN);
    for (let l = 0; l < scale.lanesPerRoot; l += 1) {
      const laneStart = createdAt + 5 * MIN + l * 2 * MIN;
      const lane = b.lane(s, { lane: `L${l + 1}`, agent: l % 2 === 0 ? 'worker' : 'reviewer', createdAt: laneStart, model, thinking: 'low' });
      lane.tl.user(laneStart + SEC, `Task T${l + 1} of ${name}.`);
      lane.tl.work(laneStart + SEC, laneStart + 20 * MIN, 5 * MIN);
      lane.tl.answer(laneStart + 21 * MIN, laneStart + 20 * MIN, `T${l + 1} done.`);
      b.checkpoint(lane.s, { state: 'ended', updatedAt: laneStart + 21 * MIN });
      lane.s.expect = quiet('ended');
      b.plan.jsonFiles.push({
        file: laneStatusFileFor(ctx.home, lane.runId),
        body: {
          runId: lane.runId,
          sessionId: s.sessionFile,
          state: 'complete',
          startedAt: laneStart,
          endedAt: laneStart + 21 * MIN,
          lastActivityAt: laneStart + 21 * MIN,
          turnCount: lane.tl.assistants,
          toolCount: lane.tl.tools,
          sessionFile: lane.s.sessionFile,
          steps: [{ agent: lane.s.agent, model: modelRef(model), status: 'complete', sessionFile: lane.s.sessionFile }],
        },
      });
      log!.ev(laneStart, 'dispatch', 'dispatcher', { lane: `L${l + 1}`, task: `T${l + 1}`, agent: lane.s.agent, run: lane.runId, base: 'b0b0b0b0', model: modelRef(model) });
      log!.ev(laneStart + 21 * MIN, 'return', 'dispatcher', { lane: `L${l + 1}`, run: lane.runId, status: 'complete' });
    }
    // The latest loop state sits at the end of a big file, where readers look for it.
    tl.custom(now - 10 * MIN + SEC, 'loop-continuation-state', continuation(true));
    if (r % 4 === 0) {
      const started = now - (((r * 7) % 50) + 1) * MIN;
      const last = now - ((r % 9) + 1) * SEC;
      b.checkpoint(s, {
        state: 'requesting',
        request: { turn: tl.assistants + 1, startedAt: started, lastModelEventAt: last, lastTransportEventAt: last, modelEvents: 100 + r, keepalives: 0 },
        updatedAt: last,
      });
      const inactivityAt = last + L.inactivityMs;
      const absoluteAt = started + L.absoluteMs;
      s.expect = { ...quiet('requesting'), inactivityAt, absoluteAt, firstToFire: absoluteAt < inactivityAt ? 'absolute' : 'inactivity' };
    } else {
      b.checkpoint(s, { state: 'idle', updatedAt: now - 5 * SEC });
      s.expect = quiet('idle');
    }
    s.fill = { bytes: scale.sessionBytes, index: fillIndex };
    b.finishLog(log);
  }
  plan.sessions.push(...b.plan.sessions);
  plan.jsonFiles.push(...b.plan.jsonFiles);
  plan.stateLogs.push(...b.plan.stateLogs);
  plan.textFiles.push(...b.plan.textFiles);
}
