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
 * at a time, so the whole cache is never in one buffer. A slice is one flat array, key and entry
 * alternating (`[k0, e0, k1, e1, …]`): an array per entry cost a warm start of a big home ~8 700
 * arrays more to deserialise and a destructuring iteration each (~40 ms; see
 * docs/PERFORMANCE.md, "The cache's slices flat"). The entries the reader marks as its
 * front (the checkpoints, and the listings of sessions/) are written first, in slices of their
 * own: a start loads them alone (~1 MB of the big home's ~8 MB), draws what they say, and loads
 * the rest after.
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, promises as fsp, readSync } from 'node:fs';
import v8 from 'node:v8';
import path from 'node:path';
import { ensureDir } from '../extension/atomic-file.js';
import { probeProcess } from './process-probe.js';
import { resolvedPrefix } from './rel-path.js';
import { nextTurn, type TimeSlices } from './time-slices.js';

/** Bump when what an entry means changes: older caches are then ignored. */
export const SESSION_CACHE_FORMAT = 14; // 14: a state log keeps its older runs' returns and its close (a dispatch with none is a live lane); 13: a session entry's warnings include line 1's header check; a state log keeps older runs' dispatches

export { defaultCacheDir } from './cache-dir.js';

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
  /** How many slices after the header hold the front entries. */
  front: number;
}

const MAGIC = Buffer.from('LDC\u0001');
/** Entries per serialized slice (each slice is one synchronous piece of work). */
const SLICE_ENTRIES = 400;

/** What `retain` needs of time slices (a TimeSlices), and none. */
type Slices = Pick<TimeSlices, 'due' | 'pause'>;
const NO_SLICES: Slices = { due: () => false, pause: async () => undefined };

/** A per-home map from session file to what was remembered of it; `T` is the reader's business. */
export class SessionCache<T> {
  private entries = new Map<string, T>();
  private dirty = false;
  private saving: Promise<void> | null = null;
  private again = false;
  /** The open cache file while entries after its front are still to be loaded. */
  private rest: CacheFile | null = null;
  /** The cache directory was swept of temp files dead writers left (once, at the first save). */
  private swept = false;
  /** While `retain` runs: the keys set since it began (they are kept). */
  private retaining: Set<string> | null = null;
  /**
   * `home` with its trailing separator, made once: a getter built it at every lookup (a new
   * string, flattened by the `startsWith`) — ~17 500 lookups in a warm start of the big home,
   * ~9 ms of its profile.
   */
  private readonly prefix: string;

  private constructor(
    readonly file: string,
    readonly home: string,
    private readonly writer: string,
    private readonly compact: (entry: T) => T,
    private readonly front: (entry: T, key: string) => boolean,
    private readonly alone: (entry: T) => boolean,
  ) {
    this.prefix = resolvedPrefix(home);
  }

  /**
   * Opens the cache of `home` in `dir` (empty when there is none or it does not fit) and loads its
   * front: the entries `front` picked when it was written (written first, in slices of their own),
   * so a start can use them before the rest is loaded (`loadRest`). `compact` gives the form an
   * entry is written in (e.g. without what its key already says), so the entries held in memory
   * can be the very objects the model holds.
   */
  static async open<T>(
    dir: string,
    home: string,
    writer: string,
    compact: (entry: T) => T = (e) => e,
    front: (entry: T, key: string) => boolean = () => false,
    alone: (entry: T) => boolean = () => false,
  ): Promise<SessionCache<T>> {
    const cache = new SessionCache<T>(sessionCacheFile(dir, home), path.resolve(home), writer, compact, front, alone);
    const file = CacheFile.open(cache.file);
    if (!file) return cache;
    let keep = false;
    try {
      if (!file.readMagic()) return cache;
      const header = file.next() as Partial<CacheHeader>;
      if (header.format !== SESSION_CACHE_FORMAT || header.writer !== writer || header.node !== process.version || header.home !== cache.home) return cache;
      if (typeof header.front !== 'number') return cache;
      const entries = new Map<string, T>();
      for (let i = 0; i < header.front && !file.atEnd; i++) file.nextEntries<T>((k, v) => entries.set(k, v));
      cache.entries = entries;
      keep = !file.atEnd;
      if (keep) cache.rest = file;
    } catch {
      /* not ours, or cut short: start empty */
    } finally {
      if (!keep) file.close();
    }
    return cache;
  }

  /**
   * Loads the entries after the front (a no-op when there are none or they are loaded), one
   * slice per turn of `between`. An entry set meanwhile is newer than the file's and is kept.
   * Until this is done, `save` writes nothing (the cache would lose the rest).
   */
  async loadRest(between: () => Promise<void> = nextTurn): Promise<void> {
    const file = this.rest;
    if (!file) return;
    try {
      while (!file.atEnd) {
        file.nextEntries<T>((k, v) => {
          if (!this.entries.has(k)) this.entries.set(k, v);
        });
        if (!file.atEnd) await between();
      }
    } catch {
      /* cut short: what was loaded stands, the rest is read again */
    } finally {
      file.close();
      this.rest = null;
    }
  }

  /** Gives up the rest unloaded (the reader stopped before it was needed). */
  close(): void {
    this.rest?.close();
    this.rest = null;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The key of a file: its path inside the home. */
  private key(file: string): string {
    return file.startsWith(this.prefix) ? file.slice(this.prefix.length) : path.relative(this.home, file);
  }

  get(file: string): T | undefined {
    return this.entries.get(this.key(file));
  }

  /**
   * Called at every change of an entry, with whether entries had already changed since the last
   * write (the owner schedules its save from these).
   */
  onChange: ((wasChanged: boolean) => void) | null = null;

  /** Entries changed since the last write. */
  get changed(): boolean {
    return this.dirty;
  }

  set(file: string, entry: T): void {
    const key = this.key(file);
    this.entries.set(key, entry);
    this.retaining?.add(key);
    this.changedNow();
  }

  delete(file: string): void {
    if (this.entries.delete(this.key(file))) this.changedNow();
  }

  private changedNow(): void {
    const was = this.dirty;
    this.dirty = true;
    this.onChange?.(was);
  }

  /**
   * Keeps only the entries of `files` (files gone from the home are forgotten), giving the event
   * loop a turn whenever `slices` says one is due: over the 39 045 files of a home of 12 000
   * sessions it was a block of ~40–55 ms right after the start (the big home's 8 445: ~10 ms).
   * Only entries there when it is called, and not set since, can go: one set meanwhile is of a
   * file found (or made again) since.
   */
  async retain(files: readonly string[], slices: Slices = NO_SLICES): Promise<void> {
    // Over every file of the home, at the first save after a start: indexed, and the map by
    // forEach, not by iterators (docs/PERFORMANCE.md, "Indexed loops on the start's path").
    const had: string[] = [];
    this.entries.forEach((_, k) => had.push(k));
    // Entries set while it pauses are of files found since (or made again): kept.
    const setSince = new Set<string>();
    this.retaining = setSince;
    try {
      const keep = new Set<string>();
      for (let i = 0; i < files.length; i++) {
        keep.add(this.key(files[i]!));
        if (i % 256 === 255 && slices.due()) await slices.pause();
      }
      for (let i = 0; i < had.length; i++) {
        const k = had[i]!;
        if (!keep.has(k) && !setSince.has(k) && this.entries.delete(k)) this.dirty = true;
        if (i % 256 === 255 && slices.due()) await slices.pause();
      }
    } finally {
      this.retaining = null;
    }
  }

  /** Writes the cache if it changed; concurrent calls coalesce. Never throws. */
  save(): Promise<void> {
    if (this.saving) {
      this.again = true;
      return this.saving;
    }
    if (!this.dirty || this.rest) return Promise.resolve();
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
    if (!this.swept) {
      this.swept = true;
      await removeStaleTemps(path.dirname(this.file));
    }
    const all = [...this.entries];
    const head = all.filter(([k, e]) => this.front(e, k));
    const tail = all.filter(([k, e]) => !this.front(e, k));
    const header: CacheHeader = { format: SESSION_CACHE_FORMAT, writer: this.writer, node: process.version, home: this.home, front: Math.ceil(head.length / SLICE_ENTRIES) };
    ensureDir(path.dirname(this.file), 0o700);
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
      // The front in slices of its own, then the rest; in the rest, an entry the owner marks
      // `alone` (an incident directory's bundle, up to ~1.3 MB) is a slice of its own — a slice
      // is one buffer when it is serialised and read, and the big home's bundles made one of
      // 2.9 MB with the entries around them (the others are at most ~0.7 MB).
      for (const part of [head, tail]) {
        const alone = (i: number) => part === tail && this.alone(part[i]![1]);
        let i = 0;
        while (i < part.length) {
          const slice: unknown[] = [];
          const push = ([k, e]: [string, T]) => slice.push(k, this.compact(e));
          if (alone(i)) push(part[i++]!);
          else for (; i < part.length && slice.length < 2 * SLICE_ENTRIES && !alone(i); i++) push(part[i]!);
          await put(slice);
          await nextTurn();
        }
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

/**
 * Temp files of this directory's writers: a session cache being saved (`home-<hash>.cache.<pid>.tmp`,
 * ~8 MB for a big home) and, in `code/`, V8's code cache of the script being written
 * (`.main.script[.<flags>].v8.tmp-<pid>-<hex>`, src/extension/atomic-file.ts). Group 1 is the writer's pid.
 */
const CACHE_TEMP = /^home-[0-9a-f]{16}\.cache\.(\d+)\.tmp$/;
const CODE_TEMP = /^\.main\.script(?:\.[0-9a-f]{8})?\.v8\.tmp-(\d+)-[0-9a-f]+$/;

/** A temp of a pid no process has is removed once this old (a save takes seconds at most). */
export const STALE_TEMP_MS = 60_000;
/** A temp this old is removed whatever its pid (a reused pid, a writer in another pid namespace). */
export const ABANDONED_TEMP_MS = 24 * 3_600_000;

/**
 * Removes the temp files that writers killed mid-write (SIGKILL, a closed terminal) left in the
 * cache directory `dir` and its `code/`: each would otherwise stay for good. A temp goes when its
 * pid is not a process now and it is at least STALE_TEMP_MS old (so a writer this process cannot
 * see — another pid namespace or machine sharing the directory — keeps the temp it is writing),
 * or whatever its pid once it is ABANDONED_TEMP_MS old (a pid reused by a long-lived process).
 * Never throws.
 */
export async function removeStaleTemps(dir: string, now: number = Date.now()): Promise<string[]> {
  const removed: string[] = [];
  for (const [where, pattern] of [[dir, CACHE_TEMP], [path.join(dir, 'code'), CODE_TEMP]] as const) {
    let names: string[];
    try {
      names = await fsp.readdir(where);
    } catch {
      continue;
    }
    for (const name of names) {
      const pid = Number(pattern.exec(name)?.[1] ?? 0);
      if (pid <= 0 || pid === process.pid) continue;
      const file = path.join(where, name);
      try {
        const age = now - (await fsp.stat(file)).mtimeMs;
        // A pid whose state cannot be told (probe 'unknown') counts as a live writer's.
        if (age < STALE_TEMP_MS || (age < ABANDONED_TEMP_MS && probeProcess(pid, now).status !== 'gone')) continue;
        await fsp.rm(file, { force: true });
        removed.push(file);
      } catch {
        /* gone meanwhile, or not ours to remove */
      }
    }
  }
  return removed;
}

/** Writes all of `buf` at the file's current position (a write may take only part of it). */
async function writeAll(out: fsp.FileHandle, buf: Buffer): Promise<void> {
  for (let done = 0; done < buf.length; ) done += (await out.write(buf, done, buf.length - done)).bytesWritten;
}

/**
 * Node's deserialiser makes a typed array or Buffer in the value a view of the bytes it reads (the
 * cache file's `scratch`, which the next slice would overwrite): this one notes that it did, and
 * the file then leaves those bytes to the views and reads on into a new buffer (a copy of each
 * view instead cost the big home's start ~4 ms of page faults for its 1.7 MB of incident bundles).
 */
class ViewingDeserializer extends v8.DefaultDeserializer {
  viewed = false;
  // Node's own hook (not in its type declarations), called for each typed array or Buffer.
  _readHostObject(): unknown {
    this.viewed = true;
    return (v8.DefaultDeserializer.prototype as unknown as { _readHostObject(this: v8.Deserializer): unknown })._readHostObject.call(this);
  }
}

/** The read buffer of a cache file, made larger for a longer slice. */
const SCRATCH_BYTES = 64 * 1024;

/**
 * The cache file being read: slice by slice into one buffer that grows to the largest slice
 * (~0.5 MB), never the whole file at once (a big home's cache is ~8 MB, and a buffer that size
 * freed again leaves resident memory higher for good). Also what the benchmark's warm floor loads
 * a cache with (bench/floor.mjs).
 */
export class CacheFile {
  private scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  private at = 0;
  private closed = false;

  private constructor(
    private readonly fd: number,
    private readonly size: number,
  ) {}

  /** The file open for reading, or null when there is none. */
  static open(file: string): CacheFile | null {
    try {
      const fd = openSync(file, 'r');
      try {
        return new CacheFile(fd, fstatSync(fd).size);
      } catch {
        closeSync(fd);
        return null;
      }
    } catch {
      return null;
    }
  }

  get atEnd(): boolean {
    return this.at >= this.size;
  }

  readExactly(length: number): Buffer {
    if (this.closed) throw new Error('closed');
    if (length > this.scratch.length) this.scratch = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const n = readSync(this.fd, this.scratch, got, length - got, this.at + got);
      if (n === 0) throw new Error('cut short');
      got += n;
    }
    this.at += length;
    return this.scratch.subarray(0, length);
  }

  /** Reads past the magic: true when the file starts with it (a session cache). */
  readMagic(): boolean {
    return this.readExactly(MAGIC.length).equals(MAGIC);
  }

  /** The next length-prefixed V8-serialised value. */
  next(): unknown {
    const length = this.readExactly(4).readUInt32LE(0);
    const bytes = this.readExactly(length);
    const der = new ViewingDeserializer(bytes);
    der.readHeader();
    const value = der.readValue();
    if (!der.viewed) return value;
    // The views keep the whole buffer they view: a slice much smaller than it (the big home's
    // bundles of a few incidents, ~0.5 KB, read after a slice of 0.7 MB kept that buffer for
    // good) is read again from a copy of its own bytes, which its views then keep instead.
    if (2 * length < this.scratch.length) return v8.deserialize(Buffer.from(bytes));
    this.scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
    return value;
  }

  /**
   * The next slice of entries, each given to `each` in order: a flat array, key and entry
   * alternating (see the file's layout above). Throws on anything else, as on a file cut short.
   */
  nextEntries<T>(each: (key: string, entry: T) => void): void {
    const slice = this.next();
    if (!Array.isArray(slice) || slice.length % 2 !== 0) throw new Error('not a slice of entries');
    // Checked whole before any entry is given: a slice is taken entire or not at all.
    for (let i = 0; i < slice.length; i += 2) if (typeof slice[i] !== 'string') throw new Error('not a slice of entries');
    for (let i = 0; i < slice.length; i += 2) each(slice[i] as string, slice[i + 1] as T);
  }

  /** Closes the file once (its number may belong to another file after that). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}
