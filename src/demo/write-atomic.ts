/**
 * Atomic file replacement for the demo home: write a temp file in the same directory, then rename
 * it over the target, so a reader never sees a half-written checkpoint, status or incident.
 * Demo only: the dashboard's own writes go through `src/control/`.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';

let counter = 0;

/** Options for {@link writeFileAtomic}. */
export interface AtomicWriteOptions {
  /** Create the target's directory (recursively) first. */
  mkdir?: boolean;
  /** File mode of the new file. */
  mode?: number;
}

/**
 * Replace `file` with `data` in one rename. The temp name starts with a dot and contains `.tmp`,
 * which readers ignore (RELIABILITY B8); on failure the temp file is removed.
 */
export async function writeFileAtomic(file: string, data: string | Uint8Array, opts: AtomicWriteOptions = {}): Promise<void> {
  const dir = path.dirname(file);
  if (opts.mkdir) await fs.mkdir(dir, { recursive: true });
  counter += 1;
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${counter}.tmp`);
  try {
    await fs.writeFile(tmp, data, opts.mode === undefined ? {} : { mode: opts.mode });
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
}

/** {@link writeFileAtomic} of a value as pretty JSON with a final newline. */
export async function writeJsonAtomic(file: string, value: unknown, opts: AtomicWriteOptions = {}): Promise<void> {
  await writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n', opts);
}
