/**
 * What the session readers remember between runs, so a restart reads almost nothing: per session
 * file, where its latest state entries sit and what its tail said, keyed by the file's identity
 * (device, inode, a fingerprint of its first bytes) and the size it was read to. A file that is
 * still the same file, only longer, resumes from there; anything else is read afresh.
 *
 * One file per home, outside the home (`$XDG_CACHE_HOME/loop-dash/home-<hash>.cache`), written
 * atomically (temp file + rename) so a crash mid-write leaves the previous one. A cache that is
 * missing, unreadable, of another format, Node version or home is simply empty. Entries are keyed
 * by the path inside the home, and the readers leave out what the path already says (the file,
 * the home): it is read at every start, so it is kept small.
 *
 * Stored with the V8 serializer (deserialising is ~2.5× faster than JSON.parse for thousands of
 * small records), in slices of a few hundred entries, so writing it never holds the event loop
 * for long: [magic][u32 length, V8 header][u32 length, V8 slice]… Slices are written and read one
 * at a time, so the whole cache is never in one buffer.
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, promises as fsp, readSync } from 'node:fs';
import v8 from 'node:v8';
import os from 'node:os';
import path from 'node:path';
import { nextTurn } from './time-slices.js';

/** Bump when what an entry means changes: older caches are then ignored. */
export const SESSION_CACHE_FORMAT = 5;

/**
 * The default cache directory: `$LOOP_DASH_CACHE_DIR` when set (the test runner points it at a
 * scratch directory), else `$XDG_CACHE_HOME/loop-dash`, else `~/.cache/loop-dash`.
 */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.LOOP_DASH_CACHE_DIR && path.isAbsolute(env.LOOP_DASH_CACHE_DIR)) return env.LOOP_DASH_CACHE_DIR;
  return path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'loop-dash');
}

/** Where the cache of `home` lives inside `dir`. */
export function sessionCacheFile(dir: string, home: string): string {
  const key = createHash('sha256').update(path.resolve(home)).digest('hex').slice(0, 16);
  return path.join(dir, `home-${key}.cache`);
}

interface CacheHeader {
  format: number;
  /** The code that wrote it: a different version may read files differently. */
  writer: string;
  /** The V8 serializer's format follows the Node version. */
  node: string;
  home: string;
}

const MAGIC = Buffer.from('LDC\u0001');
/** Entries per serialized slice (each slice is one synchronous piece of work). */
const SLICE_ENTRIES = 400;

/** A per-home map from session file to what was remembered of it; `T` is the reader's business. */
export class SessionCache<T> {
  private entries = new Map<string, T>();
  private dirty = false;
  private saving: Promise<void> | null = null;
  private again = false;

  private constructor(
    readonly file: string,
    readonly home: string,
    private readonly writer: string,
    private readonly compact: (entry: T) => T,
  ) {}

  /**
   * Loads the cache of `home` from `dir` (empty when there is none or it does not fit). `compact`
   * gives the form an entry is written in (e.g. without what its key already says), so the entries
   * held in memory can be the very objects the model holds.
   */
  static async open<T>(dir: string, home: string, writer: string, compact: (entry: T) => T = (e) => e): Promise<SessionCache<T>> {
    const cache = new SessionCache<T>(sessionCacheFile(dir, home), path.resolve(home), writer, compact);
    let fd: number | null = null;
    try {
      // Read slice by slice into one buffer that grows to the largest slice (~0.5 MB), never the
      // whole file at once: a big home's cache is ~8 MB, and a buffer that size freed again leaves
      // the process's resident memory that much higher for good (the allocator keeps it).
      fd = openSync(cache.file, 'r');
      const size = fstatSync(fd).size;
      let scratch = Buffer.allocUnsafe(64 * 1024);
      let at = 0;
      const readExactly = (length: number): Buffer => {
        if (length > scratch.length) scratch = Buffer.allocUnsafe(length);
        let got = 0;
        while (got < length) {
          const n = readSync(fd!, scratch, got, length - got, at + got);
          if (n === 0) throw new Error('cut short');
          got += n;
        }
        at += length;
        return scratch.subarray(0, length);
      };
      if (!readExactly(MAGIC.length).equals(MAGIC)) return cache;
      const next = (): unknown => {
        const length = readExactly(4).readUInt32LE(0);
        return v8.deserialize(readExactly(length));
      };
      const header = next() as Partial<CacheHeader>;
      if (header.format !== SESSION_CACHE_FORMAT || header.writer !== writer || header.node !== process.version || header.home !== cache.home) return cache;
      const entries = new Map<string, T>();
      while (at < size) for (const [k, v] of next() as [string, T][]) entries.set(k, v);
      cache.entries = entries;
    } catch {
      /* no cache yet, or not ours, or cut short: start empty */
    } finally {
      if (fd !== null) closeSync(fd);
    }
    return cache;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The key of a file: its path inside the home. */
  private key(file: string): string {
    return file.startsWith(this.prefix) ? file.slice(this.prefix.length) : path.relative(this.home, file);
  }

  private get prefix(): string {
    return this.home.endsWith(path.sep) ? this.home : this.home + path.sep;
  }

  get(file: string): T | undefined {
    return this.entries.get(this.key(file));
  }

  set(file: string, entry: T): void {
    this.entries.set(this.key(file), entry);
    this.dirty = true;
  }

  delete(file: string): void {
    if (this.entries.delete(this.key(file))) this.dirty = true;
  }

  /** Keeps only the entries of `files` (files gone from the home are forgotten). */
  retain(files: Iterable<string>): void {
    const keep = new Set<string>();
    for (const f of files) keep.add(this.key(f));
    for (const k of [...this.entries.keys()]) if (!keep.has(k)) {
      this.entries.delete(k);
      this.dirty = true;
    }
  }

  /** Writes the cache if it changed; concurrent calls coalesce. Never throws. */
  save(): Promise<void> {
    if (this.saving) {
      this.again = true;
      return this.saving;
    }
    if (!this.dirty) return Promise.resolve();
    this.saving = (async () => {
      do {
        this.again = false;
        this.dirty = false;
        await this.write().catch(() => {
          this.dirty = true; // try again next time
        });
      } while (this.again && this.dirty);
    })().finally(() => {
      this.saving = null;
    });
    return this.saving;
  }

  private async write(): Promise<void> {
    const header: CacheHeader = { format: SESSION_CACHE_FORMAT, writer: this.writer, node: process.version, home: this.home };
    const all = [...this.entries];
    await fsp.mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    // Each slice is written as soon as it is serialized: the whole cache is never one buffer (see open).
    const out = await fsp.open(tmp, 'w', 0o600);
    try {
      await writeAll(out, MAGIC);
      const put = async (value: unknown) => {
        const bytes = v8.serialize(value);
        const length = Buffer.alloc(4);
        length.writeUInt32LE(bytes.length);
        await writeAll(out, length);
        await writeAll(out, bytes);
      };
      await put(header);
      for (let i = 0; i < all.length; i += SLICE_ENTRIES) {
        await put(all.slice(i, i + SLICE_ENTRIES).map(([k, e]) => [k, this.compact(e)]));
        await nextTurn();
      }
      await out.close();
      await fsp.rename(tmp, this.file);
    } catch (err) {
      await out.close().catch(() => undefined);
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
      throw err;
    }
  }
}

/** Writes all of `buf` at the file's current position (a write may take only part of it). */
async function writeAll(out: fsp.FileHandle, buf: Buffer): Promise<void> {
  for (let done = 0; done < buf.length; ) done += (await out.write(buf, done, buf.length - done)).bytesWritten;
}
