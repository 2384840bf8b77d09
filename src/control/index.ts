/**
 * The one door for writes into a pi home from the dashboard side (SPEC §4.2): the TUI's keys and
 * the `abort|disarm|arm` commands both come through `requestAction` and `followAction`.
 */
import { controlActions, isSafeSessionId, type ControlAction } from '../contract/control.js';
import { checkpointRequestRefSchema } from '../contract/checkpoint.js';
import { AtomicWriteError, nodeControlFs, type ControlFs } from './atomic-write.js';
import { awaitAck, describeAckResult, ACK_TIMEOUT_MS, type AckResult, type WatchDir } from './await-ack.js';
import {
  buildControlRequest,
  cleanStaleControlTemps,
  ControlInputError,
  localRequester,
  pendingRequestFor,
  readControlRequest,
  requestPathFor,
  submitControlRequest,
  type ControlTarget,
  type Requester,
} from './control-requests.js';

export * from './atomic-write.js';
export * from './await-ack.js';
export * from './control-requests.js';
export * from './journal-append.js';

/** What the owner asks for, from a key or the command line. */
export interface ActionInput {
  session: string;
  action: ControlAction;
  reason: string;
  /** abort only: the request the owner saw (null: none in flight, only hold). Ignored for disarm/arm. */
  target?: ControlTarget | null;
}

/** Injected effects of `requestAction`. */
export interface ActionDeps {
  now: () => number;
  by?: Requester;
  fs?: ControlFs;
}

/** A submitted (or re-used) request. */
export interface ActionHandle {
  id: string;
  file: string;
  home: string;
  session: string;
  action: ControlAction;
  /** true when a pending request of this process was re-used (double press, retry): nothing new was written. */
  reused: boolean;
  /** When the request expires (the consumer never applies it after this); null if unreadable. */
  expiresAt: number | null;
  journalError: string | null;
}

// Requests being submitted right now, so two presses in the same tick share one request.
const inFlight = new Map<string, Promise<ActionHandle>>();

/**
 * Submits a control request, or re-uses the pending one this process already made for the same
 * session, action (and, for abort, target) — so pressing twice or retrying acts once (D3).
 * Throws `ControlInputError` (bad input, nothing written) or `AtomicWriteError` (disk refused).
 */
export async function requestAction(home: string, input: ActionInput, deps: ActionDeps): Promise<ActionHandle> {
  const target = input.action === 'abort' ? (input.target ?? null) : undefined;
  // Build first: it checks the session id and the rest before anything touches the disk.
  const now = deps.now();
  const by = deps.by ?? localRequester();
  const request = buildControlRequest({ session: input.session, action: input.action, reason: input.reason, target, now, by });
  const key = JSON.stringify([home, input.session, input.action, target ? [target.turn, target.startedAt] : null]);
  const running = inFlight.get(key);
  if (running) return { ...(await running), reused: true };
  const work = (async (): Promise<ActionHandle> => {
    const fs = deps.fs ?? nodeControlFs;
    const existing = await pendingRequestFor(home, input.session, input.action, now, { target, pid: by.pid, host: by.host, fs });
    const base = { home, session: input.session, action: input.action };
    if (existing) {
      const file = requestPathFor(home, input.session, existing);
      const expiresAt = (await readControlRequest(file, fs))?.expiresAt ?? null;
      return { ...base, id: existing, file, reused: true, expiresAt, journalError: null };
    }
    const r = await submitControlRequest(home, request, { now, fs });
    return { ...base, id: request.id, file: r.file, reused: !r.created, expiresAt: request.expiresAt, journalError: r.journalError };
  })();
  inFlight.set(key, work);
  try {
    return await work;
  } finally {
    inFlight.delete(key);
  }
}

/** Options of `followAction`. */
export interface FollowOptions {
  timeoutMs?: number;
  now?: () => number;
  signal?: AbortSignal;
  pollMs?: number;
  fs?: ControlFs;
  watchDir?: WatchDir;
  /** See AwaitAckOptions.validUntil: the request's expiresAt. */
  validUntil?: number | null;
  /** As `awaitAck`'s: false, or `'no-answer'` to journal only a request nobody answered. */
  journal?: boolean | 'no-answer';
}

/** Waits for the answer to a request made with `requestAction`; `message` is one line for the owner. */
export async function followAction(handle: Pick<ActionHandle, 'home' | 'session' | 'id' | 'action'>, opts: FollowOptions = {}): Promise<AckResult & { message: string }> {
  const result = await awaitAck(handle.home, handle.session, handle.id, { ...opts, action: handle.action });
  return { ...result, message: describeAckResult(result) };
}

// ---------------------------------------------------------------------------------------------
// `loop-dash abort|disarm|arm SESSION [--reason TEXT] [--yes]`

/** The least of a snapshot row this command needs (a `SessionView` fits). */
export interface ControlSessionLike {
  session: string;
  name: string | null;
  model: string | null;
  home: string;
  role: 'root' | 'lane';
  checkpoint?: { state?: string; request?: { turn: number; startedAt: number } | null; lastRequest?: unknown } | null;
  /** `clockSkewMs`: the checkpoint's times were moved back by it (a writer's clock ahead of ours). */
  source?: { clockSkewMs?: number };
  /** The session's state as the dashboard derives it (`lost`, `ended`: nothing may answer). */
  state?: string;
  lanes?: readonly ControlSessionLike[];
  /** A lane with no session file or checkpoint yet (SessionView.placeholder): nothing can answer. */
  placeholder?: 'dispatch' | 'status';
  runId?: string | null;
}

/** Loads the sessions of the given homes (wired to `src/cli/load-snapshot.ts`). */
export type SnapshotLoader = (homes: string[]) => Promise<{ roots: readonly ControlSessionLike[] }>;

/** Terminal I/O of the command. */
export interface ControlCommandIo {
  out: (s: string) => void;
  err: (s: string) => void;
  /** A person is at a terminal (stdin and stdout are TTYs): a confirmation may be asked. */
  isTTY: boolean;
  now: () => number;
  /** Asks one question and returns the answer; default a readline prompt on stdin/stdout. */
  ask?: (question: string) => Promise<string>;
}

/** Arguments of `runControlCommand`. */
export interface ControlCommandInput {
  homes: string[];
  session: string;
  action: string;
  reason?: string;
  yes?: boolean;
  snapshotLoader: SnapshotLoader;
  io: ControlCommandIo;
  timeoutMs?: number;
  pollMs?: number;
  fs?: ControlFs;
  by?: Requester;
}

/** Exit codes of the control commands (SPEC §6). */
export const CONTROL_EXIT = { applied: 0, notApplied: 1, badInput: 2 } as const;

/** Text from files shown on a terminal: control characters (ANSI/OSC escapes, BEL, CR) become `?`. */
export function plain(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

function flatten(rows: readonly ControlSessionLike[], out: ControlSessionLike[] = []): ControlSessionLike[] {
  for (const row of rows) {
    out.push(row);
    if (row.lanes) flatten(row.lanes, out);
  }
  return out;
}

/** Why nothing can be sent to a placeholder lane (SessionView.placeholder). */
export function placeholderRefusal(v: { placeholder?: 'dispatch' | 'status'; runId?: string | null }): string {
  const from = v.placeholder === 'dispatch' ? "its root's state log dispatched run" : 'pi-subagents lists run';
  return `This lane has no session yet: ${from} ${v.runId ?? '?'}, but no session file or checkpoint of it is there, so no extension can answer a request. Act on its root, or wait for the lane's session to appear.`;
}

/** Finds one session by full id or unique prefix; the error names the candidates. */
export function findSession(rows: readonly ControlSessionLike[], query: string): { session: ControlSessionLike } | { error: string } {
  const all = flatten(rows);
  const label = (s: ControlSessionLike) => plain(`${s.session}${s.name ? ` (${s.name})` : ''} in ${s.home}`);
  // The id, else a prefix of it (in any case: `146CCA71`), else the name — the whole one, else the
  // one the dashboard shows under its root (`L1` of a lane named `api-refactor/L1`); lanes may share one.
  const exact = all.filter((s) => s.session === query);
  const lower = query.toLowerCase();
  const byId = exact.length > 0 ? exact : all.filter((s) => s.session.toLowerCase().startsWith(lower));
  const whole = byId.length > 0 ? [] : all.filter((s) => s.name === query);
  const byName = byId.length > 0 || whole.length > 0 ? whole : all.filter((s) => s.role === 'lane' && s.name !== null && s.name.endsWith(`/${query}`));
  const matches = byId.length > 0 ? byId : byName;
  if (matches.length === 1) return { session: matches[0]! };
  if (matches.length === 0) return { error: `no session matches "${plain(query)}" by id, id prefix or name (${all.length} known; loop-dash status lists them with their ids)` };
  const shown = matches.slice(0, 10).map((s) => `  ${label(s)}`);
  if (matches.length > 10) shown.push(`  … and ${matches.length - 10} more`);
  const more = byName.length > 0 ? 'name one by its id (or a prefix of it)' : 'give more of the id';
  return { error: `"${plain(query)}" matches ${matches.length} sessions; ${more}:\n${shown.join('\n')}` };
}

/** The abort target: the request in flight according to the checkpoint, or null. */
export function targetFromCheckpoint(s: ControlSessionLike): ControlTarget | null {
  const cp = s.checkpoint;
  if (!cp) return null;
  // The session compares the target with its own times: a row read from a clock ahead of ours
  // (clock-skew.ts) has them moved back, so the move is undone here.
  const skew = s.source?.clockSkewMs ?? 0;
  const own = (t: ControlTarget | null): ControlTarget | null => (t && skew !== 0 ? { turn: t.turn, startedAt: t.startedAt + skew } : t);
  if (cp.request && (cp.state === undefined || cp.state === 'requesting' || cp.state === 'tools')) return own({ turn: cp.request.turn, startedAt: cp.request.startedAt });
  // Tools running: the request that asked for them (the checkpoint's `lastRequest`) is the target.
  if (cp.state === 'tools') return own(requestRef(cp.lastRequest));
  return null;
}

/** `{turn, startedAt}` of a checkpoint's `lastRequest` (an extra field, so checked here), or null. */
function requestRef(value: unknown): ControlTarget | null {
  const r = checkpointRequestRefSchema.safeParse(value);
  return r.success ? { turn: r.data.turn, startedAt: r.data.startedAt } : null;
}

/** When a target's request started, in this machine's time (a target is in the session's: targetFromCheckpoint). */
export function targetStartedHere(s: ControlSessionLike, t: ControlTarget): number {
  return t.startedAt - (s.source?.clockSkewMs ?? 0);
}

/**
 * What an abort of this session would stop, as its checkpoint shows it: the request in flight,
 * the tools of the last request, pi's pending retry, or nothing (it then only holds).
 */
export type AbortScope = 'request' | 'tools' | 'retry' | 'none';
export function abortScope(s: ControlSessionLike): AbortScope {
  const state = s.checkpoint?.state;
  if (targetFromCheckpoint(s)) return state === 'tools' ? 'tools' : 'request';
  return state === 'retry-wait' ? 'retry' : 'none';
}

/** ISO-8601 for an epoch-ms time, or the raw number when it is outside Date's range. */
function iso(ms: number): string {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString();
}

/** `3h 02m`, `4m 07s`, `12s`. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s >= 3600) return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  return `${s}s`;
}

const EFFECT: Record<ControlAction, string> = {
  abort: 'cut this request (only if it is still the one in flight), then hold the session: nothing restarts it until you arm it',
  disarm: 'hold the session: automatic continuations, wakes and resumes wait (their text kept) until you arm it; the current request is not cut',
  arm: 'clear the hold: held turn starts are replayed as one message and automatic restarts resume',
};

/** What the confirmation shows: exactly which session, which request, and what will happen. */
export function describePlannedAction(s: ControlSessionLike, action: ControlAction, target: ControlTarget | null, now: number): string {
  const lines = [
    `${action.toUpperCase()} ${s.role} ${s.session}${s.name ? `  "${s.name}"` : ''}`,
    `  home     ${s.home}`,
    `  model    ${s.model ?? '(unknown)'}`,
  ];
  let effect = EFFECT[action];
  if (action === 'abort') {
    const scope = abortScope(s);
    const started = target ? targetStartedHere(s, target) : 0;
    if (target && scope === 'tools') {
      lines.push(`  request  turn ${target.turn} ended (started ${formatAge(now - started)} ago, ${iso(started)}); its tools are running`);
      effect = 'stop the tools of this turn (only if no later request has started), then hold the session: no request follows them, nothing restarts it until you arm it';
    } else if (target) {
      lines.push(`  request  turn ${target.turn}, running for ${formatAge(now - started)} (since ${iso(started)})`);
    } else if (!s.checkpoint) {
      // No checkpoint: whether a request runs cannot be seen (SPEC §2: never a made-up value).
      lines.push('  request  unknown: no loop-dash checkpoint, so whether one is in flight cannot be seen');
      effect = 'cut the request in flight, if any, then hold the session — if the loop-dash extension runs in it; if it does not, nothing answers';
    } else if (scope === 'retry') {
      lines.push("  request  none in flight; pi's retry of the failed one is pending");
      effect = "cancel pi's pending retry, then hold the session: nothing restarts it until you arm it";
    } else {
      lines.push('  request  none in flight');
      effect = 'nothing is cut (no request in flight); the session is held, and a retry pi may still have pending is cancelled: nothing restarts it until you arm it';
    }
  }
  lines.push(`  effect   ${effect}`);
  // As the dashboard's dialog: a session whose process is gone cannot answer.
  if (s.state === 'lost' || s.state === 'ended') lines.push(`  note     the session looks ${s.state === 'lost' ? 'lost (its process is gone)' : 'ended'}: nothing may be there to answer`);
  return `${lines.map(plain).join('\n')}\n`;
}

async function defaultAsk(question: string): Promise<string> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return await rl.question(question);
  } finally {
    rl.close();
  }
}

/**
 * `loop-dash abort|disarm|arm SESSION`: finds the session, confirms (or refuses without a TTY
 * unless `--yes`), submits, waits for the ack and prints the outcome. Returns 0 applied,
 * 1 refused/expired/stale/no answer/cancelled/write failed, 2 bad input.
 */
export async function runControlCommand(input: ControlCommandInput): Promise<number> {
  const { io } = input;
  const bad = (message: string) => {
    io.err(`loop-dash: ${message}\n`);
    return CONTROL_EXIT.badInput;
  };
  if (!(controlActions as readonly string[]).includes(input.action)) return bad(`unknown action "${input.action}" (use abort, disarm or arm)`);
  const action = input.action as ControlAction;
  const reason = input.reason ?? '';
  if (reason.length > 500) return bad('--reason: at most 500 characters');
  if (!input.session) return bad(`${action}: name the session (its id, a unique prefix of it, or its name; see loop-dash status)`);

  let rows: readonly ControlSessionLike[];
  try {
    rows = (await input.snapshotLoader(input.homes)).roots;
  } catch (err) {
    return bad(`cannot read ${input.homes.join(', ')}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const found = findSession(rows, input.session);
  if ('error' in found) return bad(found.error);
  const s = found.session;
  if (s.placeholder) {
    // Refused here, nothing sent: exit 1 (SPEC §6: refused), as a session's refusal would.
    io.err(`loop-dash: ${action}: ${plain(s.name ?? s.session)}: ${placeholderRefusal({ placeholder: s.placeholder, runId: s.runId ?? null })}\n`);
    return CONTROL_EXIT.notApplied;
  }
  if (!isSafeSessionId(s.session)) return bad(`session id ${JSON.stringify(s.session)} is not safe to use as a path; refusing`);

  const target = action === 'abort' ? targetFromCheckpoint(s) : null;
  io.out(describePlannedAction(s, action, target, io.now()));
  if (!input.yes) {
    if (!io.isTTY) return bad(`${action}: not a terminal, so no confirmation can be asked; add --yes to proceed`);
    const answer = (await (io.ask ?? defaultAsk)('Proceed? [y/N] ')).trim().toLowerCase();
    if (answer !== 'y' && answer !== 'yes') {
      io.out('cancelled; nothing was sent\n');
      return CONTROL_EXIT.notApplied;
    }
  }

  const fs = input.fs ?? nodeControlFs;
  // A writer killed mid-write left a temp here? Clean it now (consumers ignore it anyway).
  await cleanStaleControlTemps(s.home, io.now(), { session: s.session, fs }).catch(() => undefined);
  let handle: ActionHandle;
  try {
    handle = await requestAction(
      s.home,
      { session: s.session, action, reason, ...(action === 'abort' ? { target } : {}) },
      { now: io.now, fs, by: input.by ?? localRequester('loop-dash-cli') },
    );
  } catch (err) {
    if (err instanceof ControlInputError) return bad(err.message);
    if (err instanceof AtomicWriteError) {
      io.err(`loop-dash: the request was not sent: ${err.message}\n`);
      return CONTROL_EXIT.notApplied;
    }
    throw err;
  }
  if (handle.journalError) io.err(`loop-dash: warning: the journal line was not written: ${handle.journalError}\n`);
  const timeoutMs = input.timeoutMs ?? ACK_TIMEOUT_MS;
  io.out(`${handle.reused ? 're-using pending' : 'sent'} request ${handle.id}; waiting up to ${Math.round(timeoutMs / 1000)} s for the session to answer…\n`);
  // An unanswered request is not journalled as such while it is still valid (see validUntil).
  const result = await followAction(handle, { timeoutMs, now: io.now, fs, validUntil: handle.expiresAt, ...(input.pollMs !== undefined ? { pollMs: input.pollMs } : {}) });
  if (result.status === 'applied') {
    io.out(`${action}: ${plain(result.message)}\n`);
  } else {
    io.err(`loop-dash: ${action}: ${plain(result.message)}\n`);
    if (result.status === 'no-answer' && handle.expiresAt !== null) {
      // Be plain about what can still happen: the request is live until it expires, never after.
      io.err(`loop-dash: the request stays valid until ${iso(handle.expiresAt)}: a session that picks it up before then may still apply it; after that it is never applied\n`);
    }
  }
  if (result.journalError) io.err(`loop-dash: warning: the outcome was not journalled: ${result.journalError}\n`);
  return result.status === 'applied' ? CONTROL_EXIT.applied : CONTROL_EXIT.notApplied;
}
