/**
 * One pass over a pi home: which files exist, classified by artifact, with their stat. This is the
 * floor of start-up (a plain list+stat) and the reconcile sweep that backs up the watcher.
 */
import fs, { promises as fsp, type Stats } from 'node:fs';
import path from 'node:path';
import { homePaths } from '../contract/paths.js';
import { relativeInside } from './rel-path.js';
import { TimeSlices } from './time-slices.js';

/** The artifacts a home file can be. */
export type ArtifactKind = 'session' | 'checkpoint' | 'incident' | 'lane-status' | 'receipt' | 'settings' | 'journal' | 'ack';

/** A file found in a home, with what it is. */
export interface FoundFile {
  kind: ArtifactKind;
  file: string;
  size: number;
  mtimeMs: number;
  ino: number;
}

/** Writers' temp files (`*.tmp*`, dot files) are never artifacts. */
export function isTempName(name: string): boolean {
  return name.startsWith('.') || /\.tmp/i.test(name);
}

/** Which artifact a path inside `home` is, or null. Pure. */
export function classifyPath(home: string, file: string): ArtifactKind | null {
  const rel = relativeInside(home, file);
  if (rel === null) return null;
  const parts = rel.split(path.sep);
  const name = parts[parts.length - 1] ?? '';
  if (isTempName(name)) return null;
  const top = parts[0];
  if (top === 'sessions' && name.endsWith('.jsonl') && parts.length >= 3) return 'session';
  if (top === 'incidents' && name.endsWith('.json') && parts.length >= 2) return 'incident';
  if (rel === 'settings.json' || rel === 'models.json') return 'settings';
  if (top === 'tmp' && parts[1] === 'async-subagent-runs' && parts.length === 4 && name === 'status.json') return 'lane-status';
  if (top === 'loop-wait' && parts.length === 4 && parts[2] === 'receipts' && name.endsWith('.json')) return 'receipt';
  if (top === 'loop-dash') {
    if (parts[1] === 'checkpoints' && parts.length === 3 && name.endsWith('.json')) return 'checkpoint';
    if (parts[1] === 'actions.jsonl' && parts.length === 2) return 'journal';
    if (parts[1] === 'control' && parts.length === 4 && name.endsWith('.ack.json')) return 'ack';
  }
  return null;
}

export interface WalkResult {
  files: FoundFile[];
  /** Directories read (the home, `tmp/` and everything below the walk roots), for the watcher. */
  dirs: { dir: string; ino: number }[];
  /** Directories that could not be read (EACCES, symlink loops, …), with the reason. */
  problems: { file: string; message: string }[];
  homeExists: boolean;
}

/** Options of {@link walkHome}. */
export interface WalkOptions {
  /**
   * Called with each directory (and its inode) just before it is listed, so a watch set there
   * reports everything created after the listing: a walk and its watches leave no gap.
   */
  onDir?: (dir: string, ino: number) => void;
  /** Walk only these of {@link WALK_ROOTS} (default: all of them). */
  roots?: readonly WalkRoot[];
  /**
   * Also look at the home itself, `tmp/` and the settings files (default true). A start walks in
   * passes ({@link LIST_ROOTS}, {@link LIVE_ROOTS}, {@link LATER_ROOTS}); only the first needs them.
   */
  top?: boolean;
  /**
   * Stats that may be taken as known instead of asked for: called with each directory under a walk
   * root and its own stat (taken before it is listed), it gives, per file listed there, the stat
   * to use, or undefined (the file is stat'ed). Null: every file there is stat'ed.
   */
  knownStats?: (dir: string, own: Stats) => KnownStat | null;
  /**
   * A listing that may be taken instead of reading the directory: called with each directory under
   * a walk root and its own stat (taken before it would be listed), it gives the names the walk
   * would find there, or null (the directory is read). The owner answers only for a directory
   * unchanged since it was listed: same inode and ctime (creating, removing or renaming an entry
   * changes a directory's ctime).
   */
  knownListing?: (dir: string, own: Stats) => DirListing | null;
  /**
   * Called with each directory under a walk root that was listed, its own stat, what the walk
   * found there by name (null when names alone do not describe it: a symbolic link in it is
   * followed by a stat at every walk) and whether that came from `knownListing`.
   */
  onListing?: (dir: string, own: Stats, listing: DirListing | null, known: boolean) => void;
  /**
   * A directory whose files the owner takes from elsewhere (the cache: an incident directory
   * unchanged since it was recorded): called with each directory under a walk root and its own
   * stat, it gives the names of its subdirectories to walk, or null (the directory is walked as
   * usual). A directory taken is watched and returned among `dirs`, but neither listed nor its
   * files stat'ed or returned (nor `knownStats` or `onListing` called for it).
   */
  takeDir?: (dir: string, own: Stats) => readonly string[] | null;
}

/**
 * What a walk finds in a directory, by name: the artifact files (temp names and files no artifact
 * left out) and the subdirectories it descends into, in the order they were listed.
 */
export interface DirListing {
  files: string[];
  dirs: string[];
}

/** See {@link WalkOptions.knownStats}. */
export type KnownStat = (file: string, kind: ArtifactKind) => Pick<FoundFile, 'size' | 'mtimeMs' | 'ino'> | undefined;

/** The directories a walk descends into, relative to the home; everything else is ignored. */
export const WALK_ROOTS = ['sessions', 'loop-dash', 'incidents', 'tmp/async-subagent-runs', 'loop-wait'] as const;
export type WalkRoot = (typeof WALK_ROOTS)[number];
/** What the first frame needs: every session. */
export const LIST_ROOTS: readonly WalkRoot[] = ['sessions'];
/** Walked right after the list is drawn: the checkpoints (the live requests), control, the journal. */
export const LIVE_ROOTS: readonly WalkRoot[] = ['loop-dash'];
/** The rest: incidents, lane statuses, loop-wait receipts. */
export const LATER_ROOTS: readonly WalkRoot[] = WALK_ROOTS.filter((r) => !LIST_ROOTS.includes(r) && !LIVE_ROOTS.includes(r));
/** Watched but not walked: where a missing walk root will appear. */
const WATCH_ONLY = ['tmp'];

/**
 * Lists and stats every artifact file. Symlinked directories are not followed (no loops); a
 * directory that cannot be read is reported once and skipped.
 */
export async function walkHome(home: string, opts: WalkOptions = {}): Promise<WalkResult> {
  const files: FoundFile[] = [];
  const dirs: { dir: string; ino: number }[] = [];
  const problems: { file: string; message: string }[] = [];
  const onDir = opts.onDir ?? (() => undefined);
  const listings = { known: opts.knownListing ?? null, found: opts.onListing ?? null, take: opts.takeDir ?? null };
  const known = opts.knownStats ?? null;
  if (opts.top === false) {
    await walkRoots(home, opts.roots ?? WALK_ROOTS, onDir, known, listings, files, dirs, problems);
    return { files, dirs, problems, homeExists: true };
  }
  try {
    const st = await fsp.stat(home);
    if (!st.isDirectory()) return { files, dirs, problems: [{ file: home, message: 'not a directory' }], homeExists: false };
    onDir(home, st.ino);
    dirs.push({ dir: home, ino: st.ino });
  } catch {
    return { files, dirs, problems, homeExists: false };
  }
  for (const rel of WATCH_ONLY) {
    const st = await statOrNull(path.join(home, rel));
    if (st?.isDirectory()) {
      onDir(path.join(home, rel), st.ino);
      dirs.push({ dir: path.join(home, rel), ino: st.ino });
    }
  }
  for (const f of [homePaths(home).settings, homePaths(home).models]) {
    const st = await statOrNull(f);
    if (st?.isFile()) files.push({ kind: 'settings', file: f, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
  }
  await walkRoots(home, opts.roots ?? WALK_ROOTS, onDir, known, listings, files, dirs, problems);
  return { files, dirs, problems, homeExists: true };
}

/** Lists and stats everything under `roots` of `home`, adding to the lists given. */
async function walkRoots(
  home: string,
  roots: readonly WalkRoot[],
  onDir: (dir: string, ino: number) => void,
  knownStats: ((dir: string, own: Stats) => KnownStat | null) | null,
  listings: { known: WalkOptions['knownListing'] | null; found: WalkOptions['onListing'] | null; take: WalkOptions['takeDir'] | null },
  files: FoundFile[],
  dirs: { dir: string; ino: number }[],
  problems: { file: string; message: string }[],
): Promise<void> {
  // The loops over names are indexed: a start runs interpreted (src/app/tiering.ts), where a
  // for-of's iterator protocol costs ~10× an indexed loop (docs/PERFORMANCE.md, "Indexed loops on
  // the start's path").
  // Synchronous listing and stats cost a few µs each, the asynchronous ones several times more
  // (a round through the thread pool); time slices keep the event loop free.
  // The time is checked every file, but the walk awaits only when a slice is over: an `await` per
  // file cost a microtask each (13 000 on a big home).
  const slices = new TimeSlices();
  const sep = path.sep;
  // The pi processes' liveness sockets (docs/CONTRACT.md §5): no artifact there, and not watched
  // (a socket made or removed at every session start would be an event for nothing).
  const alive = homePaths(home).alive;
  /**
   * What `dir` holds, by name: its listing in the cache when `knownListing` has one (`known`),
   * else read. The files and symbolic links in order (a link's kind is null: it is stat'ed, not
   * taken as a file), the subdirectories to descend into, and the listing for `onListing` (null
   * once a symbolic link makes names not enough). Null: the directory cannot be read.
   */
  const namesOf = (dir: string, own: Stats | null) => {
    const fulls: string[] = [];
    const kinds: (ArtifactKind | null)[] = [];
    const cached = own?.isDirectory() && listings.known ? listings.known(dir, own) : null;
    if (cached) {
      // Unchanged since it was listed: the same names, without reading the directory again.
      const names = cached.files;
      for (let i = 0; i < names.length; i++) {
        const full = dir + sep + names[i]!;
        const kind = classifyPath(home, full);
        if (!kind) continue;
        fulls.push(full);
        kinds.push(kind);
      }
      return { listing: cached as DirListing | null, known: true, fulls, kinds, subdirs: cached.dirs };
    }
    let entries;
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') problems.push({ file: dir, message: `cannot read directory (${code ?? String(err)})` });
      return null;
    }
    const names: string[] = [];
    const subdirs: string[] = [];
    let linked = false;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      // `dir` is normalised and an entry name is one plain segment: joining is concatenation.
      const full = dir + sep + e.name;
      if (e.isDirectory()) {
        if (!isTempName(e.name) && full !== alive) subdirs.push(e.name);
      } else if (e.isFile()) {
        const kind = classifyPath(home, full);
        if (!kind) continue;
        names.push(e.name);
        fulls.push(full);
        kinds.push(kind);
      } else if (e.isSymbolicLink()) {
        linked = true;
        fulls.push(full);
        kinds.push(null);
      }
    }
    return { listing: linked ? null : { files: names, dirs: subdirs }, known: false, fulls, kinds, subdirs };
  };
  const walkDir = async (dir: string, depth: number): Promise<void> => {
    // Watched before it is listed: a file created after the listing is then always reported.
    const own = statSyncOrNull(dir);
    if (own?.isDirectory()) onDir(dir, own.ino);
    const taken = own?.isDirectory() && listings.take ? listings.take(dir, own) : null;
    if (own && taken) {
      dirs.push({ dir, ino: own.ino });
      if (depth < 12) for (let i = 0; i < taken.length; i++) await walkDir(dir + sep + taken[i]!, depth + 1);
      return;
    }
    const found = namesOf(dir, own);
    if (!found) return;
    if (own) dirs.push({ dir, ino: own.ino });
    // Given right after the listing, before the stats: the owner judges it by the time now.
    if (own?.isDirectory()) listings.found?.(dir, own, found.listing, found.known);
    const known = own && knownStats ? knownStats(dir, own) : null;
    // A name from the cache is a file's only while the directory is unchanged: checked by the stat.
    const statFile = found.known ? fileStatOrNull : statSyncOrNull;
    const { fulls, kinds } = found;
    for (let i = 0; i < fulls.length; i++) {
      const full = fulls[i]!;
      const kind = kinds[i];
      if (kind) {
        const st = known?.(full, kind) ?? statFile(full);
        if (st) files.push({ kind, file: full, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
        if (slices.due()) await slices.pause();
        continue;
      }
      // Not followed: a symlink loop must not make the walk endless.
      const target = await fsp.stat(full).catch(() => null);
      if (target?.isDirectory()) problems.push({ file: full, message: 'symlinked directory not followed' });
      else if (target?.isFile()) {
        const linked = classifyPath(home, full);
        if (linked) files.push({ kind: linked, file: full, size: target.size, mtimeMs: target.mtimeMs, ino: target.ino });
      } else if (!target) problems.push({ file: full, message: 'broken or looping symlink' });
    }
    if (slices.due()) await slices.pause();
    const subdirs = found.subdirs;
    if (depth < 12) for (let i = 0; i < subdirs.length; i++) await walkDir(dir + sep + subdirs[i]!, depth + 1);
  };
  for (const r of roots) await walkDir(path.join(home, r), 0);
}

/** The stat of a regular file at `file`, or null (gone, or something else now). */
function fileStatOrNull(file: string): Stats | null {
  const st = statSyncOrNull(file);
  return st?.isFile() ? st : null;
}

function statSyncOrNull(file: string): Stats | null {
  try {
    return fs.statSync(file, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

async function statOrNull(file: string): Promise<Stats | null> {
  try {
    return await fsp.stat(file);
  } catch {
    return null;
  }
}
