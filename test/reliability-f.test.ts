/**
 * RELIABILITY.md group F — rendering and the terminal, in a real terminal (tmux) with the built
 * binary. Raw terminal output is recorded with `tmux pipe-pane` where the bytes matter.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateHome } from '../src/demo/generate.js';
import { processStartIdentity } from '../src/readers/process-probe.js';
import { startTmux, tmuxAvailable, type TmuxSession } from './support/tmux.js';
import { waitFor } from './support/wait-for.js';

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'loop-dash.js');
const ESC = '\u001b';

async function home(extraRoots = 0): Promise<{ base: string; home: string }> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-f-'));
  const h = path.join(base, 'home');
  await generateHome(h, {
    now: Date.now(),
    livePid: process.pid,
    livePidStart: processStartIdentity(process.pid),
    deadPid: spawnSync(process.execPath, ['-e', '0']).pid!,
    repoDir: path.join(base, 'repo'),
    ...(extraRoots ? { scale: { roots: extraRoots, lanesPerRoot: 0, sessionBytes: 0 } } : {}),
  });
  return { base, home: h };
}

/** Runs the dashboard under `sh` so the exit code and the terminal mode after it are recorded. */
function dashboard(base: string, h: string, opts: { columns: number; rows: number; env?: Record<string, string>; raw?: boolean }) {
  const codeFile = path.join(base, `code-${Math.random().toString(36).slice(2)}`);
  const sttyFile = `${codeFile}.stty`;
  const rawFile = `${codeFile}.raw`;
  const tty = startTmux(`sh -c '${process.execPath} ${BIN} --home ${h}; c=$?; stty -a > ${sttyFile}; echo $c > ${codeFile}; exit $c'`, {
    columns: opts.columns,
    rows: opts.rows,
    env: { CI: '0', TERM: 'xterm-256color', XDG_STATE_HOME: path.join(base, 'state'), ...(opts.env ?? {}) },
  });
  if (opts.raw) execFileSync('tmux', ['pipe-pane', '-o', '-t', tty.name, `cat >> ${rawFile}`]);
  const exited = async (what: string) =>
    waitFor(() => (existsSync(codeFile) ? readFileSync(codeFile, 'utf8').trim() : null), () => `${what} (screen:\n${tty.screen().join('\n')})`, 8000, 50);
  const stty = () => readFileSync(sttyFile, 'utf8');
  const raw = () => (existsSync(rawFile) ? readFileSync(rawFile, 'latin1') : '');
  /** The dashboard's own pid: the child of the pane's shell. */
  const pid = () => {
    const shell = execFileSync('tmux', ['display-message', '-p', '-t', tty.name, '#{pane_pid}'], { encoding: 'utf8' }).trim();
    const child = spawnSync('pgrep', ['-P', shell], { encoding: 'utf8' }).stdout.trim().split('\n')[0];
    return Number(child);
  };
  return { tty, exited, stty, raw, pid };
}

function assertCooked(stty: string) {
  assert.match(stty, /(^|\s)icanon(\s|$)/, 'canonical mode restored');
  assert.match(stty, /(^|\s)echo(\s|$)/, 'echo restored');
}

function liveLines(tty: TmuxSession): string[] {
  const s = tty.screen();
  let last = s.length - 1;
  while (last >= 0 && s[last]!.trim() === '') last--;
  return s.slice(0, last + 1);
}

test('F1: 40+ sessions on a 10-row terminal: frame ≤ rows − 1, a "+N more" row, no clear-scrollback in the stream', async (t) => {
  assert.ok(tmuxAvailable());
  const { base, home: h } = await home(30);
  const d = dashboard(base, h, { columns: 100, rows: 10, raw: true });
  t.after(() => d.tty.kill());
  await d.tty.waitForText(/\+\d+ more/, 'a "+N more" row');
  // Let several frames go by (countdowns tick every second) before judging the stream.
  const first = d.tty.screen().join('\n');
  await waitFor(() => d.tty.screen().join('\n') !== first, 'a later frame', 4000, 50);
  const lines = liveLines(d.tty);
  assert.ok(lines.length <= 9, `the frame uses ${lines.length} of 10 rows`);
  assert.ok(!d.raw().includes(`${ESC}[3J`), 'no ESC[3J (clear scrollback) was written');
  assert.ok(!d.raw().includes(`${ESC}[2J`), 'no full-screen clear was written');
  d.tty.type('q');
  assert.equal(await d.exited('exit after q'), '0');
});

test('F1 (extra): a terminal that reports no size (a pty under `script`: 0 rows): 24 rows assumed, no clear-scrollback or full-screen clear in the stream, q exits 0', async (t) => {
  assert.equal(spawnSync('script', ['--version']).status, 0, "util-linux's script is installed");
  const { base, home: h } = await home(30);
  const marks = path.join(base, 'marks.jsonl');
  // script's own stdin is a pipe: the pty it makes for the dashboard is never sized (0 × 0).
  const child = spawn('script', ['-qec', `${process.execPath} ${BIN} --home ${h}`, '/dev/null'], {
    env: { ...process.env, CI: '0', TERM: 'xterm-256color', XDG_STATE_HOME: path.join(base, 'state'), LOOP_DASH_TIMING: marks },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString('latin1')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const events = () => (existsSync(marks) ? readFileSync(marks, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { ev: string }).ev) : []);
  // Ink mounted and at least one frame drawn after it (where Ink cleared the terminal before).
  await waitFor(() => { const e = events(); const at = e.indexOf('ink-mounted'); return at >= 0 && e.indexOf('frame', at) > at; }, () => `Ink mounted and a frame after it (marks: ${events().join(' ')})`, 8000, 50);
  assert.match(out, /\+\d+ more/, 'the frame assumed 24 rows: its last row says how many more');
  child.stdin.write('q');
  assert.equal(await exited, 0, 'exit 0 after q');
  assert.ok(!out.includes(`${ESC}[3J`), 'no ESC[3J (clear scrollback) was written');
  assert.ok(!out.includes(`${ESC}[2J`), 'no full-screen clear was written');
});

test('F2: 50 resizes in one second: no crash; the final frame equals a fresh render at the final size', async (t) => {
  const { base, home: h } = await home(10);
  const d = dashboard(base, h, { columns: 120, rows: 30 });
  t.after(() => d.tty.kill());
  await d.tty.waitForText('docs-sweep', 'the first frame');
  const sizes = Array.from({ length: 50 }, (_, i): [number, number] => (i % 2 === 0 ? [160 + (i % 7), 40] : [80 + (i % 5), 15 + (i % 4)]));
  const start = Date.now();
  d.tty.resizeMany(sizes);
  const spent = Date.now() - start;
  d.tty.resize(110, 24);
  const fresh = dashboard(base, h, { columns: 110, rows: 24 });
  t.after(() => fresh.tty.kill());
  await fresh.tty.waitForText('docs-sweep', 'the fresh instance');
  // Digits change every second (clocks, ages); compare the frames with digits masked.
  const mask = (lines: string[]) => lines.map((l) => l.replace(/\d/g, '#').trimEnd()).join('\n');
  await waitFor(() => mask(liveLines(d.tty)) === mask(liveLines(fresh.tty)), () => `the resized frame to equal a fresh one\n--- resized:\n${liveLines(d.tty).join('\n')}\n--- fresh:\n${liveLines(fresh.tty).join('\n')}`, 6000, 100);
  assert.equal(d.tty.screen().filter((l) => l.length > 110).length, 0, 'no line wider than the terminal');
  assert.ok(spent < 1000, `50 resizes were applied within one second (${spent} ms)`);
  d.tty.type('q');
  assert.equal(await d.exited('exit after the resizes'), '0');
});

test('F3: stdout piped, and TERM=dumb: a plain snapshot without escape sequences', async () => {
  const { home: h } = await home();
  const piped = spawnSync(process.execPath, [BIN, '--home', h], { encoding: 'utf8', env: { ...process.env, CI: '0' } });
  assert.equal(piped.status, 0);
  assert.match(piped.stdout, /docs-sweep/);
  assert.ok(!piped.stdout.includes(ESC), 'no escape sequences when piped');
  const base = path.dirname(h);
  const d = dashboard(base, h, { columns: 140, rows: 40, env: { TERM: 'dumb' }, raw: true });
  assert.equal(await d.exited('the TERM=dumb run to print and exit'), '0');
  const out = d.raw();
  assert.match(out, /docs-sweep/);
  // The shell's own prompt is not involved (sh -c); what node wrote has no CSI sequences.
  assert.ok(!/\u001b\[[0-9;?]*[A-Za-z]/.test(out), 'no CSI escape sequences under TERM=dumb');
  d.tty.kill();
});

for (const fault of ['SIGTERM', 'SIGINT', 'SIGHUP', 'exception'] as const) {
  test(`F4: ${fault} while in raw mode: the terminal is restored (cooked, echo, cursor shown)`, async (t) => {
    const { base, home: h } = await home();
    const d = dashboard(base, h, { columns: 120, rows: 30, raw: true, env: fault === 'exception' ? { LOOP_DASH_FAULT: 'throw:1500' } : {} });
    t.after(() => d.tty.kill());
    await d.tty.waitForText('docs-sweep', 'the first frame');
    if (fault !== 'exception') {
      const pid = d.pid();
      assert.ok(pid > 0, 'found the dashboard process');
      process.kill(pid, fault);
    }
    const code = await d.exited(`exit after ${fault}`);
    assert.equal(code, { SIGTERM: '143', SIGINT: '130', SIGHUP: '129', exception: '1' }[fault]);
    assertCooked(d.stty());
    const raw = d.raw();
    const hide = raw.lastIndexOf(`${ESC}[?25l`);
    const show = raw.lastIndexOf(`${ESC}[?25h`);
    assert.ok(hide === -1 || show > hide, 'the cursor is shown again after the last hide');
    assert.ok(!raw.includes(`${ESC}[?1049h`) || raw.lastIndexOf(`${ESC}[?1049l`) > raw.lastIndexOf(`${ESC}[?1049h`), 'main screen back');
  });
}

test('F5: console.log from a background module goes to the log file, never onto the screen', async (t) => {
  const { base, home: h } = await home();
  const d = dashboard(base, h, { columns: 120, rows: 30, raw: true, env: { LOOP_DASH_FAULT: 'console:50' } });
  t.after(() => d.tty.kill());
  await d.tty.waitForText('docs-sweep', 'the first frame');
  const log = path.join(base, 'state', 'loop-dash', 'dashboard.log');
  await waitFor(() => existsSync(log) && (readFileSync(log, 'utf8').match(/injected background log line/g)?.length ?? 0) >= 20, 'twenty log lines in the log file', 6000);
  assert.ok(!d.raw().includes('injected background log line'), 'nothing of it reached the terminal');
  assert.ok(!d.raw().includes(`${ESC}[2J`), 'and no full redraw was forced');
  d.tty.type('q');
  assert.equal(await d.exited('exit after q'), '0');
});

test('F4 (extra): keys typed before Ink has loaded are drawn at once, and q then quits without waiting for Ink: exit 0, terminal restored', async (t) => {
  const { base, home: h } = await home();
  const marks = path.join(base, 'marks.jsonl');
  // Ink's load made 20 s longer: everything below happens before it.
  const d = dashboard(base, h, { columns: 120, rows: 30, raw: true, env: { LOOP_DASH_FAULT: 'slow-ink:20000', LOOP_DASH_TIMING: marks } });
  t.after(() => d.tty.kill());
  // The first frame lists the sessions by their paths (the readers wait for Ink to go on).
  await d.tty.waitForText(/\d+ roots/, 'the first frame');
  d.tty.type('?');
  await d.tty.waitForText('Owner actions', 'the help overlay, drawn before Ink');
  d.tty.keys('Escape');
  await waitFor(() => (d.tty.screen().some((l) => l.includes('Owner actions')) ? null : true), () => `the help closed by Esc (screen:\n${d.tty.screen().join('\n')})`, 5000, 20);
  d.tty.type('q');
  assert.equal(await d.exited('exit after q typed before Ink loaded'), '0');
  assertCooked(d.stty());
  const events = readFileSync(marks, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { ev: string; k?: number });
  assert.ok(!events.some((m) => m.ev === 'ink-loaded'), 'Ink was never loaded');
  assert.equal(Math.max(...events.filter((m) => m.ev === 'frame').map((m) => m.k ?? 0)), 3, 'three keys drawn (?, Esc, q)');
});

test('F4 (extra): Ink fails to load: the error is shown and the dashboard exits 1 at once — stdin, read for the keys typed before Ink, does not hold it open; terminal restored', async (t) => {
  const { base, home: h } = await home();
  // Ink's load fails 1.5 s after the start: the first frame is up and its keys are being read.
  const d = dashboard(base, h, { columns: 120, rows: 30, raw: true, env: { LOOP_DASH_FAULT: 'no-ink:1500' } });
  t.after(() => d.tty.kill());
  await d.tty.waitForText(/\d+ roots/, 'the first frame');
  d.tty.type('?');
  await d.tty.waitForText('Owner actions', 'a key handled before Ink (its stdin reader is on)');
  // The pane's stdin stays open: before the fix the process waited on it until it closed.
  assert.equal(await d.exited('exit after Ink failed to load'), '1');
  await d.tty.waitForText('Ink could not be loaded', 'the error on the screen');
  assertCooked(d.stty());
});

