/**
 * One session's loop-dash runtime inside pi: feeds pi's events to the tracker, keeps the
 * checkpoint written, consumes control requests and enforces the owner's hold (SPEC §4).
 *
 * Lifecycle: everything session-scoped (timers, the control watch) starts at `session_start`
 * and is cleared at `session_shutdown`, so `pi -p` exits and a replaced session leaves nothing
 * running. The `ctx` is re-captured at every event; the one from the latest event is used by
 * timer and watch callbacks (pi 1.6: `ctx.abort()` works from them).
 */
import os from 'node:os';
import path from 'node:path';
import { REFRESHED_STATES } from '../contract/checkpoint-states.js';
import { isSafeSessionId, type ControlRequest } from '../contract/control.js';
import { homePaths } from '../contract/paths.js';
import { processStartIdentity } from '../readers/process-probe.js';
import { contentText } from '../readers/session-entry.js';
import { CheckpointWriter } from './checkpoint-writer.js';
import { staleTargetReason } from './control-check.js';
import { abortApplied, ControlInbox, disarmApplied, type AbortCut, type ActionOutcome } from './control-inbox.js';
import { createExtensionLog, type ExtensionLog } from './extension-log.js';
import {
  HOLD_ENTRY_TYPE,
  heldTurnStarts,
  holdContinuation,
  holdEntry,
  holdMessage,
  holdSummary,
  releaseOf,
  restoreHold,
  startHold,
  type Hold,
} from './hold.js';
import type { PiApi, PiAssistantMessageEvent, PiBoundaryResult, PiContext, PiInputResult, PiMessage } from './pi-api.js';
import { LivenessSocket } from './liveness-socket.js';
import { piAgentDir, sessionPlace } from './pi-home.js';
import { readSettingsFile, requestSettings, type RequestSettings } from './request-settings.js';
import { FOLLOW_UP_MESSAGE_TYPE, initialTracker, toCheckpoint, track, type SessionIdentity, type TrackerEvent, type TrackerState } from './request-tracker.js';
import { classifyAssistantEvent, classifyProviderEvent } from './stream-activity.js';

/** Injectable process facts and timings (tests shorten them; pi uses the defaults). */
export interface RuntimeOptions {
  now?: () => number;
  /** The pi home; default pi's own rule (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`). */
  home?: string;
  pid?: number;
  host?: string;
  pidStart?: (pid: number) => string | null;
  /** Refresh while a request is in flight, tools run or a retry is awaited; default 5 s (SPEC §4.1 asks for at least every 15 s). */
  inFlightRefreshMs?: number;
  /** Refresh otherwise, so a reader on another host (60 s staleness rule) still sees it alive; default 30 s. */
  idleRefreshMs?: number;
  /** Throttle for stream-driven writes; default 1 s. */
  streamWriteMs?: number;
  /** Control directory poll; default 1 s. */
  controlPollMs?: number;
  /**
   * Listen on the process's liveness socket (docs/CONTRACT.md §5) while a session runs; default:
   * when `pid` is this process's own (a test that poses as another pid gets none).
   */
  livenessSocket?: boolean;
  log?: ExtensionLog;
}

/** The custom message type used when `arm` releases held continuations. */
export const RELEASE_MESSAGE_TYPE = 'loop-dash-release';

const UNSTARTED: SessionIdentity = {
  session: '',
  sessionFile: null,
  role: 'root',
  parentSession: null,
  runId: null,
  agent: null,
  cwd: '',
  pid: 0,
  pidStart: null,
  host: '',
};

/** The extension's state for the session pi is running. */
export class LoopDashRuntime {
  readonly home: string;
  private readonly now: () => number;
  private readonly log: ExtensionLog;
  private readonly pid: number;
  private readonly host: string;
  private readonly pidStart: string | null;
  private tracker: TrackerState;
  private hold: Hold | null = null;
  /** A run a held session's extension message started: cut at its first turn (onBeforeAgentStart). */
  private cutHeldRun = false;
  private ctx: PiContext | null = null;
  private writer: CheckpointWriter | null = null;
  private inbox: ControlInbox | null = null;
  private refresh: NodeJS.Timeout | null = null;
  private readonly liveness: LivenessSocket | null;
  private settingsNote: string | null = null;

  constructor(
    private readonly pi: PiApi,
    private readonly opts: RuntimeOptions = {},
  ) {
    this.now = opts.now ?? (() => Date.now());
    this.home = opts.home ?? piAgentDir();
    this.log = opts.log ?? createExtensionLog(homePaths(this.home).extensionLog, this.now);
    this.pid = opts.pid ?? process.pid;
    this.host = opts.host ?? os.hostname();
    this.pidStart = (opts.pidStart ?? processStartIdentity)(this.pid);
    this.liveness = (opts.livenessSocket ?? this.pid === process.pid) ? new LivenessSocket(this.log) : null;
    this.tracker = initialTracker(UNSTARTED, requestSettings(null, null).retry);
  }

  /** The tracker state (tests and diagnostics). */
  get state(): TrackerState {
    return this.tracker;
  }

  /** The hold in force, if any. */
  get currentHold(): Hold | null {
    return this.hold;
  }

  /** Which session-scoped resources are live (all false outside a session). */
  get resources(): { refreshTimer: boolean; controlWatch: boolean; checkpointWriter: boolean; livenessSocket: string | null } {
    return { refreshTimer: this.refresh !== null, controlWatch: this.inbox !== null, checkpointWriter: this.writer !== null, livenessSocket: this.liveness?.path ?? null };
  }

  /** The checkpoint file of the current session, or null before `session_start`. */
  get checkpointFile(): string | null {
    const session = this.tracker.identity.session;
    return session ? path.join(homePaths(this.home).checkpoints, `${session}.json`) : null;
  }

  // ---- pi events -----------------------------------------------------------------------------

  onSessionStart(ctx: PiContext): void {
    this.stopSessionResources();
    this.ctx = ctx;
    const sm = ctx.sessionManager;
    const session = sm.getSessionId();
    const sessionFile = sm.getSessionFile() ?? null;
    const place = sessionPlace(this.home, sessionFile);
    const identity: SessionIdentity = {
      session,
      sessionFile,
      role: place.role,
      parentSession: place.parentSession,
      runId: place.runId,
      agent: null,
      cwd: ctx.cwd,
      pid: this.pid,
      pidStart: this.pidStart,
      host: this.host,
    };
    this.hold = restoreHold(sm.getBranch());
    const settings = this.readSettings(ctx.model?.provider ?? null);
    this.tracker = initialTracker(identity, settings.retry);
    this.apply({
      type: 'session-start',
      at: this.now(),
      identity,
      model: modelName(ctx.model),
      thinking: ctx.thinkingLevel ?? null,
      limits: settings.limits,
      retry: settings.retry,
      held: holdSummary(this.hold),
    });
    if (this.hold?.action === 'abort') {
      this.apply({ type: 'owner-abort', at: this.hold.since, requestId: null, cutRequest: false });
    }
    if (!isSafeSessionId(session)) {
      this.log(`session id ${JSON.stringify(session)} is not safe as a file name; no checkpoint and no control for this session`);
      return;
    }
    const paths = homePaths(this.home);
    // Before the first checkpoint, so a dashboard that reads it finds the socket there.
    this.liveness?.start(this.home, this.host, this.pid, this.pidStart);
    this.writer = new CheckpointWriter({
      file: path.join(paths.checkpoints, `${session}.json`),
      snapshot: (now) => toCheckpoint(this.tracker, now),
      now: this.now,
      log: this.log,
      minIntervalMs: this.opts.streamWriteMs ?? 1000,
    });
    this.writer.writeNow();
    this.inbox = new ControlInbox({
      dir: path.join(paths.control, session),
      session,
      journalFile: paths.journal,
      now: this.now,
      log: this.log,
      apply: (request) => this.applyControl(request),
      pollMs: this.opts.controlPollMs ?? 1000,
    });
    this.inbox.start();
    const tick = Math.min(this.opts.inFlightRefreshMs ?? 5000, this.opts.idleRefreshMs ?? 30_000);
    this.refresh = setInterval(() => this.guard('refresh', () => this.refreshTick()), tick);
    this.refresh.unref();
  }

  onSessionShutdown(): void {
    this.apply({ type: 'shutdown', at: this.now() });
    this.writer?.writeNow();
    this.stopSessionResources();
    this.ctx = null;
  }

  onInput(event: { text: string; source: string }, ctx: PiContext): PiInputResult {
    this.ctx = ctx;
    if (event.source !== 'extension') {
      // The owner typed or sent it: it is never held, and it ends any wait for a resume.
      this.apply({ type: 'owner-input', at: this.now() });
      return undefined;
    }
    if (!this.hold) return undefined;
    this.hold = holdMessage(this.hold, event.text);
    this.persistHold(null);
    this.changed();
    this.log(`held an automatic user message (${event.text.length} chars); ${heldTurnStarts(this.hold)} turn start(s) held`);
    return { action: 'handled' };
  }

  onTurnStart(event: { timestamp?: number }, ctx: PiContext): void {
    this.ctx = ctx;
    // A held run that got this far (the abort at its start came too early for pi): cut it now.
    if (this.cutHeldRun) ctx.abort();
    // loop-pi decides at each turn start whether its recovery covers the model's provider.
    const settings = this.readSettings(ctx.model?.provider ?? null);
    const at = typeof event.timestamp === 'number' && Number.isFinite(event.timestamp) ? event.timestamp : this.now();
    this.apply({ type: 'request-start', at, limits: settings.limits, retry: settings.retry });
    this.changed();
  }

  /**
   * A run starts. By loop-pi's follow-up message (sent while idle), its turn is that follow-up.
   * Started by any extension's message (`pi.sendMessage(…, {triggerTurn: true})`, which passes
   * no `input` event) while the session is held, it is an automatic restart the hold is for: the
   * run is cut before its request and the message's text kept with the held turn starts, so
   * `arm` releases it (our own release message is the owner's arm, never held).
   */
  onBeforeAgentStart(event: { messageType?: string; message?: PiMessage }, ctx?: PiContext): void {
    if (ctx) this.ctx = ctx;
    // Each run decides for itself: a cut meant for another run is never carried into this one.
    this.cutHeldRun = false;
    const m = event.message;
    if (event.messageType !== 'custom' || !m) return;
    if (m.customType === FOLLOW_UP_MESSAGE_TYPE) this.apply({ type: 'follow-up-starts', at: this.now() });
    if (!this.hold || m.customType === RELEASE_MESSAGE_TYPE) return;
    const text = contentText(m.content);
    this.hold = text ? holdMessage(this.hold, text) : holdContinuation(this.hold);
    this.persistHold(null);
    this.cutHeldRun = true;
    this.ctx?.abort();
    this.changed();
    this.log(`held a run started by an extension's message (${m.customType ?? 'custom'}); ${heldTurnStarts(this.hold)} turn start(s) held`);
  }

  onMessageStart(event: { message: PiMessage }, ctx: PiContext): void {
    this.ctx = ctx;
    // The assistant message starts when the provider stream opens: transport, not a model event.
    if (event.message.role === 'assistant') this.stream('transport');
  }

  onMessageUpdate(event: { assistantMessageEvent: PiAssistantMessageEvent }, ctx: PiContext): void {
    this.ctx = ctx;
    this.stream(classifyAssistantEvent(event.assistantMessageEvent));
  }

  onProviderEvent(data: unknown): void {
    // pi reports a raw chunk before the model event it carries (its `message_update`, microtasks
    // later): written at once, the checkpoint held the previous model event until the throttled
    // write a second on, and INACT read a chunk's interval short meanwhile (the real-pi review).
    // The write waits for the end of this turn of the event loop, so that event is in it.
    this.stream(classifyProviderEvent(data), true);
  }

  onProviderResponse(): void {
    this.stream('transport');
  }

  onMessageEnd(event: { message: PiMessage }, ctx: PiContext): void {
    this.ctx = ctx;
    const m = event.message;
    // loop-pi's message after a ceiling abort (or an empty length stop) starts the next turn: a
    // follow-up inside the retry episode, not a resume of the root. Sent while idle, it is seen at
    // before_agent_start first; a queued one only here, after its turn started.
    if (m.role === 'custom' && m.customType === FOLLOW_UP_MESSAGE_TYPE) {
      const before = this.tracker;
      this.apply({ type: 'follow-up', at: this.now() });
      if (this.tracker !== before) this.changed();
      return;
    }
    if (m.role !== 'assistant') return;
    this.apply({
      type: 'request-end',
      at: this.now(),
      stopReason: typeof m.stopReason === 'string' ? m.stopReason : 'error',
      errorMessage: typeof m.errorMessage === 'string' ? m.errorMessage : null,
    });
    this.changed();
  }

  onToolStart(ctx: PiContext): void {
    this.ctx = ctx;
    if (this.tracker.state === 'tools') return;
    this.apply({ type: 'tools', at: this.now() });
    this.changed();
  }

  /** `agent_before_settle` and `turn_end`: while held, a requested continuation is vetoed and counted. */
  onBoundary(event: { continue?: boolean }, ctx: PiContext, where: string): PiBoundaryResult {
    this.ctx = ctx;
    if (!this.hold || event.continue !== true) return undefined;
    this.hold = holdContinuation(this.hold);
    this.persistHold(null);
    this.changed();
    this.log(`held an automatic continuation at ${where}; ${heldTurnStarts(this.hold)} turn start(s) held`);
    return { continue: false };
  }

  onSettled(event: { aborted: boolean }, ctx: PiContext): void {
    this.ctx = ctx;
    this.cutHeldRun = false;
    this.apply({ type: 'settled', at: this.now(), aborted: event.aborted === true });
    this.changed();
  }

  onModel(model: { provider: string; id: string } | undefined): void {
    this.apply({ type: 'model', model: modelName(model) });
    this.changed();
  }

  onThinking(level: string | undefined): void {
    this.apply({ type: 'thinking', thinking: level ?? null });
    this.changed();
  }

  // ---- control actions (SPEC §4.3) ---------------------------------------------------------------

  /** Applies a request that passed the file checks. Called by the inbox, at most once per id. */
  applyControl(request: ControlRequest): ActionOutcome {
    const by = `${request.by.user}@${request.by.host}`;
    const reason = request.reason.length > 0 ? request.reason : null;
    switch (request.action) {
      case 'abort':
        return this.abort(request, by, reason);
      case 'disarm':
        return this.disarm(request, by, reason);
      case 'arm':
        return this.arm(request, by, reason);
      default: {
        const never: never = request.action;
        return never;
      }
    }
  }

  private abort(request: ControlRequest, by: string, reason: string | null): ActionOutcome {
    const t = this.tracker;
    const inFlight = t.request;
    // What the owner can have seen running: the request in flight, or the one whose tools run.
    const tools = !inFlight && t.state === 'tools' ? t.lastRequest : null;
    const running = inFlight ?? (tools ? { turn: tools.turn, startedAt: tools.startedAt, tools: true } : null);
    const stale = staleTargetReason(request.target, running);
    if (stale) return { status: 'stale-target', detail: `${stale}; nothing was cut` };
    const ctx = this.ctx;
    if (!ctx) return { status: 'refused', detail: 'the session is shutting down; nothing was done' };
    const at = this.now();
    // With nothing in flight and no tools running, pi may still be busy by itself: a retry it
    // scheduled (predicted here as retry-wait, or one the error's wording did not predict), a
    // compaction's retry, a queued turn. Each is an automatic restart, which the hold is for.
    const cut: AbortCut = inFlight
      ? { kind: 'request', turn: inFlight.turn, startedAt: inFlight.startedAt }
      : tools
        ? { kind: 'tools', turn: tools.turn, startedAt: tools.startedAt }
        : t.state === 'retry-wait'
          ? { kind: 'retry' }
          : !ctx.isIdle()
            ? { kind: 'automatic' }
            : { kind: 'none' };
    // Record the owner's abort before cutting, so the request's end is attributed to the owner.
    this.apply({ type: 'owner-abort', at, requestId: request.id, cutRequest: inFlight !== null });
    this.hold = startHold(this.hold, at, by, reason, 'abort');
    this.persistHold(request.id);
    // pi's ctx.abort() ends the agent run whatever it is doing: the request, the tools, a retry's wait.
    if (cut.kind !== 'none') ctx.abort();
    this.changed();
    return abortApplied(cut, at);
  }

  private disarm(request: ControlRequest, by: string, reason: string | null): ActionOutcome {
    const was = this.hold;
    this.hold = startHold(this.hold, this.now(), by, reason, 'disarm');
    this.persistHold(request.id);
    this.changed();
    return disarmApplied(was?.since ?? null);
  }

  private arm(request: ControlRequest, by: string, reason: string | null): ActionOutcome {
    const held = this.hold;
    // Armed: a run being cut for the hold is the owner's to let go from now on.
    this.cutHeldRun = false;
    const hadOwnerAbort = this.tracker.ownerAbort !== null;
    this.hold = null;
    if (hadOwnerAbort) this.apply({ type: 'owner-abort-cleared' });
    if (!held) {
      if (hadOwnerAbort) this.changed();
      return { status: 'applied', detail: 'the session was not held; nothing to release' };
    }
    this.pi.appendEntry(HOLD_ENTRY_TYPE, holdEntry(null, this.now(), by, reason, request.id));
    this.changed();
    const release = releaseOf(held);
    if (!release) return { status: 'applied', detail: 'armed; nothing had been held' };
    const idle = this.ctx?.isIdle() ?? true;
    const count = heldTurnStarts(held);
    if (release.kind === 'message') {
      this.pi.sendUserMessage(release.text, idle ? undefined : { deliverAs: 'followUp' });
    } else {
      this.pi.sendMessage(
        { customType: RELEASE_MESSAGE_TYPE, content: release.text, display: true, details: { heldContinuations: held.continuations } },
        { triggerTurn: true, deliverAs: 'followUp' },
      );
    }
    const what = `${count} held turn start(s) (${held.messages.length} message(s), ${held.continuations} continuation(s))`;
    return { status: 'applied', detail: `armed; released ${what} as one ${release.kind === 'message' ? 'user message' : 'continuation'}` };
  }

  // ---- internals -------------------------------------------------------------------------------

  private apply(event: TrackerEvent): void {
    this.tracker = track(this.tracker, event);
  }

  /** A state change: update `held` and write the checkpoint now. */
  private changed(): void {
    this.tracker = track(this.tracker, { type: 'held', held: holdSummary(this.hold) });
    this.writer?.writeNow();
  }

  private stream(activity: ReturnType<typeof classifyAssistantEvent>, deferWrite = false): void {
    if (!this.tracker.request) return;
    this.apply({ type: 'stream', at: this.now(), activity });
    if (!deferWrite) this.writer?.writeSoon();
    else if (!this.writeDeferred) {
      this.writeDeferred = true;
      setImmediate(() => {
        this.writeDeferred = false;
        this.writer?.writeSoon();
      });
    }
  }

  /** A write asked for by a raw provider event, waiting for the end of the event loop's turn. */
  private writeDeferred = false;

  private persistHold(requestId: string | null): void {
    if (!this.hold) return;
    this.pi.appendEntry(HOLD_ENTRY_TYPE, holdEntry(this.hold, this.now(), this.hold.by, this.hold.reason, requestId));
  }

  private refreshTick(): void {
    const writer = this.writer;
    if (!writer) return;
    const age = this.now() - writer.lastWrite;
    // A request in flight, tools running or a retry awaited: a reader marks the checkpoint stale
    // past 20 s in these states (CONTRACT.md), so they are refreshed like a request in flight.
    const every = REFRESHED_STATES.has(this.tracker.state) ? (this.opts.inFlightRefreshMs ?? 5000) : (this.opts.idleRefreshMs ?? 30_000);
    if (age >= every) writer.writeNow();
  }

  private readSettings(provider: string | null): RequestSettings {
    const file = homePaths(this.home).settings;
    const { settings, note } = readSettingsFile(file);
    let effective: unknown = null;
    try {
      effective = this.pi.getSettings?.() ?? null;
    } catch (err) {
      this.log("pi.getSettings() failed; pi's retry settings are read from the home's settings.json", err);
    }
    const result = requestSettings(settings, effective, provider);
    // Log a settings problem once, not at every request.
    const summary = [note, ...result.notes].filter((n): n is string => n !== null).join('; ');
    if (summary && summary !== this.settingsNote) this.log(`settings: ${summary}`);
    this.settingsNote = summary || null;
    return result;
  }

  private stopSessionResources(): void {
    if (this.refresh) clearInterval(this.refresh);
    this.refresh = null;
    this.inbox?.stop();
    this.inbox = null;
    this.writer?.dispose();
    this.writer = null;
    this.liveness?.stop();
  }

  /** Runs `fn`, logging instead of throwing: nothing of ours may throw into pi or a timer. */
  guard<T>(what: string, fn: () => T): T | undefined {
    try {
      return fn();
    } catch (err) {
      this.log(`${what} failed`, err);
      return undefined;
    }
  }
}

function modelName(model: { provider: string; id: string } | undefined): string | null {
  return model ? `${model.provider}/${model.id}` : null;
}
