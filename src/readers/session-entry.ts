/**
 * pi session entries (SPEC §3.1): tolerant zod schemas at the boundary and a pure fold of parsed
 * entries into `SessionFileFacts`. Unknown entry types and unknown fields pass; a known entry or
 * known loop-pi state whose fields have the wrong type is rejected (the caller warns and keeps the
 * last good state).
 */
import { isEpochMs } from '../contract/epoch.js';
import path from 'node:path';
import { z } from 'zod';
import type {
  AssistantOutcome,
  ContinuationState,
  DashControlEntry,
  LoopTimer,
  LoopWatcher,
  SessionFileFacts,
  SessionHistoryItem,
  WaitState,
} from '../model/types.js';
import { sessionIdFromName, type SessionPathInfo } from './session-path.js';
import { epochMsFrom } from './time-value.js';
import { safeParseFast } from './fast-accept.js';
import { describeIssues } from './validate.js';

/** How many loop events a session keeps for the detail pane. */
export const HISTORY_LIMIT = 50;

/** loop-pi custom entry types we fold (SPEC §3.1, §4.3). */
export const CONTINUATION_STATE = 'loop-continuation-state';
export const WAIT_STATE = 'loop-wait-state';
export const DASH_CONTROL = 'loop-dash-control';

const str = z.string();
const num = z.number().finite();
/** An ISO string or epoch ms (both occur in loop-pi data). */
const timeValue = z.union([str, num]);
const idValue = z.union([str, num]);

export const sessionHeaderSchema = z.looseObject({
  type: z.literal('session'),
  version: num.optional(),
  id: str,
  timestamp: str.optional(),
  cwd: str.optional(),
  parentSession: str.nullish(),
});

const entryBaseSchema = z.looseObject({
  type: str,
  id: str.nullish(),
  parentId: str.nullish(),
  timestamp: timeValue.nullish(),
});

const messageEntrySchema = z.looseObject({
  type: z.literal('message'),
  message: z.looseObject({ role: str }),
});

const loopPiRecoverySchema = z.looseObject({
  code: idValue.nullish(),
  status: num.nullish(),
  disposition: str.nullish(),
  reason: str.nullish(),
});

export const assistantMessageSchema = z.looseObject({
  role: z.literal('assistant'),
  provider: str.nullish(),
  model: str.nullish(),
  stopReason: str.nullish(),
  errorMessage: str.nullish(),
  usage: z.looseObject({ output: num.nullish() }).nullish(),
  timestamp: num.nullish(),
  loopPiRecovery: loopPiRecoverySchema.nullish(),
});

const customEntrySchema = z.looseObject({ type: z.literal('custom'), customType: str, data: z.unknown().optional() });
const customMessageEntrySchema = z.looseObject({
  type: z.literal('custom_message'),
  customType: str,
  content: z.unknown(),
  // Optional in pi's format (SPEC §3.1: `details?`); zod 4 makes an unknown() key required.
  details: z.unknown().optional(),
});
const modelChangeEntrySchema = z.looseObject({ type: z.literal('model_change'), provider: str.nullish(), modelId: str });
const thinkingEntrySchema = z.looseObject({ type: z.literal('thinking_level_change'), thinkingLevel: str });
const sessionInfoEntrySchema = z.looseObject({ type: z.literal('session_info'), name: str.nullish() });

export const continuationDataSchema = z.looseObject({
  armed: z.boolean().nullish(),
  launch: z
    .looseObject({ report: str.nullish(), loop: idValue.nullish(), launchTs: timeValue.nullish() })
    .nullish(),
  nudgeCount: num.nullish(),
});

export const waitDataSchema = z.looseObject({
  timers: z.array(z.looseObject({ id: idValue, at: timeValue.nullish(), reason: str.nullish() })).nullish(),
  watchers: z
    .array(
      z.looseObject({
        id: idValue,
        label: str.nullish(),
        pid: num.nullish(),
        phase: str.nullish(),
        command: str.nullish(),
        deadline: timeValue.nullish(),
        interval_s: num.nullish(),
      }),
    )
    .nullish(),
  heldMessages: z.array(z.unknown()).nullish(),
});

export const dashControlDataSchema = z.looseObject({ held: z.boolean(), by: str.nullish(), reason: str.nullish() });

const incidentDetailsSchema = z.looseObject({
  kind: str.nullish(),
  limit: str.nullish(),
  attempt: num.nullish(),
  exhausted: z.boolean().nullish(),
  elapsedMs: num.nullish(),
});
const exhaustedDetailsSchema = z.looseObject({ episodeMs: num.nullish() });

/** Every schema a session line is validated with (through the fast accept path; its test checks each). */
export const SESSION_ENTRY_SCHEMAS = {
  entryBaseSchema,
  sessionHeaderSchema,
  messageEntrySchema,
  assistantMessageSchema,
  customEntrySchema,
  customMessageEntrySchema,
  modelChangeEntrySchema,
  thinkingEntrySchema,
  sessionInfoEntrySchema,
  continuationDataSchema,
  waitDataSchema,
  dashControlDataSchema,
  incidentDetailsSchema,
  exhaustedDetailsSchema,
} as const;

type Base = z.infer<typeof entryBaseSchema>;

/** A validated session line. `other` is any entry type we do not fold (kept, ignored). */
export type SessionEntry =
  | { type: 'session'; at: number | null; value: z.infer<typeof sessionHeaderSchema> }
  | { type: 'assistant'; at: number | null; value: z.infer<typeof assistantMessageSchema> }
  | { type: 'message'; at: number | null; role: string }
  | { type: 'continuation'; at: number | null; value: z.infer<typeof continuationDataSchema> }
  | { type: 'wait'; at: number | null; value: z.infer<typeof waitDataSchema> }
  | { type: 'dash-control'; at: number | null; value: z.infer<typeof dashControlDataSchema> }
  | { type: 'custom'; at: number | null; customType: string }
  | { type: 'custom_message'; at: number | null; customType: string; content: unknown; details: unknown }
  | { type: 'model_change'; at: number | null; provider: string | null; modelId: string }
  | { type: 'thinking_level_change'; at: number | null; thinkingLevel: string }
  | { type: 'session_info'; at: number | null; name: string | null }
  | { type: 'other'; at: number | null; entryType: string };

/** `{entry}` for a usable line, `{error}` (a one-line reason with the zod path) otherwise. */
export type ParseEntryResult = { ok: true; entry: SessionEntry } | { ok: false; error: string };

/** Validates one decoded JSON value from a session file. */
export function parseSessionEntry(value: unknown): ParseEntryResult {
  const base = safeParseFast(entryBaseSchema, value);
  if (!base.success) return fail(base.error);
  const at = epochMsFrom(base.data.timestamp);
  const v = base.data;
  switch (v.type) {
    case 'session': {
      const r = safeParseFast(sessionHeaderSchema, v);
      return r.success ? ok({ type: 'session', at, value: r.data }) : fail(r.error);
    }
    case 'message':
      return parseMessage(v, at);
    case 'custom':
      return parseCustom(v, at);
    case 'custom_message': {
      const r = safeParseFast(customMessageEntrySchema, v);
      if (!r.success) return fail(r.error);
      return ok({ type: 'custom_message', at, customType: r.data.customType, content: r.data.content, details: r.data.details });
    }
    case 'model_change': {
      const r = safeParseFast(modelChangeEntrySchema, v);
      return r.success ? ok({ type: 'model_change', at, provider: r.data.provider ?? null, modelId: r.data.modelId }) : fail(r.error);
    }
    case 'thinking_level_change': {
      const r = safeParseFast(thinkingEntrySchema, v);
      return r.success ? ok({ type: 'thinking_level_change', at, thinkingLevel: r.data.thinkingLevel }) : fail(r.error);
    }
    case 'session_info': {
      const r = safeParseFast(sessionInfoEntrySchema, v);
      return r.success ? ok({ type: 'session_info', at, name: r.data.name ?? null }) : fail(r.error);
    }
    default:
      return ok({ type: 'other', at, entryType: v.type });
  }
}

function parseMessage(v: Base, at: number | null): ParseEntryResult {
  const r = safeParseFast(messageEntrySchema, v);
  if (!r.success) return fail(r.error);
  if (r.data.message.role !== 'assistant') return ok({ type: 'message', at, role: r.data.message.role });
  const a = safeParseFast(assistantMessageSchema, r.data.message);
  if (!a.success) return fail(a.error, ['message']);
  return ok({ type: 'assistant', at, value: a.data });
}

function parseCustom(v: Base, at: number | null): ParseEntryResult {
  const r = safeParseFast(customEntrySchema, v);
  if (!r.success) return fail(r.error);
  const { customType, data } = r.data;
  switch (customType) {
    case CONTINUATION_STATE: {
      const d = safeParseFast(continuationDataSchema, data);
      return d.success ? ok({ type: 'continuation', at, value: d.data }) : fail(d.error, ['data'], customType);
    }
    case WAIT_STATE: {
      const d = safeParseFast(waitDataSchema, data);
      return d.success ? ok({ type: 'wait', at, value: d.data }) : fail(d.error, ['data'], customType);
    }
    case DASH_CONTROL: {
      const d = safeParseFast(dashControlDataSchema, data);
      return d.success ? ok({ type: 'dash-control', at, value: d.data }) : fail(d.error, ['data'], customType);
    }
    default:
      return ok({ type: 'custom', at, customType });
  }
}

const ok = (entry: SessionEntry): ParseEntryResult => ({ ok: true, entry });

function fail(error: z.ZodError, prefix: PropertyKey[] = [], what?: string): ParseEntryResult {
  const issues = error.issues.map((i) => ({ ...i, path: [...prefix, ...i.path] }));
  return { ok: false, error: `${what ? `${what}: ` : ''}${describeIssues(issues, 3)}` };
}

/** Facts for a session file before any line was read. */
export function emptySessionFacts(home: string, file: string, parsedPath: SessionPathInfo | null): SessionFileFacts {
  return {
    file,
    home,
    sessionId: parsedPath?.sessionId ?? sessionIdFromName(path.basename(file)),
    role: parsedPath?.role ?? 'root',
    rootFile: parsedPath?.rootFile ?? null,
    runId: parsedPath?.runId ?? null,
    header: null,
    name: null,
    model: null,
    thinking: null,
    lastEntryAt: null,
    lastAssistant: null,
    continuation: null,
    waitState: null,
    dashControl: null,
    history: [],
    incompleteSince: null,
    size: 0,
    mtimeMs: 0,
  };
}

/** Where an entry came from (for history and diagnostics). */
export interface EntryMeta {
  line: number | null;
  offset: number;
}

/** Folds one parsed entry into the facts; returns a new object (the input is not modified). */
export function foldSessionEntry(facts: SessionFileFacts, entry: SessionEntry, _meta: EntryMeta): SessionFileFacts {
  const next: SessionFileFacts = { ...facts };
  if (entry.at !== null) {
    next.lastEntryAt = next.lastEntryAt === null ? entry.at : Math.max(next.lastEntryAt, entry.at);
  }
  switch (entry.type) {
    case 'session': {
      const h = entry.value;
      next.header = { id: h.id, timestamp: entry.at, cwd: h.cwd ?? null, parentSession: h.parentSession ?? null };
      next.sessionId = h.id;
      return next;
    }
    case 'assistant': {
      const m = entry.value;
      // pi's own epoch ms, when it is one (contract/epoch.ts); else the entry's ISO time.
      const at = isEpochMs(m.timestamp) ? m.timestamp : entry.at;
      const r = m.loopPiRecovery;
      const outcome: AssistantOutcome = {
        at,
        stopReason: m.stopReason ?? null,
        errorMessage: m.errorMessage ?? null,
        provider: m.provider ?? null,
        model: m.model ?? null,
        outputTokens: m.usage?.output ?? null,
        recovery: r
          ? {
              code: r.code === null || r.code === undefined ? null : String(r.code),
              status: r.status ?? null,
              disposition: r.disposition ?? null,
              reason: r.reason ?? null,
            }
          : null,
      };
      next.lastAssistant = outcome;
      if (m.model) next.model = { provider: m.provider ?? null, id: m.model };
      const item = assistantHistoryItem(outcome);
      if (item) next.history = pushHistory(facts.history, item);
      return next;
    }
    case 'continuation': {
      const d = entry.value;
      const continuation: ContinuationState = {
        at: entry.at,
        armed: d.armed ?? null,
        launch: d.launch
          ? {
              report: d.launch.report ?? null,
              loop: d.launch.loop === null || d.launch.loop === undefined ? null : String(d.launch.loop),
              launchTs: d.launch.launchTs ?? null,
            }
          : null,
        nudgeCount: d.nudgeCount ?? null,
        raw: d,
      };
      next.continuation = continuation;
      return next;
    }
    case 'wait': {
      const d = entry.value;
      const timers: LoopTimer[] = (d.timers ?? []).map((t) => ({ id: String(t.id), at: epochMsFrom(t.at), reason: t.reason ?? null }));
      const watchers: LoopWatcher[] = (d.watchers ?? []).map((w) => ({
        id: String(w.id),
        label: w.label ?? null,
        pid: w.pid ?? null,
        phase: w.phase ?? null,
        command: w.command ?? null,
        deadline: epochMsFrom(w.deadline),
        intervalS: w.interval_s ?? null,
      }));
      const waitState: WaitState = { at: entry.at, timers, watchers, heldMessages: d.heldMessages ?? null };
      next.waitState = waitState;
      return next;
    }
    case 'dash-control': {
      const d = entry.value;
      const dashControl: DashControlEntry = { at: entry.at, held: d.held, by: d.by ?? null, reason: d.reason ?? null, raw: d };
      next.dashControl = dashControl;
      return next;
    }
    case 'custom_message': {
      const item = customMessageHistoryItem(entry.customType, entry.at, entry.content, entry.details);
      if (item) next.history = pushHistory(facts.history, item);
      return next;
    }
    case 'model_change':
      next.model = { provider: entry.provider, id: entry.modelId };
      return next;
    case 'thinking_level_change':
      next.thinking = entry.thinkingLevel;
      return next;
    case 'session_info':
      next.name = entry.name;
      return next;
    case 'message':
    case 'custom':
    case 'other':
      return next;
    default: {
      const never: never = entry;
      return never;
    }
  }
}

function pushHistory(history: SessionHistoryItem[], item: SessionHistoryItem): SessionHistoryItem[] {
  const out = history.length >= HISTORY_LIMIT ? history.slice(history.length - HISTORY_LIMIT + 1) : history.slice();
  out.push(item);
  return out;
}

function assistantHistoryItem(o: AssistantOutcome): SessionHistoryItem | null {
  const kind =
    o.stopReason === 'error' ? 'assistant-error' : o.stopReason === 'aborted' ? 'assistant-aborted' : o.stopReason === 'length' ? 'assistant-length' : null;
  if (kind === null) return null;
  const who = o.model ? `${o.provider ? `${o.provider}/` : ''}${o.model}` : null;
  const parts = [o.stopReason === 'length' ? 'length stop' : o.stopReason ?? ''];
  if (who) parts.push(who);
  if (o.stopReason === 'length' && o.outputTokens !== null) parts.push(`${o.outputTokens} output tokens`);
  if (o.errorMessage) parts.push(o.errorMessage);
  if (o.recovery?.disposition) parts.push(`recovery: ${o.recovery.disposition}${o.recovery.reason ? ` (${o.recovery.reason})` : ''}`);
  return { at: o.at, kind, summary: oneLine(parts.join(' — ')) };
}

const HISTORY_MESSAGE_TYPES = new Set([
  'loop-request-incident',
  'loop-continuation',
  'loop-wake',
  'loop-watch',
  'loop-recovery-exhausted',
  'subagent-notify',
]);

function customMessageHistoryItem(kind: string, at: number | null, content: unknown, details: unknown): SessionHistoryItem | null {
  if (!HISTORY_MESSAGE_TYPES.has(kind)) return null;
  const text = contentText(content);
  let summary: string;
  switch (kind) {
    case 'loop-request-incident': {
      const d = safeParseFast(incidentDetailsSchema, details);
      if (d.success) {
        const x = d.data;
        const bits = [`request cut: ${x.limit ?? x.kind ?? 'unknown limit'}`];
        if (x.attempt !== null && x.attempt !== undefined) bits.push(`attempt ${x.attempt}`);
        if (x.elapsedMs !== null && x.elapsedMs !== undefined) bits.push(`after ${formatDuration(x.elapsedMs)}`);
        if (x.exhausted) bits.push('exhausted');
        summary = bits.join(', ');
      } else summary = text || 'request incident';
      break;
    }
    case 'loop-recovery-exhausted': {
      const d = safeParseFast(exhaustedDetailsSchema, details);
      const ms = d.success ? d.data.episodeMs : null;
      summary = ms !== null && ms !== undefined ? `retry episode exhausted after ${formatDuration(ms)}` : text || 'retry episode exhausted';
      break;
    }
    case 'loop-continuation':
      summary = text ? `nudge: ${text}` : 'nudge';
      break;
    default:
      summary = text || kind;
  }
  return { at, kind, summary: oneLine(summary) };
}

/** The text of a message `content`: a string, or the text parts of a content array. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part === 'object' && part !== null && 'text' in part && typeof (part as { text: unknown }).text === 'string') {
      texts.push((part as { text: string }).text);
    }
  }
  return texts.join(' ');
}

const SUMMARY_MAX = 200;

/** One display line: control characters out, whitespace collapsed, bounded length. */
function oneLine(s: string): string {
  // eslint-disable-next-line no-control-regex
  const flat = s.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').replace(/\s+/g, ' ').trim();
  return flat.length > SUMMARY_MAX ? `${flat.slice(0, SUMMARY_MAX - 1)}…` : flat;
}

function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  const rest = s % 60;
  return rest ? `${m} min ${rest} s` : `${m} min`;
}
