/**
 * Incident files (SPEC §3.2): `<home>/incidents/**.json`, one object per file. Read tolerantly:
 * a bad field is named in a warning and ignored, the rest of the incident still shows. The record
 * keeps what the list, the counts and the status need; the file's fields as written are read
 * again when the incident is opened (`readIncidentFields`), not kept for every incident.
 */
import path from 'node:path';
import { z } from 'zod';
import type { IncidentFields, IncidentRecord } from '../model/types.js';
import { classifyIncident, incidentPathFacts } from './incident-classes.js';
import { fileWarning, readJsonObjectFile, type KnownStat, type SmallFileRead } from './json-file.js';
import { relativeInside } from './rel-path.js';
import { epochMsFrom, epochMsFromStamp } from './time-value.js';
import { validateLenient } from './validate.js';
import { sanitize } from '../views/text.js';

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
  };
  record.summary = summariseIncident(record, object, info.label);
  return { ...read, warnings: out, record };
}

/**
 * An opened incident's fields, as its file says them now (in their order): read when the
 * incident is opened, since the records do not keep them. Never throws.
 */
export async function readIncidentFields(file: string): Promise<IncidentFields> {
  try {
    const { object, read } = await readJsonObjectFile(file);
    if (object !== null) return { state: 'read', fields: object };
    if (read.missing) return { state: 'unreadable', message: 'the file is gone (removed since it was listed)' };
    return { state: 'unreadable', message: read.warnings[0]?.message ?? 'the file could not be read' };
  } catch (err) {
    return { state: 'unreadable', message: `the file could not be read (${(err as Error).message})` };
  }
}

const SUMMARY_MAX = 200;
const SKIP_IN_RAW = new Set(['v', 'session', 'class', 'at', 'home', 'cwd']);

/** One line for lists: label, then what the record and the file's fields `raw` say (limit, attempt, elapsed, model, reason). */
export function summariseIncident(r: IncidentRecord, raw: Record<string, unknown>, label: string): string {
  const parts: string[] = [];
  if (r.limit && !label.includes(r.limit)) parts.push(`limit ${r.limit}`);
  if (r.attempt !== null) parts.push(`attempt ${r.attempt}`);
  if (r.exhausted && !label.includes('exhausted')) parts.push('exhausted');
  const elapsed = raw.elapsed_ms ?? raw.elapsedMs;
  if (typeof elapsed === 'number' && Number.isFinite(elapsed)) parts.push(`after ${formatDuration(elapsed)}`);
  if (typeof raw.model === 'string') parts.push(`model ${raw.model}`);
  if (typeof raw.reason === 'string') parts.push(`reason: ${raw.reason}`);
  if (typeof raw.detail === 'string') parts.push(raw.detail);
  if (!r.known) {
    for (const [k, v] of Object.entries(raw)) {
      if (SKIP_IN_RAW.has(k) || ['model', 'reason', 'detail', 'attempt', 'limit', 'exhausted', 'elapsed_ms', 'elapsedMs'].includes(k)) continue;
      parts.push(`${k}=${compact(v)}`);
    }
  }
  const text = `${r.movedAside ? '[moved aside] ' : ''}${label}${parts.length ? ` — ${parts.join(', ')}` : ''}`;
  // Escape sequences go whole (their bodies too: `[2J`, `]0;title`); tabs and newlines become
  // spaces, other controls are dropped (the views' sanitize).
  const clean = sanitize(text);
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
