/**
 * Where loop-dash keeps what it remembers between runs (the session caches, V8's code cache of the
 * script bundle). No imports beyond Node's own: `bin/loop-dash.js` loads it before the CLI.
 */
import os from 'node:os';
import path from 'node:path';

/**
 * The default cache directory: `$LOOP_DASH_CACHE_DIR` when set (the test runner points it at a
 * scratch directory), else `$XDG_CACHE_HOME/loop-dash`, else `~/.cache/loop-dash`.
 */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.LOOP_DASH_CACHE_DIR && path.isAbsolute(env.LOOP_DASH_CACHE_DIR)) return env.LOOP_DASH_CACHE_DIR;
  return path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'loop-dash');
}
