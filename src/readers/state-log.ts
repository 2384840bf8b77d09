/**
 * The loop's state log (SPEC §3.4): `<repo>/codex/state-<name>-loop<N>.jsonl`, one event per
 * line, read incrementally. Unknown `ev` names are kept without a warning (loop-pi adds events,
 * e.g. the unpublished resume record).
 */
import path from 'node:path';
import { z } from 'zod';
import { stateLogPathFromReport } from '../contract/paths.js';
import type { StateLogEvent, Warning } from '../model/types.js';
import { isJsonObject } from './json-text.js';
import { JsonlFollower } from './small-jsonl.js';
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

/** The state log beside a root's `launch.report`; a relative report is taken from `cwd`. */
export function stateLogPathFor(report: string, cwd?: string): string {
  const absolute = cwd !== undefined && !path.isAbsolute(report) ? path.resolve(cwd, report) : report;
  return stateLogPathFromReport(absolute);
}

/** An event that records a root resume: any `ev` whose name contains `resume` (not published yet). */
export function isResumeEvent(ev: string | { ev: string }): boolean {
  return (typeof ev === 'string' ? ev : ev.ev).toLowerCase().includes('resume');
}

/** Incremental reader of one state log. */
export class StateLogReader {
  private readonly follower: JsonlFollower;

  constructor(readonly file: string) {
    this.follower = new JsonlFollower(file);
  }

  /** Bytes of a torn last line waiting for its newline (0 when none). */
  get pendingBytes(): number {
    return this.follower.pendingBytes;
  }

  /** Events appended since the last call; `reset` when the file shrank, was replaced or vanished. */
  async update(): Promise<{ events: StateLogEvent[]; reset: boolean; missing: boolean; warnings: Warning[] }> {
    const r = await this.follower.update();
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
    }
    return { events, reset: r.reset, missing: r.missing, warnings };
  }
}
