/**
 * pi-subagents run status (SPEC §3.3): `<home>/tmp/async-subagent-runs/<runId>/status.json`,
 * rewritten atomically. Read tolerantly: a bad optional field is named and ignored.
 */
import path from 'node:path';
import { z } from 'zod';
import type { LaneRunStatus } from '../model/types.js';
import { isJsonObject } from './json-text.js';
import { readJsonObjectFile, type KnownStat, type SmallFileRead } from './json-file.js';
import { epochMsFrom } from './time-value.js';
import { validateLenient } from './validate.js';

const str = z.string().nullable().optional();
/** Epoch ms as published; an ISO string is accepted too (parsed below). */
const time = z.union([z.number().finite(), z.string()]).nullable().optional();

/** The fields we interpret; the rest are kept by the loose object and ignored. */
export const laneStatusSchema = z.looseObject({
  runId: str,
  sessionId: str,
  state: z.string().min(1),
  pid: z.number().int().positive().nullable().optional(),
  startedAt: time,
  endedAt: time,
  lastActivityAt: time,
  deadlineAt: time,
  timeoutMs: z.number().finite().nullable().optional(),
  currentTool: str,
  currentToolStartedAt: time,
  sessionFile: str,
  steps: z.array(z.unknown()).nullable().optional(),
  error: z.unknown().optional(),
});

/** Read one `status.json`. The run id falls back to the directory name. */
export async function readLaneStatus(home: string, file: string, stat?: KnownStat): Promise<SmallFileRead<LaneRunStatus>> {
  const { object, read } = await readJsonObjectFile(file, { stat });
  if (object === null) return read;
  const { data, warnings } = validateLenient(laneStatusSchema, object, file);
  const out = [...read.warnings, ...warnings];
  if (data === null) return { ...read, warnings: out };
  const record: LaneRunStatus = {
    file,
    home,
    runId: data.runId ?? path.basename(path.dirname(file)),
    sessionId: data.sessionId ?? null,
    state: data.state,
    pid: data.pid ?? null,
    startedAt: epochMsFrom(data.startedAt),
    endedAt: epochMsFrom(data.endedAt),
    lastActivityAt: epochMsFrom(data.lastActivityAt),
    deadlineAt: epochMsFrom(data.deadlineAt),
    timeoutMs: data.timeoutMs ?? null,
    currentTool: data.currentTool ?? null,
    currentToolStartedAt: epochMsFrom(data.currentToolStartedAt),
    sessionFile: data.sessionFile ?? null,
    steps: (data.steps ?? []).filter(isJsonObject).map((s) => ({
      agent: stringOrNull(s.agent),
      model: stringOrNull(s.model),
      status: stringOrNull(s.status),
      sessionFile: stringOrNull(s.sessionFile),
    })),
    error: errorText(data.error),
  };
  return { ...read, warnings: out, record };
}

function stringOrNull(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

/** `error` may be a string or an object with a message. */
function errorText(v: unknown): string | null {
  if (v == null || v === false) return null;
  if (typeof v === 'string') return v;
  if (isJsonObject(v) && typeof v.message === 'string') return v.message;
  return JSON.stringify(v)?.slice(0, 200) ?? null;
}
