/**
 * Waiting for the consumer's answer to a control request: `<id>.ack.json` beside the request.
 * A directory watch wakes us early; a short poll is the backstop (watch events are hints, and a
 * watch may be unavailable); a timeout bounds the wait. The outcome is journalled either way.
 */
import { watch } from 'node:fs';
import path from 'node:path';
import { controlAckSchema, type AckStatus, type ControlAck, type ControlAction } from '../contract/control.js';
import { errnoOf, nodeControlFs, type ControlFs } from './atomic-write.js';
import { ackPathFor, readControlRequest, requestPathFor } from './control-requests.js';
import { appendJournal, outcomeEntry } from './journal-append.js';

/** SPEC §4.2: after this long without an ack, say plainly that no consumer answered. */
export const ACK_TIMEOUT_MS = 10_000;
/** Backstop poll interval while waiting. */
export const ACK_POLL_MS = 200;
/** Acks are a few hundred bytes; anything far bigger is not one. */
const ACK_MAX_BYTES = 64 * 1024;

/** Watches a directory, calling `onChange` on any event; returns a function that stops watching. */
export type WatchDir = (dir: string, onChange: () => void) => () => void;

/** `fs.watch` on the directory; when watching is impossible (missing dir, no inotify) it does nothing. */
export const nodeWatchDir: WatchDir = (dir, onChange) => {
  try {
    const watcher = watch(dir, { persistent: false }, () => onChange());
    watcher.on('error', () => watcher.close());
    return () => watcher.close();
  } catch {
    return () => undefined;
  }
};

/** The consumer's answer, or the lack of one. */
export type AckResult =
  | { status: AckStatus; ack: ControlAck; journalError: string | null }
  | { status: 'no-answer'; ack: null; detail: string; waitedMs: number; journalError: string | null };

/** Options of `awaitAck`. */
export interface AwaitAckOptions {
  /** Default 10 s (SPEC §4.2). */
  timeoutMs?: number;
  /** Clock for the journal's `at`. */
  now?: () => number;
  /** Stops waiting: the promise rejects with the signal's reason and nothing is journalled. */
  signal?: AbortSignal;
  /** The request's action, for the journal line; read from the request file when omitted. */
  action?: ControlAction;
  /** Backstop poll interval; default 200 ms. */
  pollMs?: number;
  /**
   * Set false to skip the `outcome` journal line; `'no-answer'` writes it only when nothing
   * answered (the consumer journals the outcomes it acks itself).
   */
  journal?: boolean | 'no-answer';
  /**
   * The request's `expiresAt`: a wait that ends with no answer before it journals nothing, since
   * the consumer may still apply the request (its own outcome line would then contradict a
   * `no-answer`). Only once it has expired can nothing apply it; a consumer that reads it later
   * answers `expired`, which agrees.
   */
  validUntil?: number | null;
  fs?: ControlFs;
  watchDir?: WatchDir;
}

type AckRead = { kind: 'absent' } | { kind: 'ack'; ack: ControlAck } | { kind: 'invalid'; problem: string };

/** Reads `<id>.ack.json` once: absent, a valid ack for this id, or why it is not one. */
export async function readAckFile(file: string, id: string, fs: ControlFs = nodeControlFs): Promise<AckRead> {
  try {
    const st = await fs.lstat(file);
    if (!st.isFile()) return { kind: 'invalid', problem: `${file} is not a plain file` };
    if (st.size > ACK_MAX_BYTES) return { kind: 'invalid', problem: `${file} is ${st.size} bytes; not an ack` };
    const text = (await fs.readFile(file)).toString('utf8');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { kind: 'invalid', problem: `${file} is not valid JSON` };
    }
    const parsed = controlAckSchema.safeParse(value);
    if (!parsed.success) return { kind: 'invalid', problem: `${file} does not match the ack contract: ${parsed.error.issues[0]?.message ?? 'invalid'}` };
    if (parsed.data.id !== id) return { kind: 'invalid', problem: `${file} answers request ${parsed.data.id}, not ${id}` };
    return { kind: 'ack', ack: parsed.data };
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return { kind: 'absent' };
    return { kind: 'invalid', problem: `cannot read ${file}: ${errnoOf(err)}` };
  }
}

type Answer = { kind: 'ack'; ack: ControlAck } | { kind: 'timeout'; problem: string | null };

/**
 * Waits for the ack of request `id` of `session` in `home`, at most `timeoutMs`. Returns the
 * consumer's status with the validated ack, or `no-answer`; then appends an `outcome` line to the
 * journal. An invalid ack file is not an answer (it is named in the no-answer detail).
 */
export async function awaitAck(home: string, session: string, id: string, opts: AwaitAckOptions = {}): Promise<AckResult> {
  const fs = opts.fs ?? nodeControlFs;
  const timeoutMs = opts.timeoutMs ?? ACK_TIMEOUT_MS;
  const pollMs = opts.pollMs ?? ACK_POLL_MS;
  const now = opts.now ?? (() => Date.now());
  const watchDir = opts.watchDir ?? nodeWatchDir;
  const file = ackPathFor(home, session, id);
  const signal = opts.signal;
  signal?.throwIfAborted();

  const answer = await new Promise<Answer>((resolve, reject) => {
    let settled = false;
    let checking = false;
    let again = false;
    let lastProblem: string | null = null;

    const cleanup = () => {
      stopWatching();
      clearInterval(poll);
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const finish = (a: Answer) => {
      if (settled) return;
      settled = true;
      cleanup();
      resolve(a);
    };
    const onAbort = () => {
      if (settled) return;
      settled = true;
      cleanup();
      reject(signal?.reason ?? new Error('aborted'));
    };
    // One read at a time; an event during a read schedules one more read after it.
    const check = async (): Promise<void> => {
      if (settled) return;
      if (checking) {
        again = true;
        return;
      }
      checking = true;
      try {
        do {
          again = false;
          const r = await readAckFile(file, id, fs);
          if (r.kind === 'ack') return finish(r);
          if (r.kind === 'invalid') lastProblem = r.problem;
        } while (again && !settled);
      } finally {
        checking = false;
      }
    };
    const onTimeout = () => {
      // One last look, so an ack that landed between two polls is not reported as missing.
      readAckFile(file, id, fs).then(
        (r) => finish(r.kind === 'ack' ? r : { kind: 'timeout', problem: r.kind === 'invalid' ? r.problem : lastProblem }),
        () => finish({ kind: 'timeout', problem: lastProblem }),
      );
    };

    const stopWatching = watchDir(path.dirname(file), () => void check());
    const poll = setInterval(() => void check(), pollMs);
    const timer = setTimeout(onTimeout, timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    void check();
  });

  let result: AckResult;
  if (answer.kind === 'ack') {
    result = { status: answer.ack.status, ack: answer.ack, journalError: null };
  } else {
    const seconds = Math.round(timeoutMs / 100) / 10;
    const detail =
      `no consumer answered within ${seconds} s (the loop-dash extension is not loaded in that session, or its process is gone)` +
      (answer.problem ? `; ${answer.problem}` : '');
    result = { status: 'no-answer', ack: null, detail, waitedMs: timeoutMs, journalError: null };
  }
  const journal = opts.journal ?? true;
  const mayStillApply = result.status === 'no-answer' && typeof opts.validUntil === 'number' && now() < opts.validUntil;
  if (!mayStillApply && (journal === true || (journal === 'no-answer' && result.status === 'no-answer'))) {
    result.journalError = await journalOutcome(home, session, id, result, opts.action, now(), fs);
  }
  return result;
}

async function journalOutcome(
  home: string,
  session: string,
  id: string,
  result: AckResult,
  knownAction: ControlAction | undefined,
  at: number,
  fs: ControlFs,
): Promise<string | null> {
  const action = knownAction ?? (await readControlRequest(requestPathFor(home, session, id), fs))?.action;
  if (!action) return `outcome not journalled: the action of request ${id} is unknown (its file is gone)`;
  const detail = result.ack ? result.ack.detail : result.detail;
  try {
    await appendJournal(home, outcomeEntry({ id, session, action }, result.status, detail, at), fs);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** One line for the owner: what happened to their request. */
export function describeAckResult(result: AckResult): string {
  switch (result.status) {
    case 'applied':
      return `applied${result.ack.detail ? `: ${result.ack.detail}` : ''}`;
    case 'refused':
      return `refused by the session${result.ack.detail ? `: ${result.ack.detail}` : ''}`;
    case 'expired':
      return `expired: the session saw the request after its lifetime and did nothing${result.ack.detail ? ` (${result.ack.detail})` : ''}`;
    case 'stale-target':
      return `rejected, nothing was cut: the request you saw is no longer the one in flight${result.ack.detail ? ` (${result.ack.detail})` : ''}`;
    case 'no-answer':
      return result.detail;
    default: {
      const never: never = result;
      return String(never);
    }
  }
}
