/**
 * The liveness socket (docs/CONTRACT.md §5): the extension listens, a dashboard links, and the
 * death of a linked process is known at once — not at the next probe — while an idle dashboard
 * whose processes are all linked stops probing every few seconds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs, { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { aliveHostTag, aliveSocketPath, aliveSocketPid, homePaths, MAX_SOCKET_PATH_BYTES } from '../src/contract/paths.js';
import { generateHome } from '../src/demo/generate.js';
import { LivenessSocket } from '../src/extension/liveness-socket.js';
import type { ReaderEvent } from '../src/model/types.js';
import { HomeReader } from '../src/readers/home-reader.js';
import { LivenessLinks, MAX_LINKS } from '../src/readers/liveness-links.js';
import { dueJobs, nextWake, Periodic, type PeriodicClock } from '../src/readers/periodic.js';
import { processStartIdentity } from '../src/readers/process-probe.js';
import { canConnect } from './support/socket.js';
import { waitFor } from './support/wait-for.js';

const HOST = os.hostname();

function tmp(t: { after: (fn: () => void) => void }): string {
  const base = mkdtempSync(path.join(os.tmpdir(), 'ld-alive-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  return base;
}

/** A child process that listens on its own liveness socket in `home` (the extension's code), like a pi process. */
async function fakePi(t: { after: (fn: () => void) => void }, home: string): Promise<{ child: ChildProcess; pid: number; file: string }> {
  // The extension's socket in a process of its own (the script the benchmark runs too); it names
  // this machine's host name, as HOST is.
  const script = fileURLToPath(new URL('../../scripts/liveness-listener.mjs', import.meta.url));
  const child = spawn(process.execPath, [script, home], { stdio: 'ignore' });
  t.after(() => child.kill('SIGKILL'));
  const pid = child.pid!;
  const start = await waitFor(() => processStartIdentity(pid), 'the child is running');
  const file = aliveSocketPath(home, HOST, pid, start)!;
  await waitFor(() => canConnect(file), `the child listens on ${file}`);
  return { child, pid, file };
}

test('socket paths: named by host tag, pid and start tag; none without a start identity or past the socket address size', () => {
  const home = '/h';
  const file = aliveSocketPath(home, 'box', 4242, '1234')!;
  assert.equal(path.dirname(file), homePaths(home).alive);
  assert.match(path.basename(file), /^[0-9a-f]{6}-4242-[0-9a-f]{8}\.sock$/);
  assert.ok(path.basename(file).startsWith(`${aliveHostTag('box')}-`));
  assert.notEqual(aliveSocketPath(home, 'box', 4242, '1235'), file, 'a reused pid has another name');
  assert.notEqual(aliveSocketPath(home, 'other', 4242, '1234'), file, 'another host has another name');
  assert.equal(aliveSocketPath(home, 'box', 4242, null), null);
  assert.equal(aliveSocketPath(home, 'box', 0, '1'), null);
  assert.equal(aliveSocketPath('/' + 'x'.repeat(MAX_SOCKET_PATH_BYTES), 'box', 4242, '1'), null);
  assert.equal(aliveSocketPid(path.basename(file), 'box'), 4242);
  assert.equal(aliveSocketPid(path.basename(file), 'other'), null, "another host's socket is not ours to judge");
  assert.equal(aliveSocketPid('notes.txt', 'box'), null);
});

test('the extension listens owner-only while a session runs, removes its socket at stop, and leaves a non-socket at the path alone', async (t) => {
  const home = path.join(tmp(t), 'home');
  const logs: string[] = [];
  const sock = new LivenessSocket((m, err) => logs.push(err === undefined ? m : `${m}: ${String(err)}`));
  const start = processStartIdentity(process.pid);
  sock.start(home, HOST, process.pid, start);
  const file = sock.path!;
  assert.equal(file, aliveSocketPath(home, HOST, process.pid, start));
  await waitFor(() => canConnect(file), 'a connection opens');
  assert.ok(fs.lstatSync(file).isSocket());
  assert.equal(fs.statSync(homePaths(home).alive).mode & 0o777, 0o700);
  await waitFor(() => (fs.lstatSync(file).mode & 0o777) === 0o600, 'the socket is owner-only');
  sock.stop();
  assert.equal(sock.path, null);
  assert.equal(fs.existsSync(file), false, 'the socket file is removed at stop');
  assert.equal(await canConnect(file), false);

  // Someone's file where the socket would go: not deleted, no socket, a line in the log.
  fs.writeFileSync(file, 'mine');
  sock.start(home, HOST, process.pid, start);
  assert.equal(sock.path, null);
  assert.equal(fs.readFileSync(file, 'utf8'), 'mine');
  assert.match(logs.join('\n'), /not a socket/);
  fs.rmSync(file);

  // No start identity: no socket, said why.
  sock.start(home, HOST, process.pid, null);
  assert.equal(sock.path, null);
  assert.match(logs.at(-1)!, /start identity is unknown/);
});

test('a start removes the sockets this host\'s dead processes left behind (kill -9), and keeps live ones and other hosts\' ones', async (t) => {
  const home = path.join(tmp(t), 'home');
  const dead = await fakePi(t, home);
  const live = await fakePi(t, home);
  dead.child.kill('SIGKILL');
  await waitFor(() => processStartIdentity(dead.pid) === null, 'the killed child is gone');
  assert.ok(fs.existsSync(dead.file), 'kill -9 leaves the socket file behind');
  const foreign = path.join(homePaths(home).alive, path.basename(aliveSocketPath(home, 'elsewhere', dead.pid, '1')!));
  fs.writeFileSync(foreign, '');
  const sock = new LivenessSocket(() => undefined);
  t.after(() => sock.stop());
  sock.start(home, HOST, process.pid, processStartIdentity(process.pid));
  assert.equal(fs.existsSync(dead.file), false, "the dead process's socket is swept");
  assert.ok(fs.existsSync(live.file), "a live process's socket stays");
  assert.ok(fs.existsSync(foreign), "another host's entry is not ours to judge");
  assert.ok(await canConnect(live.file));
});

test('a linked process found dead at once: kill -9 reaches the reader as a gone probe long before its next probe', async (t) => {
  const base = tmp(t);
  const home = path.join(base, 'home');
  const pi = await fakePi(t, home);
  await generateHome(home, { now: Date.now(), host: HOST, livePid: pi.pid, livePidStart: processStartIdentity(pi.pid), deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
  const probes: { at: number; status: string; linked: boolean }[] = [];
  const reader = new HomeReader({
    home,
    emit: (events) => {
      for (const e of events) if (e.type === 'probe' && e.probe.pid === pi.pid) probes.push({ at: performance.now(), status: e.probe.status, linked: e.probe.linked === true });
    },
    // Ten minutes: only the link can tell of the death within this test's bounds.
    probeMs: 600_000,
    batchMs: 10,
  });
  t.after(() => reader.stop());
  await reader.start();
  assert.equal(probes[0]?.status, 'alive');
  await waitFor(() => reader.stats().links === 1, () => `the reader links the live process (${reader.stats().links} links)`);
  // The model is told, so the detail view can say the exit will show at once.
  await waitFor(() => probes.some((p) => p.status === 'alive' && p.linked), 'a probe that says linked');
  const killedAt = performance.now();
  pi.child.kill('SIGKILL');
  const gone = await waitFor(() => probes.find((p) => p.status === 'gone'), 'the gone probe', 5_000);
  assert.ok(gone.at - killedAt < 2_000, `known ${(gone.at - killedAt).toFixed(0)} ms after the kill`);
  assert.equal(reader.stats().links, 0, 'the link is dropped with its process');
});

test('a process without a socket is still probed every probeMs (an older extension): no link, death found by the probe', async (t) => {
  const base = tmp(t);
  const home = path.join(base, 'home');
  const sleeper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  t.after(() => sleeper.kill('SIGKILL'));
  const pid = sleeper.pid!;
  await waitFor(() => processStartIdentity(pid), 'the sleeper is running');
  await generateHome(home, { now: Date.now(), host: HOST, livePid: pid, livePidStart: processStartIdentity(pid), deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
  const statuses: string[] = [];
  const reader = new HomeReader({ home, emit: (events) => events.forEach((e) => e.type === 'probe' && e.probe.pid === pid && statuses.push(e.probe.status)), probeMs: 50, batchMs: 10 });
  t.after(() => reader.stop());
  await reader.start();
  sleeper.kill('SIGKILL');
  await waitFor(() => statuses.includes('gone'), 'the gone probe', 5_000);
  assert.equal(reader.stats().links, 0);
});

test('a dead pid that many checkpoints name is probed once at a start; a checkpoint written after it was found gone (the pid reused) is probed again', async (t) => {
  const base = tmp(t);
  const home = path.join(base, 'home');
  const dead = 4_000_001;
  // Every process of the demo home is the dead one: its root and lanes' checkpoints all name it.
  await generateHome(home, { now: Date.now(), host: HOST, livePid: dead, livePidStart: null, deadPid: dead, repoDir: path.join(base, 'repo') });
  const dir = homePaths(home).checkpoints;
  const naming = fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .map((n) => ({ file: path.join(dir, n), cp: JSON.parse(fs.readFileSync(path.join(dir, n), 'utf8')) as { pid: number; host: string; state: string; updatedAt: number } }))
    .filter(({ cp }) => cp.pid === dead && cp.host === HOST && cp.state !== 'ended');
  assert.ok(naming.length >= 3, `${naming.length} running checkpoints name the dead pid`);
  const gone: number[] = [];
  const reader = new HomeReader({ home, emit: (events) => events.forEach((e) => e.type === 'probe' && e.probe.pid === dead && e.probe.status === 'gone' && gone.push(e.probe.checkedAt)), batchMs: 10 });
  t.after(() => reader.stop());
  await reader.start();
  assert.equal(reader.stats().probes, 1, 'one probe for the pid, not one per checkpoint');
  assert.equal(gone.length, 1, 'found gone, once');
  // A process that reuses the pid writes a checkpoint after that instant: it is probed.
  const { file, cp } = naming[0]!;
  const tmpFile = `${file}.tmp`;
  fs.writeFileSync(tmpFile, JSON.stringify({ ...cp, updatedAt: gone[0]! + 1_000 }));
  fs.renameSync(tmpFile, file);
  await waitFor(() => reader.stats().probes === 2, 'the probe of the checkpoint written after', 10_000);
});

// ---- the timer: wakes only when a job is due ---------------------------------------------------

class FakeClock implements PeriodicClock {
  t = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private ids = 0;
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.ids;
    this.timers.push({ at: this.t + ms, fn, id });
    return id;
  }
  clearTimeout(id: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== id);
  }
  /** Runs the timers due up to `until`, in order, letting each job's promise settle. */
  async advance(until: number): Promise<void> {
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > until) break;
      this.timers.shift();
      this.t = next.at;
      next.fn();
      for (let i = 0; i < 5; i++) await Promise.resolve();
    }
    this.t = until;
  }
}

test('nextWake and dueJobs: the earliest due time; a wake-up runs every job due within the coalescing window', () => {
  assert.equal(nextWake([null, null]), null);
  assert.equal(nextWake([5_000, null, 2_500]), 2_500);
  assert.deepEqual(dueJobs([2_500, 3_000, 10_000, null], 2_500), [0, 1]);
});

test('the background timer wakes only when a job is due: 24 a minute for a 2.5 s probe, 2 for a 30 s backstop, none for jobs with nothing to do, and a poke brings a job forward', async () => {
  const clock = new FakeClock();
  const runs = { probe: 0, recheck: 0 };
  let probeEvery: number | null = 2_500;
  let recheckEvery: number | null = 5_000;
  const p = new Periodic(
    [
      { dueAt: (last) => (probeEvery === null ? null : last + probeEvery), run: async () => void runs.probe++ },
      { dueAt: (last) => (recheckEvery === null ? null : last + recheckEvery), run: async () => void runs.recheck++ },
    ],
    clock,
  );
  await clock.advance(60_000);
  assert.equal(p.wakeUps, 24, 'the 5 s re-check shares the 2.5 s probe\'s wake-ups');
  assert.deepEqual(runs, { probe: 24, recheck: 12 });

  // Every process linked, the re-check on its slow tier: two wake-ups a minute (once the timer
  // armed for the old pace has fired).
  probeEvery = 30_000;
  recheckEvery = 30_000;
  await clock.advance(clock.t + 30_000);
  let w0 = p.wakeUps;
  await clock.advance(clock.t + 120_000);
  assert.equal(p.wakeUps - w0, 4);

  // Nothing to do: no wake-up at all.
  probeEvery = null;
  recheckEvery = null;
  await clock.advance(clock.t + 60_000);
  w0 = p.wakeUps;
  await clock.advance(clock.t + 600_000);
  assert.equal(p.wakeUps - w0, 0);

  // A job becomes due (a new pid): the poke arms the timer.
  probeEvery = 2_500;
  const probes0 = runs.probe;
  p.poke();
  await clock.advance(clock.t + 1_000);
  assert.equal(runs.probe, probes0 + 1, 'due since its last run long ago: runs at once');
  p.stop();
  w0 = p.wakeUps;
  await clock.advance(clock.t + 60_000);
  assert.equal(p.wakeUps, w0, 'stopped: no more wake-ups');
});

test('links: at most MAX_LINKS sockets held at once; processes whose sockets could not be reached do not count', async (t) => {
  const dir = tmp(t);
  const file = path.join(dir, 'alive.sock');
  const server = net.createServer((c) => c.on('error', () => {}));
  await new Promise<void>((resolve) => server.listen(file, resolve));
  const links = new LivenessLinks(() => {});
  t.after(() => {
    links.stop();
    server.close();
  });
  // More unreachable processes than the cap (an older extension: no socket at the path).
  const missing = path.join(dir, 'nobody-listens.sock');
  for (let pid = 1_000_000; pid < 1_000_000 + MAX_LINKS + 44; pid++) links.link(pid, () => missing);
  await waitFor(() => links.held === 0, 'every failed attempt has let its socket go');
  // A process with a socket still links (the failed ones used to fill the cap for good).
  links.link(42, () => file);
  await waitFor(() => links.isLinked(42), 'the process with a socket is linked');
  // The cap: MAX_LINKS sockets, and no more.
  for (let pid = 2_000_000; links.held < MAX_LINKS; pid++) links.link(pid, () => file);
  await waitFor(() => links.size === MAX_LINKS, 'MAX_LINKS links up');
  let asked = false;
  links.link(3_000_000, () => ((asked = true), file));
  assert.equal(asked, false, 'past the cap no connection is tried');
  assert.equal(links.held, MAX_LINKS);
  assert.equal(links.isLinked(3_000_000), false);
  // A link forgotten frees its place at once.
  links.forget(42);
  assert.equal(links.held, MAX_LINKS - 1);
  links.link(3_000_000, () => file);
  await waitFor(() => links.isLinked(3_000_000), 'the next process links once a place is free');
});

test('a link that comes up while a start reads the checkpoints does not send the list before them: the first batch holds the list and every checkpoint', async (t) => {
  const base = tmp(t);
  const home = path.join(base, 'home');
  const pi = await fakePi(t, home);
  await generateHome(home, { now: Date.now(), host: HOST, livePid: pi.pid, livePidStart: processStartIdentity(pi.pid), deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
  const checkpoints = fs.readdirSync(homePaths(home).checkpoints).filter((n) => n.endsWith('.json')).sort();
  assert.ok(checkpoints.length >= 4, 'the demo home has checkpoints');
  const batches: ReaderEvent[][] = [];
  let linksAtFirstBatch = -1;
  const reader: HomeReader = new HomeReader({
    home,
    emit: (events) => {
      if (batches.length === 0) linksAtFirstBatch = reader.stats().links;
      batches.push(events);
    },
    probeMs: 600_000,
    batchMs: 10,
    // A slow disk: each checkpoint takes 3 ms more, so the start's reads yield to the event loop
    // (every 8 ms) while they go on, and the link to the live process comes up among them.
    checkpointsBeforeList: () => {
      const until = performance.now() + 3;
      while (performance.now() < until);
      return true;
    },
  });
  t.after(() => reader.stop());
  await reader.start();
  assert.ok(linksAtFirstBatch >= 1, `the link came up before the list went out (${linksAtFirstBatch} links), else this shows nothing`);
  const first = batches[0]!;
  assert.ok(first.some((e) => e.type === 'progress'), 'the first batch is the list');
  const inFirst = first.flatMap((e) => (e.type === 'checkpoint' ? [path.basename(e.record.file)] : [])).sort();
  assert.deepEqual(inFirst, checkpoints, 'with every checkpoint (the live clocks in the first frame)');
});
