/** SPEC §1: `--home DIR` (repeatable), then `$PI_CODING_AGENT_DIR`, then `~/.loop-pi` if it exists, then `~/.pi/agent`. */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function resolveHomes(flags: string[] | undefined, env: NodeJS.ProcessEnv = process.env, homedir = os.homedir()): string[] {
  if (flags && flags.length > 0) return [...new Set(flags.map((h) => path.resolve(h)))];
  if (env.PI_CODING_AGENT_DIR) return [path.resolve(env.PI_CODING_AGENT_DIR)];
  const loopPi = path.join(homedir, '.loop-pi');
  if (existsSync(loopPi)) return [loopPi];
  return [path.join(homedir, '.pi', 'agent')];
}
