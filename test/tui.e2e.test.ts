/**
 * End-to-end in a real terminal: the built binary in tmux (CI=0, so Ink draws live frames) on a
 * generated home, run as the installed command is (executed: its first lines exec node with its
 * flags; this process's node first on PATH). Reads the screen with capture-pane; never sleeps,
 * always waits on the screen.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, existsSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { controlRequestSchema } from '../src/contract/control.js';
import { generateHome } from '../src/demo/generate.js';
import { processStartIdentity } from '../src/readers/process-probe.js';
import { startTmux, tmuxAvailable } from './support/tmux.js';
import { waitFor } from './support/wait-for.js';

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'loop-dash.js');

/** A demo home whose live sessions name this process (so they show live), in a new directory. */
async function liveHome(prefix: string) {
  const base = mkdtempSync(path.join(os.tmpdir(), prefix));
  const home = path.join(base, 'home');
  const manifest = await generateHome(home, {
    now: Date.now(),
    livePid: process.pid,
    livePidStart: processStartIdentity(process.pid),
    deadPid: spawnSync(process.execPath, ['-e', '0']).pid!,
    repoDir: path.join(base, 'repo'),
  });
  return { base, home, manifest };
}

test('the dashboard ticks, opens a detail pane, writes an abort for the row under the cursor, and quits cleanly', async (t) => {
  assert.ok(tmuxAvailable(), 'tmux is installed (.ci/run installs it)');
  const { base, home, manifest: m } = await liveHome('loop-dash-tui-');
  const target = m.sessions.find((s) => s.name === 'docs-sweep')!;
  const sttyFile = path.join(base, 'stty-after');
  const codeFile = path.join(base, 'exit-code');
  const tty = startTmux(
    `sh -c 'PATH=${path.dirname(process.execPath)}:$PATH ${BIN} --home ${home}; code=$?; stty -a > ${sttyFile}; echo $code > ${codeFile}; exit $code'`,
    { columns: 160, rows: 40, env: { CI: '0', TERM: 'xterm-256color', XDG_STATE_HOME: path.join(base, 'state') } },
  );
  t.after(() => tty.kill());

  // The first frame lists the roots.
  await tty.waitForText('docs-sweep', 'the docs-sweep row');
  const row = () => tty.screen().find((l) => l.includes('docs-sweep')) ?? '';
  const inact = () => /requesting\s+(\d+:\d\d)/.exec(row())?.[1] ?? null;
  const first = await waitFor(inact, 'an inactivity countdown on the docs-sweep row');
  const seconds = (s: string) => Number(s.split(':')[0]) * 60 + Number(s.split(':')[1]);
  // The countdown advances by exactly one second at the next tick.
  await waitFor(() => {
    const now = inact();
    return now !== null && now !== first ? now : null;
  }, 'the countdown to tick', 3000, 50).then((next) => assert.equal(seconds(first) - seconds(next), 1, `${first} → ${next}`));

  // Put the cursor on docs-sweep with the filter, open the detail pane.
  tty.type('/docs-sweep');
  tty.keys('Enter');
  await waitFor(() => tty.screen().some((l) => l.startsWith('›') && l.includes('docs-sweep')), 'the cursor on docs-sweep', 5000, 50);
  tty.keys('Enter');
  await tty.waitForText(/detail/, 'the detail pane');
  await tty.waitForText(/inactivity\s+\d+:\d\d left/, 'the clocks in the detail pane');

  // x opens a confirmation naming the target; y sends it.
  tty.type('x');
  await tty.waitForText(new RegExp(target.session.slice(0, 8)), 'a confirmation naming the session');
  const dialog = tty.screen().join('\n');
  assert.match(dialog, /turn \d+/, 'the dialog names the turn');
  assert.match(dialog, /anthropic\/claude-sonnet-4-5/, 'the dialog names the model');
  tty.type('y');
  const dir = path.join(home, 'loop-dash', 'control', target.session);
  const file = await waitFor(() => existsSync(dir) && readdirSync(dir).find((f) => f.endsWith('.json') && !f.startsWith('.')), 'a control request file', 5000) as string;
  const request = controlRequestSchema.parse(JSON.parse(readFileSync(path.join(dir, file), 'utf8')));
  const cp = JSON.parse(readFileSync(target.checkpoint!, 'utf8'));
  assert.equal(request.session, target.session);
  assert.equal(request.action, 'abort');
  assert.deepEqual(request.target, { turn: cp.request.turn, startedAt: cp.request.startedAt });
  assert.equal(statSync(path.join(dir, file)).mode & 0o777, 0o600);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  await tty.waitForText(/pending|no consumer/, 'the action shown as pending');

  // q quits with status 0 and the terminal back in cooked mode with echo.
  tty.type('q');
  const code = await waitFor(
    () => (existsSync(codeFile) ? readFileSync(codeFile, 'utf8').trim() : null),
    () => `the dashboard to exit (screen:\n${tty.screen().join('\n')})`,
    5000,
    50,
  );
  assert.equal(code, '0');
  const stty = readFileSync(sttyFile, 'utf8');
  assert.match(stty, /(^|\s)icanon(\s|$)/, 'canonical mode restored');
  assert.match(stty, /(^|\s)echo(\s|$)/, 'echo restored');
});

test('a terminal that goes away (the window closed) ends the dashboard as a hangup: no EIO crash, no abort in Node’s exit', async (t) => {
  assert.ok(tmuxAvailable(), 'tmux is installed (.ci/run installs it)');
  const { base, home } = await liveHome('loop-dash-hangup-');
  const errFile = path.join(base, 'stderr');
  const endFile = path.join(base, 'ended');
  // A parent that outlives the terminal to record how the dashboard ended: it ignores the hangup,
  // and leaves its own descriptors of the gone terminal as the bin does, so its exit is quiet too.
  const wrapper = path.join(base, 'wrapper.cjs');
  writeFileSync(
    wrapper,
    `const { spawn } = require('node:child_process');
const fs = require('node:fs');
process.on('SIGHUP', () => undefined);
process.on('exit', () => { for (const fd of [0, 1, 2]) { try { fs.writeSync(fd, ''); } catch (e) { if (e.code === 'EIO') fs.closeSync(fd); } } });
const child = spawn(${JSON.stringify(BIN)}, ['--home', ${JSON.stringify(home)}], { stdio: ['inherit', 'inherit', fs.openSync(${JSON.stringify(errFile)}, 'w')] });
child.on('exit', (code, signal) => fs.writeFileSync(${JSON.stringify(endFile)}, JSON.stringify({ code, signal })));
`,
  );
  const tty = startTmux(`sh -c 'PATH=${path.dirname(process.execPath)}:$PATH node ${wrapper}'`, { columns: 120, rows: 30, env: { CI: '0', TERM: 'xterm-256color', XDG_STATE_HOME: path.join(base, 'state') } });
  t.after(() => tty.kill());
  await tty.waitForText('docs-sweep', 'the first frame');
  tty.kill();
  const ended = JSON.parse(await waitFor(() => (existsSync(endFile) ? readFileSync(endFile, 'utf8') : null), 'the dashboard to end after its terminal closed', 10_000, 50)) as { code: number | null; signal: string | null };
  const stderr = readFileSync(errFile, 'utf8');
  assert.doesNotMatch(stderr, /EIO|Assertion failed|uncaught/, `stderr:\n${stderr}`);
  assert.deepEqual(ended, { code: 129, signal: null }, 'ended as on SIGHUP, by its own exit');
});
