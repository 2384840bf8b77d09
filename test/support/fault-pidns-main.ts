/**
 * RELIABILITY E1 inside a private pid namespace (`unshare --pid --fork --mount-proc`): a process
 * is recorded by (pid, start time), exits, and its pid is handed to a new process (forced with
 * `/proc/sys/kernel/ns_last_pid`, which only affects this namespace). Then a live store reads a
 * checkpoint naming the old process. Every `process.kill` call is recorded; the result is printed
 * as JSON. Usage: node fault-pidns-main.js <home>. Not a test file itself.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLiveStore } from '../../src/app/live-store.js';
import { buildSnapshot } from '../../src/model/snapshot.js';
import { processStartIdentity } from '../../src/readers/process-probe.js';

const home = process.argv[2]!;
const kills: { pid: number; signal: string | number | undefined }[] = [];
const realKill = process.kill.bind(process);

function sleeper(): Promise<ChildProcess> {
  const child = spawn('sleep', ['600'], { stdio: 'ignore' });
  return new Promise((resolve, reject) => {
    child.once('spawn', () => resolve(child));
    child.once('error', reject);
  });
}

const exited = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));
const tick = () => new Promise((r) => setTimeout(r, 30)); // > one clock tick: start times differ

async function main(): Promise<void> {
  const a = await sleeper();
  const pid = a.pid!;
  const startA = processStartIdentity(pid);
  a.kill('SIGKILL');
  await exited(a);
  let b: ChildProcess | null = null;
  for (let attempt = 0; attempt < 50 && b === null; attempt++) {
    await tick();
    fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(pid - 1));
    const c = await sleeper();
    if (c.pid === pid && processStartIdentity(pid) !== startA) b = c;
    else {
      c.kill('SIGKILL');
      await exited(c);
    }
  }
  if (!b) throw new Error(`pid ${pid} was not reused`);
  const startB = processStartIdentity(pid);

  const dir = path.join(home, 'loop-dash', 'checkpoints');
  fs.mkdirSync(dir, { recursive: true });
  const now = Date.now();
  fs.writeFileSync(
    path.join(dir, 'e1.json'),
    JSON.stringify({
      v: 1, session: 'e1', sessionFile: null, role: 'root', parentSession: null, cwd: '/work/e1', pid, pidStart: startA, host: os.hostname(),
      model: 'p/m', thinking: null, limits: null, state: 'requesting',
      request: { turn: 1, startedAt: now - 60_000, lastModelEventAt: now - 1000, lastTransportEventAt: null, modelEvents: 3, keepalives: 0 },
      episode: null, recovery: null, lastStop: null, held: null, ownerAbort: null, updatedAt: now - 1000,
    }),
  );

  // From here on every signal the dashboard sends is recorded.
  process.kill = ((target: number, signal?: string | number) => {
    kills.push({ pid: target, signal });
    return realKill(target, signal);
  }) as typeof process.kill;
  const store = createLiveStore([home], { probeMs: 100, reconcileMs: 60_000 });
  await store.start();
  const deadline = Date.now() + 5_000;
  while (!store.getState().probes.has(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 250)); // a few more probe rounds
  const snap = buildSnapshot(store.getState(), Date.now(), { host: os.hostname() });
  await store.stop();
  process.kill = realKill;

  const view = snap.roots.find((r) => r.session === 'e1');
  const bAlive = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
  b.kill('SIGKILL');
  await exited(b);
  process.stdout.write(
    JSON.stringify({ pid, pidB: b.pid, startA, startB, probe: store.getState().probes.get(pid), liveness: view?.liveness, state: view?.state, why: view?.why, kills, bState: bAlive }) + '\n',
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(String((err as Error)?.stack ?? err) + '\n');
    process.exit(1);
  },
);
