/**
 * Drives a real pi process in RPC mode for the end-to-end tests: offline, in a temporary pi home,
 * with the extensions the test names. Commands go in as JSONL on stdin; responses and session
 * events come back on stdout, split on LF only (pi's framing rule: `readline` would also split on
 * U+2028/U+2029). Every wait is bounded.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';

/** The installed pi package directory (the dev dependency), found like Node resolves packages. */
export function piPackageDir(from: string = path.dirname(fileURLToPath(import.meta.url))): string {
  // The package's `exports` hide package.json from require.resolve, so walk node_modules up.
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', '@earendil-works', 'pi-coding-agent');
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`@earendil-works/pi-coding-agent is not installed above ${from}`);
  }
}

/** pi's CLI entry point. */
export function piCliPath(): string {
  return path.join(piPackageDir(), 'dist', 'bundle', 'cli.js');
}

/** The installed pi version. */
export function piVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(piPackageDir(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** One record pi wrote on stdout. */
export type PiRecord = Record<string, unknown> & { type: string };

/** Options of {@link PiProcess.start}. */
export interface PiStartOptions {
  /** A Node ≥ 22.19 binary (see `ensureNode22`). */
  node: string;
  /** The pi home: `PI_CODING_AGENT_DIR`. */
  home: string;
  cwd: string;
  /** `-e` paths, in load order. */
  extensions: string[];
  /** `--model`; default none. */
  model?: string;
  /** Disable pi's extension discovery (`--no-extensions`; `-e` still loads). Default true. */
  noDiscovery?: boolean;
  extraArgs?: string[];
  /** `HOME` for the child, so nothing reads or writes the real `~`; default `<home>/../user-home`. */
  userHome?: string;
  env?: Record<string, string>;
  /** How long to wait for pi to answer its first command; default 60 s. */
  startTimeoutMs?: number;
}

/** The child environment: offline, the given pi home, and a `HOME` away from the real one. */
function piEnv(opts: Pick<PiStartOptions, 'home' | 'userHome' | 'env'>): NodeJS.ProcessEnv {
  const userHome = opts.userHome ?? path.join(path.dirname(opts.home), 'user-home');
  fs.mkdirSync(userHome, { recursive: true });
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: userHome,
    PI_CODING_AGENT_DIR: opts.home,
    PI_OFFLINE: '1',
    PI_SKIP_VERSION_CHECK: '1',
    PI_TELEMETRY: '0',
    ...opts.env,
  };
}

function piArgs(opts: PiStartOptions, mode: string[]): string[] {
  const args = [piCliPath(), ...mode, '--offline'];
  if (opts.noDiscovery !== false) args.push('--no-extensions');
  for (const e of opts.extensions) args.push('-e', e);
  if (opts.model) args.push('--model', opts.model);
  args.push(...(opts.extraArgs ?? []));
  return args;
}

/**
 * Runs `pi -p <prompt>` (print mode: one prompt, then exit) and resolves when it exits, with how
 * long that took; SIGKILL after `timeoutMs` (then `code` is null).
 */
export function runPiPrint(opts: PiStartOptions, prompt: string, timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const t0 = Date.now();
  const child = spawn(opts.node, [...piArgs(opts, ['-p']), '--', prompt], { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'], env: piEnv(opts) });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - t0 });
    }),
  );
}

/** Waits for `check` to return a value other than undefined/false, polling; throws after `timeoutMs`. */
export async function waitUntil<T>(what: string, check: () => T | undefined | false | null, timeoutMs = 10_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = null;
  for (;;) {
    try {
      const value = check();
      if (value !== undefined && value !== false && value !== null) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A running pi in RPC mode. */
export class PiProcess {
  /** Every record received, in order. */
  readonly records: PiRecord[] = [];
  private stderrText = '';
  private nextId = 0;
  private readonly listeners = new Set<(r: PiRecord) => void>();
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    const decoder = new StringDecoder('utf8');
    let buf = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buf += decoder.write(chunk);
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).replace(/\r$/, '');
        buf = buf.slice(i + 1);
        if (line.trim() === '') continue;
        let record: PiRecord;
        try {
          record = JSON.parse(line) as PiRecord;
        } catch {
          this.stderrText += `[unparsed stdout] ${line.slice(0, 500)}\n`;
          continue;
        }
        this.records.push(record);
        for (const l of [...this.listeners]) l(record);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderrText += chunk.toString('utf8');
      if (this.stderrText.length > 200_000) this.stderrText = this.stderrText.slice(-100_000);
    });
    // A closed pipe after pi exits must not crash the test process.
    child.stdin.on('error', () => undefined);
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Starts pi and waits until it answers a `get_state` (extensions loaded, session started). */
  static async start(opts: PiStartOptions): Promise<PiProcess> {
    const child = spawn(opts.node, piArgs(opts, ['--mode', 'rpc']), { cwd: opts.cwd, stdio: ['pipe', 'pipe', 'pipe'], env: piEnv(opts) });
    const pi = new PiProcess(child);
    try {
      await pi.request({ type: 'get_state' }, opts.startTimeoutMs ?? 60_000);
    } catch (err) {
      pi.kill('SIGKILL');
      throw new Error(`pi did not start: ${err instanceof Error ? err.message : String(err)}\nstderr:\n${pi.stderr}`);
    }
    return pi;
  }

  /** pi's pid. */
  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** What pi wrote on stderr (for failure messages). */
  get stderr(): string {
    return this.stderrText;
  }

  /** Writes one command. */
  send(command: Record<string, unknown>): void {
    this.child.stdin.write(`${JSON.stringify(command)}\n`);
  }

  /** Sends a command with a fresh id and resolves with its response (rejects on `success: false`). */
  async request(command: Record<string, unknown>, timeoutMs = 15_000): Promise<PiRecord> {
    const id = `t${++this.nextId}`;
    const wait = this.waitFor((r) => r.type === 'response' && r.id === id, timeoutMs, `response to ${String(command.type)}`, this.records.length);
    this.send({ ...command, id });
    const response = await wait;
    if (response.success !== true) throw new Error(`${String(command.type)} failed: ${JSON.stringify(response)}`);
    return response;
  }

  /** Sends a prompt; resolves with its response (`data.disposition`: started, queued or handled). */
  prompt(message: string): Promise<PiRecord> {
    return this.request({ type: 'prompt', message });
  }

  /** The index the next record will get; pass it as `since` to wait only for later records. */
  get cursor(): number {
    return this.records.length;
  }

  /** Resolves with the first record at index ≥ `since` that matches. */
  waitFor(match: (r: PiRecord) => boolean, timeoutMs = 15_000, what = 'a pi record', since = 0): Promise<PiRecord> {
    const seen = this.records.slice(since).find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const listener = (r: PiRecord) => {
        if (!match(r)) return;
        cleanup();
        resolve(r);
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last records: ${this.records.slice(-5).map((r) => r.type).join(', ')}\nstderr:\n${this.stderrText.slice(-2000)}`));
      }, timeoutMs);
      const onExit = () => {
        cleanup();
        reject(new Error(`pi exited while waiting for ${what}\nstderr:\n${this.stderrText.slice(-2000)}`));
      };
      const cleanup = () => {
        clearTimeout(timer);
        this.listeners.delete(listener);
        this.child.off('exit', onExit);
      };
      this.listeners.add(listener);
      this.child.once('exit', onExit);
    });
  }

  /** Records of `type` at index ≥ `since`. */
  recordsOf(type: string, since = 0): PiRecord[] {
    return this.records.slice(since).filter((r) => r.type === type);
  }

  /** Closes stdin (pi's orderly shutdown) and waits for the exit; SIGKILL after `timeoutMs`. */
  async close(timeoutMs = 15_000): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
    const t0 = Date.now();
    this.child.stdin.end();
    const timer = setTimeout(() => this.kill('SIGKILL'), timeoutMs);
    try {
      const r = await this.exited;
      return { ...r, ms: Date.now() - t0 };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends a signal to pi (its pid only). */
  kill(signal: NodeJS.Signals): void {
    try {
      this.child.kill(signal);
    } catch {
      // already gone
    }
  }

  /** Resolves when pi has exited. */
  waitExit(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exited;
  }
}
