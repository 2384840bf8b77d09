/**
 * A path relative to a directory it lies in, without `path.relative`'s cost on the hot paths of a
 * start (a walk classifies every file it lists and a thousand session paths are parsed): for the
 * absolute, normalised paths a walk and the watchers produce, a prefix check suffices.
 */
import path from 'node:path';

/** Resolved prefixes of the directories asked about (a few per home); bounded. */
const prefixes = new Map<string, string>();

/** `dir` resolved, with a trailing separator. */
export function resolvedPrefix(dir: string): string {
  let prefix = prefixes.get(dir);
  if (prefix === undefined) {
    const resolved = path.resolve(dir);
    prefix = resolved.endsWith(path.sep) ? resolved : resolved + path.sep;
    if (prefixes.size >= 64) prefixes.clear();
    prefixes.set(dir, prefix);
  }
  return prefix;
}

const DOT = path.sep + '.';
const DOUBLE = path.sep + path.sep;

/**
 * `file` relative to `dir` ('' for `dir` itself), or null when it is not inside `dir`. Same result
 * as `path.relative(dir, path.resolve(file))` filtered to paths inside `dir`.
 */
export function relativeInside(dir: string, file: string): string | null {
  const prefix = resolvedPrefix(dir);
  // Fast path: an absolute path below `dir` with no `.`/`..` segment, doubled or trailing separator
  // after it (the prefix is resolved already, so a hidden directory above the home costs nothing).
  if (file.startsWith(prefix) && !file.includes(DOT, prefix.length - 1) && !file.includes(DOUBLE, prefix.length - 1) && !file.endsWith(path.sep)) {
    return file.slice(prefix.length);
  }
  const rel = path.relative(prefix, path.resolve(file));
  if (rel.startsWith('..') || path.isAbsolute(rel)) return null;
  return rel;
}
