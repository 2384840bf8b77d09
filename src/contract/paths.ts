/** Where each artifact lives inside a pi home (SPEC §3, §4). One place, so paths never drift. */
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
});

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
