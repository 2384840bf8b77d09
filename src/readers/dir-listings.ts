/**
 * What a start remembers of the home's directories in the session cache, so a warm start reads
 * (lists) only the directories that changed since (docs/PERFORMANCE.md, "Directory listings from
 * the cache"). A directory's ctime changes whenever an entry in it is created, removed or renamed,
 * so while a directory has the inode and ctime recorded, its listing is the one recorded. A change
 * within the same tick of the file system's clock could leave its ctime as recorded: a directory
 * is recorded only once its last change is RACY_DIR_MS old. Files are not covered: an append
 * changes a file, not its directory, so the walk still stats them.
 *
 * Used by the home reader and by the benchmark's warm floor (bench/floor.mjs), which does what a
 * warm start with this cache must do.
 */
import type { Stats } from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import { LIST_ROOTS, type DirListing, type KnownStat, type WalkRoot } from './home-walk.js';

/** How old a directory's last change must be for it to be recorded. */
export const RACY_DIR_MS = 2_000;

/**
 * An incident directory as a start found it (keyed by its path inside the home and a separator):
 * while it has this inode and ctime, no file in it was created, removed or renamed since, and a
 * warm start takes the stats of the incident files the cache holds there from the cache
 * (HomeReader.knownIncidentStats). Its listing is not recorded (see LISTED_ROOTS).
 */
export interface CachedDir {
  k: 'dir';
  ino: number;
  ctimeMs: number;
  /** Every incident file in it, with its stat and record, when each one had a clean read. */
  bundle?: IncidentBundle;
}

/**
 * The incident files of a directory, as one cache entry instead of one per file: a warm start
 * takes a directory the cache records unchanged from here — its subdirectories and its files'
 * stats and records — without listing it or making an object per file on the way (the big home's
 * 5 014 incidents; docs/PERFORMANCE.md, "Incident directories in one entry each"). The stats are
 * typed arrays and the records are serialised in parts of their own (BUNDLE_PART files each), so
 * loading the cache makes a few objects per directory and a start deserialises one part at a
 * time, in its slices.
 */
export interface IncidentBundle {
  /** The subdirectories a walk descends into (temp names left out), in listing order. */
  dirs: string[];
  /** The incident files' names, in listing order. */
  names: string[];
  size: Float64Array;
  mtimeMs: Float64Array;
  ino: Float64Array;
  /** Part j: the V8 serialisation of the records of names[j * BUNDLE_PART …], their file and home empty (withoutFileAndHome). */
  parts: Uint8Array[];
}

/**
 * A record as the cache writes it: its file and home (the key says them) empty but in their
 * places, so the record read back has room for them and takes them in place (set after
 * deserialising, as new properties, they grew its property array: a reallocation per record).
 */
export function withoutFileAndHome(record: unknown): Record<string, unknown> {
  return { ...(record as Record<string, unknown>), file: '', home: '' };
}

/** Files per serialised part of a bundle's records. */
export const BUNDLE_PART = 500;

/** The bundle of a cache entry, when it is an incident directory's with a bundle of the right shape. */
export function bundleOf(entry: unknown): IncidentBundle | null {
  const b = (entry as Partial<CachedDir> | undefined)?.k === 'dir' ? (entry as CachedDir).bundle : undefined;
  if (!b || !Array.isArray(b.dirs) || !Array.isArray(b.names) || !Array.isArray(b.parts)) return null;
  const n = b.names.length;
  if (!(b.size instanceof Float64Array && b.mtimeMs instanceof Float64Array && b.ino instanceof Float64Array)) return null;
  if (b.size.length !== n || b.mtimeMs.length !== n || b.ino.length !== n || b.parts.length !== Math.ceil(n / BUNDLE_PART)) return null;
  for (let i = 0; i < n; i++) if (typeof b.names[i] !== 'string') return null;
  for (let i = 0; i < b.dirs.length; i++) if (typeof b.dirs[i] !== 'string') return null;
  for (let j = 0; j < b.parts.length; j++) if (!(b.parts[j] instanceof Uint8Array)) return null;
  return b;
}

/** The bundle of an incident directory the cache records unchanged (same inode and ctime), or null. */
export function trustedBundle(entry: unknown, own: { ino: number; ctimeMs: number }): IncidentBundle | null {
  return isRecordedDir(entry, own) ? bundleOf(entry) : null;
}

/**
 * The records of part `j` of `bundle` (their file and home empty), deserialised anew; null
 * when the part is not what was written (a cache damaged on disk).
 */
export function bundleRecords(bundle: IncidentBundle, j: number): Record<string, unknown>[] | null {
  let records: unknown;
  try {
    records = v8.deserialize(bundle.parts[j]!);
  } catch {
    return null;
  }
  const want = Math.min(BUNDLE_PART, bundle.names.length - j * BUNDLE_PART);
  if (!Array.isArray(records) || records.length !== want) return null;
  for (let k = 0; k < want; k++) if (typeof records[k] !== 'object' || records[k] === null) return null;
  return records as Record<string, unknown>[];
}

/**
 * A bundle of `names` (with their stats and records) and the subdirectories `dirs`; each record is
 * written with its file and home empty. `pause` is awaited between parts (~2–3 ms each, run
 * interpreted at a start's end: the big home's 3 006 incidents of one directory took ~10 ms).
 */
export async function makeBundle(dirs: string[], files: readonly { name: string; size: number; mtimeMs: number; ino: number; record: unknown }[], pause: () => Promise<void>): Promise<IncidentBundle> {
  const n = files.length;
  const bundle: IncidentBundle = { dirs, names: new Array<string>(n), size: new Float64Array(n), mtimeMs: new Float64Array(n), ino: new Float64Array(n), parts: [] };
  for (let i = 0; i < n; i++) {
    const f = files[i]!;
    bundle.names[i] = f.name;
    bundle.size[i] = f.size;
    bundle.mtimeMs[i] = f.mtimeMs;
    bundle.ino[i] = f.ino;
  }
  for (let j = 0; j < n; j += BUNDLE_PART) {
    if (j > 0) await pause();
    // Their file and home left empty, in place: see withoutFileAndHome.
    const records = files.slice(j, j + BUNDLE_PART).map((f) => withoutFileAndHome(f.record));
    bundle.parts.push(v8.serialize(records));
  }
  return bundle;
}

/**
 * The directories under one of LISTED_ROOTS as a start's walk found them (keyed by the root's path
 * inside the home and a separator). One entry per root, its directories in walk order (a parent
 * before its children), each naming its parent by index, so no path is written twice: ~180 KB for
 * the big home's 1 412 session directories, where an entry per directory keyed by its path took
 * ~420 KB — the cache is read at every start, and counts against its bytes read.
 */
export interface CachedTree {
  k: 'tree';
  nodes: TreeNode[];
}

/**
 * A directory: its parent's index in the tree (-1: the root), its name ('' for the root) and, when
 * its listing is recorded, its inode, ctime and artifact file names. Its subdirectories are the
 * nodes that name it as their parent: a directory is recorded only when each of them is a node.
 */
export type TreeNode = [parent: number, name: string] | [parent: number, name: string, ino: number, ctimeMs: number, files: string[]];

/**
 * Where a start takes unchanged directories' listings from the cache: the walk roots with many
 * directories. Not incidents/ (5 directories in the big home, whose 5 000 names would be ~380 KB
 * more cache to read at every start, for ~10 ms; their files' stats are taken from the cache
 * instead: CachedDir) nor loop-dash/ (checkpoints/ changes whenever a running pi writes one).
 */
export const LISTED_ROOTS: readonly WalkRoot[] = ['sessions', 'tmp/async-subagent-runs', 'loop-wait'];

/** The trees in the cache's front: those of the roots walked before the session list is drawn. */
export const FRONT_TREE_KEYS: readonly string[] = LISTED_ROOTS.filter((r) => LIST_ROOTS.includes(r)).map((r) => r + path.sep);

/** A cache entry of an incident directory that says it has this inode and ctime. */
export function isRecordedDir(entry: unknown, st: { ino: number; ctimeMs: number }): entry is CachedDir {
  const e = entry as Partial<CachedDir> | undefined;
  return e?.k === 'dir' && e.ino === st.ino && e.ctimeMs === st.ctimeMs;
}

/**
 * The stats a walk may take from the cache in `dir` (its own stat `own`; `entryOf` gives the
 * cache's entry of a path, a directory's ending in a separator): in an incident directory the
 * cache records unchanged (same inode and ctime: no file in it created, removed or renamed since),
 * an incident's the cache holds a clean read of; elsewhere none (null). Incident files are written
 * in one go and not rewritten (SPEC §3.2). Used by HomeReader.knownIncidentStats and the
 * benchmark's warm floor.
 */
export function cachedIncidentStats(dir: string, own: { ino: number; ctimeMs: number }, entryOf: (file: string) => unknown): KnownStat | null {
  if (!isRecordedDir(entryOf(dir + path.sep), own)) return null;
  return (file, kind) => {
    if (kind !== 'incident') return undefined;
    const c = entryOf(file) as { k?: unknown; kind?: unknown; size: number; mtimeMs: number; ino: number } | undefined;
    return c?.k === 'small' && c.kind === 'incident' ? c : undefined;
  };
}

/** A cache entry that is a tree of listings. */
export function isTree(entry: unknown): entry is CachedTree {
  return (entry as Partial<CachedTree> | undefined)?.k === 'tree';
}

/** A directory whose listing the cache holds, with its inode and ctime then. */
interface RecordedDir extends DirListing {
  ino: number;
  ctimeMs: number;
}

/** A directory as this start's walk found it. */
interface WalkedDir {
  ino: number;
  ctimeMs: number;
  /** Null: not to be recorded (changed within RACY_DIR_MS, or a symbolic link in it). */
  listing: DirListing | null;
  /** The listing was the cache's. */
  known: boolean;
}

/**
 * One start's listings under LISTED_ROOTS of `home`: the ones the cache holds (`known`), the ones
 * the walk found (`found`), and the trees to record once the start has answered every file
 * (`trees`). `entryOf` gives the cache's entry of a path (a directory's path ends in a separator).
 */
export class DirListings {
  /** The cache keys of the roots' trees: each root's path and a separator (also the prefix of what is under it). */
  readonly keys: readonly string[];
  private readonly roots: readonly string[];
  private readonly walked = new Map<string, WalkedDir>();
  /** Per root, the listings its cached tree holds, by directory (built at first use). */
  private readonly recorded = new Map<string, Map<string, RecordedDir>>();

  constructor(
    home: string,
    private readonly entryOf: (file: string) => unknown,
  ) {
    this.roots = LISTED_ROOTS.map((r) => path.join(home, r));
    this.keys = this.roots.map((r) => r + path.sep);
  }

  /** The index of the root `dir` is or lies under, or -1. */
  private rootOf(dir: string): number {
    return this.roots.findIndex((r, i) => dir === r || dir.startsWith(this.keys[i]!));
  }

  /** The listing of `dir` the cache holds, if `dir` is unchanged since (inode and ctime), else null. */
  known(dir: string, own: Stats): DirListing | null {
    const i = this.rootOf(dir);
    if (i < 0) return null;
    const root = this.roots[i]!;
    let dirs = this.recorded.get(root);
    if (!dirs) {
      dirs = recordedDirsOf(root, this.entryOf(this.keys[i]!));
      this.recorded.set(root, dirs);
    }
    const d = dirs.get(dir);
    return d && d.ino === own.ino && d.ctimeMs === own.ctimeMs ? d : null;
  }

  /** What the walk found in `dir` (`known`: from the cache), at `now` (for RACY_DIR_MS). */
  found(dir: string, own: Stats, listing: DirListing | null, known: boolean, now: number): void {
    if (this.rootOf(dir) < 0) return;
    const settled = listing !== null && own.ctimeMs < now - RACY_DIR_MS;
    this.walked.set(dir, { ino: own.ino, ctimeMs: own.ctimeMs, listing: settled ? listing : null, known });
  }

  /**
   * The trees to write, by key (a root's path and a separator; null: remove it): those that differ
   * from the cache's (a root whose every listing came from the cache is not even compared; one
   * whose directories changed within RACY_DIR_MS gives the same tree again and again, and is not
   * written again for it). A directory is recorded with its listing only when each subdirectory it
   * lists was walked (is a node).
   */
  trees(): [string, CachedTree | null][] {
    // One pass over the walked directories, kept per root in walk order (a copy of the map and a
    // destructuring per directory and root cost ~1.5 MB of iterator results at a warm start of
    // the big home, run interpreted: docs/PERFORMANCE.md, "Indexed loops on the start's path").
    const dirsOf: string[][] = this.roots.map(() => []);
    const walkedOf: WalkedDir[][] = this.roots.map(() => []);
    this.walked.forEach((w, dir) => {
      for (let i = 0; i < this.roots.length; i++) {
        if (dir !== this.roots[i] && !dir.startsWith(this.keys[i]!)) continue;
        dirsOf[i]!.push(dir);
        walkedOf[i]!.push(w);
      }
    });
    const out: [string, CachedTree | null][] = [];
    for (let i = 0; i < this.roots.length; i++) {
      const root = this.roots[i]!;
      const key = this.keys[i]!;
      const dirs = dirsOf[i]!;
      const walked = walkedOf[i]!;
      if (walked.length > 0 && walked.every((w) => w.known)) continue;
      const index = new Map<string, number>();
      const nodes: TreeNode[] = [];
      for (let j = 0; j < dirs.length; j++) {
        const dir = dirs[j]!;
        const w = walked[j]!;
        const parent = dir === root ? -1 : index.get(path.dirname(dir));
        if (parent === undefined) continue;
        index.set(dir, nodes.length);
        const name = dir === root ? '' : path.basename(dir);
        const complete = w.listing?.dirs.every((sub) => this.walked.has(dir + path.sep + sub));
        nodes.push(w.listing && complete ? [parent, name, w.ino, w.ctimeMs, w.listing.files] : [parent, name]);
      }
      const was = this.entryOf(key);
      if (nodes.length === 0 ? was === undefined : isTree(was) && sameNodes(was.nodes, nodes)) continue;
      out.push([key, nodes.length > 0 ? { k: 'tree', nodes } : null]);
    }
    return out;
  }
}

/** Two trees' nodes are the same. */
function sameNodes(a: readonly TreeNode[], b: readonly TreeNode[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.length !== y.length || x[0] !== y[0] || x[1] !== y[1]) return false;
    if (x.length === 5 && y.length === 5) {
      if (x[2] !== y[2] || x[3] !== y[3] || x[4].length !== y[4].length || x[4].some((name, j) => name !== y[4][j])) return false;
    }
  }
  return true;
}

/** The directories of a cached tree of `root` whose listing it records, by path (none when `entry` is not a tree). */
function recordedDirsOf(root: string, entry: unknown): Map<string, RecordedDir> {
  const out = new Map<string, RecordedDir>();
  if (!isTree(entry)) return out;
  const paths: string[] = [];
  const recorded: (RecordedDir | null)[] = [];
  const nodes = entry.nodes;
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]!;
    const parent = node[0];
    const name = node[1];
    // Written in walk order, a parent first: anything else is not a tree this reader wrote.
    if (parent >= paths.length || (parent < 0 && paths.length > 0)) break;
    const dir = parent < 0 ? root : paths[parent] + path.sep + name;
    const r = node.length === 5 ? { ino: node[2], ctimeMs: node[3], files: node[4], dirs: [] as string[] } : null;
    paths.push(dir);
    recorded.push(r);
    if (r) out.set(dir, r);
    if (parent >= 0) recorded[parent]?.dirs.push(name);
  }
  return out;
}
