import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import type { Checkpoint } from '../src/contract/checkpoint.js';
import { judgeLiveness, REMOTE_STALE_MS } from '../src/model/liveness.js';
import type { ProcessProbe } from '../src/model/types.js';
import { parseProcStat, probeProcess, processStartIdentity } from '../src/readers/process-probe.js';
import { waitFor } from './support/wait-for.js';

const linux = process.platform === 'linux';
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

describe('parseProcStat', () => {
  test('E2: splits after the last ")" so a comm with spaces and parentheses is safe', () => {
    // fields 3..22: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime priority nice threads itreal starttime
    const text = '4242 (my (weird) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 12345678 300\n';
    assert.deepEqual(parseProcStat(text), { comm: 'my (weird) prog', state: 'S', startTime: '987654' });
    assert.deepEqual(parseProcStat('7 () R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 0'), { comm: '', state: 'R', startTime: '4242' });
  });

  test('malformed text gives null', () => {
    assert.equal(parseProcStat(''), null);
    assert.equal(parseProcStat('4242 no parens S 1 2'), null);
    assert.equal(parseProcStat('4242 (short) S 1 2 3'), null);
  });

  test('the real /proc/self/stat', { skip: !linux }, () => {
    const parsed = parseProcStat(fs.readFileSync('/proc/self/stat', 'utf8'));
    assert.ok(parsed);
    assert.match(parsed.startTime, /^\d+$/);
    assert.equal(parsed.comm, fs.readFileSync('/proc/self/comm', 'utf8').trim());
  });
});

describe('probeProcess', () => {
  test('this process is alive and its start identity matches', { skip: !linux && process.platform !== 'darwin' }, () => {
    const probe = probeProcess(process.pid, NOW);
    assert.equal(probe.status, 'alive');
    assert.equal(probe.checkedAt, NOW);
    assert.ok(probe.start);
    assert.equal(probe.start, processStartIdentity(process.pid));
  });

  test('E3: an exited child is gone (ESRCH)', () => {
    const child = spawnSync(process.execPath, ['-e', '']);
    assert.equal(child.status, 0);
    assert.ok(child.pid && child.pid > 0);
    const probe = probeProcess(child.pid, NOW);
    assert.equal(probe.status, 'gone');
    assert.equal(probe.start, null);
    assert.match(probe.detail, /ESRCH/);
    assert.equal(processStartIdentity(child.pid), null);
  });

  test('a zombie (exited, not yet reaped by its parent) is gone, though it still answers signal 0', { skip: !linux }, async () => {
    // The shell's background child exits after the shell has become `sleep`, which never reaps it
    // (one that exits first may be reaped by the shell itself before its exec).
    const parent = spawn('sh', ['-c', '(sleep 0.5) & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      let out = '';
      parent.stdout.on('data', (d) => (out += d));
      const pid = Number(await waitFor(() => /^\d+\n/.exec(out)?.[0], 'the background pid'));
      await waitFor(() => parseProcStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'))?.state === 'Z', 'the child is a zombie');
      process.kill(pid, 0); // signal 0 alone would call it alive
      const probe = probeProcess(pid, NOW);
      assert.equal(probe.status, 'gone');
      assert.match(probe.detail, /zombie/);
    } finally {
      parent.kill('SIGKILL');
    }
  });

  test('E3: EPERM is alive, reported distinctly (as root: probed by a child running as nobody)', { skip: process.platform === 'win32' }, () => {
    // As root every pid is signalable, so a child running as `nobody` does the probe.
    let probe: { status: string; detail: string };
    if (process.getuid?.() === 0) {
      const url = new URL('../src/readers/process-probe.js', import.meta.url).href;
      const child = spawnSync(
        process.execPath,
        ['--input-type=module', '-e', `import { probeProcess } from ${JSON.stringify(url)}; console.log(JSON.stringify(probeProcess(1, 0)));`],
        { uid: 65534, gid: 65534, encoding: 'utf8', timeout: 10_000 },
      );
      assert.equal(child.status, 0, `the child as nobody ran: ${child.stderr?.split('\n')[0] ?? child.error?.message}`);
      probe = JSON.parse(child.stdout) as { status: string; detail: string };
    } else {
      probe = probeProcess(1, NOW);
    }
    assert.equal(probe.status, 'alive');
    assert.match(probe.detail, /EPERM/);
  });

  test('nonsense pids are never signalled', () => {
    for (const pid of [0, -1, 1.5, Number.NaN, 2 ** 60]) {
      const probe = probeProcess(pid, NOW);
      assert.equal(probe.status, 'unknown');
      assert.equal(processStartIdentity(pid), null);
    }
  });
});

describe('judgeLiveness', () => {
  const host = os.hostname();
  const cp = (over: Partial<Checkpoint> = {}) => ({ pid: 4242, pidStart: '1000', host, updatedAt: NOW - 5_000, ...over });
  const probe = (over: Partial<ProcessProbe> = {}): ProcessProbe => ({ pid: 4242, status: 'alive', start: '1000', checkedAt: NOW, ...over });

  test('E1: same host: alive, gone, pid reused, unknown', () => {
    assert.equal(judgeLiveness(cp(), probe(), host, NOW).status, 'alive');
    assert.doesNotMatch(judgeLiveness(cp(), probe(), host, NOW).detail, /at once/);
    assert.match(judgeLiveness(cp(), probe({ linked: true }), host, NOW).detail, /is running; linked, its exit shows at once$/);
    assert.equal(judgeLiveness(cp(), probe({ status: 'gone', start: null }), host, NOW).status, 'gone');
    const reused = judgeLiveness(cp(), probe({ start: '2000' }), host, NOW);
    assert.equal(reused.status, 'pid-reused');
    assert.match(reused.detail, /reused/);
    assert.equal(judgeLiveness(cp(), null, host, NOW).status, 'unknown');
    assert.equal(judgeLiveness(cp(), probe({ pid: 1 }), host, NOW).status, 'unknown');
    assert.equal(judgeLiveness(cp(), probe({ status: 'unknown', start: null }), host, NOW).status, 'unknown');
    const unverified = judgeLiveness(cp({ pidStart: null }), probe(), host, NOW);
    assert.equal(unverified.status, 'alive');
    assert.match(unverified.detail, /not comparable/);
  });

  test('E1: a live pid with a different pidStart, probed for real', { skip: !linux && process.platform !== 'darwin' }, () => {
    const real = probeProcess(process.pid, NOW);
    const mine = cp({ pid: process.pid, pidStart: real.start });
    assert.equal(judgeLiveness(mine, real, host, NOW).status, 'alive');
    assert.equal(judgeLiveness({ ...mine, pidStart: `${real.start}0` }, real, host, NOW).status, 'pid-reused');
  });

  test('other host: judged by checkpoint age only', () => {
    const remote = cp({ host: 'elsewhere' });
    assert.equal(judgeLiveness(remote, null, host, NOW).status, 'remote-fresh');
    assert.equal(judgeLiveness({ ...remote, updatedAt: NOW - REMOTE_STALE_MS }, null, host, NOW).status, 'remote-fresh');
    assert.equal(judgeLiveness({ ...remote, updatedAt: NOW - REMOTE_STALE_MS - 1 }, probe({ status: 'gone' }), host, NOW).status, 'remote-stale');
    assert.equal(judgeLiveness(cp({ host: host.toUpperCase() }), probe(), host.toLowerCase(), NOW).status, 'alive');
  });
});
