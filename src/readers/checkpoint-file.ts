/**
 * Request checkpoints (SPEC §4.1): `<home>/loop-dash/checkpoints/<sessionId>.json`, our own
 * contract, so validated strictly against the shared schema.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { SKEW_TOLERANCE_MS } from '../model/clock-skew.js';
import { checkpointLimitsSchema, checkpointSchema, type CheckpointLimits } from '../contract/checkpoint.js';
import type { CheckpointRecord } from '../model/types.js';
import type { Warning } from '../model/types.js';
import { fileWarning, readJsonObjectFile, type KnownStat, type SmallFileRead } from './json-file.js';
import { validateStrict } from './validate.js';

/** Checkpoints are a few KiB; anything near this is not one. */
const CHECKPOINT_MAX_BYTES = 256 * 1024;

/**
 * True for a name that can be a checkpoint: `<id>.json`, not a writer's temp file (`*.tmp*`,
 * dot files) — those come and go during atomic rewrites and are never sessions (RELIABILITY B8).
 */
export function isCheckpointFileName(name: string): boolean {
  return name.endsWith('.json') && !name.startsWith('.') && !name.includes('.tmp') && name.length > '.json'.length;
}

/**
 * Read one checkpoint. Empty or cut-off file → `transient` (a non-atomic writer mid-write; the
 * caller keeps the last good value). A schema failure → no record, a warning with the zod paths.
 */
export async function readCheckpointFile(home: string, file: string, stat?: KnownStat): Promise<SmallFileRead<CheckpointRecord>> {
  const { object, read } = await readJsonObjectFile(file, { maxBytes: CHECKPOINT_MAX_BYTES, stat });
  if (object === null) return read;
  const limits = tolerantLimits(object, file);
  const { data, warnings } = validateStrict(checkpointSchema, limits.object, file);
  if (data === null) return { ...read, warnings: [...read.warnings, ...limits.warnings, ...warnings] };
  const named = path.basename(file, '.json');
  const out = [...read.warnings, ...limits.warnings];
  // The valid part of bad limits (tolerantLimits): a field each; effectiveLimits checks each one.
  if (limits.partial) data.limits = limits.partial as CheckpointLimits;
  // The mtime may be the walk's, taken before a rewrite this read saw (a live checkpoint is
  // rewritten every second): a writer's clock ahead (clock-skew.ts) is judged by the file's mtime
  // now. A rewrite since only makes it newer, which moves nothing.
  let mtimeMs = read.mtimeMs ?? 0;
  if (data.updatedAt - mtimeMs > SKEW_TOLERANCE_MS) mtimeMs = Math.max(mtimeMs, await fsp.stat(file).then((st) => st.mtimeMs, () => 0));
  if (named !== data.session) {
    out.push(fileWarning(file, `checkpoint is for session ${data.session}, but the file is named ${named}`, 'warning'));
  }
  return {
    ...read,
    warnings: out,
    record: { file, home, session: data.session, checkpoint: data, mtimeMs },
  };
}

/** The limits a checkpoint must give (the optional `episodeApplies` is kept when it is a boolean). */
const LIMIT_FIELDS = ['inactivityMs', 'absoluteMs', 'episodeMs', 'episodeMaxAttempts'] as const satisfies readonly (keyof CheckpointLimits)[];

/**
 * A checkpoint's `limits` that do not match the contract cost only themselves, not the request
 * (SPEC §2: a bad limit falls back, it never turns one off). The checkpoint is validated with
 * `limits: null`, then given back the fields that are valid (`partial`): `effectiveLimits` takes a
 * field only when it is a positive number, so each missing one falls back to the home's settings.
 * A warning names the fields. An absent `limits` is read as null, also with a warning.
 */
function tolerantLimits(object: Record<string, unknown>, file: string): { object: Record<string, unknown>; partial: Partial<CheckpointLimits> | null; warnings: Warning[] } {
  const home = "the home's settings are used";
  if (!('limits' in object)) return { object: { ...object, limits: null }, partial: null, warnings: [fileWarning(file, `checkpoint has no limits field; ${home} for its request`, 'warning')] };
  const limits = object['limits'];
  if (limits === null || checkpointLimitsSchema.safeParse(limits).success) return { object, partial: null, warnings: [] };
  if (typeof limits !== 'object' || Array.isArray(limits)) {
    return { object: { ...object, limits: null }, partial: null, warnings: [fileWarning(file, `limits: not an object; ${home} for its request`, 'warning')] };
  }
  const given = limits as Record<string, unknown>;
  const partial: Partial<CheckpointLimits> = {};
  const bad: string[] = [];
  for (const field of LIMIT_FIELDS) {
    const r = checkpointLimitsSchema.shape[field].safeParse(given[field]);
    if (r.success) partial[field] = r.data;
    else bad.push(`${field} ${field in given ? (JSON.stringify(given[field]) ?? String(given[field])) : '(absent)'}`);
  }
  if (typeof given['episodeApplies'] === 'boolean') partial.episodeApplies = given['episodeApplies'];
  return {
    object: { ...object, limits: null },
    partial: Object.keys(partial).length ? partial : null,
    warnings: [fileWarning(file, `limits: ${bad.join(', ')} not valid; ${home} for ${bad.length === 1 ? 'it' : 'them'}`, 'warning')],
  };
}
