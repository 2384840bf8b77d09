import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkpointSchema, type Checkpoint } from '../src/contract/checkpoint.js';
import { homePaths, utcStamp } from '../src/contract/paths.js';
import { generateHome, type DemoManifest } from '../src/demo/generate.js';
import { DEMO, DEMO_PLACEHOLDER_RUN, MIN } from '../src/demo/scenarios.js';
import { startSimulator, type Simulator } from '../src/demo/simulator.js';
import { followAction, requestAction } from '../src/control/index.js';
import { CHECKPOINT_STALE_MS, IDLE_CHECKPOINT_STALE_MS } from '../src/model/snapshot.js';

type Obj = Record<string, unknown>;

/** Poll a condition every few milliseconds until it holds, or fail after `timeoutMs`. */
async function waitFor<T>(what: string, probe: () => T | null | undefined | false, timeoutMs = 5_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of fs.readdirSync(dir)) {
    const full = path.join(dir, name);
    if (fs.statSync(full).isDirectory()) out.push(...walk(full));
    else out.push(full);
  }
  return out;
}

function readCheckpoint(file: string): Checkpoint | null {
  try {
    const parsed = checkpointSchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Complete lines only: a line still being written (split append) is not returned. */
function completeLines(file: string): Obj[] {
  if (!fs.existsSync(file)) return [];
  const text = fs.readFileSync(file, 'utf8');
  return text
    .split('\n')
    .slice(0, -1)
    .map((l) => JSON.parse(l) as Obj);
}

async function demo(now = Date.now()): Promise<{ base: string; manifest: DemoManifest; find: (name: string) => DemoManifest['sessions'][number] }> {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-demo-sim-'));
  const manifest = await generateHome(path.join(base, 'home'), { now, host: os.hostname(), livePid: process.pid, livePidStart: null, deadPid: 4_194_301 });
  const find = (name: string) => manifest.sessions.find((s) => s.name === name)!;
  return { base, manifest, find };
}

/** A clock starting at the manifest's `now` and running `rate` times faster than real time. */
function fastClock(now: number, rate: number): () => number {
  const t0 = Date.now();
  return () => now + (Date.now() - t0) * rate;
}

/** Everything the simulator left behind is whole: JSON parses, JSONL ends in complete lines, no temp files. */
function assertHomeIsWhole(base: string): void {
  for (const f of walk(base)) {
    const name = path.basename(f);
    assert.ok(!name.includes('.tmp'), `no temp file left: ${f}`);
    if (name.endsWith('.jsonl')) {
      const text = fs.readFileSync(f, 'utf8');
      assert.ok(text.endsWith('\n'), `no torn line left in ${f}`);
      for (const line of text.slice(0, -1).split('\n')) JSON.parse(line);
    } else if (name.endsWith('.json')) {
      const value = JSON.parse(fs.readFileSync(f, 'utf8')) as unknown;
      if (f.includes(`${path.sep}checkpoints${path.sep}`)) {
        const parsed = checkpointSchema.safeParse(value);
        assert.ok(parsed.success, `${f}: ${parsed.success ? '' : parsed.error.message}`);
      }
    }
  }
}

test('a fast clock streams model events, cuts the silent request for inactivity, and leaves whole files', async () => {
  const { base, manifest, find } = await demo();
  let sim: Simulator | null = null;
  try {
    const streaming = find(DEMO.streaming);
    const silent = find(DEMO.silent);
    const before = readCheckpoint(streaming.checkpoint!)!.request!.lastModelEventAt!;
    const initialTurn = readCheckpoint(streaming.checkpoint!)!.request!.turn;
    const silentStart = readCheckpoint(silent.checkpoint!)!.request!.startedAt;
    const elapsed = silent.expect.inactivityAt! - silentStart; // 18 min: started 14 min ago, silent for 11
    // 600× real time: the silent request's 4 minutes pass in about 0.4 s.
    sim = startSimulator(manifest.home, manifest, { clock: fastClock(manifest.now, 600), intervalMs: 10, splitRate: 0.5 });

    const advanced = await waitFor('model events on the streaming request', () => {
      const cp = readCheckpoint(streaming.checkpoint!);
      return cp?.request?.lastModelEventAt && cp.request.lastModelEventAt > before ? cp : null;
    });
    const req = advanced.request!;
    // Either the same request counted more model events, or it ended and a later turn streams.
    assert.ok(req.turn > initialTurn || req.modelEvents > 1_430, `model events counted (turn ${req.turn}, ${req.modelEvents} events)`);

    // The cut happens at the deadline the manifest predicted, so the incident's name is known.
    const incident = path.join(homePaths(manifest.home).incidents, 'request', `${silent.session}-${utcStamp(silent.expect.inactivityAt!)}-inactivity-1.json`);
    await waitFor('the inactivity incident', () => fs.existsSync(incident));
    const body = JSON.parse(fs.readFileSync(incident, 'utf8')) as Obj;
    assert.equal(body['class'], 'loop-request-inactivity-ceiling');
    assert.equal(body['limit'], 'inactivity');
    assert.equal(body['session'], silent.session);
    assert.equal(body['elapsed_ms'], elapsed);
    assert.equal(elapsed, 18 * MIN);

    const stopped = await waitFor('the silent root stopped for inactivity', () => {
      const cp = readCheckpoint(silent.checkpoint!);
      return cp?.lastStop?.limit === 'inactivity' ? cp : null;
    });
    assert.equal(stopped.lastStop!.at, silent.expect.inactivityAt);
    // Until the cut only keepalives arrived: the last model event never moved.
    const notice = await waitFor('the loop-request-incident message', () =>
      completeLines(silent.file!).find((e) => e['customType'] === 'loop-request-incident' && (e['details'] as Obj)['kind'] === 'inactivity'),
    );
    assert.equal((notice['details'] as Obj)['elapsedMs'], elapsed);
    const aborted = completeLines(silent.file!).find((e) => (e['message'] as Obj | undefined)?.['stopReason'] === 'aborted');
    assert.ok(aborted, 'the cut request is recorded as aborted');

    await sim.stop();
    assert.equal(sim.stats().activeTimers, 0);
    assert.equal(sim.stats().errors, 0, String(sim.stats().lastError));
    assert.ok(sim.stats().splitAppends > 0, 'some lines were written in two parts');
    assertHomeIsWhole(base);
  } finally {
    await sim?.stop();
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test('the 429 episode retries and succeeds, a stopped root is resumed on the ladder, lanes return and are dispatched', async () => {
  const { base, manifest, find } = await demo();
  let sim: Simulator | null = null;
  try {
    sim = startSimulator(manifest.home, manifest, { clock: fastClock(manifest.now, 600), intervalMs: 10 });
    const flaky = find(DEMO.retry);
    // Attempt 3 succeeds: an assistant reply after the two 429s, and the episode closes.
    await waitFor('a successful reply after the 429s', () =>
      completeLines(flaky.file!).some((e) => {
        const m = e['message'] as Obj | undefined;
        return m?.['role'] === 'assistant' && m['stopReason'] === 'toolUse' && (m['loopPiTiming'] as Obj | undefined)?.['attempts'] === 3;
      }),
    );
    assert.ok(sim.stats().retries >= 1);

    // night-run: resume 3 is due 4 min after its stop (ladder), logged in its state log.
    const nightLog = path.join(manifest.repoDir, 'codex', 'state-night-run-loop1.jsonl');
    const resume = await waitFor('resume 3 of night-run', () => completeLines(nightLog).find((l) => l['ev'] === 'resume' && l['step'] === 3));
    assert.ok(Date.parse(String(resume['ts'])) >= find(DEMO.ladder).expect.nextResume!.at - 1_000);

    // L3, dispatched before the start with no session yet (a placeholder), gets its pi: a status,
    // a checkpoint naming its run and a session file under the root's — and no second dispatch.
    const laneCheckpoints = homePaths(manifest.home).checkpoints;
    const l3 = await waitFor('the placeholder lane started', () =>
      fs
        .readdirSync(laneCheckpoints)
        .map((f) => readCheckpoint(path.join(laneCheckpoints, f)))
        .find((cp) => cp?.runId === DEMO_PLACEHOLDER_RUN),
    );
    assert.equal(l3.role, 'lane');
    assert.equal(l3.parentSession, find(DEMO.streaming).session);
    assert.ok(l3.sessionFile?.startsWith(find(DEMO.streaming).file!.slice(0, -'.jsonl'.length) + path.sep), l3.sessionFile ?? 'no session file');
    assert.ok(fs.existsSync(path.join(homePaths(manifest.home).laneRuns, DEMO_PLACEHOLDER_RUN, 'status.json')));
    // L1 returns; a new lane is dispatched with its own status and checkpoint.
    const apiLog = path.join(manifest.repoDir, 'codex', 'state-api-refactor-loop1.jsonl');
    const l1Run = readCheckpoint(find(DEMO.streamingLane).checkpoint!)!.runId;
    await waitFor('L1 returns', () => completeLines(apiLog).some((l) => l['ev'] === 'return' && l['run'] === l1Run));
    // (L3 was dispatched before the start and has no session yet: the next is L4.)
    const dispatch = await waitFor('a new lane is dispatched', () => completeLines(apiLog).find((l) => l['ev'] === 'dispatch' && l['lane'] === 'L4'));
    const status = await waitFor('the new lane status', () => {
      try {
        return JSON.parse(fs.readFileSync(path.join(homePaths(manifest.home).laneRuns, String(dispatch['run']), 'status.json'), 'utf8')) as Obj;
      } catch {
        return null;
      }
    });
    assert.equal(status['runId'], dispatch['run']);
    assert.equal(status['sessionId'], find(DEMO.streaming).file);

    await sim.stop();
    assert.equal(sim.stats().errors, 0, String(sim.stats().lastError));
    assertHomeIsWhole(base);
    // Every line written (the simulator stopped): L3 was dispatched once, before the start.
    assert.equal(completeLines(apiLog).filter((l) => l['ev'] === 'dispatch' && l['run'] === DEMO_PLACEHOLDER_RUN).length, 1, 'L3 dispatched once');
    // The fresh root's first reply made pi write its session file.
    const freshFile = readCheckpoint(find(DEMO.fresh).checkpoint!)!.sessionFile!;
    assert.ok(fs.existsSync(freshFile));
    assert.equal(completeLines(freshFile)[0]!['id'], find(DEMO.fresh).session);
  } finally {
    await sim?.stop();
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test('speed brings the silent request’s cut closer, with times that stay consistent', async () => {
  const { base, manifest, find } = await demo();
  let sim: Simulator | null = null;
  try {
    const silent = find(DEMO.silent);
    const clock = fastClock(manifest.now, 60);
    const started = clock();
    // At 60× the 4 minutes left would take 4 s; speed 8 makes it 30 s of clock time (0.5 s).
    sim = startSimulator(manifest.home, manifest, { clock, intervalMs: 10, speed: 8 });
    // Once ready, the silent request is already moved (what the demo's first frame shows): its
    // ~4 min left are ~30 s, so its deadline is at least 3 min before the generated one.
    await sim.ready();
    const moved = readCheckpoint(silent.checkpoint!);
    const movedDeadline = moved!.request!.lastModelEventAt! + 15 * MIN;
    assert.ok(movedDeadline <= silent.expect.inactivityAt! - 3 * MIN, `ready: deadline ${silent.expect.inactivityAt! - movedDeadline} ms before the generated one`);
    const cp = await waitFor('the compressed cut', () => {
      const c = readCheckpoint(silent.checkpoint!);
      return c?.lastStop?.limit === 'inactivity' ? c : null;
    }, 3_000);
    const cutAt = cp.lastStop!.at;
    assert.ok(cutAt >= started, 'the cut is not in the past');
    assert.ok(cutAt <= silent.expect.inactivityAt! - 2 * MIN, `cut ${cutAt - started} ms after the start, well before the uncompressed deadline`);
    // The story is unchanged: the request still ran 18 min, the last 15 of them silent.
    const incident = path.join(homePaths(manifest.home).incidents, 'request', `${silent.session}-${utcStamp(cutAt)}-inactivity-1.json`);
    const body = await waitFor('the incident', () => fs.existsSync(incident) && (JSON.parse(fs.readFileSync(incident, 'utf8')) as Obj));
    assert.equal(body['elapsed_ms'], 18 * MIN);
    await sim.stop();
  } finally {
    await sim?.stop();
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test('after stop() no timer remains: a process running the simulator exits by itself', () => {
  const generate = new URL('../src/demo/generate.js', import.meta.url).href;
  const simulator = new URL('../src/demo/simulator.js', import.meta.url).href;
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-demo-exit-'));
  try {
    const script = `
      import { generateHome } from ${JSON.stringify(generate)};
      import { startSimulator } from ${JSON.stringify(simulator)};
      const now = Date.now();
      const manifest = await generateHome(${JSON.stringify(path.join(base, 'home'))}, { now, livePid: process.pid, livePidStart: null, deadPid: 4194301 });
      const t0 = Date.now();
      const sim = startSimulator(manifest.home, manifest, { clock: () => now + (Date.now() - t0) * 600, intervalMs: 5, splitRate: 1 });
      while (sim.stats().appends < 20) await new Promise((r) => setTimeout(r, 5));
      await sim.stop();
      process.stdout.write(JSON.stringify(sim.stats()));
      // No process.exit(): the process must end on its own.
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.signal, null, `the process ended by itself (stderr: ${r.stderr})`);
    assert.equal(r.status, 0, r.stderr);
    const stats = JSON.parse(r.stdout) as { activeTimers: number; appends: number; errors: number };
    assert.equal(stats.activeTimers, 0);
    assert.ok(stats.appends >= 20);
    assert.equal(stats.errors, 0);
    assertHomeIsWhole(base);
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test("the demo's live sessions answer owner actions as the extension would; a lost one does not", async () => {
  const { base, manifest, find } = await demo();
  let sim: Simulator | null = null;
  try {
    // Real time: a control request expires 30 s after it is made, by the wall clock.
    sim = startSimulator(manifest.home, manifest, { clock: fastClock(manifest.now, 1), intervalMs: 20, speed: 10 });
    const home = manifest.home;
    const paths = homePaths(home);
    const long = find(DEMO.longThink);
    await waitFor('the long request answering its control directory', () => fs.existsSync(path.join(paths.control, long.session)));
    const seen = readCheckpoint(long.checkpoint!)!.request!;
    const abort = await requestAction(home, { session: long.session, action: 'abort', reason: 'demo test', target: { turn: seen.turn, startedAt: seen.startedAt } }, { now: Date.now });
    const aborted = await followAction(abort, { timeoutMs: 5_000 });
    assert.equal(aborted.status, 'applied', aborted.message);
    assert.match(aborted.message, new RegExp(`aborted turn ${seen.turn} after (\\d+:)?\\d+:\\d\\d; the session is held until armed`));
    const cp = await waitFor('the held checkpoint', () => {
      const c = readCheckpoint(long.checkpoint!);
      return c?.ownerAbort?.requestId === abort.id ? c : null;
    });
    assert.equal(cp.state, 'stopped');
    assert.equal(cp.request, null);
    assert.equal(cp.lastStop?.limit, 'owner');
    assert.equal(cp.recovery, null, 'an owner abort is never resumed');
    assert.ok(cp.held, 'held until armed');
    const lines = await waitFor('the abort in the session file', () => {
      const l = completeLines(long.file!);
      return l.some((e) => e['customType'] === 'loop-dash-control') ? l : null;
    });
    assert.ok(lines.some((e) => (e['message'] as Obj | undefined)?.['stopReason'] === 'aborted'), 'pi records the cut request as aborted');
    assert.equal((lines.filter((e) => e['customType'] === 'loop-dash-control').pop()!['data'] as Obj)['held'], true);
    const journal = fs.readFileSync(paths.journal, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Obj);
    assert.ok(journal.some((e) => e['id'] === abort.id && e['kind'] === 'outcome' && e['status'] === 'applied'), 'the outcome is journalled');

    // A target that is not the request in flight cuts nothing.
    const streaming = find(DEMO.streaming);
    const stale = await requestAction(home, { session: streaming.session, action: 'abort', reason: 'demo test', target: { turn: 999, startedAt: 1 } }, { now: Date.now });
    assert.equal((await followAction(stale, { timeoutMs: 5_000 })).status, 'stale-target');

    // Arm releases the hold, and the loop gives the root its next turn.
    const arm = await requestAction(home, { session: long.session, action: 'arm', reason: 'demo test' }, { now: Date.now });
    assert.equal((await followAction(arm, { timeoutMs: 5_000 })).status, 'applied');
    const again = await waitFor('the armed root requesting again', () => {
      const c = readCheckpoint(long.checkpoint!);
      return c?.state === 'requesting' && c.held === null && c.request!.turn > seen.turn ? c : null;
    });
    assert.equal(again.ownerAbort, null);

    // The crashed root's process is gone: nothing answers for it.
    const crashed = find(DEMO.crashed);
    const nobody = await requestAction(home, { session: crashed.session, action: 'disarm', reason: 'demo test' }, { now: Date.now });
    assert.equal((await followAction(nobody, { timeoutMs: 1_500 })).status, 'no-answer');

    await sim.stop();
    assert.equal(sim.stats().errors, 0, String(sim.stats().lastError));
    assertHomeIsWhole(base);
  } finally {
    await sim?.stop();
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test('a checkpoint waiting for a retry is rewritten at least every 15 s, so it is never marked stale', async () => {
  const { base, manifest, find } = await demo();
  let sim: Simulator | null = null;
  try {
    const clock = fastClock(manifest.now, 60);
    sim = startSimulator(manifest.home, manifest, { clock, intervalMs: 10 });
    const flaky = find(DEMO.retry);
    let samples = 0;
    let oldest = 0;
    // The 429's wait (≥ 60 s of clock time) takes ~1–1.5 s here.
    await waitFor('the retry made', () => {
      const cp = readCheckpoint(flaky.checkpoint!);
      if (cp?.state !== 'retry-wait') return samples > 0;
      samples += 1;
      oldest = Math.max(oldest, clock() - cp.updatedAt);
      return false;
    }, 10_000);
    assert.ok(samples >= 20, `the retry wait was sampled (${samples} times)`);
    assert.ok(oldest <= CHECKPOINT_STALE_MS, `never older than the stale limit: ${oldest} ms`);
    await sim.stop();
    assert.equal(sim.stats().errors, 0, String(sim.stats().lastError));
  } finally {
    await sim?.stop();
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test('an idle, held or stopped session’s checkpoint is rewritten every 30 s, so it is never marked stale (75 s)', async () => {
  const { base, manifest, find } = await demo();
  let sim: Simulator | null = null;
  try {
    const clock = fastClock(manifest.now, 120);
    sim = startSimulator(manifest.home, manifest, { clock, intervalMs: 10 });
    const quiet = [find(DEMO.held), find(DEMO.waiting), find(DEMO.quota)];
    const started = clock();
    let oldest = 0;
    // Four minutes of clock time (~2 s here): several refreshes each.
    await waitFor('four minutes of clock time', () => {
      for (const s of quiet) {
        const cp = readCheckpoint(s.checkpoint!);
        if (cp && cp.state !== 'ended') oldest = Math.max(oldest, clock() - cp.updatedAt);
      }
      return clock() - started >= 4 * MIN;
    }, 10_000);
    assert.ok(oldest <= IDLE_CHECKPOINT_STALE_MS, `never older than the stale limit: ${oldest} ms`);
    assert.ok(oldest > 0);
    await sim.stop();
    assert.equal(sim.stats().errors, 0, String(sim.stats().lastError));
  } finally {
    await sim?.stop();
    fs.rmSync(base, { recursive: true, force: true });
  }
});
