/**
 * Incident files (SPEC §3.2): `<home>/incidents/**.json`, one object per file. Read tolerantly:
 * a bad field is named in a warning and ignored, the rest of the incident still shows.
 */
import path from 'node:path';
import { z } from 'zod';
import type { IncidentRecord } from '../model/types.js';
import { classifyIncident, incidentPathFacts } from './incident-classes.js';
import { fileWarning, readJsonObjectFile, type KnownStat, type SmallFileRead } from './json-file.js';
import { relativeInside } from './rel-path.js';
import { epochMsFrom, epochMsFromStamp } from './time-value.js';
import { validateLenient } from './validate.js';

const str = z.string().nullable().optional();
const num = z.number().finite().nullable().optional();

/** The fields we interpret; every other field is kept in `raw`. */
export const incidentFileSchema = z.looseObject({
  v: num,
  session: str,
  class: z.string().min(1).nullable().optional(),
  at: z.union([z.string(), z.number().finite()]).nullable().optional(),
  attempt: z.number().int().nonnegative().nullable().optional(),
  exhausted: z.boolean().nullable().optional(),
  kind: str,
  limit: str,
  reason: str,
  detail: z.unknown().optional(),
  model: str,
  elapsed_ms: num,
  elapsedMs: num,
});

/** Read one incident file. `home` locates `incidents/` so the path can be interpreted. */
export async function readIncidentFile(home: string, file: string, stat?: KnownStat): Promise<SmallFileRead<IncidentRecord>> {
  const { object, read } = await readJsonObjectFile(file, { stat });
  if (object === null) return read;
  const { data, warnings } = validateLenient(incidentFileSchema, object, file);
  const out = [...read.warnings, ...warnings];
  if (data === null) return { ...read, warnings: out };

  const rel = relativeInside(path.join(home, 'incidents'), file);
  const facts = incidentPathFacts(rel === null ? path.basename(file) : rel.split(path.sep).join('/'));
  const cls = data.class ?? facts.cls ?? 'unknown';
  const info = classifyIncident(cls, {
    kind: data.kind ?? facts.kind,
    limit: data.limit,
    reason: data.reason,
    errorClass: object.errorClass,
    error_class: object.error_class,
    lastErrorClass: object.lastErrorClass,
    exhausted: data.exhausted,
  });

  let at = epochMsFrom(data.at);
  if (data.at != null && at === null) out.push(fileWarning(file, `at: not a time (${String(data.at).slice(0, 40)})`));
  at ??= facts.stamp ? epochMsFromStamp(facts.stamp) : null;

  const record: IncidentRecord = {
    file,
    home,
    cls,
    known: info.known,
    session: data.session ?? facts.session,
    at,
    limit: info.limit,
    attempt: data.attempt ?? facts.attempt,
    exhausted: info.exhausted || facts.exhausted,
    movedAside: facts.movedAside,
    summary: '',
    raw: object,
  };
  record.summary = summariseIncident(record, info.label);
  return { ...read, warnings: out, record };
}

const SUMMARY_MAX = 200;
const SKIP_IN_RAW = new Set(['v', 'session', 'class', 'at', 'home', 'cwd']);

/** One line for lists: label, then what the record says (limit, attempt, elapsed, model, reason). */
export function summariseIncident(r: IncidentRecord, label: string): string {
  const parts: string[] = [];
  if (r.limit && !label.includes(r.limit)) parts.push(`limit ${r.limit}`);
  if (r.attempt !== null) parts.push(`attempt ${r.attempt}`);
  if (r.exhausted && !label.includes('exhausted')) parts.push('exhausted');
  const elapsed = r.raw.elapsed_ms ?? r.raw.elapsedMs;
  if (typeof elapsed === 'number' && Number.isFinite(elapsed)) parts.push(`after ${formatDuration(elapsed)}`);
  if (typeof r.raw.model === 'string') parts.push(`model ${r.raw.model}`);
  if (typeof r.raw.reason === 'string') parts.push(`reason: ${r.raw.reason}`);
  if (typeof r.raw.detail === 'string') parts.push(r.raw.detail);
  if (!r.known) {
    for (const [k, v] of Object.entries(r.raw)) {
      if (SKIP_IN_RAW.has(k) || ['model', 'reason', 'detail', 'attempt', 'limit', 'exhausted', 'elapsed_ms', 'elapsedMs'].includes(k)) continue;
      parts.push(`${k}=${compact(v)}`);
    }
  }
  const text = `${r.movedAside ? '[moved aside] ' : ''}${label}${parts.length ? ` — ${parts.join(', ')}` : ''}`;
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ');
  return clean.length > SUMMARY_MAX ? `${clean.slice(0, SUMMARY_MAX - 1)}…` : clean;
}

function compact(v: unknown): string {
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v));
  return s.length > 40 ? `${s.slice(0, 39)}…` : s;
}

/** `14m 02s`, `1h 05m`, `45s` — for summaries only (views have their own formatting). */
function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m ${String(sec).padStart(2, '0')}s`;
  return `${sec}s`;
}

/**
 * What the session cache keeps of an incident's raw fields: those its record already says (the
 * session, the class, the time, the home: most incident files begin `v, session, class, at, home`)
 * are left out, and `rawOmitted` (a bit each, and one for a leading `v`) tells `expandIncidentRaw`
 * to put them back. Only when putting them back gives the very same object, key order included
 * (the raw fields are shown as written); else nothing is left out (0). Pure.
 */
export function compactIncidentRaw(r: IncidentRecord): { raw: Record<string, unknown>; rawOmitted: number } {
  const raw = r.raw;
  let omitted = Object.keys(raw)[0] === 'v' ? LEADING_V : 0;
  const kept: Record<string, unknown> = { ...raw };
  for (const [bit, key, derive] of DERIVED_RAW_FIELDS) {
    const value = key in raw ? derive(r) : null;
    if (value !== null && raw[key] === value) {
      omitted |= bit;
      delete kept[key];
    }
  }
  if (omitted === 0 || omitted === LEADING_V) return { raw, rawOmitted: 0 };
  return JSON.stringify(expandIncidentRaw(r, kept, omitted)) === JSON.stringify(raw) ? { raw: kept, rawOmitted: omitted } : { raw, rawOmitted: 0 };
}

/**
 * The raw fields `compactIncidentRaw` kept, with those it left out put back in their places. Pure.
 * Run for every cached incident of a warm start (5 014 on the big home), on a cold JIT: indexed
 * loops, no destructuring — the iterator protocol's objects per field cost ~13 ms there (a
 * profile of 12-05).
 */
export function expandIncidentRaw(r: IncidentRecord, kept: Record<string, unknown>, omitted: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (omitted & LEADING_V) out.v = kept.v;
  for (let i = 0; i < DERIVED_RAW_FIELDS.length; i++) {
    const field = DERIVED_RAW_FIELDS[i]!;
    if (omitted & field[0]) out[field[1]] = field[2](r);
  }
  const keys = Object.keys(kept);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (!(omitted & LEADING_V && key === 'v')) out[key] = kept[key];
  }
  return out;
}

const LEADING_V = 1;

/** The raw fields an incident's record says, in the order incident files write them, each with its bit. */
const DERIVED_RAW_FIELDS: readonly [number, string, (r: IncidentRecord) => unknown][] = [
  [2, 'session', (r) => r.session],
  [4, 'class', (r) => r.cls],
  [8, 'at', (r) => (r.at === null ? null : new Date(r.at).toISOString())],
  [16, 'home', (r) => r.home],
];
