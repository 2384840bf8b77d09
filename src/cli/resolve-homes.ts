/** SPEC §1: `--home DIR` (repeatable), then `$PI_CODING_AGENT_DIR`, then `~/.loop-pi` if it exists, then `~/.pi/agent`. */
import { existsSync, statSync } from 'node:fs';
import { InputError } from './parse-time.js';
import os from 'node:os';
import path from 'node:path';

export function resolveHomes(flags: string[] | undefined, env: NodeJS.ProcessEnv = process.env, homedir = os.homedir()): string[] {
  if (flags && flags.length > 0) return onePerDirectory(flags.map((h) => path.resolve(h)));
  if (env.PI_CODING_AGENT_DIR) return [path.resolve(env.PI_CODING_AGENT_DIR)];
  const loopPi = path.join(homedir, '.loop-pi');
  if (existsSync(loopPi)) return [loopPi];
  return [path.join(homedir, '.pi', 'agent')];
}

/**
 * One spelling per directory, the first given: a home named twice — again through a symlink or a
 * bind mount — was read twice, every session shown once but its incidents counted twice,
 * each file watched and read twice. A path that does not resolve (a home not made yet) is kept.
 */
function onePerDirectory(homes: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const home of homes) {
    // The directory itself (device and inode), which no other spelling changes.
    let id = home;
    try {
      const st = statSync(home, { bigint: true });
      // Some file systems (network, FUSE, FAT) report no inode (0): a path is then its own.
      if (st.ino !== 0n) id = `${st.dev}:${st.ino}`;
    } catch {
      // Not there (yet), or not readable: checkHomes says which, by the name given.
    }
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(home);
  }
  return out;
}

/**
 * A home that is not a directory is a mistake to name at once (exit 2). One that does not exist
 * is one for a one-shot command (`mustExist`: it would print an empty document and exit 0); the
 * dashboard and the exporter wait for it to appear instead (RELIABILITY B12).
 */
export function checkHomes(homes: readonly string[], opts: { mustExist: boolean; note?: (line: string) => void }): void {
  for (const home of homes) {
    let isDir: boolean;
    try {
      isDir = statSync(home).isDirectory();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw new InputError(`${home}: cannot read this pi home: ${code ?? String(err)}`);
      if (opts.mustExist) throw new InputError(`no pi home at ${home} (it does not exist); name yours with --home DIR or $PI_CODING_AGENT_DIR, or try loop-dash demo`);
      continue;
    }
    if (!isDir) throw new InputError(`${home} is not a directory; a pi home is one (e.g. ~/.pi/agent): name it with --home DIR`);
    // The directory above the home (`~/.pi` for `~/.pi/agent`) read as one gives no row and no
    // warning, and a service's health check stays green: said once on stderr (the CLI review).
    if (opts.note && !looksLikePiHome(home)) opts.note(`loop-dash: note: ${home} does not look like a pi home (no settings.json, models.json, sessions/, extensions/ or loop-dash/ in it): is your pi agent directory below it?\n`);
  }
}

/**
 * A directory holding any of a pi home's settings, models, sessions, extensions or our own
 * directory (`auth.json` is never looked at, not even for being there).
 */
export function looksLikePiHome(home: string): boolean {
  return ['settings.json', 'models.json', 'sessions', 'extensions', 'loop-dash'].some((name) => existsSync(path.join(home, name)));
}
