/**
 * A Node ≥ 22.19 binary for the real-pi tests (pi 1.6 does not start on Node 20). The project
 * itself runs on Node 20, so the binary must not land in the project's node_modules (its `bin:
 * node` would shadow Node 20 in npm scripts): it is installed from the npm registry package
 * `node-<platform>-<arch>` into a cache directory outside the repository, once, and re-used.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The Node version installed when none is cached. */
export const NODE22_VERSION = '22.23.5';
/** pi 1.6's floor. */
export const PI_MIN_NODE: readonly [number, number, number] = [22, 19, 0];

/** `$XDG_CACHE_HOME/loop-dash-node22`, else `~/.cache/loop-dash-node22`. */
export function node22CacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : path.join(os.homedir(), '.cache');
  return path.join(base, 'loop-dash-node22');
}

/** The registry package carrying this platform's Node binary. */
export function nodePackageName(platform: string = process.platform, arch: string = process.arch): string {
  return `node-${platform}-${arch}`;
}

/** Where the package puts the binary under `prefix`. */
export function node22BinaryPath(prefix: string, platform: string = process.platform, arch: string = process.arch): string {
  return path.join(prefix, 'node_modules', nodePackageName(platform, arch), 'bin', 'node');
}

/** `[major, minor, patch]` of `v22.23.5`, or null. */
export function parseNodeVersion(text: string): [number, number, number] | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(text.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

/** True when `v` is at least `min`. */
export function versionAtLeast(v: readonly number[], min: readonly number[]): boolean {
  for (let i = 0; i < min.length; i++) {
    const a = v[i] ?? 0;
    const b = min[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

async function usable(binary: string): Promise<boolean> {
  try {
    const { stdout } = await run(binary, ['--version'], { timeout: 20_000 });
    const v = parseNodeVersion(stdout);
    return v !== null && versionAtLeast(v, PI_MIN_NODE);
  } catch {
    return false;
  }
}

/** Options of {@link ensureNode22}. */
export interface EnsureNode22Options {
  prefix?: string;
  version?: string;
  /** How long a concurrent installer may hold the lock; default 5 min. */
  lockTimeoutMs?: number;
}

/**
 * The path of a usable Node ≥ 22.19: this process's own when it already is one, else the cached
 * binary, installed first with `npm install --no-save --prefix <cache> node-<platform>-<arch>@<version>`
 * when missing. Concurrent callers share one install (a lock directory). Throws with the npm
 * output when the install fails.
 */
export async function ensureNode22(opts: EnsureNode22Options = {}): Promise<string> {
  const own = parseNodeVersion(process.version);
  if (own && versionAtLeast(own, PI_MIN_NODE)) return process.execPath;
  const prefix = opts.prefix ?? node22CacheDir();
  const binary = node22BinaryPath(prefix);
  if (await usable(binary)) return binary;

  fs.mkdirSync(prefix, { recursive: true });
  const lock = path.join(prefix, '.install-lock');
  const deadline = Date.now() + (opts.lockTimeoutMs ?? 5 * 60_000);
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (await usable(binary)) return binary;
      // A lock older than the timeout belongs to an installer that died.
      const age = Date.now() - fs.statSync(lock).mtimeMs;
      if (age > (opts.lockTimeoutMs ?? 5 * 60_000)) fs.rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for another Node 22 install in ${prefix}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    if (await usable(binary)) return binary;
    const spec = `${nodePackageName()}@${opts.version ?? NODE22_VERSION}`;
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    try {
      await run(npm, ['install', '--no-save', '--no-audit', '--no-fund', '--loglevel=error', '--prefix', prefix, spec], {
        timeout: 5 * 60_000,
        maxBuffer: 16 * 1024 * 1024,
        cwd: prefix,
      });
    } catch (err) {
      const e = err as { stderr?: string; message?: string };
      throw new Error(`npm install ${spec} into ${prefix} failed: ${e.stderr?.trim() || e.message}`);
    }
    if (!(await usable(binary))) throw new Error(`${binary} was installed but does not run as Node ≥ ${PI_MIN_NODE.join('.')}`);
    return binary;
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}
