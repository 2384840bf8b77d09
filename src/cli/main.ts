/** The command line (SPEC §6). Each command returns its exit code; nothing here calls process.exit. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { runControlCommand } from '../control/index.js';
import { generateHome } from '../demo/generate.js';
import { statusJson } from '../model/status-json.js';
import { processStartIdentity } from '../readers/process-probe.js';
import { loadSnapshot } from './load-snapshot.js';
import { InputError, parseDuration, parseNow } from './parse-time.js';
import { resolveHomes } from './resolve-homes.js';
import { renderStatusTable } from './status-table.js';

const collect = (value: string, prev: string[] = []) => [...prev, value];

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
    return pkg.version;
  } catch {
    return '0.0.0';
  }
}

interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
  isTTY: boolean;
  now: () => number;
}

const defaultIo = (): Io => ({
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  isTTY: !!process.stdout.isTTY,
  now: () => Date.now(),
});

export async function run(argv: string[], io: Io = defaultIo()): Promise<number> {
  let code = 0;
  const program = new Command()
    .name('loop-dash')
    .description('Live dashboard for loop-pi roots and lanes: request clocks, retry budgets, resumes, incidents, owner actions.')
    .version(version())
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .option('--home <dir>', 'pi home to read (repeatable); default: $PI_CODING_AGENT_DIR, ~/.loop-pi, ~/.pi/agent', collect)
    .action(async (opts: { home?: string[] }) => {
      const homes = resolveHomes(opts.home);
      code = await printStatus(homes, { json: false }, io);
    });

  program
    .command('status')
    .description('print one snapshot of every root and lane with its clocks')
    .option('--home <dir>', 'pi home to read (repeatable)', collect)
    .option('--json', 'print the JSON document (SPEC §6)')
    .option('--now <iso>', 'evaluate every clock at this instant')
    .action(async (opts: { home?: string[]; json?: boolean; now?: string }, cmd: Command) => {
      const homes = resolveHomes(opts.home ?? cmd.parent?.opts<{ home?: string[] }>().home);
      code = await printStatus(homes, { json: !!opts.json, now: parseNow(opts.now, io.now) }, io);
    });

  program
    .command('incidents')
    .description('list incidents, newest first')
    .option('--home <dir>', 'pi home to read (repeatable)', collect)
    .option('--since <duration>', 'only incidents newer than this (e.g. 2h, 30m)')
    .option('--class <class>', 'only this class (substring match)')
    .option('--json', 'print JSON')
    .option('--now <iso>', 'evaluate at this instant')
    .action(async (opts: { home?: string[]; since?: string; class?: string; json?: boolean; now?: string }, cmd: Command) => {
      const homes = resolveHomes(opts.home ?? cmd.parent?.opts<{ home?: string[] }>().home);
      const now = parseNow(opts.now, io.now);
      const since = opts.since ? now - parseDuration(opts.since) : null;
      const snap = await loadSnapshot(homes, now);
      const list = snap.incidents.filter((i) => (since === null || (i.at ?? 0) >= since) && (!opts.class || i.cls.includes(opts.class)));
      if (opts.json) {
        const doc = statusJson({ ...snap, incidents: list, roots: [] });
        io.out(JSON.stringify({ v: 1, now: doc.now, incidents: doc.incidents, warnings: doc.warnings }, null, 2) + '\n');
      } else {
        for (const i of list) {
          io.out(`${i.at !== null ? new Date(i.at).toISOString() : '(no time)           '}  ${i.cls}${i.known ? '' : ' (unknown class)'}  ${i.session ?? '-'}  ${i.summary}\n`);
        }
        if (list.length === 0) io.out('(no incidents)\n');
      }
    });

  for (const action of ['abort', 'disarm', 'arm'] as const) {
    const what = {
      abort: 'cut the in-flight request of SESSION and hold it (nothing restarts it until armed)',
      disarm: 'hold SESSION: automatic turn starts are held until it is armed',
      arm: 'release SESSION: replay what was held',
    }[action];
    program
      .command(`${action} <session>`)
      .description(`${what}; waits for the ack (exit 0 applied, 1 refused/timed out, 2 bad input)`)
      .option('--home <dir>', 'pi home to read (repeatable)', collect)
      .option('--reason <text>', 'why (kept in the journal)')
      .option('--yes', 'do not ask for confirmation')
      .action(async (session: string, opts: { home?: string[]; reason?: string; yes?: boolean }, cmd: Command) => {
        const homes = resolveHomes(opts.home ?? cmd.parent?.opts<{ home?: string[] }>().home);
        code = await runControlCommand({
          homes,
          session,
          action,
          reason: opts.reason,
          yes: !!opts.yes,
          snapshotLoader: (h) => loadSnapshot(h, io.now()),
          io: { out: io.out, err: io.err, isTTY: io.isTTY && !!process.stdin.isTTY, now: io.now },
        });
      });
  }

  program
    .command('demo')
    .description('build a realistic live pi home in a temporary directory and show it')
    .option('--status', 'print the status of the demo home and exit')
    .option('--json', 'with --status: print JSON')
    .option('--dir <dir>', 'build the demo home here instead of a new temporary directory')
    .action(async (opts: { status?: boolean; json?: boolean; dir?: string }) => {
      const base = opts.dir ? path.resolve(opts.dir) : mkdtempSync(path.join(os.tmpdir(), 'loop-dash-demo-'));
      const home = path.join(base, 'home');
      const now = io.now();
      await generateHome(home, {
        now,
        livePid: process.pid,
        livePidStart: processStartIdentity(process.pid),
        deadPid: deadPid(),
        repoDir: path.join(base, 'repo'),
      });
      code = await printStatus([home], { json: !!opts.json, now }, io);
      if (!opts.status) io.err(`demo home: ${home}\n(the live dashboard comes with the TUI; run with --status for a snapshot)\n`);
    });

  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return 2;
    }
    if (err instanceof InputError) {
      io.err(`loop-dash: ${err.message}\n`);
      return 2;
    }
    io.err(`loop-dash: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
  return code;
}

async function printStatus(homes: string[], opts: { json: boolean; now?: number }, io: Io): Promise<number> {
  const now = opts.now ?? io.now();
  const snap = await loadSnapshot(homes, now);
  io.out(opts.json ? JSON.stringify(statusJson(snap), null, 2) + '\n' : renderStatusTable(snap));
  return 0;
}

/** A pid that certainly belonged to a process that has exited (for the demo's lost root). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '0']);
  return r.pid ?? 999_999;
}

