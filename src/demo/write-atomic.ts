/**
 * Atomic file replacement for the demo home: write a temp file in the same directory, then rename
 * it over the target, so a reader never sees a half-written checkpoint, status or incident.
 * Demo only: the dashboard's own writes go through `src/control/`.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { ensureDir } from '../extension/atomic-file.js';

/**
 * Makes `dir` and its missing parents (mode 0777 less the umask, as `mkdir -p`). Not Node's
 * recursive mkdir, which never returns where a parent exists but mkdir says ENOENT (`demo --dir
 * /proc/x` spun a core until 12-07): `ensureDir` throws there.
 */
export function makeDir(dir: string): void {
  ensureDir(dir, 0o777);
}

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
  if (opts.mkdir) makeDir(dir);
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
