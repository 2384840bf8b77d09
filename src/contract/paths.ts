/** Where each artifact lives inside a pi home (SPEC §3, §4). One place, so paths never drift. */
import { createHash } from 'node:crypto';
import path from 'node:path';

export const homePaths = (home: string) => ({
  sessions: path.join(home, 'sessions'),
  incidents: path.join(home, 'incidents'),
  laneRuns: path.join(home, 'tmp', 'async-subagent-runs'),
  loopWait: path.join(home, 'loop-wait'),
  settings: path.join(home, 'settings.json'),
  models: path.join(home, 'models.json'),
  dash: path.join(home, 'loop-dash'),
  checkpoints: path.join(home, 'loop-dash', 'checkpoints'),
  control: path.join(home, 'loop-dash', 'control'),
  journal: path.join(home, 'loop-dash', 'actions.jsonl'),
  extensionLog: path.join(home, 'loop-dash', 'extension.log'),
  alive: path.join(home, 'loop-dash', 'alive'),
});

/**
 * A socket path must fit `sockaddr_un.sun_path` (108 bytes on Linux, 104 on macOS, with its NUL):
 * a longer one is not used, and the dashboard probes that process as it would without one.
 */
export const MAX_SOCKET_PATH_BYTES = 100;

/**
 * The liveness socket of one pi process (docs/CONTRACT.md §5): the extension listens on it while
 * its session runs, and the kernel closes every connection when the process ends, however it
 * ends — so a dashboard learns of a death at once instead of at its next probe. Named by a tag of
 * the host, the pid and a tag of its start identity: a process that reuses the pid has another
 * name, and a home shared by several hosts keeps their sockets apart. Null when the process has no
 * start identity or the path would not fit a socket address.
 */
export function aliveSocketPath(home: string, host: string, pid: number, pidStart: string | null): string | null {
  if (pidStart === null || !Number.isSafeInteger(pid) || pid <= 0) return null;
  const file = path.join(homePaths(home).alive, `${aliveHostTag(host)}-${pid}-${tag(pidStart, 8)}.sock`);
  return Buffer.byteLength(file) <= MAX_SOCKET_PATH_BYTES ? file : null;
}

/** The prefix of this host's liveness sockets: `<tag>-`. */
export function aliveHostTag(host: string): string {
  return tag(host, 6);
}

/** The pid a liveness socket's name carries for `host`, or null when the name is not one of its. */
export function aliveSocketPid(name: string, host: string): number | null {
  const m = /^([0-9a-f]{6})-([1-9][0-9]*)-[0-9a-f]{8}\.sock$/.exec(name);
  if (!m || m[1] !== aliveHostTag(host)) return null;
  const pid = Number(m[2]);
  return Number.isSafeInteger(pid) ? pid : null;
}

function tag(text: string, chars: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, chars);
}
/** SPEC §3.1: the cwd without its leading separator, with `/`, `\` and `:` turned into `-`. */
export function cwdSlug(cwd: string): string {
  return `--${cwd.replace(/^[/\\]+/, '').replace(/[/\\:]/g, '-')}--`;
}

/** SPEC §3.2: an ISO time with `:` and `.` turned into `-`. */
export function utcStamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[:.]/g, '-');
}

/** SPEC §3.4: the state log beside a root's `launch.report`. */
export function stateLogPathFromReport(report: string): string {
  const dir = path.dirname(report);
  const base = path.basename(report).replace(/^report-/, 'state-').replace(/\.md$/, '.jsonl');
  return path.join(dir, base);
}

/**
 * The state log of a root whose `launch.report` is `report` and whose session's cwd is `cwd`: a
 * relative report is the root's, taken from its cwd (never from the dashboard's own working
 * directory); with no cwd known, a relative report locates nothing (null).
 */
export function stateLogOfRoot(report: string, cwd: string | null | undefined): string | null {
  if (path.isAbsolute(report)) return stateLogPathFromReport(report);
  if (!cwd || !path.isAbsolute(cwd)) return null;
  return stateLogPathFromReport(path.resolve(cwd, report));
}
