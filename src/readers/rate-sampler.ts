/**
 * Measures per-model generation rates from pi session files for `loop-dash audit` (SPEC §8).
 *
 * A call is one assistant message. Its start is the checkpoint's recorded request start when one
 * matches, else the time of the conversation entry before it; its end is when pi persisted it
 * (the later of the entry's own `timestamp` and the message's epoch-ms `timestamp` — pi-ai stamps
 * the message when the request starts and the session entry when it ends, so the later one is the
 * end in either writer's convention). With `loopPiTiming.firstTokenAt` the time to first token is
 * measured and the rate runs over the generation only (first token → end), so the bound's
 * `+ time to first token` is not counted twice; without it the rate runs over the whole call,
 * which can only make it slower (the safe side).
 *
 * Only the last `tailBytes` of each file are read (these files can be hundreds of MB), and at most
 * `totalBytes` in all, newest files first.
 */
import { open, stat } from 'node:fs/promises';
import { z } from 'zod';
import {
  COUNTED_STOP_REASONS,
  DEFAULT_MIN_OUTPUT,
  modelLabel,
  type ExcludedSummary,
  type ModelRateInput,
  type SampledSummary,
} from '../model/audit.js';
import type { CheckpointRecord, Warning } from '../model/types.js';
import { walkHome } from './home-walk.js';
import { parseJsonText } from './json-text.js';
import { LineAssembler } from './line-assembler.js';
import { readAt, type ReadCounter } from './read-counter.js';
import { parseSessionEntry, type SessionEntry } from './session-entry.js';
import { parseSessionPath, sessionIdFromName } from './session-path.js';
import { epochMsFrom } from './time-value.js';

/** 8 MiB: how much of the end of each session file is read. */
export const DEFAULT_SAMPLE_BYTES = 8 * 1024 * 1024;
/** 256 MiB: the most one audit reads in all; the newest files are read first. */
export const DEFAULT_TOTAL_SAMPLE_BYTES = 256 * 1024 * 1024;
/** Read in pieces of this size, so a big window never needs one big buffer. */
const CHUNK_BYTES = 1024 * 1024;
/** Nesting bound for a session line (as the session reader uses). */
const SESSION_JSON_MAX_DEPTH = 256;
/** A checkpoint's recorded request matches a message that ended within this of its `endedAt`. */
const CHECKPOINT_END_SLACK_MS = 5_000;
/** Bad-line warnings kept per file; the rest are counted in one more warning. */
const MAX_WARNINGS_PER_FILE = 20;

/** Why a call does not count for a rate. */
export type ExclusionReason =
  | 'error'
  | 'aborted'
  | 'retried'
  | 'below-min-output'
  | 'no-usage'
  | 'no-start'
  | 'bad-duration'
  | 'other-stop-reason'
  | 'no-model';

/** One call that counts. Times are epoch ms. */
export interface MeasuredCall {
  provider: string | null;
  id: string;
  file: string;
  /** 1-based line, or null when the window began mid-file. */
  line: number | null;
  offset: number;
  startedAt: number;
  endedAt: number;
  startSource: 'checkpoint' | 'previous-entry';
  firstTokenMs: number | null;
  /** The span the rate is measured over: first token → end when known, else the whole call. */
  generationMs: number;
  outputTokens: number;
  tokPerS: number;
  stopReason: string;
}

/** One model's sample. */
export interface ModelSample extends ModelRateInput {
  calls: MeasuredCall[];
  /** Calls with a measured time to first token (any successful, non-retried call). */
  firstTokenCalls: number;
}

/** What was read of one session file. */
export interface SessionSampleFile {
  file: string;
  sessionId: string;
  role: 'root' | 'lane';
  runId: string | null;
  size: number;
  /** The window began here (0 = the whole file was read). */
  fromOffset: number;
  sampledBytes: number;
  /** Every model named in the window (assistant messages of any outcome, model changes). */
  models: { provider: string | null; id: string }[];
}

/** The outcome of sampling a home. */
export interface RateSample {
  minOutput: number;
  models: ModelSample[];
  excluded: ExcludedSummary;
  files: SessionSampleFile[];
  sampled: SampledSummary;
  warnings: Warning[];
}

/** Options of {@link sampleRates}. */
export interface RateSamplerOptions {
  minOutput?: number;
  /** At most this many bytes from the end of each file (default 8 MiB). */
  tailBytes?: number;
  /** At most this many bytes in all (default 256 MiB): files are read newest first, the rest skipped. */
  totalBytes?: number;
  /** Session files to read; default: every session file `walkHome` finds. */
  files?: string[];
  /** Checkpoints whose recorded request starts refine the start of a call. */
  checkpoints?: readonly CheckpointRecord[];
  counter?: ReadCounter;
}

/** The request a checkpoint recorded (`lastRequest` is the producer's extra; `request` the contract's). */
interface RecordedRequest {
  startedAt: number;
  endedAt: number | null;
}

const recordedRequestSchema = z.looseObject({ startedAt: z.number().finite(), endedAt: z.number().finite().nullish() });

/** The fields the shared entry parser does not keep. */
const rawExtrasSchema = z.looseObject({
  message: z
    .looseObject({
      timestamp: z.number().finite().nullish(),
      loopPiTiming: z
        .looseObject({ firstTokenAt: z.union([z.number(), z.string()]).nullish(), attempts: z.number().finite().nullish() })
        .nullish(),
    })
    .nullish(),
});

/**
 * Entry types that belong to the conversation and are written between requests: the entry before
 * an assistant message of one of these is its request's start. Extension state (`custom`), labels
 * and the like can be written while a request runs, so they are passed over — an earlier start
 * can only make a rate slower.
 */
const CONVERSATION_TYPES = new Set(['session', 'message', 'assistant', 'custom_message', 'model_change', 'thinking_level_change', 'compaction', 'branch_summary']);

function conversational(entry: SessionEntry): boolean {
  return entry.type === 'other' ? CONVERSATION_TYPES.has(entry.entryType) : CONVERSATION_TYPES.has(entry.type);
}

/** Per-file state of the measurement, fed one line at a time. Pure. */
export class CallMeasurer {
  readonly calls: MeasuredCall[] = [];
  readonly excluded: { provider: string | null; id: string | null; reason: ExclusionReason }[] = [];
  /** Successful, non-retried calls' time to first token, per model label. */
  readonly firstTokens: { provider: string | null; id: string; ms: number }[] = [];
  readonly models = new Map<string, { provider: string | null; id: string }>();
  private prevAt: number | null = null;
  private prevWasError = false;
  private currentModel: { provider: string | null; id: string } | null = null;

  constructor(
    private readonly file: string,
    private readonly minOutput: number,
    private readonly recorded: readonly RecordedRequest[],
  ) {}

  /** Feeds one parsed line (`raw` is the decoded JSON the entry came from). */
  push(entry: SessionEntry, raw: unknown, line: number | null, offset: number): void {
    const extras = rawExtrasSchema.safeParse(raw);
    const message = extras.success ? extras.data.message : null;
    const messageAt = message?.timestamp ?? null;
    const endAt = maxOrNull(entry.at, messageAt);

    if (entry.type === 'model_change') {
      // A model switched to is in use from here (its request may still be in flight): it gets rows.
      this.currentModel = { provider: entry.provider, id: entry.modelId };
      this.models.set(modelLabel(this.currentModel), this.currentModel);
    }
    if (entry.type === 'assistant') this.measure(entry, message ?? null, endAt, line, offset);

    if (entry.type === 'assistant') this.prevWasError = entry.value.stopReason === 'error';
    else if (entry.type === 'message' || entry.type === 'custom_message') this.prevWasError = false;
    if (conversational(entry) && endAt !== null) this.prevAt = endAt;
  }

  private measure(
    entry: Extract<SessionEntry, { type: 'assistant' }>,
    message: z.infer<typeof rawExtrasSchema>['message'] | null,
    endAt: number | null,
    line: number | null,
    offset: number,
  ): void {
    const m = entry.value;
    const model = m.model ? { provider: m.provider ?? null, id: m.model } : this.currentModel;
    if (model) {
      this.models.set(modelLabel(model), model);
      this.currentModel = model;
    }
    const exclude = (reason: ExclusionReason): void => {
      this.excluded.push({ provider: model?.provider ?? null, id: model?.id ?? null, reason });
    };
    const stop = m.stopReason ?? '';
    if (stop === 'error') return exclude('error');
    if (stop === 'aborted') return exclude('aborted');
    if (!COUNTED_STOP_REASONS.includes(stop)) return exclude('other-stop-reason');
    if (!model) return exclude('no-model');
    // A retried request: the attempt before it failed (pi persists each attempt), or loop-pi counted attempts.
    const attempts = message?.loopPiTiming?.attempts ?? null;
    if (this.prevWasError || (attempts !== null && attempts > 1)) return exclude('retried');

    const recorded = endAt === null ? null : this.matchRecorded(this.prevAt, endAt);
    const startedAt = recorded?.startedAt ?? this.prevAt;
    if (startedAt === null || endAt === null) return exclude('no-start');
    const durationMs = endAt - startedAt;
    if (!(durationMs > 0)) return exclude('bad-duration');

    const firstTokenAt = epochMsFrom(message?.loopPiTiming?.firstTokenAt ?? null);
    const ttftUsable = firstTokenAt !== null && firstTokenAt >= startedAt && firstTokenAt < endAt;
    const firstTokenMs = ttftUsable ? firstTokenAt - startedAt : null;
    if (firstTokenMs !== null) this.firstTokens.push({ ...model, ms: firstTokenMs });

    const output = m.usage?.output;
    if (typeof output !== 'number' || !Number.isFinite(output)) return exclude('no-usage');
    if (output < this.minOutput) return exclude('below-min-output');
    const generationMs = ttftUsable ? endAt - firstTokenAt : durationMs;
    this.calls.push({
      provider: model.provider,
      id: model.id,
      file: this.file,
      line,
      offset,
      startedAt,
      endedAt: endAt,
      startSource: recorded ? 'checkpoint' : 'previous-entry',
      firstTokenMs,
      generationMs,
      outputTokens: output,
      tokPerS: output / (generationMs / 1000),
      stopReason: stop,
    });
  }

  /** The checkpoint's record of this request: it ended with the message and started after the entry before it. */
  private matchRecorded(prevAt: number | null, endAt: number): RecordedRequest | null {
    for (const r of this.recorded) {
      if (r.endedAt === null || Math.abs(r.endedAt - endAt) > CHECKPOINT_END_SLACK_MS) continue;
      if (r.startedAt > endAt) continue;
      if (prevAt !== null && r.startedAt < prevAt - 1000) continue;
      return r;
    }
    return null;
  }
}

function maxOrNull(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}

/** The requests each checkpoint recorded, by session id and by session file. */
function recordedBySession(checkpoints: readonly CheckpointRecord[]): Map<string, RecordedRequest[]> {
  const out = new Map<string, RecordedRequest[]>();
  const add = (key: string | null | undefined, r: RecordedRequest) => {
    if (!key) return;
    const list = out.get(key) ?? [];
    list.push(r);
    out.set(key, list);
  };
  for (const c of checkpoints) {
    const cp = c.checkpoint as Record<string, unknown>;
    for (const field of ['lastRequest', 'request']) {
      const r = recordedRequestSchema.safeParse(cp[field]);
      if (!r.success) continue;
      const rec = { startedAt: r.data.startedAt, endedAt: r.data.endedAt ?? null };
      add(c.checkpoint.session, rec);
      if (c.checkpoint.sessionFile) add(`file:${c.checkpoint.sessionFile}`, rec);
    }
  }
  return out;
}

/** Reads the window of one file into a measurer. Never throws: a read failure becomes a warning. */
async function sampleFile(
  file: string,
  home: string,
  opts: { minOutput: number; tailBytes: number; recorded: Map<string, RecordedRequest[]>; counter?: ReadCounter },
): Promise<{ info: SessionSampleFile; measurer: CallMeasurer; warnings: Warning[] } | { info: null; warnings: Warning[] }> {
  const warnings: Warning[] = [];
  const parsedPath = parseSessionPath(home, file);
  const sessionId = parsedPath?.sessionId ?? sessionIdFromName(file.split(/[\\/]/).pop() ?? file);
  const recorded = [...(opts.recorded.get(sessionId) ?? []), ...(opts.recorded.get(`file:${file}`) ?? [])];
  const measurer = new CallMeasurer(file, opts.minOutput, recorded);
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    return { info: null, warnings: [{ file, line: null, message: `cannot open: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, severity: 'error' }] };
  }
  let bad = 0;
  let size = 0;
  let from = 0;
  try {
    size = (await handle.stat()).size;
    from = Math.max(0, size - opts.tailBytes);
    const assembler = new LineAssembler();
    // A window that starts mid-file drops its first (partial) line: a cut, not data.
    assembler.reset(from, { discardFirst: from > 0 });
    for (let pos = from; pos < size; pos += CHUNK_BYTES) {
      const chunk = await readAt(handle, pos, Math.min(CHUNK_BYTES, size - pos), opts.counter);
      if (chunk.length === 0) break;
      for (const l of assembler.push(chunk)) {
        const warn = (message: string) => {
          bad++;
          if (bad <= MAX_WARNINGS_PER_FILE) warnings.push({ file, line: l.line, message, offset: l.offset, severity: 'error' });
        };
        if (l.tooLong !== undefined) {
          warn(`line too long (${l.tooLong} bytes) at offset ${l.offset}; skipped`);
          continue;
        }
        const json = parseJsonText(l.text, SESSION_JSON_MAX_DEPTH);
        if (!json.ok) {
          warn(json.message);
          continue;
        }
        const parsed = parseSessionEntry(json.value);
        if (!parsed.ok) {
          warn(parsed.error);
          continue;
        }
        measurer.push(parsed.entry, json.value, l.line, l.offset);
      }
    }
    // A partial last line is a request still being written: not a call yet.
  } catch (err) {
    warnings.push({ file, line: null, message: `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, severity: 'error' });
  } finally {
    await handle.close().catch(() => undefined);
  }
  if (bad > MAX_WARNINGS_PER_FILE) warnings.push({ file, line: null, message: `${bad - MAX_WARNINGS_PER_FILE} more bad lines`, severity: 'error' });
  return {
    info: {
      file,
      sessionId,
      role: parsedPath?.role ?? 'root',
      runId: parsedPath?.runId ?? null,
      size,
      fromOffset: from,
      sampledBytes: size - from,
      models: [...measurer.models.values()],
    },
    measurer,
    warnings,
  };
}

/**
 * Samples the session files of `home` (the last `tailBytes` of each) and returns, per model, the
 * rates of the calls that count, the longest time to first token, and what was left out and why.
 */
export async function sampleRates(home: string, opts: RateSamplerOptions = {}): Promise<RateSample> {
  const minOutput = opts.minOutput ?? DEFAULT_MIN_OUTPUT;
  const tailBytes = Math.max(1, Math.floor(opts.tailBytes ?? DEFAULT_SAMPLE_BYTES));
  const files = opts.files ?? (await walkHome(home)).files.filter((f) => f.kind === 'session').map((f) => f.file);
  const recorded = recordedBySession(opts.checkpoints ?? []);
  const warnings: Warning[] = [];
  const infos: SessionSampleFile[] = [];
  const byModel = new Map<string, ModelSample>();
  const reasons: Record<string, number> = {};
  const modelEntry = (provider: string | null, id: string): ModelSample => {
    const label = modelLabel({ provider, id });
    let s = byModel.get(label);
    if (!s) {
      s = { provider, id, calls: [], tokPerS: [], firstTokenMs: null, firstTokenCalls: 0, excluded: {} };
      byModel.set(label, s);
    }
    return s;
  };
  const totalBytes = Math.max(1, Math.floor(opts.totalBytes ?? DEFAULT_TOTAL_SAMPLE_BYTES));
  // Newest first, so a spent budget leaves out the oldest sessions, not the recent calls.
  const stated = await Promise.all(files.map(async (file) => ({ file, mtimeMs: (await stat(file).catch(() => null))?.mtimeMs ?? 0 })));
  stated.sort((a, b) => b.mtimeMs - a.mtimeMs || a.file.localeCompare(b.file));
  let budget = totalBytes;
  let skipped = 0;
  for (const { file } of stated) {
    if (budget <= 0) {
      skipped += 1;
      continue;
    }
    const r = await sampleFile(file, home, { minOutput, tailBytes: Math.min(tailBytes, budget), recorded, counter: opts.counter });
    if (r.info !== null) budget -= r.info.sampledBytes;
    warnings.push(...r.warnings);
    if (r.info === null) continue;
    infos.push(r.info);
    const m = r.measurer;
    for (const model of m.models.values()) modelEntry(model.provider, model.id);
    for (const call of m.calls) {
      const s = modelEntry(call.provider, call.id);
      s.calls.push(call);
      s.tokPerS.push(call.tokPerS);
    }
    for (const t of m.firstTokens) {
      const s = modelEntry(t.provider, t.id);
      s.firstTokenMs = Math.max(s.firstTokenMs ?? 0, t.ms);
      s.firstTokenCalls += 1;
    }
    for (const e of m.excluded) {
      reasons[e.reason] = (reasons[e.reason] ?? 0) + 1;
      if (e.id !== null) {
        const s = modelEntry(e.provider, e.id);
        s.excluded[e.reason] = (s.excluded[e.reason] ?? 0) + 1;
      }
    }
  }
  const total = Object.values(reasons).reduce((a, b) => a + b, 0);
  return {
    minOutput,
    models: [...byModel.values()].sort((a, b) => modelLabel(a).localeCompare(modelLabel(b))),
    excluded: { total, reasons },
    files: infos,
    sampled: {
      files: infos.length,
      filesCut: infos.filter((f) => f.fromOffset > 0).length,
      filesSkipped: skipped,
      bytesSampled: infos.reduce((s, f) => s + f.sampledBytes, 0),
      bytesTotal: infos.reduce((s, f) => s + f.size, 0),
      tailBytes,
      totalBytes,
    },
    warnings,
  };
}
