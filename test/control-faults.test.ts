/** RELIABILITY.md group D: control requests under concurrency, crashes and a refusing disk. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { controlRequestSchema, journalEntrySchema, type JournalEntry } from '../src/contract/control.js';
import { homePaths } from '../src/contract/paths.js';
import {
  AtomicWriteError,
  awaitAck,
  buildControlRequest,
  cleanStaleControlTemps,
  controlDirFor,
  nodeControlFs,
  removeStaleTemps,
  submitControlRequest,
  writeFileAtomic,
  type ControlFs,
  type FileHandleLike,
  type Requester,
} from '../src/control/index.js';

const CONTROL_MODULE = new URL('../src/control/index.js', import.meta.url).href;
const BY: Requester = { user: 'owner', host: os.hostname(), pid: process.pid, tool: 'test' };
const REQUEST_NAME = /^[A-Za-z0-9_-]{1,80}\.json$/;

function tempHome(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-faults-'));
}

function journal(home: string): JournalEntry[] {
  const file = homePaths(home).journal;
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => journalEntrySchema.parse(JSON.parse(line)));
}

/** Runs `body` (ESM, with `m` = the compiled control module and `args` from the env) in a child node process. */
function child(body: string, args: unknown): ReturnType<typeof spawn> {
  const code = `const m = await import(${JSON.stringify(CONTROL_MODULE)});\nconst args = JSON.parse(process.env.LD_ARGS);\n${body}`;
  return spawn(process.execPath, ['--input-type=module', '-e', code], {
    env: { ...process.env, LD_ARGS: JSON.stringify(args) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function exited(p: ReturnType<typeof spawn>): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  let stderr = '';
  p.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => p.on('exit', (code, signal) => resolve({ code, signal, stderr })));
}

/** Submits args.n disarm requests to args.session with args.conc writes in flight at once. */
const WRITER = `
let next = 0;
await Promise.all(Array.from({ length: args.conc }, async () => {
  while (next < args.n) {
    const i = next++;
    const now = args.now ?? Date.now();
    const r = m.buildControlRequest({ session: args.session, action: 'disarm', reason: args.tag + ' ' + i, now });
    await m.submitControlRequest(args.home, r, { now });
  }
}));
`;

test('D1: a consumer polling every 1 ms while 2,000 requests are written never reads a partial request or a temp name', async (t) => {
  const home = tempHome();
  const session = 'd1-session';
  const dir = controlDirFor(home, session);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const N = 2000;
  const writer = child(WRITER, { home, session, n: N, conc: 16, tag: 'd1' });
  const done = exited(writer);
  let finished = false;
  void done.then(() => (finished = true));

  const seen = new Set<string>();
  const bad: string[] = [];
  let polls = 0;
  let tempsSeen = 0;
  const scan = () => {
    polls++;
    for (const name of fs.readdirSync(dir)) {
      if (name.startsWith('.')) {
        tempsSeen++; // the consumer's rule: dot files are never requests
        continue;
      }
      if (seen.has(name)) continue;
      if (!REQUEST_NAME.test(name)) {
        bad.push(`unexpected name ${name}`);
        continue;
      }
      seen.add(name);
      const text = fs.readFileSync(path.join(dir, name), 'utf8');
      try {
        const ok = controlRequestSchema.safeParse(JSON.parse(text)).success;
        if (!ok) bad.push(`invalid request ${name}`);
      } catch {
        bad.push(`partial request ${name}: ${JSON.stringify(text.slice(0, 40))}`);
      }
    }
  };
  while (!finished) {
    scan();
    await new Promise((r) => setTimeout(r, 1));
  }
  scan();
  const { code, stderr } = await done;
  assert.equal(code, 0, stderr);
  assert.deepEqual(bad, []);
  assert.equal(seen.size, N);
  assert.ok(polls > 50, `the consumer polled only ${polls} times while writing`);
  assert.equal(fs.readdirSync(dir).length, N, 'no temp file left behind');
  const lines = journal(home);
  assert.equal(lines.length, N);
  assert.equal(new Set(lines.map((l) => l.id)).size, N);
  // How often the race was actually exercised (informational).
  t.diagnostic(`polls=${polls} tempsSeen=${tempsSeen}`);
});

test('D2: a writer killed between fsync and rename leaves no request; its temp is removed at the next start', async () => {
  const home = tempHome();
  const session = 'd2-session';
  const body = `
const hang = async () => { process.stdout.write('PUBLISHING\\n'); setInterval(() => {}, 1000); await new Promise(() => {}); };
const fs = { ...m.nodeControlFs, link: hang, rename: hang };
const now = Date.now();
const r = m.buildControlRequest({ session: args.session, action: 'abort', reason: 'x', target: null, now });
await m.submitControlRequest(args.home, r, { now, fs });
`;
  const writer = child(body, { home, session });
  const done = exited(writer);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    writer.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('PUBLISHING')) resolve();
    });
    void done.then((r) => reject(new Error(`writer exited early: ${r.stderr}`)));
  });
  writer.kill('SIGKILL');
  assert.equal((await done).signal, 'SIGKILL');

  const dir = controlDirFor(home, session);
  const names = fs.readdirSync(dir);
  assert.equal(names.length, 1);
  assert.match(names[0]!, /^\.[A-Za-z0-9_-]+\.json\.tmp-\d+-[0-9a-f]+$/);
  assert.equal(names.filter((n) => REQUEST_NAME.test(n)).length, 0, 'no request appeared');
  // The temp holds the whole request (it was fsynced), but under a name nobody reads.
  assert.equal(controlRequestSchema.safeParse(JSON.parse(fs.readFileSync(path.join(dir, names[0]!), 'utf8'))).success, true);
  assert.equal(journal(home).length, 0);

  // A fresh temp may belong to a live writer: kept. Past the threshold: removed.
  assert.deepEqual(await cleanStaleControlTemps(home, Date.now()), []);
  const later = Date.now() + 10 * 60_000;
  assert.deepEqual(await cleanStaleControlTemps(home, later), [path.join(dir, names[0]!)]);
  assert.deepEqual(fs.readdirSync(dir), []);
});

// --- D5: the disk refuses -------------------------------------------------------------------------

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected, write`), { code });
}

/** A file system that fails `step` with `code` for files under `within`; the rest is real. */
function failingFs(within: string, step: 'open' | 'write' | 'sync' | 'link', code: string): ControlFs {
  const inside = (p: string) => p.startsWith(within + path.sep);
  return {
    ...nodeControlFs,
    open: async (file, flags, mode) => {
      if (inside(file) && step === 'open' && flags !== 'r') throw errno(code);
      const real = await nodeControlFs.open(file, flags, mode);
      if (!inside(file)) return real;
      const handle: FileHandleLike = {
        write: async (buf, offset, length, position) => {
          if (step !== 'write') return real.write(buf, offset, length, position);
          // Half the bytes reach the disk, then it is full: the worst case for a reader.
          await real.write(buf, offset, Math.floor(length / 2), position);
          throw errno(code);
        },
        sync: async () => {
          if (step === 'sync' && flags !== 'r') throw errno(code);
          return real.sync();
        },
        chmod: (mode) => real.chmod(mode),
        stat: () => real.stat(),
        close: () => real.close(),
      };
      return handle;
    },
    link: async (from, to) => {
      if (inside(to) && step === 'link') throw errno(code);
      return nodeControlFs.link(from, to);
    },
  };
}

for (const [step, code] of [
  ['open', 'EROFS'],
  ['write', 'ENOSPC'],
  ['sync', 'EIO'],
  ['link', 'EROFS'],
] as const) {
  test(`D5: ${code} at ${step} → a clear error naming the path and errno, no partial file, a write-failed journal line`, async () => {
    const home = tempHome();
    const session = 'd5-session';
    const dir = controlDirFor(home, session);
    const fsx = failingFs(homePaths(home).control, step, code);
    const r = buildControlRequest({ session, action: 'disarm', reason: 'x', now: Date.now(), by: BY });
    const err = await submitControlRequest(home, r, { now: r.requestedAt, fs: fsx }).then(
      () => assert.fail('the write should fail'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof AtomicWriteError, String(err));
    assert.equal(err.code, code);
    assert.equal(err.path, path.join(dir, `${r.id}.json`));
    assert.ok(err.message.includes(err.path) && err.message.includes(code), err.message);
    assert.deepEqual(fs.readdirSync(dir), [], 'neither the request nor its temp is left');
    const lines = journal(home);
    assert.deepEqual(lines.map((l) => [l.kind, l.status, l.id]), [['outcome', 'write-failed', r.id]]);
    assert.ok(lines[0]!.detail?.includes(code));
  });
}

test('a FIFO (or a symlink) where the journal should be: the request is written, the journal error names the file, nothing waits for a reader', () => {
  for (const plant of ['fifo', 'symlink'] as const) {
    const home = tempHome();
    const journalFile = homePaths(home).journal;
    fs.mkdirSync(path.dirname(journalFile), { recursive: true });
    if (plant === 'fifo') assert.equal(spawnSync('mkfifo', [journalFile]).status, 0);
    else fs.symlinkSync('/dev/null', journalFile);
    // In a child with a bound: the open of a FIFO for writing waited for a reader for good (the CLI
    // hung, and q in the dashboard), holding a thread of the pool, so the process could not exit.
    const control = pathToFileURL(path.resolve(import.meta.dirname, '..', 'src', 'control', 'index.js')).href;
    const script = `
      const m = await import(${JSON.stringify(control)});
      const r = m.buildControlRequest({ session: 'fifo-session', action: 'disarm', reason: 'x', now: Date.now(), by: ${JSON.stringify(BY)} });
      const res = await m.submitControlRequest(${JSON.stringify(home)}, r, { now: r.requestedAt });
      console.log(JSON.stringify(res));`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(child.signal, null, `${plant}: the write hung (killed by ${child.signal})`);
    assert.equal(child.status, 0, child.stderr);
    const res = JSON.parse(child.stdout) as { created: boolean; journalError: string | null };
    assert.equal(res.created, true);
    assert.ok(res.journalError?.includes(journalFile), res.journalError ?? 'no journal error');
    assert.match(res.journalError!, plant === 'fifo' ? /ENXIO.*\(a FIFO where the journal should be\)/ : /ELOOP.*not followed/);
  }
});

/** Mounts a tmpfs (root only); null when mounting is not possible here. */
function tryMount(dir: string, options: string): boolean {
  return spawnSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { stdio: 'ignore' }).status === 0;
}

test('D5 on a real disk: a full tmpfs (ENOSPC) and a read-only one (EROFS) leave no file behind', async (t) => {
  const base = tempHome();
  const full = path.join(base, 'full');
  const ro = path.join(base, 'ro');
  fs.mkdirSync(full);
  fs.mkdirSync(ro);
  if (!tryMount(full, 'size=64k,mode=0700')) return t.skip('cannot mount a tmpfs here (needs root)');
  try {
    const big = path.join(full, 'big.json');
    await assert.rejects(writeFileAtomic(big, Buffer.alloc(256 * 1024, 0x61)), (e: unknown) => e instanceof AtomicWriteError && e.code === 'ENOSPC' && e.message.includes(big));
    assert.deepEqual(fs.readdirSync(full), []);
    assert.ok(tryMount(ro, 'size=64k,ro'));
    const session = 'ro-session';
    // A read-only home: even the control directory cannot be made.
    const r = buildControlRequest({ session, action: 'arm', reason: '', now: Date.now(), by: BY });
    await assert.rejects(submitControlRequest(ro, r, { now: r.requestedAt }), (e: unknown) => e instanceof AtomicWriteError && e.code === 'EROFS');
    assert.deepEqual(fs.readdirSync(ro), []);
  } finally {
    spawnSync('umount', [full]);
    spawnSync('umount', [ro]);
  }
});

test('D6: no consumer → no-answer after the timeout, an outcome line in the journal, and the request expires unapplied', async () => {
  const home = tempHome();
  const session = 'd6-session';
  const r = buildControlRequest({ session, action: 'abort', reason: '', target: { turn: 1, startedAt: 5 }, now: Date.now(), by: BY });
  await submitControlRequest(home, r, { now: r.requestedAt });
  const started = Date.now();
  const res = await awaitAck(home, session, r.id, { timeoutMs: 150, pollMs: 20, now: () => r.requestedAt + 150 });
  const waited = Date.now() - started;
  assert.equal(res.status, 'no-answer');
  assert.ok(waited >= 140 && waited < 2000, `waited ${waited} ms`);
  const outcome = journal(home).filter((e) => e.kind === 'outcome');
  assert.equal(outcome.length, 1);
  assert.deepEqual([outcome[0]!.status, outcome[0]!.id, outcome[0]!.action, outcome[0]!.at], ['no-answer', r.id, 'abort', r.requestedAt + 150]);
  assert.match(outcome[0]!.detail ?? '', /no consumer answered/);
  // What a late consumer reads: the request says it is past its lifetime.
  const onDisk = controlRequestSchema.parse(JSON.parse(fs.readFileSync(path.join(controlDirFor(home, session), `${r.id}.json`), 'utf8')));
  assert.equal(onDisk.expiresAt, r.requestedAt + 30_000);
});

test('D7: two writers at once (two processes, same millisecond) → every request lands under a distinct name, journal lines intact', async () => {
  const home = tempHome();
  const session = 'd7-session';
  const now = Date.now();
  const n = 150;
  const a = child(WRITER, { home, session, n, conc: 4, tag: 'A', now });
  const b = child(WRITER, { home, session, n, conc: 4, tag: 'B', now });
  const [ra, rb] = await Promise.all([exited(a), exited(b)]);
  assert.equal(ra.code, 0, ra.stderr);
  assert.equal(rb.code, 0, rb.stderr);
  const dir = controlDirFor(home, session);
  const names = fs.readdirSync(dir);
  assert.equal(names.length, 2 * n);
  const reasons = names.map((name) => controlRequestSchema.parse(JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'))).reason);
  assert.equal(new Set(reasons).size, 2 * n, 'no request overwrote another');
  const raw = fs.readFileSync(homePaths(home).journal, 'utf8');
  assert.ok(raw.endsWith('\n'));
  const lines = journal(home); // parse() throws on any torn or interleaved line
  assert.equal(lines.length, 2 * n);
  assert.equal(lines.filter((l) => l.detail?.startsWith('A ')).length, n);
  assert.equal(lines.filter((l) => l.detail?.startsWith('B ')).length, n);
  assert.deepEqual(await removeStaleTemps(dir, 0, Date.now() + 1000), [], 'no temp left by either writer');
});
