/**
 * A live store in its own process, for cases that need a process of their own: another user
 * (B10: root reads through `chmod 000`), a file limit (C4: `ulimit -n 64`), its own memory and
 * inotify figures (A9, C5). Config comes in `LD_CHILD` (JSON); it prints a state line (JSON) after
 * store changes and answers commands (`stats`, `reset-peak`, `quiet`: the fd sampler stops) read from stdin. Run by
 * test/support/fault-child.ts; not a test file itself.
 */
import fs from 'node:fs';
import { createLiveStore } from '../../src/app/live-store.js';
import type { ChildConfig, ChildState, ChildStats } from './fault-child.js';

const cfg = JSON.parse(process.env.LD_CHILD ?? '{}') as ChildConfig;
let maxFds = 0;

function countFds(): number {
  return fs.readdirSync('/proc/self/fd').length - 1; // minus the descriptor of the listing itself
}

function watches(): number {
  let n = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      n += (fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').match(/^inotify wd:/gm) ?? []).length;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

function stats(): ChildStats {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  const fds = countFds();
  maxFds = Math.max(maxFds, fds);
  const cpu = process.cpuUsage();
  return {
    rss: kb('VmRSS'),
    peakRss: kb('VmHWM'),
    fds,
    maxFds,
    watches: watches(),
    fdLimit: Number(/^Max open files\s+(\d+)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'))?.[1]),
    cpuUs: cpu.user + cpu.system,
    at: Date.now(),
  };
}

const sampler = setInterval(() => {
  maxFds = Math.max(maxFds, countFds());
}, cfg.sampleMs ?? 5);

const store = createLiveStore(cfg.homes, {
  polling: cfg.polling,
  reconcileMs: cfg.reconcileMs,
  pollMs: cfg.pollMs,
  incompleteGraceMs: cfg.incompleteGraceMs,
  batchMs: cfg.batchMs,
});

let started = false;
function state(): ChildState {
  const s = store.getState();
  const focus: ChildState['focus'] = {};
  for (const f of cfg.focus ?? []) {
    const facts = s.sessionFiles.get(f);
    focus[f] = {
      known: facts !== undefined,
      size: facts?.size ?? null,
      history: facts?.history.map((h) => h.summary) ?? [],
      warnings: (s.warnings.get(f) ?? []).map((w) => w.message),
    };
  }
  let warnings = 0;
  for (const list of s.warnings.values()) warnings += list.length;
  const progress = [...s.progress.values()];
  return {
    started,
    sessions: s.sessionFiles.size,
    progressDone: started && progress.length > 0 && progress.every((p) => p.done),
    progressRead: progress.reduce((n, p) => n + p.read, 0),
    progressTotal: progress.reduce((n, p) => n + p.total, 0),
    watchMode: s.watchMode.mode,
    watchDetail: s.watchMode.detail,
    warnings,
    focus,
    probes: [...s.probes.values()].map((p) => ({ pid: p.pid, status: p.status, detail: p.detail ?? null })),
    stats: stats(),
  };
}

let pending: NodeJS.Timeout | null = null;
function emitSoon(): void {
  if (pending) return;
  pending = setTimeout(() => {
    pending = null;
    process.stdout.write(JSON.stringify({ type: 'state', state: state() }) + '\n');
  }, 20);
}
store.subscribe(emitSoon);

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d: string) => {
  input += d;
  let nl: number;
  while ((nl = input.indexOf('\n')) >= 0) {
    const { id, cmd } = JSON.parse(input.slice(0, nl)) as { id: number; cmd: string };
    input = input.slice(nl + 1);
    let data: unknown;
    if (cmd === 'reset-peak') {
      fs.writeFileSync('/proc/self/clear_refs', '5'); // resets VmHWM to the current RSS
      data = stats();
    } else if (cmd === 'stats') data = stats();
    else if (cmd === 'quiet') {
      // An idle measurement is about the store: the fd sampler's own wake-ups (10 a second at
      // 100 ms, ~1 ms of CPU each on these machines) stop here; `stats` still counts fds.
      clearInterval(sampler);
      data = stats();
    } else if (cmd === 'state') data = state();
    else if (cmd === 'stop') {
      clearInterval(sampler);
      void store.stop().then(() => {
        process.stdout.write(JSON.stringify({ type: 'reply', id, data: stats() }) + '\n');
        process.exit(0);
      });
      continue;
    }
    process.stdout.write(JSON.stringify({ type: 'reply', id, data }) + '\n');
  }
});

const t0 = Date.now();
store.start().then(
  () => {
    started = true;
    process.stdout.write(JSON.stringify({ type: 'started', ms: Date.now() - t0 }) + '\n');
    emitSoon();
  },
  (err: unknown) => {
    process.stderr.write(String((err as Error)?.stack ?? err) + '\n');
    process.exit(1);
  },
);
