/** Drives a real terminal: a detached tmux session running a command, read with capture-pane. */
import { execFileSync, spawnSync } from 'node:child_process';
import { waitFor } from './wait-for.js';

export interface TmuxSession {
  name: string;
  /** The visible screen as plain text (no escapes), one string per row. */
  screen(): string[];
  /** The visible screen with escape sequences (colours) kept. */
  screenAnsi(): string;
  keys(...keys: string[]): void;
  /** Types literal text (no key-name interpretation). */
  type(text: string): void;
  waitForText(pattern: RegExp | string, what: string, timeoutMs?: number): Promise<string[]>;
  resize(columns: number, rows: number): void;
  /** Many resizes in ONE tmux invocation, so they reach the terminal as fast as tmux can apply them. */
  resizeMany(sizes: [number, number][]): void;
  /** The exit status of the command once it has ended, or null while it runs. */
  exitStatus(): number | null;
  kill(): void;
}

let counter = 0;

export function tmuxAvailable(): boolean {
  return spawnSync('tmux', ['-V']).status === 0;
}

/**
 * Starts `command` (a shell command line) in a new detached session of the given size. The pane
 * stays after the command exits (remain-on-exit) so its exit status can be read.
 */
export function startTmux(command: string, opts: { columns?: number; rows?: number; env?: Record<string, string> } = {}): TmuxSession {
  const name = `loopdash-${process.pid}-${++counter}`;
  // The session cache of a dashboard started here goes where the test runner says (a tmux
  // server started earlier would not pass the variable on by itself).
  const cacheDir = process.env.LOOP_DASH_CACHE_DIR ? { LOOP_DASH_CACHE_DIR: process.env.LOOP_DASH_CACHE_DIR } : {};
  const env = Object.entries({ ...cacheDir, ...opts.env }).map(([k, v]) => `${k}=${shellQuote(v)}`).join(' ');
  const cols = String(opts.columns ?? 120);
  const rows = String(opts.rows ?? 40);
  execFileSync('tmux', ['new-session', '-d', '-s', name, '-x', cols, '-y', rows, 'sh']);
  execFileSync('tmux', ['set-option', '-t', name, 'remain-on-exit', 'on']);
  execFileSync('tmux', ['set-option', '-t', name, 'status', 'off']);
  execFileSync('tmux', ['resize-window', '-t', name, '-x', cols, '-y', rows]);
  execFileSync('tmux', ['respawn-pane', '-k', '-t', name, `env ${env} ${command}`]);
  const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8' });
  const session: TmuxSession = {
    name,
    screen: () => tmux('capture-pane', '-p', '-t', name).replace(/\n$/, '').split('\n'),
    screenAnsi: () => tmux('capture-pane', '-p', '-e', '-t', name),
    keys: (...keys) => void tmux('send-keys', '-t', name, ...keys),
    type: (text) => void tmux('send-keys', '-t', name, '-l', text),
    async waitForText(pattern, what, timeoutMs = 10_000) {
      const re = typeof pattern === 'string' ? new RegExp(escapeRe(pattern)) : pattern;
      return waitFor(() => {
        const s = session.screen();
        return re.test(s.join('\n')) ? s : null;
      }, () => `${what} (screen:\n${safeScreen(session)})`, timeoutMs, 50);
    },
    resize: (c, r) => void tmux('resize-window', '-t', name, '-x', String(c), '-y', String(r)),
    resizeMany: (sizes) => void tmux(...sizes.flatMap(([c, r], i) => [...(i ? [';'] : []), 'resize-window', '-t', name, '-x', String(c), '-y', String(r)])),
    exitStatus() {
      const out = tmux('display-message', '-p', '-t', name, '#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}').trim();
      const [dead, status, signal] = out.split('|');
      if (dead !== '1') return null;
      // Killed by a signal: report it the way a shell does (128 + n).
      if (!status && signal) return 128 + Number(signal);
      return status ? Number(status) : null;
    },
    kill: () => void spawnSync('tmux', ['kill-session', '-t', name]),
  };
  return session;
}

function safeScreen(s: TmuxSession): string {
  try {
    return s.screen().join('\n');
  } catch {
    return '(no screen)';
  }
}

function shellQuote(v: string): string {
  return `'${v.replace(/'/g, `'\\''`)}'`;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
