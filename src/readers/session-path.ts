/**
 * Where a pi session file sits says what it is (SPEC §3.1): a root directly in its cwd directory,
 * a lane below the root's own directory (pi-subagents names it after the root file without
 * `.jsonl`; a `.jsonl`-suffixed directory is accepted too).
 */
import path from 'node:path';
import { relativeInside, resolvedPrefix } from './rel-path.js';

/** What a session file's path tells us. */
export interface SessionPathInfo {
  /** The id from the file name: after the first `_`, without `.jsonl`. */
  sessionId: string;
  role: 'root' | 'lane';
  /** For a lane: the root's session file. */
  rootFile: string | null;
  /** For a lane: the directory right below the root's directory. */
  runId: string | null;
  /** `<home>/sessions/--<cwd-slug>--`. */
  cwdDir: string;
}

const JSONL = '.jsonl';
const SESSIONS = 'sessions' + path.sep;

/** Parses a session file path below `<home>/sessions`; null for anything else (temp files too). */
export function parseSessionPath(home: string, file: string): SessionPathInfo | null {
  // Relative to the home, whose resolved prefix `relativeInside` keeps (joining `<home>/sessions`
  // for every file normalised a path each call: most of a parse on a start's cold JIT).
  const inHome = relativeInside(home, file);
  if (inHome === null || !inHome.startsWith(SESSIONS)) return null;
  const rel = inHome.slice(SESSIONS.length);
  if (rel === '') return null;
  const parts = rel.split(path.sep);
  const base = parts[parts.length - 1]!;
  if (!isSessionFileName(base)) return null;
  // A writer's temp or hidden directory anywhere on the way is not a session either.
  if (parts.some((p) => p.startsWith('.') || p.includes('.tmp'))) return null;
  const slug = parts[0]!;
  if (!/^--.*--$/.test(slug)) return null;
  // `slug` is one plain segment (no separator, not `.`-led): joining is concatenation.
  const cwdDir = resolvedPrefix(home) + SESSIONS + slug;
  const sessionId = sessionIdFromName(base);
  if (sessionId === '') return null;
  if (parts.length === 2) return { sessionId, role: 'root', rootFile: null, runId: null, cwdDir };
  // Lanes: <slug>/<root stem>[.jsonl]/<runId>/…/<file>.jsonl (at least one level below the run).
  if (parts.length < 4) return null;
  const rootDir = parts[1]!;
  const rootStem = rootDir.endsWith(JSONL) ? rootDir.slice(0, -JSONL.length) : rootDir;
  // A root file is `<UTC>_<id>.jsonl`; sibling directories such as `subagent-artifacts` are not roots.
  if (!rootStem.includes('_')) return null;
  return {
    sessionId,
    role: 'lane',
    rootFile: cwdDir + path.sep + rootStem + JSONL,
    runId: parts[2]!,
    cwdDir,
  };
}

/** `*.jsonl`, not hidden, not a writer's temp file. */
export function isSessionFileName(name: string): boolean {
  return name.endsWith(JSONL) && name.length > JSONL.length && !name.startsWith('.') && !name.includes('.tmp');
}

/** The id part of `<UTC>_<id>.jsonl` (the whole stem when there is no `_`). */
export function sessionIdFromName(name: string): string {
  const stem = name.endsWith(JSONL) ? name.slice(0, -JSONL.length) : name;
  const cut = stem.indexOf('_');
  return cut < 0 ? stem : stem.slice(cut + 1);
}
