/**
 * RELIABILITY.md group E — pid handling: the dashboard only ever checks liveness (signal 0) and
 * never signals a bare pid. E1 forces a real pid reuse in a private pid namespace; E2 runs a real
 * process whose name has spaces and ')'; E3 probes as another user (EPERM) and a gone pid (ESRCH)
 * through the store. The parser and probe unit tests (test/process-probe.test.ts) carry E2/E3 too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { initialModelState, reduceEvents } from '../src/model/reducer.js';
import { buildSnapshot } from '../src/model/snapshot.js';
import { probeProcess, processStartIdentity } from '../src/readers/process-probe.js';
import { runChildStore } from './support/fault-child.js';
import { checkpointPath, checkpointText, faultHome, removeHome } from './support/fault-home.js';
import { startProbe } from './support/fault-home.js';

const CASE = { timeout: 60_000 };
const PIDNS_MAIN = fileURLToPath(new URL('./support/fault-pidns-main.js', import.meta.url));

test('E1: a recorded (pid, start time) whose process exited and whose pid was reused → "process gone (pid reused)", the session lost, nothing signalled', CASE, () => {
  const home = faultHome();
  try {
    // A private pid namespace: forcing the reuse (ns_last_pid) touches no other process's pids.
    const r = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, PIDNS_MAIN, home], { encoding: 'utf8', timeout: 45_000 });
    assert.equal(r.status, 0, `unshare run failed: ${r.stderr || r.error?.message}`);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
      pid: number; pidB: number; startA: string; startB: string; probe: { status: string; start: string; detail: string };
      liveness: { status: string; detail: string }; state: string; why: string; kills: { pid: number; signal: unknown }[]; bState: string;
    };
    assert.equal(out.pidB, out.pid, 'the pid was reused');
    assert.notEqual(out.startB, out.startA, 'by a process with another start time');
    assert.equal(out.probe.status, 'alive');
    assert.equal(out.probe.start, out.startB);
    assert.equal(out.liveness.status, 'pid-reused');
    assert.match(out.liveness.detail, new RegExp(`^process gone \\(pid ${out.pid} reused by another process\\)$`));
    assert.equal(out.state, 'lost');
    assert.ok(out.kills.length > 0, 'the probe ran');
    assert.deepEqual(out.kills.filter((k) => k.signal !== 0), [], 'only signal 0 (an existence check) was ever sent');
    assert.match(out.bState, /^[SR]$/, 'the process that reused the pid was left alone');
  } finally {
    removeHome(home);
  }
});

test('E2: a real process whose command name has spaces and ")" → its start time is read correctly (split after the last ")")', CASE, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-e2-'));
  const exe = path.join(dir, 'a) b (c) d');
  fs.copyFileSync(spawnSync('sh', ['-c', 'command -v sleep'], { encoding: 'utf8' }).stdout.trim(), exe);
  fs.chmodSync(exe, 0o755);
  const child = spawn(exe, ['600'], { stdio: 'ignore' });
  await new Promise((r) => child.once('spawn', r));
  const home = faultHome();
  try {
    const pid = child.pid!;
    const comm = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trimEnd();
    assert.equal(comm, 'a) b (c) d');
    // The start time read independently: strip "pid (comm) " knowing comm exactly; field 22 is the 20th after it.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const prefix = `${pid} (${comm}) `;
    assert.ok(stat.startsWith(prefix));
    const expected = stat.slice(prefix.length).split(' ')[19];
    assert.match(expected ?? '', /^\d+$/);
    assert.equal(processStartIdentity(pid), expected);
    assert.equal(probeProcess(pid, 0).start, expected);
    // And through the store: the checkpoint that recorded it is alive; one with another start time is a reuse.
    const good = checkpointPath(home, 'e2-good');
    const other = checkpointPath(home, 'e2-other');
    fs.writeFileSync(good, checkpointText('e2-good', { pid, pidStart: expected, host: os.hostname(), state: 'idle' }));
    fs.writeFileSync(other, checkpointText('e2-other', { pid, pidStart: `${expected}1`, host: os.hostname(), state: 'idle' }));
    const p = await startProbe(home, { reconcileMs: 60_000 });
    try {
      const snap = buildSnapshot(p.state(), Date.now(), { host: os.hostname() });
      assert.equal(snap.roots.find((r) => r.session === 'e2-good')?.liveness?.status, 'alive');
      assert.equal(snap.roots.find((r) => r.session === 'e2-other')?.liveness?.status, 'pid-reused');
    } finally {
      await p.stop();
    }
  } finally {
    child.kill('SIGKILL');
    removeHome(home);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('E3: EPERM and ESRCH from the liveness check are reported distinctly (the store run as the user nobody: pid 1 is EPERM, an exited pid ESRCH)', CASE, async () => {
  const home = faultHome();
  fs.chmodSync(path.dirname(home), 0o755);
  const gone = spawnSync(process.execPath, ['-e', '']).pid!;
  fs.writeFileSync(checkpointPath(home, 'e3-init'), checkpointText('e3-init', { pid: 1, host: os.hostname(), state: 'idle' }));
  fs.writeFileSync(checkpointPath(home, 'e3-gone'), checkpointText('e3-gone', { pid: gone, host: os.hostname(), state: 'idle' }));
  const child = await runChildStore({ homes: [home], polling: false, reconcileMs: 60_000, sampleMs: 1000 }, { uid: 65534, gid: 65534 });
  try {
    const s = await child.until((x) => x.progressDone && x.probes.length === 2, 'both probes', 10_000);
    const init = s.probes.find((p) => p.pid === 1)!;
    const dead = s.probes.find((p) => p.pid === gone)!;
    assert.deepEqual([init.status, init.detail], ['alive', 'EPERM: exists, owned by another user']);
    assert.deepEqual([dead.status, dead.detail], ['gone', 'ESRCH: no such process']);
    // What the model makes of each: a live process (another user's) and a lost one.
    const state = reduceEvents(initialModelState(), [
      { type: 'checkpoint', record: { file: checkpointPath(home, 'e3-init'), home, session: 'e3-init', mtimeMs: 0, checkpoint: JSON.parse(checkpointText('e3-init', { pid: 1, host: os.hostname(), state: 'requesting' })) } },
      { type: 'checkpoint', record: { file: checkpointPath(home, 'e3-gone'), home, session: 'e3-gone', mtimeMs: 0, checkpoint: JSON.parse(checkpointText('e3-gone', { pid: gone, host: os.hostname(), state: 'requesting' })) } },
      ...s.probes.map((p) => ({ type: 'probe' as const, probe: { pid: p.pid, status: p.status as 'alive' | 'gone', start: null, checkedAt: 0, detail: p.detail ?? undefined } })),
    ]);
    const snap = buildSnapshot(state, Date.now(), { host: os.hostname() });
    assert.notEqual(snap.roots.find((r) => r.session === 'e3-init')?.state, 'lost');
    assert.equal(snap.roots.find((r) => r.session === 'e3-gone')?.state, 'lost');
  } finally {
    await child.stop();
    removeHome(home);
  }
});
