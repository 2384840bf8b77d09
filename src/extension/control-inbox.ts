/**
 * The consumer side of SPEC §4.2: watches `<home>/loop-dash/control/<session>/` for control
 * requests addressed to this session, checks each, has it applied, and answers with
 * `<id>.ack.json` plus an `outcome` line in the owner's journal.
 *
 * `fs.watch` wakes it early; a poll is the backstop (watch events are hints, and a watch can
 * fail). Both are unref'd, so they never keep pi alive. Temp names (dot files, `.tmp`) are never
 * read. Each request is applied at most once: handled ids are remembered, and an existing ack
 * means handled (so a restarted session does not apply a request twice).
 */
import fs from 'node:fs';
import path from 'node:path';
import { CONTROL_MAX_BYTES, controlAckSchema, journalEntrySchema, type AckStatus, type ControlAck, type ControlRequest } from '../contract/control.js';
import { formatRemaining } from '../model/clocks.js';
import { appendLineSync, ensureDir, writeFileAtomicSync } from './atomic-file.js';
import { checkRequestFile, requestIdFromName, type RequestFileStat } from './control-check.js';
import type { ExtensionLog } from './extension-log.js';

/** An applied action's answer. */
export interface ActionOutcome {
  status: AckStatus;
  detail: string;
}

/** An applied abort's answer: what it cut ({@link AbortCut}), and that the session is held. */
export function abortApplied(cut: AbortCut, at: number): ActionOutcome {
  const held = 'the session is held until armed';
  switch (cut.kind) {
    case 'request':
      // In m:ss as every duration on screen (it read `after 4196 s`).
      return { status: 'applied', detail: `aborted turn ${cut.turn} after ${formatRemaining(at - cut.startedAt)}; ${held}` };
    case 'tools':
      return { status: 'applied', detail: `stopped the tools of turn ${cut.turn}; no request follows them; ${held}` };
    case 'retry':
      return { status: 'applied', detail: `no request was in flight; cancelled pi's pending retry; ${held}` };
    case 'automatic':
      return { status: 'applied', detail: `no request was in flight; cancelled what pi was still running by itself (a retry or a queued turn); ${held}` };
    case 'none':
      return { status: 'applied', detail: `no request was in flight, nothing was cut; ${held}` };
    default: {
      const never: never = cut;
      return never;
    }
  }
}

/**
 * What an applied abort cut: the request in flight, the tools a request asked for, pi's pending
 * retry (predicted), whatever pi still ran by itself with nothing in flight, or nothing.
 */
export type AbortCut =
  | { kind: 'request' | 'tools'; turn: number; startedAt: number }
  | { kind: 'retry' | 'automatic' | 'none' };

/** An applied disarm's answer; `heldSince`: when the hold it found began, or null. */
export function disarmApplied(heldSince: number | null): ActionOutcome {
  if (heldSince !== null) return { status: 'applied', detail: `already held since ${new Date(heldSince).toISOString()}; still held` };
  return { status: 'applied', detail: 'held: automatic continuations and automatic messages wait until armed; the current request runs on' };
}

/** Options of {@link ControlInbox}. */
export interface ControlInboxOptions {
  /** `<home>/loop-dash/control/<session>`. */
  dir: string;
  session: string;
  /** `<home>/loop-dash/actions.jsonl`. */
  journalFile: string;
  now: () => number;
  log: ExtensionLog;
  /** Applies a request that passed the file checks (the action decides stale targets). */
  apply: (request: ControlRequest) => ActionOutcome;
  /**
   * Backstop poll; default 1000 ms. null: no timer of its own — the owner calls `pollOnce()` from
   * the clock it already has (the demo's many sessions share one).
   */
  pollMs?: number | null;
  /** The uid a request file must belong to; default this process's (null: not checked). */
  ownUid?: number | null;
}

// O_NOFOLLOW: a symlink swapped in after the lstat is not followed. O_NONBLOCK: a FIFO cannot hang the open.
const OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);

/** Watches one session's control directory and answers every request in it once. */
export class ControlInbox {
  private readonly handled = new Set<string>();
  private watcher: fs.FSWatcher | null = null;
  private poll: NodeJS.Timeout | null = null;
  private scanning = false;
  private rescan = false;
  private stopped = true;
  private readonly ownUid: number | null;

  constructor(private readonly opts: ControlInboxOptions) {
    this.ownUid = opts.ownUid !== undefined ? opts.ownUid : typeof process.getuid === 'function' ? process.getuid() : null;
  }

  /** Creates the directory (0700), starts watching and polling, and answers what is already there. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    try {
      ensureDir(this.opts.dir);
    } catch (err) {
      this.opts.log(`cannot create the control directory ${this.opts.dir}; polling for it`, err);
    }
    this.watch();
    if (this.opts.pollMs !== null) {
      this.poll = setInterval(() => this.pollOnce(), this.opts.pollMs ?? 1000);
      this.poll.unref();
    }
    this.scan();
  }

  /** Stops watching and polling; removes the directory when it is empty (ours, made at start). Idempotent. */
  stop(): void {
    const wasRunning = !this.stopped;
    this.stopped = true;
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
    this.unwatch();
    if (wasRunning) {
      try {
        fs.rmdirSync(this.opts.dir);
      } catch {
        // not empty (requests and acks stay for the dashboard), or already gone
      }
    }
  }

  /** One backstop poll: watch again if the watch was lost, and read the directory. */
  pollOnce(): void {
    if (!this.watcher) this.watch();
    this.scan();
  }

  private watch(): void {
    if (this.stopped || this.watcher) return;
    try {
      const watcher = fs.watch(this.opts.dir, { persistent: false }, () => this.scan());
      watcher.on('error', () => this.unwatch());
      this.watcher = watcher;
    } catch {
      // No directory yet, or no watch available: the poll carries on alone.
    }
  }

  private unwatch(): void {
    try {
      this.watcher?.close();
    } catch {
      // closing a broken watcher
    }
    this.watcher = null;
  }

  /** Reads the directory once and answers every new request. Never throws. */
  scan(): void {
    if (this.stopped) return;
    if (this.scanning) {
      this.rescan = true;
      return;
    }
    this.scanning = true;
    try {
      do {
        this.rescan = false;
        let names: string[];
        try {
          names = fs.readdirSync(this.opts.dir).sort();
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.opts.log(`cannot list ${this.opts.dir}`, err);
          return;
        }
        for (const name of names) {
          if (this.stopped) return;
          const id = requestIdFromName(name);
          if (id === null || this.handled.has(id)) continue;
          if (fs.existsSync(this.ackPath(id))) {
            this.handled.add(id);
            continue;
          }
          this.handle(id, path.join(this.opts.dir, name));
        }
      } while (this.rescan && !this.stopped);
    } catch (err) {
      this.opts.log('control scan failed', err);
    } finally {
      this.scanning = false;
    }
  }

  private ackPath(id: string): string {
    return path.join(this.opts.dir, `${id}.ack.json`);
  }

  private handle(id: string, file: string): void {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(file);
    } catch {
      return; // vanished since the listing
    }
    const stat: RequestFileStat = { isSymbolicLink: st.isSymbolicLink(), isFile: st.isFile(), uid: st.uid, size: st.size };
    const readable =
      !stat.isSymbolicLink && stat.isFile && stat.size <= CONTROL_MAX_BYTES && (this.ownUid === null || stat.uid === this.ownUid);
    const bytes = readable ? this.readSmall(file, st) : null;
    const checked = checkRequestFile({ id, stat, bytes, ownUid: this.ownUid, session: this.opts.session, now: this.opts.now() });
    // Remember it first: whatever happens next, it is never applied twice.
    this.handled.add(id);
    let outcome: ActionOutcome;
    let action = checked.ok ? checked.request.action : checked.action;
    if (checked.ok) {
      try {
        outcome = this.opts.apply(checked.request);
      } catch (err) {
        this.opts.log(`applying ${checked.request.action} request ${id} failed`, err);
        outcome = { status: 'refused', detail: `the session could not apply it: ${err instanceof Error ? err.message : String(err)}` };
      }
    } else {
      outcome = { status: checked.status, detail: checked.detail };
      action = checked.action;
    }
    const ack: ControlAck = { v: 1, id, status: outcome.status, at: this.opts.now(), detail: outcome.detail };
    this.writeAck(ack);
    if (outcome.status !== 'applied') this.opts.log(`control request ${id} ${outcome.status}: ${outcome.detail}`);
    if (action) this.journal(id, action, ack);
    else this.opts.log(`control request ${id}: outcome not journalled, its action is unreadable`);
  }

  private readSmall(file: string, before: fs.Stats): Uint8Array | null {
    let fd: number | null = null;
    try {
      fd = fs.openSync(file, OPEN_FLAGS);
      const st = fs.fstatSync(fd);
      // The same plain file we lstat'd, not one swapped in between.
      if (!st.isFile() || st.ino !== before.ino || st.dev !== before.dev) return null;
      const buf = Buffer.alloc(CONTROL_MAX_BYTES + 1);
      let got = 0;
      while (got < buf.length) {
        const n = fs.readSync(fd, buf, got, buf.length - got, got);
        if (n === 0) break;
        got += n;
      }
      return buf.subarray(0, got);
    } catch (err) {
      this.opts.log(`cannot read control request ${file}`, err);
      return null;
    } finally {
      if (fd !== null) fs.closeSync(fd);
    }
  }

  private writeAck(ack: ControlAck): void {
    const parsed = controlAckSchema.safeParse(ack);
    if (!parsed.success) {
      this.opts.log(`ack for ${ack.id} does not match the contract; not written`, parsed.error);
      return;
    }
    try {
      writeFileAtomicSync(this.ackPath(ack.id), `${JSON.stringify(parsed.data)}\n`, { durable: true });
    } catch (err) {
      this.opts.log(`cannot write the ack of ${ack.id}`, err);
    }
  }

  private journal(id: string, action: ControlRequest['action'], ack: ControlAck): void {
    const entry = {
      v: 1 as const,
      at: ack.at,
      kind: 'outcome' as const,
      id,
      session: this.opts.session,
      action,
      status: ack.status,
      detail: ack.detail,
      // Producer of the line: the consumer's own record, beside the dashboard's.
      source: 'extension',
    };
    const parsed = journalEntrySchema.safeParse(entry);
    if (!parsed.success) {
      this.opts.log(`journal line for ${id} does not match the contract; not written`, parsed.error);
      return;
    }
    try {
      ensureDir(path.dirname(this.opts.journalFile));
      appendLineSync(this.opts.journalFile, JSON.stringify(parsed.data));
    } catch (err) {
      this.opts.log(`cannot append to ${this.opts.journalFile}`, err);
    }
  }
}
