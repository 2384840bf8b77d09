/**
 * The whole owner loop against a real pi (SPEC §7): `loop-dash abort --yes` and the dashboard's
 * x,y keys in a real terminal → control file → the extension inside pi → pi cuts the request.
 * Then a kill -9 of pi shows as `lost` in `loop-dash status`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { checkpointSchema, type Checkpoint } from '../src/contract/checkpoint.js';
import { homePaths } from '../src/contract/paths.js';
import { ensureNode22 } from './support/node22.js';
import { PiProcess, waitUntil, type PiRecord } from './support/pi-harness.js';
import { startTmux, tmuxAvailable } from './support/tmux.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.resolve(here, '..', '..', 'bin', 'loop-dash.js');
const EXTENSION = path.resolve(here, '../src/extension/index.js');
const PROVIDER = path.resolve(here, 'fixtures/pi/scripted-provider.js');
const MODEL = 'scripted/scripted-1';
const exec = promisify(execFile);

let node = '';
const scratch: string[] = [];
before(async () => {
  node = await ensureNode22();
});
after(() => {
  for (const d of scratch) fs.rmSync(d, { recursive: true, force: true });
});

function checkpoint(home: string, session: string): Checkpoint | null {
  try {
    return checkpointSchema.parse(JSON.parse(fs.readFileSync(path.join(homePaths(home).checkpoints, `${session}.json`), 'utf8')));
  } catch {
    return null;
  }
}

async function status(home: string): Promise<Record<string, any>> {
  const { stdout } = await exec(process.execPath, [BIN, 'status', '--json', '--home', home]);
  return JSON.parse(stdout);
}

function assistantStops(sessionFile: string): string[] {
  if (!fs.existsSync(sessionFile)) return [];
  return fs
    .readFileSync(sessionFile, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
    .filter((e) => e.type === 'message' && e.message?.role === 'assistant')
    .map((e) => String(e.message.stopReason));
}

test('dashboard → control file → extension → pi: the CLI and the x,y keys cut a real request; a killed pi is lost', { timeout: 150_000 }, async (t) => {
  assert.ok(tmuxAvailable(), 'tmux is installed (.ci/run installs it)');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-dash-pi-'));
  scratch.push(root);
  const home = path.join(root, 'pi-home');
  const cwd = path.join(root, 'project');
  fs.mkdirSync(home, { recursive: true });
  fs.mkdirSync(cwd, { recursive: true });
  fs.writeFileSync(path.join(home, 'settings.json'), JSON.stringify({ retry: { baseDelayMs: 200 } }));
  const pi = await PiProcess.start({ node, home, cwd, extensions: [PROVIDER, EXTENSION], model: MODEL });
  t.after(() => pi.kill('SIGKILL'));
  const state = (await pi.request({ type: 'get_state' })).data as { sessionId: string; sessionFile: string };
  const session = state.sessionId;

  // 1. `loop-dash abort SESSION --yes` while a silent request is in flight.
  const beforeFirst = pi.cursor;
  await pi.prompt('[[stream count=2 every=50]] first reply, so pi writes its session file');
  await waitUntil('the first reply in the session file', () => assistantStops(state.sessionFile).includes('stop'), 15_000);
  // pi may write the session file before its message_end reaches us: that record must not be
  // taken for the aborted message below.
  await pi.waitFor((r) => r.type === 'message_end' && (r.message as PiRecord).role === 'assistant', 10_000, 'the first reply', beforeFirst);
  let since = pi.cursor;
  await pi.prompt('[[silent every=200 max=60000]] go quiet');
  await waitUntil('the silent request in flight', () => checkpoint(home, session)?.state === 'requesting', 10_000);
  const cli = await exec(process.execPath, [BIN, 'abort', session.slice(0, 8), '--yes', '--reason', 'e2e via CLI', '--home', home]);
  assert.match(cli.stdout, /applied/);
  const end = await pi.waitFor((r) => r.type === 'message_end' && (r.message as PiRecord).role === 'assistant', 10_000, 'the aborted message', since);
  assert.equal((end.message as { stopReason: string }).stopReason, 'aborted');
  await waitUntil('aborted in the session file', () => assistantStops(state.sessionFile).includes('aborted'), 10_000);
  let doc = await status(home);
  let row = (doc.roots as any[]).find((r) => r.session === session);
  assert.equal(row.state, 'held', 'status shows the session held after an owner abort');
  assert.equal(row.held, true);

  // arm it again (no request in flight, so nothing is cut) and start another silent request.
  const arm = await exec(process.execPath, [BIN, 'arm', session, '--yes', '--home', home]);
  assert.match(arm.stdout, /applied/);
  await waitUntil('the hold cleared', () => checkpoint(home, session)?.held === null, 10_000);
  since = pi.cursor;
  await pi.prompt('[[silent every=200 max=60000]] quiet again');
  const inFlight = await waitUntil('the second silent request', () => {
    const cp = checkpoint(home, session);
    return cp?.state === 'requesting' && cp.request ? cp.request : undefined;
  }, 10_000);

  // 2. The dashboard in a real terminal: select the session, x, y.
  const tty = startTmux(`${process.execPath} ${BIN} --home ${home}`, {
    columns: 160,
    rows: 40,
    env: { CI: '0', TERM: 'xterm-256color', XDG_STATE_HOME: path.join(root, 'state') },
  });
  t.after(() => tty.kill());
  await tty.waitForText(/requesting/, 'the session requesting on screen', 15_000);
  tty.type('/project');
  tty.keys('Enter');
  await tty.waitForText(/^›.*requesting/m, 'the cursor on the session');
  tty.type('x');
  await tty.waitForText(new RegExp(`turn ${inFlight.turn}`), 'the confirmation naming the turn in flight');
  tty.type('y');
  const cut = await pi.waitFor((r) => r.type === 'message_end' && (r.message as PiRecord).role === 'assistant', 15_000, 'the request cut from the dashboard', since);
  assert.equal((cut.message as { stopReason: string }).stopReason, 'aborted');
  await tty.waitForText(/abort .*applied/, 'the dashboard following the ack to applied', 15_000);
  await tty.waitForText(/^›.*held/m, 'the dashboard showing the session held', 15_000);
  const cp = checkpoint(home, session)!;
  assert.ok(cp.ownerAbort, 'the checkpoint records the owner abort');
  assert.ok(cp.held);
  const acks = fs.readdirSync(path.join(homePaths(home).control, session)).filter((f) => f.endsWith('.ack.json'));
  const statuses = acks.map((f) => JSON.parse(fs.readFileSync(path.join(homePaths(home).control, session, f), 'utf8')).status);
  assert.equal(statuses.filter((s) => s === 'applied').length, 3, 'CLI abort, CLI arm and the dashboard abort were all applied');

  // 3. The dashboard is linked to pi's liveness socket (CONTRACT §5): the detail pane says so.
  tty.keys('Enter');
  await tty.waitForText(/process: alive \(process \d+ is running; linked, its exit shows at once\)/, 'the detail pane saying the process is linked', 15_000);

  // 4. kill -9: the checkpoint stays "not ended", the dashboard and status report the session lost.
  const killedAt = Date.now();
  pi.kill('SIGKILL');
  await pi.waitExit();
  doc = await status(home);
  row = (doc.roots as any[]).find((r) => r.session === session);
  assert.equal(row.state, 'lost');
  assert.equal(row.liveness.status, 'gone');
  await tty.waitForText(/^›.*lost/m, 'the dashboard showing it lost', 10_000);
  await tty.waitForText(/process: gone/, 'the detail pane saying the process is gone', 5_000);
  t.diagnostic(`lost on screen within ${Date.now() - killedAt} ms of the kill (bounded by the status call above)`);
});
