/**
 * Durable writes into a pi home: the maildir pattern for whole files (unique temp name in the same
 * directory, fsync, rename or link, fsync the directory) and single-write appends for JSONL
 * journals. A reader never sees a partial file under a final name, and a failed write leaves none.
 */
import { randomBytes } from 'node:crypto';
import { constants, promises as fsp } from 'node:fs';
import path from 'node:path';

/**
 * A journal's append: O_NONBLOCK, so a FIFO planted where the journal should be cannot hang the
 * open (`open(2)` of a FIFO for writing waits for a reader; with O_NONBLOCK it fails, ENXIO, at
 * once), and O_NOFOLLOW, so a symlink there (to /dev/full, to another file) is not followed.
 */
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);

/** Files we create: readable and writable by the owner only. */
export const PRIVATE_FILE_MODE = 0o600;
/** Directories we create: owner only. */
export const PRIVATE_DIR_MODE = 0o700;

/** The parts of an open file this module uses (a subset of `fs.promises.FileHandle`). */
export interface FileHandleLike {
  write(buffer: Uint8Array, offset: number, length: number, position: number | null): Promise<{ bytesWritten: number }>;
  sync(): Promise<void>;
  chmod(mode: number): Promise<void>;
  stat(): Promise<{ isFile(): boolean }>;
  close(): Promise<void>;
}

/** What a stat tells us about a directory entry. */
export interface StatLike {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  mtimeMs: number;
  size: number;
}

/** The file-system calls of `src/control/`, injectable so tests can make them fail (ENOSPC, EROFS). */
export interface ControlFs {
  open(file: string, flags: string | number, mode?: number): Promise<FileHandleLike>;
  rename(from: string, to: string): Promise<void>;
  link(existing: string, newPath: string): Promise<void>;
  unlink(file: string): Promise<void>;
  /** Creates one directory (not recursive). */
  mkdir(dir: string, mode: number): Promise<void>;
  chmod(file: string, mode: number): Promise<void>;
  readdir(dir: string): Promise<string[]>;
  lstat(file: string): Promise<StatLike>;
  readFile(file: string): Promise<Buffer>;
}

/** The real file system. */
export const nodeControlFs: ControlFs = {
  open: (file, flags, mode) => fsp.open(file, flags, mode),
  rename: (from, to) => fsp.rename(from, to),
  link: (existing, newPath) => fsp.link(existing, newPath),
  unlink: (file) => fsp.unlink(file),
  mkdir: async (dir, mode) => {
    await fsp.mkdir(dir, { mode });
  },
  chmod: (file, mode) => fsp.chmod(file, mode),
  readdir: (dir) => fsp.readdir(dir),
  lstat: (file) => fsp.lstat(file),
  readFile: (file) => fsp.readFile(file),
};

/** A write that failed; `code` is the errno name (ENOSPC, EROFS, EACCES, …), `path` the file meant. */
export class AtomicWriteError extends Error {
  override readonly name = 'AtomicWriteError';
  constructor(
    readonly path: string,
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The errno name of a Node error, or `EUNKNOWN`. */
export function errnoOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code ? code : 'EUNKNOWN';
}

function failure(op: string, file: string, err: unknown, extra = ''): AtomicWriteError {
  if (err instanceof AtomicWriteError) return err;
  const code = errnoOf(err);
  const text = err instanceof Error ? err.message : String(err);
  const detail = text.includes(code) ? text : `${code}: ${text}`;
  return new AtomicWriteError(file, code, `cannot ${op} ${file}: ${detail}${extra}`, { cause: err });
}

/** Temp names look like `.<name>.tmp-<pid>-<hex>`: a dot file with `.tmp`, which every consumer ignores. */
const TEMP_NAME = /^\..+\.tmp-\d+-[0-9a-f]+$/;

/** True for a temp name this module writes (consumers must skip these; so must listings). */
export function isTempName(name: string): boolean {
  return TEMP_NAME.test(name);
}

function tempNameFor(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
}

/** Errors a directory fsync may give on platforms or file systems that cannot sync directories. */
const DIR_SYNC_UNSUPPORTED = new Set(['EINVAL', 'ENOTSUP', 'EOPNOTSUPP', 'EISDIR', 'EPERM', 'EBADF']);

async function syncDir(dir: string, fs: ControlFs): Promise<void> {
  let handle: FileHandleLike | null = null;
  try {
    handle = await fs.open(dir, 'r');
    await handle.sync();
  } catch (err) {
    // The rename itself is atomic; only its durability across a power cut depends on this.
    if (!DIR_SYNC_UNSUPPORTED.has(errnoOf(err))) throw failure('sync directory', dir, err);
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

async function writeAll(handle: FileHandleLike, buf: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < buf.length) {
    const { bytesWritten } = await handle.write(buf, offset, buf.length - offset, null);
    if (bytesWritten <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    offset += bytesWritten;
  }
}

/**
 * Creates `dir` (and missing parents) owner-only. Directories this call creates get 0700 set
 * explicitly (mkdir's mode is filtered by the umask); directories that already exist are left as
 * they are. Walks the path itself rather than `mkdir -p`, whose recursive form reports ENOENT for
 * what is really EROFS or EACCES higher up.
 */
export async function ensurePrivateDir(dir: string, fs: ControlFs = nodeControlFs): Promise<void> {
  const missing: string[] = [];
  let current = path.resolve(dir);
  for (;;) {
    try {
      await fs.lstat(current);
      break;
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw failure('create directory', dir, err);
      missing.push(current);
      const parent = path.dirname(current);
      if (parent === current) break;
      current = parent;
    }
  }
  for (const d of missing.reverse()) {
    try {
      await fs.mkdir(d, PRIVATE_DIR_MODE);
    } catch (err) {
      // Another writer made it first (D7): it is theirs, its mode is theirs too.
      if (errnoOf(err) === 'EEXIST') continue;
      throw failure('create directory', d, err);
    }
    try {
      await fs.chmod(d, PRIVATE_DIR_MODE);
    } catch (err) {
      throw failure('set mode 0700 on', d, err);
    }
  }
}

/** Options of `writeFileAtomic`. */
export interface AtomicWriteOptions {
  /** File mode, set explicitly regardless of the umask; default 0600. */
  mode?: number;
  /**
   * Never replace an existing file: publish with `link` (fails with EEXIST) instead of `rename`.
   * The result is then `exists` and the existing file is untouched.
   */
  exclusive?: boolean;
  fs?: ControlFs;
}

/**
 * Writes `data` to `file` so that `file` is either absent, the old content, or the whole new
 * content — never a part. The directory must exist (see `ensurePrivateDir`). On any failure the
 * temp file is removed and an `AtomicWriteError` naming the path and the errno is thrown.
 */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  opts: AtomicWriteOptions = {},
): Promise<'written' | 'exists'> {
  const fs = opts.fs ?? nodeControlFs;
  const mode = opts.mode ?? PRIVATE_FILE_MODE;
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const tmp = tempNameFor(file);
  let handle: FileHandleLike | null = null;
  let tempExists = false;
  let result: 'written' | 'exists' = 'written';
  try {
    // `wx` = O_CREAT|O_EXCL: never follows or reuses an existing name.
    handle = await fs.open(tmp, 'wx', mode);
    tempExists = true;
    await handle.chmod(mode);
    await writeAll(handle, buf);
    await handle.sync();
    const h = handle;
    handle = null;
    await h.close();
    if (opts.exclusive) {
      result = await publishExclusive(tmp, file, fs);
      // The temp is a second name of the same inode (or, when `exists`, an orphan): drop it.
      await fs.unlink(tmp);
      tempExists = false;
    } else {
      await fs.rename(tmp, file);
      tempExists = false;
    }
  } catch (err) {
    await handle?.close().catch(() => undefined);
    let extra = '';
    if (tempExists) {
      try {
        await fs.unlink(tmp);
      } catch (unlinkErr) {
        if (errnoOf(unlinkErr) !== 'ENOENT') extra = ` (and the temp file ${tmp} could not be removed: ${errnoOf(unlinkErr)})`;
      }
    }
    throw failure('write', file, err, extra);
  }
  if (result === 'written') await syncDir(path.dirname(file), fs);
  return result;
}

/** Hard-link the finished temp to its final name; EEXIST means somebody already published it. */
async function publishExclusive(tmp: string, file: string, fs: ControlFs): Promise<'written' | 'exists'> {
  try {
    await fs.link(tmp, file);
    return 'written';
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'EEXIST') return 'exists';
    // File systems without hard links: check, then rename (a narrow race, documented here).
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') {
      const exists = await fs.lstat(file).then(
        () => true,
        (e: unknown) => (errnoOf(e) === 'ENOENT' ? false : Promise.reject(e)),
      );
      if (exists) return 'exists';
      await fs.rename(tmp, file);
      return 'written';
    }
    throw err;
  }
}

/**
 * Removes temp files (see `isTempName`) in `dir` last modified more than `olderThanMs` before
 * `now` — left behind by a writer killed between fsync and rename. `now` must be wall-clock time
 * (it is compared with file mtimes). Returns the paths removed; a missing directory is not an error.
 */
export async function removeStaleTemps(
  dir: string,
  olderThanMs: number,
  now: number,
  fs: ControlFs = nodeControlFs,
): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return [];
    throw failure('list', dir, err);
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!isTempName(name)) continue;
    const full = path.join(dir, name);
    try {
      const st = await fs.lstat(full);
      if (!st.isFile() || now - st.mtimeMs <= olderThanMs) continue;
      await fs.unlink(full);
      removed.push(full);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw failure('remove stale temp file', full, err);
    }
  }
  return removed;
}

/**
 * Appends one line (a newline is added) to a JSONL journal, creating it 0600 (and its directory
 * 0700) when missing, then fsyncs it.
 *
 * Concurrency: the whole line goes out in a single `write(2)` on an `O_APPEND` descriptor. POSIX
 * makes the seek-to-end and the write one atomic step, so concurrent appenders never overwrite each
 * other; that the bytes of one write are never interleaved with another's is not promised for
 * regular files (PIPE_BUF only covers pipes), but it is what local file systems (ext4, xfs, apfs,
 * tmpfs) do for a small single write, and it is why the line is never split into several writes.
 * Only a short write (disk full mid-line) makes us write the rest in a second call.
 */
export async function appendLineDurable(file: string, line: string, fs: ControlFs = nodeControlFs): Promise<void> {
  if (/[\r\n]/.test(line)) throw new TypeError('appendLineDurable: a journal line must not contain a line break');
  await ensurePrivateDir(path.dirname(file), fs);
  const buf = Buffer.from(`${line}\n`, 'utf8');
  let handle: FileHandleLike | null = null;
  try {
    let created = true;
    try {
      handle = await fs.open(file, APPEND_FLAGS | constants.O_CREAT | constants.O_EXCL, PRIVATE_FILE_MODE);
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw err;
      created = false;
      handle = await fs.open(file, APPEND_FLAGS);
    }
    // A FIFO, a device or a directory where the journal should be: refused, never written to (a
    // FIFO with a reader would take the line; with none, the open fails with ENXIO at once).
    if (!(await handle.stat()).isFile()) throw new AtomicWriteError(file, 'EFTYPE', `cannot append to ${file}: not a regular file`);
    if (created) await handle.chmod(PRIVATE_FILE_MODE);
    await writeAll(handle, buf);
    await handle.sync();
    const h = handle;
    handle = null;
    await h.close();
    if (created) await syncDir(path.dirname(file), fs);
  } catch (err) {
    await handle?.close().catch(() => undefined);
    const code = errnoOf(err);
    throw failure('append to', file, err, code === 'ENXIO' ? ' (a FIFO where the journal should be)' : code === 'ELOOP' ? ' (a symlink where the journal should be: not followed)' : '');
  }
}
