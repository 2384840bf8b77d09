/**
 * Control requests (SPEC §4.2): built, checked and written to
 * `<home>/loop-dash/control/<session>/<id>.json`, where the loop-dash extension of that session
 * picks them up. Nothing is written before every input has been checked.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import {
  CONTROL_MAX_BYTES,
  CONTROL_TTL_MS,
  controlActions,
  controlRequestSchema,
  isSafeSessionId,
  type ControlAction,
  type ControlRequest,
} from '../contract/control.js';
import { homePaths } from '../contract/paths.js';
import {
  AtomicWriteError,
  ensurePrivateDir,
  errnoOf,
  nodeControlFs,
  removeStaleTemps,
  writeFileAtomic,
  type ControlFs,
} from './atomic-write.js';
import { appendJournal, outcomeEntry, requestedEntry } from './journal-append.js';

/** The request an owner saw in flight when they asked for an abort. */
export interface ControlTarget {
  turn: number;
  startedAt: number;
}

/** Who makes a request (`by` of the contract). */
export type Requester = ControlRequest['by'];

/** Bad input to a control call (unsafe session id, unknown action, oversized request, …); nothing was written. */
export class ControlInputError extends Error {
  override readonly name = 'ControlInputError';
}

/** Temp files older than this in a control directory belong to a writer that died. */
export const STALE_TEMP_MS = 5 * 60_000;

const REQUEST_ID = /^[A-Za-z0-9_-]{1,80}$/;
const REQUEST_FILE = /^([A-Za-z0-9_-]{1,80})\.json$/;
/** Width of the time part of an id: base 36 epoch ms, enough until the year 5138. */
const ID_TIME_WIDTH = 9;
const REASON_MAX = 500;

/**
 * A new request id: `<epoch ms in base 36, 9 chars>-<16 random hex>`. Sorts by time as a string,
 * is safe as a file name, and carries its own creation time (see `requestIdTime`).
 */
export function makeRequestId(now: number, rand: () => string = () => randomBytes(8).toString('hex')): string {
  const time = Math.max(0, Math.floor(Number.isFinite(now) ? now : 0))
    .toString(36)
    .padStart(ID_TIME_WIDTH, '0');
  const suffix = rand().replace(/[^A-Za-z0-9]/g, '').slice(0, 40);
  if (!suffix) throw new ControlInputError('makeRequestId: the random part is empty');
  return `${time}-${suffix}`;
}

/** The creation time encoded in an id from `makeRequestId`, or null for any other id. */
export function requestIdTime(id: string): number | null {
  const m = /^([0-9a-z]{9})-[A-Za-z0-9]+$/.exec(id);
  if (!m) return null;
  const t = parseInt(m[1]!, 36);
  return Number.isSafeInteger(t) ? t : null;
}

/** This process as a requester. */
export function localRequester(tool = 'loop-dash'): Requester {
  let user = process.env.USER ?? process.env.LOGNAME ?? 'unknown';
  try {
    user = os.userInfo().username;
  } catch {
    // No passwd entry (containers): keep the environment's name.
  }
  return { user, host: os.hostname(), pid: process.pid, tool };
}

function checkSession(session: string): void {
  if (typeof session !== 'string' || !isSafeSessionId(session)) {
    throw new ControlInputError(`session id ${JSON.stringify(session)} is not safe to use as a path (letters, digits, . _ - only; no "/" or "..")`);
  }
}

function checkId(id: string): void {
  if (typeof id !== 'string' || !REQUEST_ID.test(id)) throw new ControlInputError(`request id ${JSON.stringify(id)} is not a valid id`);
}

/** `<home>/loop-dash/control/<session>`; throws `ControlInputError` for an unsafe session id. */
export function controlDirFor(home: string, session: string): string {
  checkSession(session);
  return path.join(homePaths(home).control, session);
}

/** `<home>/loop-dash/control/<session>/<id>.json`. */
export function requestPathFor(home: string, session: string, id: string): string {
  checkId(id);
  return path.join(controlDirFor(home, session), `${id}.json`);
}

/** `<home>/loop-dash/control/<session>/<id>.ack.json`, written by the consumer. */
export function ackPathFor(home: string, session: string, id: string): string {
  checkId(id);
  return path.join(controlDirFor(home, session), `${id}.ack.json`);
}

/** What the owner asks for. */
export interface ControlRequestInput {
  session: string;
  action: ControlAction;
  reason: string;
  /** abort: the request the owner saw, or null when none was in flight (then it only holds). Must be absent for disarm/arm. */
  target?: ControlTarget | null;
  now: number;
  by?: Requester;
  /** Re-use an id (tests, retries); default a fresh `makeRequestId(now)`. */
  id?: string;
}

/** The bytes written for a request. */
export function serializeControlRequest(request: ControlRequest): string {
  return `${JSON.stringify(request, null, 2)}\n`;
}

/**
 * Builds a request, checking everything first. Throws `ControlInputError` for an unsafe session
 * id, an unknown action, a target on disarm/arm, a malformed target, a reason over 500 characters
 * or a request over `CONTROL_MAX_BYTES`.
 */
export function buildControlRequest(input: ControlRequestInput): ControlRequest {
  checkSession(input.session);
  if (!(controlActions as readonly string[]).includes(input.action)) {
    throw new ControlInputError(`unknown action ${JSON.stringify(input.action)} (expected ${controlActions.join(', ')})`);
  }
  if (typeof input.reason !== 'string' || input.reason.length > REASON_MAX) {
    throw new ControlInputError(`the reason must be text of at most ${REASON_MAX} characters`);
  }
  if (!Number.isFinite(input.now)) throw new ControlInputError('the request time is not a finite number');
  let target: ControlTarget | null | undefined;
  if (input.action === 'abort') {
    target = input.target ?? null;
    if (target !== null && !(Number.isInteger(target.turn) && target.turn >= 0 && Number.isFinite(target.startedAt))) {
      throw new ControlInputError('the abort target must be {turn: a non-negative integer, startedAt: epoch ms}');
    }
  } else if (input.target !== undefined && input.target !== null) {
    throw new ControlInputError(`${input.action} takes no target (only abort names the request it cuts)`);
  }
  const id = input.id ?? makeRequestId(input.now);
  checkId(id);
  const request: ControlRequest = {
    v: 1,
    id,
    session: input.session,
    action: input.action,
    reason: input.reason,
    requestedAt: input.now,
    expiresAt: input.now + CONTROL_TTL_MS,
    by: input.by ?? localRequester(),
    ...(target !== undefined ? { target: target === null ? null : { turn: target.turn, startedAt: target.startedAt } } : {}),
  };
  const parsed = controlRequestSchema.safeParse(request);
  if (!parsed.success) throw new ControlInputError(`the request does not match the contract: ${parsed.error.message}`);
  const bytes = Buffer.byteLength(serializeControlRequest(request));
  if (bytes > CONTROL_MAX_BYTES) {
    throw new ControlInputError(`the request is ${bytes} bytes; consumers refuse more than ${CONTROL_MAX_BYTES}`);
  }
  return request;
}

/** What `submitControlRequest` did. */
export interface SubmitResult {
  /** The request file. */
  file: string;
  /** false when a request with this id was already there (a retry): nothing was written. */
  created: boolean;
  /** Set when the request was written but its journal line could not be appended. */
  journalError: string | null;
}

/** The same abort target (turn and start), or both none. */
export function sameTarget(a: ControlTarget | null | undefined, b: ControlTarget | null | undefined): boolean {
  if (!a || !b) return !a && !b;
  return a.turn === b.turn && a.startedAt === b.startedAt;
}

function sameRequest(a: ControlRequest, b: ControlRequest): boolean {
  return a.id === b.id && a.session === b.session && a.action === b.action && a.requestedAt === b.requestedAt && sameTarget(a.target, b.target);
}

/** Reads and validates one request file; null when absent, not a plain file, too big or invalid. */
export async function readControlRequest(file: string, fs: ControlFs = nodeControlFs): Promise<ControlRequest | null> {
  try {
    const st = await fs.lstat(file);
    if (!st.isFile() || st.size > CONTROL_MAX_BYTES) return null;
    const parsed = controlRequestSchema.safeParse(JSON.parse((await fs.readFile(file)).toString('utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * Writes the request atomically (dirs 0700, file 0600) and appends its `requested` journal line.
 * Idempotent by id: when `<id>.json` already holds this same request, nothing is written again.
 * Throws `ControlInputError` for bad input (before any write) and `AtomicWriteError` when the
 * disk refuses (no partial file is left; an `outcome: write-failed` line is attempted).
 */
export async function submitControlRequest(
  home: string,
  request: ControlRequest,
  opts: { now: number; fs?: ControlFs },
): Promise<SubmitResult> {
  const fs = opts.fs ?? nodeControlFs;
  const parsed = controlRequestSchema.safeParse(request);
  if (!parsed.success) throw new ControlInputError(`the request does not match the contract: ${parsed.error.message}`);
  const file = requestPathFor(home, request.session, request.id);
  if (request.expiresAt <= opts.now) throw new ControlInputError(`request ${request.id} has already expired; make a new one`);
  const body = serializeControlRequest(request);
  if (Buffer.byteLength(body) > CONTROL_MAX_BYTES) throw new ControlInputError(`the request is over ${CONTROL_MAX_BYTES} bytes`);
  const dir = path.dirname(file);

  let outcome: 'written' | 'exists';
  try {
    await ensurePrivateDir(dir, fs);
    const st = await fs.lstat(dir);
    if (!st.isDirectory() || st.isSymbolicLink()) {
      throw new AtomicWriteError(dir, 'ENOTDIR', `cannot write ${file}: ${dir} is not a plain directory (a symlink?)`);
    }
    outcome = await writeFileAtomic(file, body, { exclusive: true, fs });
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    await appendJournal(home, outcomeEntry(request, 'write-failed', detail, opts.now), fs).catch(() => undefined);
    throw err;
  }

  if (outcome === 'exists') {
    const existing = await readControlRequest(file, fs);
    if (!existing || !sameRequest(existing, request)) {
      throw new ControlInputError(`request id ${request.id} already names a different request in ${file}`);
    }
    return { file, created: false, journalError: null };
  }
  let journalError: string | null = null;
  try {
    await appendJournal(home, requestedEntry(request, opts.now), fs);
  } catch (err) {
    journalError = err instanceof Error ? err.message : String(err);
  }
  return { file, created: true, journalError };
}

/** Options of `pendingRequestFor`. */
export interface PendingOptions {
  /** abort: only a request for this same target counts (a new request in flight needs a new id). */
  target?: ControlTarget | null;
  /** The writer to match; default this process. */
  pid?: number;
  host?: string;
  fs?: ControlFs;
}

/**
 * The id of a request for the same session and action, written by this process, not yet
 * answered (no `<id>.ack.json`) and not expired at `now` — so a double press or a retry after a
 * timeout re-uses it (RELIABILITY D3). Newest first; null when there is none.
 */
export async function pendingRequestFor(
  home: string,
  session: string,
  action: ControlAction,
  now: number,
  opts: PendingOptions = {},
): Promise<string | null> {
  const fs = opts.fs ?? nodeControlFs;
  const dir = controlDirFor(home, session);
  const pid = opts.pid ?? process.pid;
  const host = opts.host ?? os.hostname();
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw err;
  }
  const candidates = names
    .map((name) => REQUEST_FILE.exec(name)?.[1])
    .filter((id): id is string => id !== undefined)
    // Ids carry their time: skip the ones that must have expired without reading them.
    .filter((id) => {
      const t = requestIdTime(id);
      return t !== null && t + CONTROL_TTL_MS > now;
    })
    .sort()
    .reverse();
  const acked = new Set(names.filter((n) => n.endsWith('.ack.json')).map((n) => n.slice(0, -'.ack.json'.length)));
  for (const id of candidates) {
    if (acked.has(id)) continue;
    const request = await readControlRequest(path.join(dir, `${id}.json`), fs);
    if (!request || request.session !== session || request.action !== action) continue;
    if (request.by.pid !== pid || request.by.host !== host || request.expiresAt <= now) continue;
    if (opts.target !== undefined && !sameTarget(request.target, opts.target)) continue;
    return id;
  }
  return null;
}

/**
 * Removes stale temp files from the control directories of a home (one session, or all), left by a
 * writer killed between fsync and rename. `now` is wall-clock time. Returns the paths removed.
 */
export async function cleanStaleControlTemps(
  home: string,
  now: number,
  opts: { session?: string; olderThanMs?: number; fs?: ControlFs } = {},
): Promise<string[]> {
  const fs = opts.fs ?? nodeControlFs;
  const olderThanMs = opts.olderThanMs ?? STALE_TEMP_MS;
  const control = homePaths(home).control;
  let sessions: string[];
  if (opts.session !== undefined) {
    sessions = [opts.session];
  } else {
    try {
      sessions = (await fs.readdir(control)).filter((name) => isSafeSessionId(name));
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') return [];
      throw err;
    }
  }
  const removed: string[] = [];
  for (const session of sessions) removed.push(...(await removeStaleTemps(controlDirFor(home, session), olderThanMs, now, fs)));
  return removed;
}
