/**
 * Request checkpoints (SPEC §4.1): `<home>/loop-dash/checkpoints/<sessionId>.json`, our own
 * contract, so validated strictly against the shared schema.
 */
import path from 'node:path';
import { checkpointSchema } from '../contract/checkpoint.js';
import type { CheckpointRecord } from '../model/types.js';
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
  const { data, warnings } = validateStrict(checkpointSchema, object, file);
  if (data === null) return { ...read, warnings: [...read.warnings, ...warnings] };
  const named = path.basename(file, '.json');
  const out = [...read.warnings];
  if (named !== data.session) {
    out.push(fileWarning(file, `checkpoint is for session ${data.session}, but the file is named ${named}`, 'warning'));
  }
  return {
    ...read,
    warnings: out,
    record: { file, home, session: data.session, checkpoint: data, mtimeMs: read.mtimeMs ?? 0 },
  };
}
