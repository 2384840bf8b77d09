/**
 * Where the running pi keeps its home, and what the session file's place says about the session.
 * pi's own rule (`getAgentDir()` in pi 1.6): `$PI_CODING_AGENT_DIR` (a leading `~` expanded), else
 * `~/.pi/agent`.
 */
import os from 'node:os';
import path from 'node:path';
import { parseSessionPath, sessionIdFromName } from '../readers/session-path.js';

/** The pi home (agent directory) of this process. */
export function piAgentDir(env: NodeJS.ProcessEnv = process.env, homedir: string = os.homedir()): string {
  const dir = env.PI_CODING_AGENT_DIR;
  if (dir) {
    if (dir === '~') return homedir;
    if (dir.startsWith('~/')) return path.join(homedir, dir.slice(2));
    return path.resolve(dir);
  }
  return path.join(homedir, '.pi', 'agent');
}

/** Root or lane, and for a lane its root session and run (SPEC §3.1 lane layout). */
export interface SessionPlace {
  role: 'root' | 'lane';
  parentSession: string | null;
  runId: string | null;
}

/**
 * A lane's session file lives below its root's directory
 * (`sessions/--<slug>--/<root file stem>/<runId>/…/<file>.jsonl`); anything else is a root.
 */
export function sessionPlace(home: string, sessionFile: string | null): SessionPlace {
  const info = sessionFile ? parseSessionPath(home, sessionFile) : null;
  if (info?.role === 'lane' && info.rootFile) {
    return { role: 'lane', parentSession: sessionIdFromName(path.basename(info.rootFile)), runId: info.runId };
  }
  return { role: 'root', parentSession: null, runId: null };
}
