/**
 * The dashboard's data path under a soak, in its own process: a live store over one home and a
 * snapshot built every second (as the TUI's clock does). Every `reportMs` it prints one JSON line
 * of figures: heap after GC, RSS, open fds, inotify watches, event-loop delay, records seen.
 * Run with --expose-gc.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createLiveStore } from '../../src/app/live-store.js';
import { buildSnapshot } from '../../src/model/snapshot.js';

const [home, reportMsText] = process.argv.slice(2);
const reportMs = Number(reportMsText ?? 5000);

function fds(): { total: number; files: number; inotify: number; watches: number } {
  let total = 0;
  let files = 0;
  let inotify = 0;
  let watches = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    total++;
    let target = '';
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    if (target.startsWith('/')) files++;
    if (target.includes('inotify')) {
      inotify++;
      try {
        watches += readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').filter((l) => l.startsWith('inotify wd:')).length;
      } catch {
        /* raced with close */
      }
    }
  }
  return { total, files, inotify, watches };
}

const store = createLiveStore([home!], {});
await store.start();
const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();
let rows = 0;
const tick = setInterval(() => {
  const snap = buildSnapshot(store.getState(), Date.now(), { host: os.hostname() });
  rows = snap.roots.reduce((n, r) => n + 1 + r.lanes.length, 0);
}, 1000);
/**
 * Held descriptors, not a read in flight at the instant of sampling: the smallest count of five
 * readings 20 ms apart (a leaked fd or watch is in all five).
 */
async function heldFds(): Promise<ReturnType<typeof fds>> {
  let best = fds();
  for (let i = 0; i < 4; i++) {
    await new Promise((r) => setTimeout(r, 20));
    const f = fds();
    if (f.total < best.total) best = { ...best, total: f.total };
    if (f.files < best.files) best = { ...best, files: f.files };
    if (f.watches < best.watches) best = { ...best, watches: f.watches };
  }
  return best;
}

const report = setInterval(async () => {
  (globalThis as { gc?: () => void }).gc?.();
  const held = await heldFds();
  const m = process.memoryUsage();
  const state = store.getState();
  const history = [...state.sessionFiles.values()].reduce((n, f) => n + f.history.length, 0);
  process.stdout.write(
    JSON.stringify({
      t: Date.now(),
      heapMB: m.heapUsed / 1e6,
      rssMB: m.rss / 1e6,
      ...held,
      loopP99Ms: delay.percentile(99) / 1e6,
      loopMaxMs: delay.max / 1e6,
      rows,
      incidents: state.incidents.size,
      history,
      version: state.version,
    }) + '\n',
  );
  delay.reset();
}, reportMs);
process.on('SIGTERM', async () => {
  clearInterval(tick);
  clearInterval(report);
  await store.stop();
  process.exit(0);
});
