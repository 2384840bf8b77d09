/**
 * What the session readers remember between runs, so a restart reads almost nothing: per session
 * file, where its latest state entries sit and what its tail said, keyed by the file's identity
 * (device, inode, a fingerprint of its first bytes) and the size it was read to. A file that is
 * still the same file, only longer, resumes from there; anything else is read afresh.
 *
 * One JSON file per home, outside the home (`$XDG_CACHE_HOME/loop-dash/sessions-<hash>.json`),
 * written atomically (temp file + rename) so a crash mid-write leaves the previous one. A cache
 * that is missing, unreadable, of another format or for another home is simply empty.
 */
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Bump when what an entry means changes: older caches are then ignored. */
export const SESSION_CACHE_FORMAT = 1;

/** The default cache directory: `$XDG_CACHE_HOME/loop-dash`, else `~/.cache/loop-dash`. */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'loop-dash');
}

/** Where the cache of `home` lives inside `dir`. */
export function sessionCacheFile(dir: string, home: string): string {
  const key = createHash('sha256').update(path.resolve(home)).digest('hex').slice(0, 16);
  return path.join(dir, `sessions-${key}.json`);
}

interface CacheDocument<T> {
  format: number;
  /** The code that wrote it: a different version may read files differently. */
  writer: string;
  home: string;
  entries: Record<string, T>;
}

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
  ) {}

  /** Loads the cache of `home` from `dir` (empty when there is none or it does not fit). */
  static async open<T>(dir: string, home: string, writer: string): Promise<SessionCache<T>> {
    const cache = new SessionCache<T>(sessionCacheFile(dir, home), path.resolve(home), writer);
    try {
      const doc = JSON.parse(await fsp.readFile(cache.file, 'utf8')) as Partial<CacheDocument<T>>;
      if (doc && doc.format === SESSION_CACHE_FORMAT && doc.writer === writer && doc.home === cache.home && doc.entries && typeof doc.entries === 'object') {
        for (const [k, v] of Object.entries(doc.entries)) cache.entries.set(k, v);
      }
    } catch {
      /* no cache yet, or not ours: start empty */
    }
    return cache;
  }

  get size(): number {
    return this.entries.size;
  }

  get(file: string): T | undefined {
    return this.entries.get(file);
  }

  set(file: string, entry: T): void {
    this.entries.set(file, entry);
    this.dirty = true;
  }

  delete(file: string): void {
    if (this.entries.delete(file)) this.dirty = true;
  }

  /** Keeps only the entries of `files` (files gone from the home are forgotten). */
  retain(files: ReadonlySet<string>): void {
    for (const k of [...this.entries.keys()]) if (!files.has(k)) this.delete(k);
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
    const doc: CacheDocument<T> = { format: SESSION_CACHE_FORMAT, writer: this.writer, home: this.home, entries: Object.fromEntries(this.entries) };
    await fsp.mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      await fsp.writeFile(tmp, JSON.stringify(doc), { mode: 0o600 });
      await fsp.rename(tmp, this.file);
    } catch (err) {
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
      throw err;
    }
  }
}
