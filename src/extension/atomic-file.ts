/**
 * Synchronous atomic writes for the extension: a temp file in the same directory, then rename, so
 * a reader sees the old content or the new, never a part. Synchronous on purpose: the extension
 * writes small files from pi's event handlers, and one write at a time cannot interleave.
 * Temp names are dot files containing `.tmp`, which every reader of a pi home skips.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** Files the extension creates: owner read/write only. */
export const FILE_MODE = 0o600;
/** Directories the extension creates: owner only. */
export const DIR_MODE = 0o700;

/**
 * Creates `dir` and its missing parents, owner-only; existing directories are left alone. Throws
 * what stops it (ENOENT, EACCES, ENOTDIR, …). Not Node's `mkdirSync(…, { recursive: true })`:
 * where a parent exists but a directory cannot be made in it and mkdir says ENOENT (a path under
 * /proc or /sys), Node 20's recursive mkdir, sync and async, goes back to the parent, finds it,
 * tries again and never returns, at 100 % of a core (seen with a cache directory under /proc,
 * 12-07). Here each level is tried at most twice: before and after its parent is made.
 */
export function ensureDir(dir: string, mode: number = DIR_MODE): void {
  const made = (): boolean => {
    try {
      fs.mkdirSync(dir, { mode });
      return true;
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EEXIST' && fs.statSync(dir).isDirectory()) return true;
      if (e.code === 'ENOENT') return false;
      throw e;
    }
  };
  if (made()) return;
  const parent = path.dirname(dir);
  if (parent !== dir) ensureDir(parent, mode);
  if (!made()) throw Object.assign(new Error(`ENOENT: cannot make the directory ${dir}`), { code: 'ENOENT', path: dir });
}

/**
 * Writes `data` to `file` atomically. With `durable`, the data and the directory are fsync'd too
 * (acks: the owner acts on them). Throws on failure, after removing the temp file.
 */
export function writeFileAtomicSync(file: string, data: string | Uint8Array, opts: { durable?: boolean } = {}): void {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  let fd: number | null = null;
  try {
    fd = fs.openSync(tmp, 'wx', FILE_MODE);
    if (typeof data === 'string') fs.writeSync(fd, data);
    else fs.writeFileSync(fd, data);
    if (opts.durable) fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = null;
    fs.renameSync(tmp, file);
  } catch (err) {
    if (fd !== null) {
      try {
        fs.closeSync(fd);
      } catch {
        // already failing; the original error is what matters
      }
    }
    try {
      fs.unlinkSync(tmp);
    } catch {
      // the temp may not exist
    }
    throw err;
  }
  if (opts.durable) syncDir(dir);
}

function syncDir(dir: string): void {
  let fd: number | null = null;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
    // Some file systems cannot fsync a directory; the rename is still atomic.
  } finally {
    if (fd !== null) fs.closeSync(fd);
  }
}

/**
 * O_NONBLOCK: a FIFO planted where the file should be cannot hang the open — and with it pi's main
 * thread, this being synchronous (a FIFO's open for writing waits for a reader; with O_NONBLOCK it
 * fails, ENXIO, at once). O_NOFOLLOW: a symlink there is not followed.
 */
const APPEND_FLAGS = fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | (fs.constants.O_NONBLOCK ?? 0) | (fs.constants.O_NOFOLLOW ?? 0);

/**
 * Appends one line with a single write (O_APPEND), creating the file owner-only. Throws on a file
 * that is not a regular one (a FIFO with a reader, a device), never writing to it.
 */
export function appendLineSync(file: string, line: string, mode: number = FILE_MODE): void {
  const fd = fs.openSync(file, APPEND_FLAGS, mode);
  try {
    if (!fs.fstatSync(fd).isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'EFTYPE' });
    const buf = Buffer.from(line.endsWith('\n') ? line : `${line}\n`, 'utf8');
    // One write; only a short one (a disk filling up) takes a second.
    for (let at = 0; at < buf.length; ) at += fs.writeSync(fd, buf, at, buf.length - at);
  } finally {
    fs.closeSync(fd);
  }
}
