/**
 * The loop-dash extension against a real pi process (SPEC §7): pi 1.6 in RPC mode, offline, in a
 * temporary pi home, answering from a scripted provider (test/fixtures/pi/scripted-provider.ts).
 * Node 22 (which pi needs) is installed into a cache outside the repository when missing.
 *
 * Keepalives: pi exposes no transport keepalive to extensions, so the scripted provider emits the
 * two kinds of non-model activity an extension can see — a raw provider event `{type: "ping"}`
 * (through `onProviderStreamEvent`, as pi's Anthropic transport reports SSE pings) and an empty
 * text delta — on alternate ticks; the extension counts both as keepalives.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkpointSchema, type Checkpoint } from '../src/contract/checkpoint.js';
import { CONTROL_TTL_MS, controlAckSchema, type ControlAck, type ControlRequest } from '../src/contract/control.js';
import { aliveSocketPath, homePaths } from '../src/contract/paths.js';
import { buildControlRequest, submitControlRequest } from '../src/control/index.js';
import { installExtension } from '../src/cli/install-extension.js';
import { clockInputFromCheckpoint, computeClocks } from '../src/model/clocks.js';
import { judgeLiveness } from '../src/model/liveness.js';
import { probeProcess } from '../src/readers/process-probe.js';
import { ensureNode22 } from './support/node22.js';
import { canConnect } from './support/socket.js';
import { PiProcess, piVersion, runPiPrint, waitUntil, type PiRecord } from './support/pi-harness.js';

const here = path.dirname(fileURLToPath(import.meta.url));

const EXTENSION = path.resolve(here, '../src/extension/index.js');
const PROVIDER = path.resolve(here, 'fixtures/pi/scripted-provider.js');
const AUTO_TURNS = path.resolve(here, 'fixtures/pi/auto-turns.js');
const MODEL = 'scripted/scripted-1';
const INACTIVITY_MS = 60_000;

let node = '';
const roots: string[] = [];

before(async () => {
  node = await ensureNode22();
});

after(() => {
  for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
});

function makeHome(settings: Record<string, unknown>): { home: string; cwd: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-pi-e2e-'));
  roots.push(root);
  const home = path.join(root, 'pi-home');
  const cwd = path.join(root, 'project');
  fs.mkdirSync(home, { recursive: true });
  fs.mkdirSync(cwd, { recursive: true });
  fs.writeFileSync(path.join(home, 'settings.json'), JSON.stringify(settings, null, 2));
  return { home, cwd };
}

function readCheckpoint(home: string, session: string): Checkpoint | null {
  let text: string;
  try {
    text = fs.readFileSync(path.join(homePaths(home).checkpoints, `${session}.json`), 'utf8');
  } catch {
    return null;
  }
  const parsed = checkpointSchema.safeParse(JSON.parse(text));
  assert.ok(parsed.success, `the checkpoint matches the contract: ${parsed.success ? '' : parsed.error.message}`);
  return parsed.data;
}

function checkpointWhen(home: string, session: string, what: string, pred: (cp: Checkpoint) => boolean, timeoutMs = 10_000): Promise<Checkpoint> {
  return waitUntil(what, () => {
    const cp = readCheckpoint(home, session);
    return cp && pred(cp) ? cp : undefined;
  }, timeoutMs);
}

function readAck(home: string, session: string, id: string): ControlAck | null {
  try {
    const text = fs.readFileSync(path.join(homePaths(home).control, session, `${id}.ack.json`), 'utf8');
    const parsed = controlAckSchema.safeParse(JSON.parse(text));
    assert.ok(parsed.success, 'the ack matches the contract');
    return parsed.data;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Sends a control request with the dashboard's writer (maildir pattern) and waits for its ack. */
async function control(home: string, session: string, action: ControlRequest['action'], target?: { turn: number; startedAt: number } | null): Promise<ControlAck> {
  const now = Date.now();
  const request = buildControlRequest({ session, action, reason: `e2e ${action}`, now, ...(action === 'abort' ? { target: target ?? null } : {}) });
  await submitControlRequest(home, request, { now });
  return waitUntil(`the ack of ${action} ${request.id}`, () => readAck(home, session, request.id), 10_000);
}

/** Writes an already expired request the way a slow dashboard would have (temp dot file + rename). */
function writeExpired(home: string, session: string, action: ControlRequest['action']): string {
  const requestedAt = Date.now() - CONTROL_TTL_MS - 5_000;
  const id = `e2e-expired-${Date.now().toString(36)}`;
  const request: ControlRequest = {
    v: 1,
    id,
    session,
    action,
    reason: 'written too late',
    requestedAt,
    expiresAt: requestedAt + CONTROL_TTL_MS,
    by: { user: 'e2e', host: os.hostname(), pid: process.pid, tool: 'e2e' },
  };
  const dir = path.join(homePaths(home).control, session);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = path.join(dir, `.${id}.json.tmp-${process.pid}-0`);
  fs.writeFileSync(tmp, JSON.stringify(request), { mode: 0o600 });
  fs.renameSync(tmp, path.join(dir, `${id}.json`));
  return id;
}

function sessionEntries(file: string): Array<Record<string, any>> {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, any>);
}

function userText(record: PiRecord): string {
  const message = record.message as { role?: string; content?: unknown } | undefined;
  if (message?.role !== 'user') return '';
  const c = message.content;
  if (typeof c === 'string') return c;
  return Array.isArray(c) ? c.map((b: { text?: string }) => b.text ?? '').join('') : '';
}

test(`the extension in a real pi ${piVersion()}: checkpoints, keepalives, abort, stale and expired requests, disarm and arm`, { timeout: 150_000 }, async (t) => {
  const { home, cwd } = makeHome({
    loopPi: { requestCeiling: { inactivityMs: INACTIVITY_MS } },
    retry: { baseDelayMs: 200 },
  });
  const pi = await PiProcess.start({ node, home, cwd, extensions: [PROVIDER, AUTO_TURNS, EXTENSION], model: MODEL });
  try {
    const state = (await pi.request({ type: 'get_state' })).data as { sessionId: string; sessionFile: string };
    const session = state.sessionId;

    await t.test('session start writes an idle checkpoint naming this process', async () => {
      const cp = await checkpointWhen(home, session, 'the first checkpoint', () => true);
      assert.equal(cp.state, 'idle');
      assert.equal(cp.pid, pi.pid);
      assert.equal(cp.host, os.hostname());
      if (process.platform === 'linux') {
        const stat = fs.readFileSync(`/proc/${pi.pid}/stat`, 'utf8');
        assert.equal(cp.pidStart, stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19], 'pidStart is field 22 of /proc/<pid>/stat');
      }
      assert.equal(cp.role, 'root');
      assert.equal(cp.model, MODEL);
      assert.equal(cp.limits?.inactivityMs, INACTIVITY_MS, "limits come from the home's settings.json");
      assert.equal(cp.limits?.absoluteMs, 75 * 60_000, 'a missing setting falls back to its default');
      // docs/CONTRACT.md §5: the process listens on its liveness socket while the session runs.
      const sock = aliveSocketPath(home, cp.host, cp.pid, cp.pidStart);
      assert.ok(sock, 'the home is short enough for a socket address');
      assert.ok(fs.lstatSync(sock).isSocket(), `a socket at ${sock}`);
      assert.equal(await canConnect(sock), true, 'a dashboard can link to it');
    });

    let streamed: Checkpoint;
    await t.test('a request streaming a delta every 200 ms shows requesting with lastModelEventAt advancing', async () => {
      const since = pi.cursor;
      await pi.prompt('[[stream count=15 every=200]] stream please');
      const first = await checkpointWhen(home, session, 'model events in the checkpoint', (cp) => cp.state === 'requesting' && (cp.request?.modelEvents ?? 0) >= 2);
      const t1 = first.request!.lastModelEventAt!;
      const later = await checkpointWhen(home, session, 'lastModelEventAt to advance', (cp) => (cp.request?.lastModelEventAt ?? 0) > t1);
      assert.equal(later.state, 'requesting');
      assert.equal(later.request!.turn, first.request!.turn, 'the same request');
      assert.ok(later.request!.modelEvents > first.request!.modelEvents);
      assert.ok(later.updatedAt - first.updatedAt >= 900, 'model-event writes are at most one a second');
      streamed = later;
      await pi.waitFor((r) => r.type === 'agent_settled', 15_000, 'the streamed request to settle', since);
      const done = await checkpointWhen(home, session, 'the idle checkpoint after the request', (cp) => cp.state === 'idle' && cp.request === null);
      assert.equal((done as any).lastRequest.stopReason, 'stop');
    });

    let silent: Checkpoint;
    await t.test('a silent request: the inactivity countdown runs down while keepalives are counted', async () => {
      await pi.prompt('[[silent every=200 max=60000]] go quiet');
      const a = await checkpointWhen(home, session, 'keepalives in the checkpoint', (cp) => cp.state === 'requesting' && cp.request!.turn > streamed.request!.turn && cp.request!.keepalives >= 3);
      const b = await checkpointWhen(home, session, 'more keepalives a second later', (cp) => cp.request!.keepalives >= a.request!.keepalives + 4 && cp.updatedAt >= a.updatedAt + 1000);
      assert.equal(b.request!.turn, a.request!.turn);
      assert.equal(b.request!.modelEvents, a.request!.modelEvents, 'keepalives are not model events');
      assert.equal(b.request!.lastModelEventAt, a.request!.lastModelEventAt, 'keepalives do not move the inactivity clock');
      assert.ok(b.request!.lastTransportEventAt! > a.request!.lastModelEventAt!, 'transport activity is recorded');
      const clocksA = computeClocks(clockInputFromCheckpoint(a, a.limits!, { resumeExpected: false }), a.updatedAt);
      const clocksB = computeClocks(clockInputFromCheckpoint(b, b.limits!, { resumeExpected: false }), b.updatedAt);
      assert.equal(clocksA.inactivity!.at, clocksB.inactivity!.at, 'the inactivity deadline stays put');
      assert.ok(clocksB.inactivity!.remainingMs <= clocksA.inactivity!.remainingMs - 1000, 'and its remaining time runs down');
      assert.ok(clocksB.inactivity!.remainingMs < INACTIVITY_MS);
      assert.equal(clocksB.firstToFire, 'inactivity');
      silent = b;
    });

    await t.test('D4 (real pi): an abort aimed at an older request is refused as stale-target and the request runs on', async () => {
      const ack = await control(home, session, 'abort', { turn: streamed.request!.turn, startedAt: streamed.request!.startedAt });
      assert.equal(ack.status, 'stale-target');
      const after = await checkpointWhen(home, session, 'the request to keep running', (cp) => cp.request !== null && cp.request.keepalives > silent.request!.keepalives + 2);
      assert.equal(after.state, 'requesting');
      assert.equal(after.request!.turn, silent.request!.turn);
      assert.equal(after.held, null);
      assert.equal(after.ownerAbort, null);
    });

    await t.test('D6 (real pi): an expired request is refused as expired and does nothing', async () => {
      const id = writeExpired(home, session, 'disarm');
      const ack = await waitUntil('the ack of the expired request', () => readAck(home, session, id));
      assert.equal(ack.status, 'expired');
      const cp = readCheckpoint(home, session)!;
      assert.equal(cp.held, null, 'an expired disarm does not hold');
      assert.equal(cp.state, 'requesting');
    });

    await t.test('an abort of the request in flight cuts it: aborted in the session file, applied, ownerAbort and held', async () => {
      const since = pi.cursor;
      const inFlight = readCheckpoint(home, session)!.request!;
      const ack = await control(home, session, 'abort', { turn: inFlight.turn, startedAt: inFlight.startedAt });
      assert.equal(ack.status, 'applied', ack.detail);
      const end = await pi.waitFor((r) => r.type === 'message_end' && (r.message as PiRecord).role === 'assistant', 10_000, 'the aborted message', since);
      assert.equal((end.message as { stopReason: string }).stopReason, 'aborted');
      await pi.waitFor((r) => r.type === 'agent_settled', 10_000, 'settling after the abort', since);
      const cp = await checkpointWhen(home, session, 'the stopped checkpoint', (c) => c.state === 'stopped');
      assert.equal(cp.ownerAbort?.requestId, ack.id);
      assert.ok(cp.held, 'an owner abort holds the session');
      assert.equal((cp.held as any).action, 'abort');
      assert.equal(cp.lastStop?.reason, 'aborted');
      assert.equal(cp.lastStop?.limit, 'owner');
      assert.equal(cp.recovery, null, 'an owner abort is never resumed');
      const aborted = await waitUntil('the aborted assistant entry in the session file', () =>
        sessionEntries(state.sessionFile).find((e) => e.type === 'message' && e.message?.role === 'assistant' && e.message?.stopReason === 'aborted'),
      );
      assert.match(String(aborted.message.content?.[0]?.text ?? ''), /thinking it over/);
      const journal = fs.readFileSync(homePaths(home).journal, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      const outcome = journal.find((j) => j.id === ack.id && j.kind === 'outcome' && j.source === 'extension');
      assert.equal(outcome?.status, 'applied', 'the extension journals its outcome');
    });

    await t.test('arm with nothing held but the abort releases nothing: no turn starts', async () => {
      const since = pi.cursor;
      const ack = await control(home, session, 'arm');
      assert.equal(ack.status, 'applied');
      assert.match(ack.detail, /nothing had been held/);
      const cp = await checkpointWhen(home, session, 'the hold cleared', (c) => c.held === null);
      assert.equal(cp.ownerAbort, null);
      // arm answered after it released (nothing): a turn it started would have begun before the ack.
      assert.equal(pi.recordsOf('turn_start', since).length, 0);
    });

    await t.test('a disarmed root holds an automatic continuation and an automatic message; arm releases exactly those', async () => {
      const disarm = await control(home, session, 'disarm');
      assert.equal(disarm.status, 'applied');
      await checkpointWhen(home, session, 'the disarmed checkpoint', (c) => c.held !== null);

      // An automatic user message (a loop wake): held, not run.
      let since = pi.cursor;
      const wake = await pi.prompt('/fixture-wake automatic wake: check the lanes');
      assert.equal((wake.data as { disposition: string }).disposition, 'handled');
      await checkpointWhen(home, session, 'one held turn start', (c) => c.held?.heldTurnStarts === 1);
      assert.equal(pi.recordsOf('turn_start', since).length, 0, 'the automatic message started no turn');

      // The owner's own prompt runs; the continuation requested at agent_before_settle is vetoed.
      await pi.prompt('/fixture-nudge-next');
      since = pi.cursor;
      await pi.prompt('owner question');
      await pi.waitFor((r) => r.type === 'agent_settled', 10_000, 'the owner turn to settle', since);
      assert.equal(pi.recordsOf('turn_start', since).length, 1, 'only the owner turn ran: the continuation was held');
      const held = await checkpointWhen(home, session, 'two held turn starts', (c) => c.held?.heldTurnStarts === 2);
      assert.equal(held.state, 'idle');
      const entries = sessionEntries(state.sessionFile).filter((e) => e.type === 'custom' && e.customType === 'loop-dash-control');
      const last = entries[entries.length - 1]!;
      assert.equal(last.data.held, true);
      assert.deepEqual(last.data.heldMessages, ['automatic wake: check the lanes']);
      assert.equal(last.data.heldContinuations, 1);
      assert.ok(sessionEntries(state.sessionFile).some((e) => e.type === 'custom_message' && e.customType === 'fixture-nudge'), "the nudge's own entry is kept in the session");

      // arm: the held turn starts are released as one message, which starts exactly one turn.
      since = pi.cursor;
      const arm = await control(home, session, 'arm');
      assert.equal(arm.status, 'applied');
      assert.match(arm.detail, /released 2 held turn start/);
      await pi.waitFor((r) => r.type === 'agent_settled', 10_000, 'the released turn to settle', since);
      const turns = pi.recordsOf('turn_start', since);
      assert.equal(turns.length, 1, 'exactly one turn for what was held');
      const users = pi.recordsOf('message_start', since).filter((r) => (r.message as PiRecord).role === 'user');
      assert.equal(users.length, 1);
      assert.equal(userText(users[0]!), 'automatic wake: check the lanes');
      const cp = await checkpointWhen(home, session, 'the armed idle checkpoint', (c) => c.held === null && c.state === 'idle');
      assert.equal(cp.ownerAbort, null);
      const after = sessionEntries(state.sessionFile).filter((e) => e.type === 'custom' && e.customType === 'loop-dash-control');
      assert.equal(after[after.length - 1]!.data.held, false, 'the release is persisted');
    });

    await t.test('shutdown marks the checkpoint ended and pi exits promptly (no timer or watcher left running)', async () => {
      const { code, ms } = await pi.close();
      assert.equal(code, 0);
      assert.ok(ms < 5_000, `pi exited ${ms} ms after stdin closed`);
      const cp = readCheckpoint(home, session)!;
      assert.equal(cp.state, 'ended');
      assert.equal(cp.request, null);
      assert.equal(fs.existsSync(homePaths(home).extensionLog) ? /failed/.test(fs.readFileSync(homePaths(home).extensionLog, 'utf8')) : false, false, 'no handler failed');
      assert.deepEqual(fs.readdirSync(homePaths(home).alive), [], 'the liveness socket is removed at shutdown');
    });
  } finally {
    pi.kill('SIGKILL');
  }
});

test("loop-pi's follow-up after a ceiling abort: its turn is not counted as the root's resume", { timeout: 60_000 }, async () => {
  const { home, cwd } = makeHome({ retry: { baseDelayMs: 200 } });
  const pi = await PiProcess.start({ node, home, cwd, extensions: [PROVIDER, AUTO_TURNS, EXTENSION], model: MODEL });
  try {
    const session = ((await pi.request({ type: 'get_state' })).data as { sessionId: string }).sessionId;
    await checkpointWhen(home, session, 'the first checkpoint', () => true);
    await pi.prompt('/fixture-cut-next [[silent every=100 max=3000]] follow-up after the cut');
    const since = pi.cursor;
    await pi.prompt('[[stream count=50 every=100]] a request the ceiling cuts');
    // The cut root stops (a resume expected: recovery.resumes 0) and the follow-up message starts
    // the next run at once; its request is in flight for ~3 s.
    const follow = await checkpointWhen(home, session, 'the follow-up request in flight', (c) => c.state === 'requesting' && (c.request?.turn ?? 0) === 2);
    assert.equal(follow.lastStop?.reason, 'aborted', 'after the cut');
    assert.ok(follow.recovery !== null, 'the stop is still on record');
    assert.equal(follow.recovery.resumes, 0, 'the follow-up is not resume 1');
    const messages = pi.recordsOf('message_end', since).map((r) => r.message as PiRecord);
    assert.ok(messages.some((m) => m.role === 'custom' && m.customType === 'loop-request-incident'), 'pi ran the follow-up message');
    await checkpointWhen(home, session, 'the follow-up answered', (c) => c.state === 'idle' && c.recovery === null, 15_000);
  } finally {
    pi.kill('SIGKILL');
  }
});

test("a disarmed root is not restarted by an extension's message either (loop-pi's follow-up): the run is cut at its start, its text held, and arm releases it", { timeout: 60_000 }, async () => {
  const { home, cwd } = makeHome({ retry: { baseDelayMs: 200 } });
  const pi = await PiProcess.start({ node, home, cwd, extensions: [PROVIDER, AUTO_TURNS, EXTENSION], model: MODEL });
  try {
    const session = ((await pi.request({ type: 'get_state' })).data as { sessionId: string }).sessionId;
    await checkpointWhen(home, session, 'the first checkpoint', () => true);
    assert.equal((await control(home, session, 'disarm')).status, 'applied');
    await checkpointWhen(home, session, 'held', (c) => c.held !== null);
    await pi.prompt('/fixture-cut-next [[stream count=5 every=50]] the follow-up after the cut');
    const since = pi.cursor;
    await pi.prompt('[[stream count=50 every=100]] a request the ceiling cuts');
    // The cut, then the follow-up message: held, its run cut before any request streams.
    const held = await checkpointWhen(home, session, 'the follow-up held', (c) => c.held?.heldTurnStarts === 1, 15_000);
    await pi.waitFor((r) => r.type === 'agent_settled' && pi.recordsOf('agent_settled', since).length >= 2, 10_000, 'the held run to settle', since);
    const answers = pi.recordsOf('message_end', since).map((r) => r.message as PiRecord).filter((m) => m.role === 'assistant');
    assert.ok(answers.every((m) => m.stopReason === 'aborted'), `no request answered while held: ${JSON.stringify(answers.map((m) => m.stopReason))}`);
    assert.ok(held.held);
    const entries = sessionEntries(((await pi.request({ type: 'get_state' })).data as { sessionFile: string }).sessionFile).filter((e) => e.type === 'custom' && e.customType === 'loop-dash-control');
    assert.deepEqual(entries.at(-1)!.data.heldMessages, ['[[stream count=5 every=50]] the follow-up after the cut'], 'its text is kept with the hold');

    // arm: released as one turn, which answers.
    const armSince = pi.cursor;
    assert.equal((await control(home, session, 'arm')).status, 'applied');
    await pi.waitFor((r) => r.type === 'agent_settled', 15_000, 'the released turn to settle', armSince);
    const released = pi.recordsOf('message_end', armSince).map((r) => r.message as PiRecord).filter((m) => m.role === 'assistant');
    assert.deepEqual(released.map((m) => m.stopReason), ['stop'], 'exactly one turn, answered');
  } finally {
    pi.kill('SIGKILL');
  }
});

test('an owner abort stops the tools that run (no request follows them), and cancels the retry pi makes of a 429 that says "usage limit"', { timeout: 90_000 }, async () => {
  const { home, cwd } = makeHome({ retry: { baseDelayMs: 4_000 } });
  const pi = await PiProcess.start({ node, home, cwd, extensions: [PROVIDER, EXTENSION], model: MODEL });
  try {
    const session = ((await pi.request({ type: 'get_state' })).data as { sessionId: string }).sessionId;
    await checkpointWhen(home, session, 'the first checkpoint', () => true);

    // Two rounds of a 20 s tool: the abort aimed at the request that asked for the first ends the run.
    let since = pi.cursor;
    await pi.prompt('[[tool sec=20 rounds=2]] run tools');
    const tools = await checkpointWhen(home, session, 'the tools running', (c) => c.state === 'tools');
    assert.equal(tools.request, null, 'no request in flight while tools run');
    const asked = (tools as Checkpoint & { lastRequest: { turn: number; startedAt: number } }).lastRequest;
    const ack = await control(home, session, 'abort', { turn: asked.turn, startedAt: asked.startedAt });
    assert.equal(ack.status, 'applied', ack.detail);
    assert.match(ack.detail, new RegExp(`stopped the tools of turn ${asked.turn}`));
    // Within 10 s, well before the 20 s sleep would end.
    await pi.waitFor((r) => r.type === 'agent_settled', 10_000, 'the run to end after the abort', since);
    // pi opens the next turn with its run already aborted: that request ends at once, aborted, and nothing follows.
    const answers = pi.recordsOf('message_end', since).map((r) => r.message as PiRecord).filter((m) => m.role === 'assistant');
    assert.deepEqual(answers.map((m) => m.stopReason), ['toolUse', 'aborted'], 'no request ran after the stopped tools');
    const toolEnd = pi.recordsOf('tool_execution_end', since);
    assert.equal(toolEnd.length, 1);
    assert.match(JSON.stringify(toolEnd[0]!.result), /aborted/, 'the tool itself was cut');
    const held = await checkpointWhen(home, session, 'held, not running tools', (c) => c.held !== null && c.state !== 'tools');
    assert.equal((held.held as { action?: string }).action, 'abort');
    assert.equal((await control(home, session, 'arm')).status, 'applied');

    // A 429 pi retries (after 4 s): predicted as a retry wait, and the abort cancels that retry.
    since = pi.cursor;
    await pi.prompt('[[ratelimit times=3]] a per-minute limit');
    const wait = await checkpointWhen(home, session, 'the retry wait', (c) => c.state === 'retry-wait');
    assert.equal(wait.episode?.lastErrorClass, 'rate-limit');
    const cancel = await control(home, session, 'abort', null);
    assert.equal(cancel.status, 'applied', cancel.detail);
    assert.match(cancel.detail, /cancelled pi's pending retry/);
    await pi.waitFor((r) => r.type === 'agent_settled', 10_000, 'the run to end after the cancelled retry', since);
    assert.equal(pi.recordsOf('turn_start', since).length, 1, 'pi made no retry');
  } finally {
    pi.kill('SIGKILL');
  }
});

test('installed with install-extension: pi auto-discovers it after -e extensions; kill -9 leaves the checkpoint not ended with its pid gone', { timeout: 90_000 }, async () => {
  const { home, cwd } = makeHome({ retry: { baseDelayMs: 200 } });
  const installed = installExtension(home, { entry: EXTENSION });
  assert.ok(installed.ok, installed.ok ? '' : installed.error);
  const pi = await PiProcess.start({ node, home, cwd, extensions: [PROVIDER, AUTO_TURNS], model: MODEL, noDiscovery: false, extraArgs: ['--no-mcp'] });
  try {
    const session = ((await pi.request({ type: 'get_state' })).data as { sessionId: string }).sessionId;
    await checkpointWhen(home, session, 'a checkpoint from the auto-discovered extension', () => true);

    // Load order: the discovered extension's veto overrides the -e fixture's continuation.
    assert.equal((await control(home, session, 'disarm')).status, 'applied');
    await pi.prompt('/fixture-nudge-next');
    let since = pi.cursor;
    await pi.prompt('owner question');
    await pi.waitFor((r) => r.type === 'agent_settled', 10_000, 'the owner turn to settle', since);
    assert.equal(pi.recordsOf('turn_start', since).length, 1, 'the continuation was held');
    since = pi.cursor;
    assert.equal((await control(home, session, 'arm')).status, 'applied');
    await pi.waitFor((r) => r.type === 'agent_settled', 10_000, 'the released continuation to settle', since);
    assert.equal(pi.recordsOf('turn_start', since).length, 1, 'arm released the held continuation as one turn');

    since = pi.cursor;
    await pi.prompt('[[stream count=100 every=200]] long');
    const live = await checkpointWhen(home, session, 'the request in flight', (c) => c.state === 'requesting' && c.request !== null && c.request.modelEvents > 0);
    pi.kill('SIGKILL');
    const exit = await pi.waitExit();
    assert.equal(exit.signal, 'SIGKILL');
    const cp = readCheckpoint(home, session)!;
    assert.notEqual(cp.state, 'ended', 'nobody marked it ended');
    assert.equal(cp.pid, live.pid);
    assert.throws(() => process.kill(cp.pid, 0), (err: NodeJS.ErrnoException) => err.code === 'ESRCH', 'its pid is gone');
    const sock = aliveSocketPath(home, cp.host, cp.pid, cp.pidStart)!;
    assert.equal(await canConnect(sock), false, 'its liveness socket refuses: the kernel closed it with the process');
    const now = Date.now();
    assert.equal(judgeLiveness(cp, probeProcess(cp.pid, now), os.hostname(), now).status, 'gone');
  } finally {
    pi.kill('SIGKILL');
  }
});

test('pi -p exits by itself with the extension loaded, leaving the checkpoint ended', { timeout: 60_000 }, async () => {
  const { home, cwd } = makeHome({});
  const r = await runPiPrint({ node, home, cwd, extensions: [PROVIDER, EXTENSION], model: MODEL }, '[[stream count=3 every=50]] print mode', 30_000);
  assert.equal(r.code, 0, `pi -p exited with ${r.code}; stderr: ${r.stderr.slice(-1000)}`);
  assert.match(r.stdout, /tok2/);
  const files = fs.readdirSync(homePaths(home).checkpoints);
  assert.equal(files.length, 1);
  const cp = readCheckpoint(home, files[0]!.replace(/\.json$/, ''))!;
  assert.equal(cp.state, 'ended');
  assert.equal((cp as any).lastRequest.stopReason, 'stop');
});
