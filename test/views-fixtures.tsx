/**
 * Shared fixtures for the view tests: hand-made reader events folded by the real reducer, a fixed
 * clock, a tiny store, a sized Ink harness and a bounded `waitFor`. Not a test file itself.
 */
import { EventEmitter } from 'node:events';
import { render as inkRender, type Instance } from 'ink';
import type { ReactElement } from 'react';
import type { Checkpoint } from '../src/contract/checkpoint.js';
import { initialModelState, reduceEvents, type ModelState } from '../src/model/reducer.js';
import type { SessionView } from '../src/model/snapshot.js';
import type { CheckpointRecord, ReaderEvent, SessionFileFacts } from '../src/model/types.js';
import type { ActionPort, ModelStore } from '../src/views/App.js';
import type { Line } from '../src/views/line.js';
import type { FrameSink } from '../src/views/terminal-frame.js';

/** 2026-01-15 12:00:00 UTC. */
export const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
export const HOST = 'testhost';
export const HOME = '/tmp/loop-dash-views-home';
export const clock = () => NOW;

const MIN = 60_000;

export const ID = {
  api: 'aaaa1111-0000-4000-8000-000000000001',
  web: 'bbbb2222-0000-4000-8000-000000000002',
  ops: 'cccc3333-0000-4000-8000-000000000003',
  laneA: 'dddd4444-0000-4000-8000-000000000004',
  laneB: 'eeee5555-0000-4000-8000-000000000005',
} as const;

const sessionDir = `${HOME}/sessions/--work-repo--`;
export const fileOf = (id: string) => `${sessionDir}/2026-01-15T10-00-00-000Z_${id}.jsonl`;

export function facts(id: string, name: string, over: Partial<SessionFileFacts> = {}): SessionFileFacts {
  return {
    file: fileOf(id),
    home: HOME,
    sessionId: id,
    role: 'root',
    rootFile: null,
    runId: null,
    header: { id, timestamp: NOW - 60 * MIN, cwd: `/work/${name}`, parentSession: null },
    name,
    model: { provider: 'anthropic', id: 'claude-sonnet-4' },
    thinking: null,
    lastEntryAt: NOW - 5 * MIN,
    lastAssistant: null,
    continuation: { at: NOW - 30 * MIN, armed: true, launch: null, nudgeCount: 0, raw: {} },
    waitState: null,
    dashControl: null,
    history: [],
    incompleteSince: null,
    size: 1000,
    mtimeMs: NOW - 5 * MIN,
    ...over,
  };
}

export function checkpoint(id: string, over: Partial<Checkpoint> = {}): Checkpoint {
  return {
    v: 1,
    session: id,
    sessionFile: fileOf(id),
    role: 'root',
    parentSession: null,
    cwd: '/work/repo',
    pid: 4242,
    pidStart: '1000',
    host: HOST,
    model: 'anthropic/claude-sonnet-4',
    thinking: 'high',
    // As the extension writes for a provider loop-pi's recovery covers (its episode runs).
    limits: { inactivityMs: 15 * MIN, absoluteMs: 75 * MIN, episodeMs: 20 * MIN, episodeMaxAttempts: 5, episodeApplies: true },
    state: 'idle',
    request: null,
    episode: null,
    recovery: null,
    lastStop: null,
    held: null,
    ownerAbort: null,
    updatedAt: NOW - 2_000,
    ...over,
  };
}

/** A checkpoint of a request in flight whose inactivity deadline is `inactLeftMs` from NOW. */
export function requesting(id: string, inactLeftMs: number, over: Partial<Checkpoint> = {}, startedAgoMs = 723_000): Checkpoint {
  return checkpoint(id, {
    state: 'requesting',
    request: { turn: 7, startedAt: NOW - startedAgoMs, lastModelEventAt: NOW - (15 * MIN - inactLeftMs), lastTransportEventAt: NOW - 1000, modelEvents: 120, keepalives: 3 },
    ...over,
  });
}

export const cpEvent = (cp: Checkpoint): ReaderEvent => {
  const record: CheckpointRecord = { file: `${HOME}/loop-dash/checkpoints/${cp.session}.json`, home: HOME, session: cp.session, checkpoint: cp, mtimeMs: cp.updatedAt };
  return { type: 'checkpoint', record };
};
export const factsEvent = (f: SessionFileFacts): ReaderEvent => ({ type: 'session-file', facts: f });

/** Three roots (api with two lanes, web, ops) and their checkpoints. */
export function fixtureEvents(): ReaderEvent[] {
  const laneFile = (id: string) => `${fileOf(ID.api).replace(/\.jsonl$/, '')}/run-${id.slice(0, 4)}/${id}.jsonl`;
  return [
    factsEvent(facts(ID.api, 'api-root')),
    cpEvent(requesting(ID.api, 4 * MIN)),
    factsEvent(facts(ID.laneA, 'lane-a', { role: 'lane', rootFile: fileOf(ID.api), runId: 'run-dddd', file: laneFile(ID.laneA), continuation: null })),
    cpEvent(requesting(ID.laneA, 30_000, { role: 'lane', parentSession: ID.api, sessionFile: laneFile(ID.laneA) })),
    factsEvent(facts(ID.laneB, 'lane-b', { role: 'lane', rootFile: fileOf(ID.api), runId: 'run-eeee', file: laneFile(ID.laneB), continuation: null })),
    cpEvent(checkpoint(ID.laneB, { role: 'lane', parentSession: ID.api, sessionFile: laneFile(ID.laneB) })),
    factsEvent(facts(ID.web, 'web-root')),
    cpEvent(requesting(ID.web, 10 * MIN, { model: 'openai/gpt-5' })),
    factsEvent(facts(ID.ops, 'ops-root', { model: null, continuation: null })),
  ];
}

export function fixtureState(extra: ReaderEvent[] = []): ModelState {
  return reduceEvents(initialModelState(), [...fixtureEvents(), ...extra]);
}

/** A store the test can push events into. */
export function testStore(state: ModelState): ModelStore & { push(events: ReaderEvent[]): void } {
  let current = state;
  const listeners = new Set<() => void>();
  return {
    getState: () => current,
    subscribe(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    push(events) {
      current = reduceEvents(current, events);
      for (const l of listeners) l();
    },
  };
}

/** An action port that records calls. */
export function recordingPort(answer: { id: string } | { error: string } = { id: 'req-1' }): ActionPort & { calls: { action: string; target: SessionView }[] } {
  const calls: { action: string; target: SessionView }[] = [];
  return {
    calls,
    request(action, target) {
      calls.push({ action, target });
      return Promise.resolve(answer);
    },
  };
}

/** Wait for a condition, polling, with a bound; throws with the last frame on timeout. */
export async function waitFor(fn: () => boolean, timeoutMs = 2000, describe: () => string = () => ''): Promise<void> {
  const start = Date.now();
  while (!fn()) {
    if (Date.now() - start > timeoutMs) throw new Error(`waitFor timed out after ${timeoutMs} ms\n${describe()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export const stripAnsi = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, '');

class SizedStdout extends EventEmitter {
  frames: string[] = [];
  isTTY = true;
  constructor(
    public columns: number,
    public rows: number,
  ) {
    super();
  }
  write = (frame: string) => {
    this.frames.push(frame);
    return true;
  };
  lastFrame = () => this.frames[this.frames.length - 1] ?? '';
}

class TestStdin extends EventEmitter {
  isTTY = true;
  data: string | null = null;
  write = (data: string) => {
    this.data = data;
    this.emit('readable');
    this.emit('data', data);
  };
  setEncoding() {}
  setRawMode() {}
  resume() {}
  pause() {}
  ref() {}
  unref() {}
  read = () => {
    const d = this.data;
    this.data = null;
    return d;
  };
}

/** Like ink-testing-library's render, with a terminal of a given size (its stdout is fixed at 100 columns). */
export function renderSized(tree: ReactElement, columns: number, rows: number): { lastFrame: () => string; stdin: TestStdin; stdout: SizedStdout; instance: Instance } {
  const stdout = new SizedStdout(columns, rows);
  const stdin = new TestStdin();
  const instance = inkRender(tree, {
    stdout: stdout as unknown as NodeJS.WriteStream,
    stderr: new SizedStdout(columns, rows) as unknown as NodeJS.WriteStream,
    stdin: stdin as unknown as NodeJS.ReadStream,
    debug: true,
    exitOnCtrlC: false,
    patchConsole: false,
  });
  return { lastFrame: stdout.lastFrame, stdin, stdout, instance };
}

/** A frame sink that keeps every frame drawn, each as its lines' text. */
export function recordingSink(): { drawn: string[][]; sink: FrameSink } {
  const drawn: string[][] = [];
  return { drawn, sink: { draw: (lines: readonly Line[]) => void drawn.push(lines.map((l) => l.map((s) => s.text).join(''))), done: () => undefined } };
}
