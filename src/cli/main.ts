/** The command line (SPEC §6). Each command returns its exit code; nothing here calls process.exit. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { formatDuration, intervalToDuration } from 'date-fns';
import { runControlCommand } from '../control/index.js';
import { runAudit } from './audit-command.js';
import type { DemoManifest } from '../demo/generate.js';
import { createLiveStore } from '../app/live-store.js';
import { defaultCacheDir } from '../readers/session-cache.js';
import { checkpointsBeforeFirstFrame, runDashboard } from '../app/run-dashboard.js';
import { installExtension } from './install-extension.js';
import { writeJson } from './json-out.js';
import { statusJson } from '../model/status-json.js';
import { formatRemaining } from '../model/clocks.js';
import { processStartIdentity } from '../readers/process-probe.js';
import { loadSnapshot } from './load-snapshot.js';
import type { Snapshot } from '../model/snapshot.js';
import { InputError, parseDuration, parseNow } from './parse-time.js';
import { checkHomes, resolveHomes } from './resolve-homes.js';
import { homePaths } from '../contract/paths.js';
import { renderStatusTable } from './status-table.js';
import { idPrefix } from '../views/cells.js';
import { terminalText } from '../views/text.js';
import { fetchRemotesOnce, mergeRemote } from '../remote/merge-remote.js';
import { createRemoteFeeds, statusUrl } from '../remote/remote-feeds.js';

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
  /** stdout as it is, for JSON; text goes through `out`, made terminal-safe. */
  outRaw?: (s: string) => void;
  isTTY: boolean;
  now: () => number;
}

const defaultIo = (): Io => ({
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  isTTY: !!process.stdout.isTTY,
  now: () => Date.now(),
});

export async function run(argv: string[], rawIo: Io = defaultIo()): Promise<number> {
  // Text goes out terminal-safe, line by line (a session name, a warning quoting a file's line, an
  // incident class: all from the home, and an escape in one retitled the terminal or swallowed the
  // output after it); JSON as it is (JSON.stringify escapes every control that could act).
  const io: Io = { ...rawIo, out: (s) => rawIo.out(terminalText(s)), err: (s) => rawIo.err(terminalText(s)), outRaw: rawIo.out };
  let code = 0;
  const program = new Command()
    .name('loop-dash')
    .description('Live dashboard for loop-pi roots and lanes: request clocks, retry budgets, resumes, incidents, owner actions.')
    .version(version())
    .exitOverride()
    // Commander's own errors (`error: unknown option '--bogus'`) named as every other line of ours.
    .configureOutput({ writeOut: io.out, writeErr: io.err, outputError: (text, write) => write(text.replace(/^error: /, 'loop-dash: ')) })
    // `loop-dash help [command]` as well as --help (commander adds it only to a program without an action).
    .helpCommand('help [command]', 'show help for a command')
    .option('--home <dir>', 'pi home to read (repeatable); default: $PI_CODING_AGENT_DIR, ~/.loop-pi, ~/.pi/agent', collect)
    .option('--read-only', 'no owner actions (abort, disarm, arm are unbound)')
    .option('--poll', 'poll the file system instead of native file events')
    .option('--remote <url>', "also show another machine's loop-dash serve, read-only (repeatable; e.g. http://127.0.0.1:9464)", collect)
    .action(async (opts: { home?: string[]; readOnly?: boolean; poll?: boolean; remote?: string[] }) => {
      const homes = resolveHomes(opts.home);
      const remotes = remoteUrls(opts.remote);
      if (!canDrawTui(io)) {
        if (!remotes.length) checkHomes(homes, { mustExist: true });
        code = await printStatus(homes, { json: false, remotes }, io);
        return;
      }
      // No home given and none found: the built-in demo, so a first run shows something real.
      if (!remotes.length && !opts.home?.length && !process.env.PI_CODING_AGENT_DIR && !existsSync(homes[0]!)) {
        io.err(`no pi home at ${homes[0]}; opening the demo home (use --home DIR for yours)\n`);
        code = await runDemo({ readOnly: !!opts.readOnly, speed: 4 }, io);
        return;
      }
      checkHomes(homes, { mustExist: false });
      code = await runDashboard({
        store: createLiveStore(homes, { polling: !!opts.poll, cacheDir: defaultCacheDir(), checkpointsBeforeList: checkpointsBeforeFirstFrame }),
        homes,
        readOnly: !!opts.readOnly,
        ...(remotes.length ? { remote: createRemoteFeeds(remotes) } : {}),
      });
    });

  program
    .command('status')
    .description('print one snapshot of every root and lane with its clocks')
    .option('--home <dir>', 'pi home to read (repeatable)', collect)
    .option('--json', 'print the JSON document (SPEC §6)')
    .option('--now <iso>', 'evaluate every clock at this instant')
    .action(async (opts: { home?: string[]; json?: boolean; now?: string }, cmd: Command) => {
      const parent = cmd.parent?.opts<{ home?: string[]; remote?: string[] }>();
      const given = opts.home ?? parent?.home;
      const homes = resolveHomes(given);
      // With --remote and no --home, a machine with no pi home of its own shows the remote rows.
      if (!parent?.remote?.length || given?.length) checkHomes(homes, { mustExist: true, note: io.err });
      // `--remote URL` (the program's option) adds that machine's rows here as in the dashboard.
      code = await printStatus(homes, { json: !!opts.json, now: opts.now === undefined ? undefined : parseNow(opts.now, io.now), remotes: remoteUrls(parent?.remote) }, io);
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
      checkHomes(homes, { mustExist: true, note: io.err });
      const fixed = opts.now === undefined ? undefined : parseNow(opts.now, io.now);
      const back = opts.since ? parseDuration(opts.since) : null;
      const snap = await readHomes(homes, fixed ?? io.now);
      const now = snap.now;
      const since = back === null ? null : now - back;
      // With --now, an incident written after it had not happened yet then (as status's clocks).
      const later = fixed === undefined ? 0 : snap.incidents.filter((i) => i.at !== null && i.at > now).length;
      const list = snap.incidents.filter((i) => (since === null || (i.at ?? 0) >= since) && (fixed === undefined || i.at === null || i.at <= now) && (!opts.class || i.cls.includes(opts.class)));
      if (later > 0) io.err(`loop-dash: note: ${later} incident${later === 1 ? '' : 's'} after --now ${new Date(now).toISOString()} left out\n`);
      if (opts.json) {
        const doc = statusJson({ ...snap, incidents: list, roots: [] }, homes);
        printJson({ v: 1, now: doc.now, incidents: doc.incidents, warnings: doc.warnings }, io);
      } else {
        // A session by its name and its id's first 8 (as `status` shows it), not its id alone.
        const names = new Map<string, string>();
        for (const r of snap.roots) for (const v of [r, ...r.lanes]) names.set(v.session, v.name);
        for (const i of list) {
          // UTC instant (what the files say) and how long ago, so the age is known at a glance.
          const when = i.at !== null ? `${new Date(i.at).toISOString()} (${howLongAgo(i.at, now)})` : '(no time)';
          io.out(`${when}  ${i.cls}${i.known ? '' : ' (unknown class)'}  ${i.session ? sessionLabel(i.session, names) : '-'}  ${i.summary}\n`);
        }
        if (list.length === 0) io.out('(no incidents)\n');
        // Incident files that could not be read are no rows: said on stderr, so none is missed.
        const bad = snap.warnings.filter((w) => homes.some((h) => w.file === homePaths(h).incidents || w.file.startsWith(homePaths(h).incidents + path.sep)));
        for (const w of bad.slice(0, 10)) io.err(`warning: ${w.file}${w.line ? `:${w.line}` : ''}: ${w.message}\n`);
        if (bad.length > 10) io.err(`… and ${bad.length - 10} more incident files with warnings (incidents --json lists them all)\n`);
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
      .description(`${what} (SESSION: its id, a unique prefix of it, or its name); waits for the ack (exit 0 applied, 1 refused/timed out, 2 bad input)`)
      .option('--home <dir>', 'pi home to read (repeatable)', collect)
      .option('--reason <text>', 'why (kept in the journal)')
      .option('--yes', 'do not ask for confirmation')
      .action(async (session: string, opts: { home?: string[]; reason?: string; yes?: boolean }, cmd: Command) => {
        // `--read-only` (before or after the command) unbinds the owner actions here as in the
        // dashboard: someone who aliases `loop-dash --read-only` sends none by mistake.
        if (cmd.optsWithGlobals<{ readOnly?: boolean }>().readOnly) {
          io.err(`loop-dash: --read-only: no owner actions; ${action} was not sent\n`);
          code = 2;
          return;
        }
        const homes = resolveHomes(opts.home ?? cmd.parent?.opts<{ home?: string[] }>().home);
        code = await runControlCommand({
          homes,
          session,
          action,
          reason: opts.reason,
          yes: !!opts.yes,
          snapshotLoader: (h) => readHomes(h, io.now),
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
    .option('--speed <n>', 'how much faster than real time the demo story runs', '4')
    .option('--read-only', 'no owner actions')
    .action(async (opts: { status?: boolean; json?: boolean; dir?: string; speed: string; readOnly?: boolean }) => {
      const speed = Number(opts.speed);
      if (!Number.isFinite(speed) || speed <= 0) throw new InputError(`--speed: "${opts.speed}" is not a positive number`);
      if (opts.status || !canDrawTui(io)) {
        const { home } = await buildDemoHome(opts.dir, io.now());
        try {
          code = await printStatus([home], { json: !!opts.json, now: io.now() }, io);
        } finally {
          // A home of our own making that nothing reads after this print is not left in /tmp.
          if (opts.dir === undefined) rmSync(path.dirname(home), { recursive: true, force: true });
        }
        return;
      }
      code = await runDemo({ dir: opts.dir, readOnly: !!opts.readOnly, speed }, io);
    });

  program
    .command('audit')
    .description('check every limit against maxTokens ÷ the slowest measured generation rate (exit 1 if any is below bound)')
    .option('--home <dir>', 'pi home to read (repeatable)', collect)
    .option('--json', 'print the JSON document (SPEC §8)')
    .option('--min-output <n>', 'only calls with at least this many output tokens count (default 500)')
    .action(async (opts: { home?: string[]; json?: boolean; minOutput?: string }, cmd: Command) => {
      const homes = resolveHomes(opts.home ?? cmd.parent?.opts<{ home?: string[] }>().home);
      checkHomes(homes, { mustExist: true });
      code = await runAudit({ homes, json: !!opts.json, minOutput: opts.minOutput, now: io.now(), io: opts.json ? { ...io, out: io.outRaw ?? io.out } : io });
    });

  program
    .command('install-extension')
    .description('install the loop-dash pi extension into a pi home (idempotent)')
    .option('--home <dir>', 'pi home (default: as for the dashboard)', collect)
    .action((opts: { home?: string[] }, cmd: Command) => {
      const homes = resolveHomes(opts.home ?? cmd.parent?.opts<{ home?: string[] }>().home);
      code = 0;
      for (const home of homes) {
        const r = installExtension(home);
        if (!r.ok) {
          io.err(`loop-dash: ${r.error}\n`);
          // A home that is not there is bad input (2, as every command says it); a failed write is 1.
          code = Math.max(code, r.badInput ? 2 : 1);
          continue;
        }
        io.out(`${r.status}: ${r.manifest} (loads ${r.entry})\n`);
        for (const w of r.warnings) io.err(`warning: ${w}\n`);
      }
    });

  program
    .command('serve')
    .description('headless exporter: Prometheus /metrics, /api/status (the status --json document), /healthz; GET only')
    .option('--home <dir>', 'pi home to read (repeatable)', collect)
    .option('--listen <host:port>', 'address to listen on (a non-loopback address must be given here explicitly)', '127.0.0.1:9464')
    .option('--grace <duration>', 'how long an ended session stays in the metrics', '10m')
    .option('--poll', 'poll the file system instead of native file events')
    .action(async (opts: { home?: string[]; listen: string; grace: string; poll?: boolean }, cmd: Command) => {
      const homes = resolveHomes(opts.home ?? cmd.parent?.opts<{ home?: string[] }>().home);
      checkHomes(homes, { mustExist: false, note: io.err });
      // Loaded here, not at start-up: the exporter (prom-client) is not part of the dashboard's start.
      const [{ parseListen }, { runServe }] = await Promise.all([import('../serve/server.js'), import('../serve/serve-command.js')]);
      const listen = parseListen(opts.listen);
      if ('error' in listen) throw new InputError(listen.error);
      code = await runServe({ homes, listen, graceMs: parseDuration(opts.grace), polling: !!(opts.poll ?? cmd.parent?.opts<{ poll?: boolean }>().poll), version: version(), storeOptions: { cacheDir: defaultCacheDir() } }, io);
    });

  try {
    // A first word that is no command would reach the dashboard's action as an excess argument
    // ("too many arguments"); say what it is instead.
    const first = argv[2];
    if (first !== undefined && !first.startsWith('-') && first !== 'help' && !program.commands.some((c) => c.name() === first || c.aliases().includes(first))) {
      const names = program.commands.map((c) => c.name());
      throw new InputError(`unknown command "${first}" (one of ${names.join(', ')}; see loop-dash --help)`);
    }
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
    // A system call's failure (ENOTDIR, EACCES, ENOSPC …: `loop-dash/control` a plain file, say)
    // says what and where in one line, as bad input does; a stack only for what is no such error.
    const code = (err as NodeJS.ErrnoException | null)?.code;
    if (typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)) {
      io.err(`loop-dash: ${(err as Error).message}\n`);
      return 1;
    }
    io.err(`loop-dash: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
  return code;
}

/** The one-shot read of `status`, `incidents` and the owner-action commands: with the dashboard's session cache. */
function readHomes(homes: string[], now: number | (() => number)): Promise<Snapshot> {
  return loadSnapshot(homes, now, { cacheDir: defaultCacheDir() });
}

/** `scheduled-run 119e071b`: a session's name and its id's prefix (idPrefix); the whole id when no row names it. */
function sessionLabel(session: string, names: ReadonlyMap<string, string>): string {
  const name = names.get(session);
  return name ? `${name} ${idPrefix(session)}` : session;
}

/** `2 hours 45 minutes ago` (`in …` for an instant after `now`): to the minute, beside the exact UTC instant. */
function howLongAgo(at: number, now: number): string {
  const [start, end] = at <= now ? [at, now] : [now, at];
  const span = formatDuration(intervalToDuration({ start, end }), { format: ['years', 'months', 'days', 'hours', 'minutes'] }) || 'under a minute';
  return at <= now ? `${span} ago` : `in ${span}`;
}

async function printStatus(homes: string[], opts: { json: boolean; now?: number; remotes?: string[] }, io: Io): Promise<number> {
  const feeds = opts.remotes?.length ? await fetchRemotesOnce(opts.remotes, { clock: io.now }) : [];
  // Without --now, the clock is read once the homes are (loadSnapshot).
  const local = await readHomes(homes, opts.now ?? io.now);
  const snap = mergeRemote(local, feeds, local.now);
  if (opts.now !== undefined) warnNowBeforeData(snap, io);
  if (opts.json) printJson(statusJson(snap, homes), io);
  else io.out(renderStatusTable(snap));
  return 0;
}

/**
 * `--now` before what the home holds: every clock is evaluated as if the later writes had not
 * happened (more time left than a limit allows, negative ages), said once on stderr so a script's
 * JSON stays whole. A user review read `INACT 57:16` of a 15:00 limit with no word why.
 */
function warnNowBeforeData(snap: Snapshot, io: Io): void {
  let newest = -Infinity;
  for (const r of snap.roots) {
    for (const v of [r, ...r.lanes]) {
      if (v.remote) continue;
      newest = Math.max(newest, v.source.checkpointUpdatedAt ?? -Infinity, v.lastActivityAt ?? -Infinity);
    }
  }
  if (newest > snap.now + 1_000) {
    io.err(`loop-dash: note: --now ${new Date(snap.now).toISOString()} is ${formatRemaining(newest - snap.now)} before the newest data read (${new Date(newest).toISOString()}): clocks there read as if it had not been written yet\n`);
  }
}

/** A JSON document and a newline on stdout, in chunks: a big home's `status --json` is tens of MB (json-out.ts). */
function printJson(doc: unknown, io: Io): void {
  const out = io.outRaw ?? io.out;
  writeJson(doc, out);
  out('\n');
}

/** The TUI needs a real terminal that understands escapes; otherwise a plain snapshot is printed. */
function canDrawTui(io: Io): boolean {
  return io.isTTY && !!process.stdin.isTTY && process.env.TERM !== 'dumb';
}

async function buildDemoHome(dir: string | undefined, now: number): Promise<{ home: string; manifest: DemoManifest }> {
  const base = dir ? path.resolve(dir) : mkdtempSync(path.join(os.tmpdir(), 'loop-dash-demo-'));
  const home = path.join(base, 'home');
  // A second demo into the same home would add its sessions and incidents to the first's: refused,
  // never removed for the user (it may be theirs).
  if (dir !== undefined && readdirOrEmpty(home).length > 0) throw new InputError(`demo --dir ${dir}: ${home} already holds a home (an earlier demo?); remove it or name another directory`);
  const { generateHome } = await import('../demo/generate.js');
  try {
    const manifest = await generateHome(home, {
      now,
      livePid: process.pid,
      livePidStart: processStartIdentity(process.pid),
      deadPid: deadPid(),
      repoDir: path.join(base, 'repo'),
    });
    return { home, manifest };
  } catch (err) {
    // A --dir the demo cannot be built in (read-only, not a directory, under /proc): one line, no stack.
    const code = (err as NodeJS.ErrnoException).code;
    if (dir !== undefined && typeof code === 'string' && /^E[A-Z]+$/.test(code)) throw new InputError(`demo --dir ${dir}: cannot build the demo home there: ${(err as Error).message}`);
    throw err;
  }
}

/** The demo: a generated home kept moving by the simulator, with the dashboard open on it. */
async function runDemo(opts: { dir?: string; readOnly: boolean; speed: number }, io: Io): Promise<number> {
  const { home, manifest } = await buildDemoHome(opts.dir, io.now());
  const { startSimulator } = await import('../demo/simulator.js');
  const sim = startSimulator(home, manifest, { clock: io.now, speed: opts.speed });
  try {
    // The first frame shows the story as the simulator runs it, not the generated times it moves.
    await sim.ready();
    return await runDashboard({ store: createLiveStore([home]), homes: [home], readOnly: opts.readOnly });
  } finally {
    await sim.stop();
    io.err(`demo home left at ${home}\n`);
  }
}

/** A pid that certainly belonged to a process that has exited (for the demo's lost root). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '0']);
  return r.pid ?? 999_999;
}

/** The names in a directory; none when it is missing or not one. */
function readdirOrEmpty(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The `--remote` URLs as status URLs; a bad one is bad input. */
function remoteUrls(given: string[] | undefined): string[] {
  return (given ?? []).map((r) => {
    const u = statusUrl(r);
    if ('error' in u) throw new InputError(u.error);
    return u.url;
  });
}
