/**
 * The loop's state log (SPEC §3.4): `<repo>/codex/state-<name>-loop<N>.jsonl`, one event per
 * line, read incrementally. Unknown `ev` names are kept without a warning (loop-pi adds events,
 * e.g. the unpublished resume record).
 */
import { z } from 'zod';
import type { StateLogEvent, Warning } from '../model/types.js';
import { keepStateLog, STATE_LOG_KEEP } from '../model/reducer.js';
import { isJsonObject } from './json-text.js';
import { JsonlFollower, type JsonlPosition } from './small-jsonl.js';
import { validateLenient } from './validate.js';

/** The fields every event carries; the rest of a line is kept in `raw`. */
export const stateLogLineSchema = z.looseObject({
  v: z.number().nullable().optional(),
  seq: z.number().int().nonnegative().nullable().optional(),
  ts: z.string().nullable().optional(),
  ev: z.string().min(1),
  by: z.string().nullable().optional(),
});

/** `YYYY-MM-DDTHH:MM:SSZ`; fractional seconds tolerated. */
const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z$/;

/** Epoch ms of a state-log `ts`, or null when it is not in the published format. */
export function parseStateLogTs(ts: string): number | null {
  if (!TS.test(ts)) return null;
  const ms = Date.parse(ts);
  return Number.isFinite(ms) ? ms : null;
}


/** An event that records a root resume: any `ev` whose name contains `resume` (not published yet). */
export function isResumeEvent(ev: string | { ev: string }): boolean {
  return (typeof ev === 'string' ? ev : ev.ev).toLowerCase().includes('resume');
}

/** Incremental reader of one state log. */
export class StateLogReader {
  private readonly follower: JsonlFollower;
  /**
   * The events read since the file was last (re)started, for the session cache: what the model
   * keeps of them (keepStateLog, reducer.ts) at least, at most STATE_LOG_KEEP more.
   */
  private events: StateLogEvent[] = [];
  /** How many events the last trim kept (STATE_LOG_KEEP until one has run). */
  private keptAfterTrim = STATE_LOG_KEEP;
  /** No line since then had a problem (only a clean log is remembered). */
  private clean = true;
  /** Read (or taken from the cache) at least once. */
  private startedReading = false;

  constructor(readonly file: string) {
    this.follower = new JsonlFollower(file);
  }

  /**
   * What the session cache may keep of this log (null: nothing, e.g. a line half written or one
   * with a problem): where reading stands and what the model keeps of a read of the whole log
   * (keepStateLog: the last STATE_LOG_KEEP events and older runs' dispatches). Its events may be
   * this reader's own list, to be copied, not kept.
   */
  remembered(): RememberedStateLog | null {
    const at = this.follower.position;
    if (!at || !this.clean) return null;
    return { ...at, events: keepStateLog(this.events) };
  }

  /**
   * Takes what an earlier run remembered as read (the caller checked that the file is the same
   * file, of the same size and mtime); returns its events, as a first read would have.
   */
  adopt(at: JsonlPosition, events: StateLogEvent[]): StateLogEvent[] {
    this.follower.resume(at);
    this.events = events.slice();
    this.keptAfterTrim = Math.max(STATE_LOG_KEEP, events.length);
    this.clean = true;
    this.startedReading = true;
    return events;
  }

  /** Read (or taken from the cache) at least once. */
  get started(): boolean {
    return this.startedReading;
  }

  /** Bytes of a torn last line waiting for its newline (0 when none). */
  get pendingBytes(): number {
    return this.follower.pendingBytes;
  }

  /** Events appended since the last call; `reset` when the file shrank, was replaced or vanished. */
  async update(): Promise<{ events: StateLogEvent[]; reset: boolean; missing: boolean; warnings: Warning[] }> {
    const r = await this.follower.update();
    this.startedReading = true;
    if (r.reset || r.missing) {
      this.events = [];
      this.keptAfterTrim = STATE_LOG_KEEP;
      this.clean = true;
    }
    const warnings = [...r.warnings];
    const events: StateLogEvent[] = [];
    for (const { line, offset, value } of r.lines) {
      const { data, warnings: w } = validateLenient(stateLogLineSchema, value, this.file, line);
      for (const x of w) warnings.push({ ...x, offset });
      if (data === null || !isJsonObject(value)) continue;
      let at: number | null = null;
      if (typeof data.ts === 'string') {
        at = parseStateLogTs(data.ts);
        if (at === null) {
          warnings.push({ file: this.file, line, offset, message: `ts: expected YYYY-MM-DDTHH:MM:SSZ, got ${JSON.stringify(data.ts.slice(0, 40))}`, severity: 'error' });
        }
      }
      events.push({ file: this.file, line, seq: data.seq ?? null, at, ev: data.ev, by: data.by ?? null, raw: value });
      // (stateLogEventOf gives the same from the line's JSON alone, for a line read without a warning.)
    }
    if (warnings.length > 0) this.clean = false;
    for (const e of events) this.events.push(e);
    // Trimmed once STATE_LOG_KEEP more have come since the last trim (what is kept can itself pass
    // 2 × STATE_LOG_KEEP with many runs' dispatches: not trimmed again at every line).
    if (this.events.length > this.keptAfterTrim + STATE_LOG_KEEP) {
      this.events = keepStateLog(this.events);
      this.keptAfterTrim = this.events.length;
    }
    return { events, reset: r.reset, missing: r.missing, warnings };
  }
}

/**
 * The event a line read without a warning gives (StateLogReader.update), from the line's JSON
 * alone: its validated fields are the JSON's own then. The session cache keeps only line and JSON.
 */
export function stateLogEventOf(file: string, line: number, raw: Record<string, unknown>): StateLogEvent {
  const ts = raw.ts;
  return {
    file,
    line,
    seq: (raw.seq as number | null | undefined) ?? null,
    at: typeof ts === 'string' ? parseStateLogTs(ts) : null,
    ev: raw.ev as string,
    by: (raw.by as string | null | undefined) ?? null,
    raw,
  };
}

/** A state log as read: where reading stands and what the model keeps of its events (keepStateLog). */
export interface RememberedStateLog extends JsonlPosition {
  events: StateLogEvent[];
}
