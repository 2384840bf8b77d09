/**
 * The fast accept path (src/readers/fast-accept.ts): whatever it accepts, zod accepts with the
 * same output (key order included); what it does not know, it leaves to zod; and it does accept
 * the documents a real home holds (else the speed-up would be for nothing).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { z } from 'zod';
import { checkpointSchema } from '../src/contract/checkpoint.js';
import { controlAckSchema, journalEntrySchema } from '../src/contract/control.js';
import { generateHome } from '../src/demo/generate.js';
import { fastAccept, NOT_SURE, safeParseFast } from '../src/readers/fast-accept.js';
import { incidentFileSchema } from '../src/readers/incident-file.js';
import { laneStatusSchema } from '../src/readers/lane-status.js';
import { receiptSchema } from '../src/readers/receipt-file.js';
import { SESSION_ENTRY_SCHEMAS } from '../src/readers/session-entry.js';
import { stateLogLineSchema } from '../src/readers/state-log.js';
import { validateLenient, validateStrict } from '../src/readers/validate.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

/** Accepted here ⇒ accepted by zod, with the same value and the same key order. Returns whether it was accepted here. */
function agrees(schema: z.ZodType, value: unknown): boolean {
  const fast = fastAccept(schema, value);
  if (fast === NOT_SURE) return false;
  const r = schema.safeParse(value);
  assert.ok(r.success, `zod rejects what the fast path accepted: ${JSON.stringify(value)}`);
  assert.deepEqual(fast, r.data);
  assert.equal(JSON.stringify(fast), JSON.stringify(r.data), 'same key order');
  return true;
}

/** Values near a field's boundaries: the wrong type, null, edge numbers, odd strings. */
const ODD = [null, true, false, 0, -0, 1, -1, 0.5, 2, 10, -2, 1e999, -1e999, 2 ** 53, 2 ** 53 - 1, -(2 ** 53), '', 'x', 'a', 'b', 'ab', 'idle', 'root', 'lane', 'requesting', 'ended', [], {}];
const oddValue = fc.oneof(
  fc.constantFrom(...ODD),
  fc.double(),
  fc.integer(),
  fc.string({ maxLength: 4 }),
  fc.jsonValue({ maxDepth: 2 }),
);

/** Rarely, else `usual`. */
const rarely = <T,>(usual: T, odd: fc.Arbitrary<T>, weight: number): fc.Arbitrary<T> => fc.oneof({ weight, arbitrary: fc.constant(usual) }, { weight: 1, arbitrary: odd });

/** A document with a few fields changed, recursively: odd values, dropped keys, extra keys. */
function mutated(base: unknown, weight = 40): fc.Arbitrary<unknown> {
  if (typeof base !== 'object' || base === null || Array.isArray(base)) return rarely(base, oddValue, weight);
  const entries = Object.entries(base);
  return fc
    .tuple(
      fc.tuple(...entries.map(([, v]) => mutated(v, weight))),
      rarely<string[]>([], fc.array(fc.constantFrom(...entries.map(([k]) => k)), { minLength: 1, maxLength: 2 }), 4),
      rarely<Record<string, unknown>>({}, fc.dictionary(fc.constantFrom('extra', 'x', 'runId', 'agent', 'detail', '__proto__'), oddValue, { minKeys: 1, maxKeys: 2 }), 2),
    )
    .map(([values, dropped, extra]) => {
      const out: Record<string, unknown> = {};
      entries.forEach(([k], i) => {
        if (!dropped.includes(k)) out[k] = values[i];
      });
      // As JSON.parse would give them: an own "__proto__" key included.
      for (const [k, v] of Object.entries(extra)) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
      return out;
    });
}

const goodCheckpoint = {
  v: 1,
  session: 's-1',
  sessionFile: '/h/sessions/--r--/x_s-1.jsonl',
  role: 'root',
  parentSession: null,
  runId: 'run-1',
  cwd: '/r',
  pid: 4242,
  pidStart: '1',
  host: 'box',
  model: 'openai/x',
  thinking: 'high',
  limits: { inactivityMs: 900_000, absoluteMs: 4_500_000, episodeMs: 1_200_000, episodeMaxAttempts: 4 },
  state: 'requesting',
  request: { turn: 3, startedAt: NOW, lastModelEventAt: NOW + 1, lastTransportEventAt: null, modelEvents: 5, keepalives: 0 },
  episode: { startedAt: NOW, attempts: 1, lastError: 'x', lastErrorClass: null, nextRetryAt: null },
  recovery: { stoppedAt: NOW, resumes: 0, nextResumeAt: null, reason: null },
  lastStop: { at: NOW, reason: null, error: null, limit: 'inactivity' },
  held: null,
  ownerAbort: { at: NOW, requestId: null },
  updatedAt: NOW,
};

test('a checkpoint the fast path accepts is one zod accepts, with the same output; mutated checkpoints are mostly left to zod', () => {
  let accepted = 0;
  let rejectedByZod = 0;
  fc.assert(
    fc.property(mutated(goodCheckpoint), (value) => {
      if (agrees(checkpointSchema, value)) accepted++;
      else if (!checkpointSchema.safeParse(value).success) rejectedByZod++;
    }),
    { numRuns: 3000 },
  );
  assert.ok(accepted > 100, `the fast path accepted ${accepted} of 3000`);
  assert.ok(rejectedByZod > 100, `zod rejected ${rejectedByZod} of 3000 (the mutations reach invalid documents)`);
  assert.ok(agrees(checkpointSchema, goodCheckpoint), 'a good checkpoint is accepted');
});

test('each construct it knows agrees with zod on arbitrary values; what it does not know is left to zod', () => {
  const known: z.ZodType[] = [
    z.number(),
    z.number().int().nonnegative(),
    z.number().positive().lt(10),
    z.number().gte(-2).lte(2),
    z.string().min(1).max(3),
    z.string().length(2),
    z.boolean(),
    z.literal(1),
    z.literal('a'),
    z.literal(null),
    z.enum(['a', 'b']),
    z.union([z.string(), z.number().int()]).nullable(),
    z.array(z.unknown()),
    z.array(z.number()),
    z.object({ a: z.number(), b: z.string().optional() }),
    z.strictObject({ a: z.number().nullable() }),
    z.looseObject({ a: z.unknown().optional(), b: z.enum(['x']).nullable().optional() }),
  ];
  for (const schema of known) {
    let accepted = 0;
    // Every boundary value, then random ones.
    for (const value of ODD) if (agrees(schema, value)) accepted++;
    fc.assert(
      fc.property(fc.oneof(oddValue, mutated({ a: 1, b: 'x' }, 3), mutated({ a: null }, 3)), (value) => {
        if (agrees(schema, value)) accepted++;
      }),
      { numRuns: 500 },
    );
    assert.ok(accepted > 0, `${JSON.stringify(schema._zod.def.type)}: some value accepted`);
  }
  const unknown: [z.ZodType, unknown][] = [
    [z.number().refine((n) => n > 0), 1],
    [z.string().transform((s) => s.length), 'ab'],
    [z.number().default(1), 2],
    [z.union([z.object({ a: z.number() }), z.object({ b: z.number() })]), { a: 1 }],
    [z.string().regex(/a/), 'a'],
    [z.object({ a: z.number() }).catchall(z.number()), { a: 1, b: 2 }],
    [z.object({ a: z.date() }), { a: new Date() }],
  ];
  for (const [schema, value] of unknown) {
    assert.ok(schema.safeParse(value).success, 'zod accepts it');
    assert.equal(fastAccept(schema, value), NOT_SURE, `${schema._zod.def.type} is left to zod`);
  }
});

test('the documents of a real home are accepted by the fast path as zod reads them; validate* give what zod gives', async (t) => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-fast-accept-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const m = await generateHome(path.join(base, 'home'), { now: NOW, host: 'h', livePid: 4_000_000, livePidStart: null, deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
  const read = (f: string): unknown => JSON.parse(readFileSync(f, 'utf8'));
  const checkpoints = m.sessions.flatMap((s) => (s.checkpoint ? [read(s.checkpoint)] : []));
  const incidents = m.incidents.map((i) => read(i.file));
  assert.ok(checkpoints.length >= 3 && incidents.length >= 3, 'the demo home has checkpoints and incidents');
  for (const c of checkpoints) assert.ok(agrees(checkpointSchema, c), 'a demo checkpoint is accepted');
  for (const i of incidents) assert.ok(agrees(incidentFileSchema, i), 'a demo incident is accepted');
  // Every schema the readers validate with: agreement on mutated documents.
  const samples: [z.ZodType, unknown][] = [
    [incidentFileSchema, incidents[0]],
    [laneStatusSchema, { runId: 'r', sessionId: 's', state: 'running', pid: 12, startedAt: NOW, endedAt: '2026-11-30T12:00:00Z', steps: [{ a: 1 }], error: null }],
    [receiptSchema, { v: 1 }],
    [stateLogLineSchema, { v: 1, seq: 3, ts: '2026-11-30T12:00:00Z', ev: 'loop-start', by: null }],
    [controlAckSchema, { v: 1 }],
    [journalEntrySchema, { v: 1 }],
  ];
  for (const [schema, sample] of samples) fc.assert(fc.property(mutated(sample), (value) => void agrees(schema, value)), { numRuns: 300 });
  // The validators answer as zod alone would.
  fc.assert(
    fc.property(mutated(goodCheckpoint), (value) => {
      const r = checkpointSchema.safeParse(value);
      const strict = validateStrict(checkpointSchema, value, 'f');
      assert.deepEqual(strict.data, r.success ? r.data : null);
      assert.equal(strict.warnings.length, r.success ? 0 : 1);
      const lenient = validateLenient(incidentFileSchema, value, 'f');
      const l = incidentFileSchema.safeParse(value);
      if (l.success) assert.deepEqual(lenient, { data: l.data, warnings: [] });
    }),
    { numRuns: 500 },
  );
});

test('session entries: every entry schema agrees with zod on mutated entries and takes the fast path for a good one; safeParseFast answers as zod', () => {
  const S = SESSION_ENTRY_SCHEMAS;
  const at = '2026-11-30T12:00:00.000Z';
  const assistant = { role: 'assistant', content: [{ type: 'text', text: 'hi' }], provider: 'openai', model: 'x', stopReason: 'stop', errorMessage: null, usage: { input: 3, output: 7 }, timestamp: NOW, loopPiRecovery: { code: 'E1', status: 529, disposition: 'retry', reason: null } };
  const good: [keyof typeof S, unknown][] = [
    ['entryBaseSchema', { type: 'message', id: 'a1', parentId: null, timestamp: at }],
    ['sessionHeaderSchema', { type: 'session', version: 3, id: 's-1', timestamp: at, cwd: '/r', parentSession: null }],
    ['messageEntrySchema', { type: 'message', id: 'a2', parentId: 'a1', timestamp: at, message: assistant }],
    ['assistantMessageSchema', assistant],
    ['customEntrySchema', { type: 'custom', customType: 'loop-wait-state', data: { timers: [] }, id: 'c', timestamp: NOW }],
    ['customMessageEntrySchema', { type: 'custom_message', customType: 'note', content: 'x', details: { a: 1 }, display: true }],
    ['modelChangeEntrySchema', { type: 'model_change', provider: 'openai', modelId: 'x' }],
    ['thinkingEntrySchema', { type: 'thinking_level_change', thinkingLevel: 'high' }],
    ['sessionInfoEntrySchema', { type: 'session_info', name: 'root one' }],
    ['continuationDataSchema', { armed: true, launch: { report: 'r', loop: 3, launchTs: at }, nudgeCount: 2 }],
    ['waitDataSchema', { timers: [{ id: 1, at: NOW, reason: 'poll' }], watchers: [{ id: 'w', label: 'ci', pid: 12, phase: 'wait', command: 'make', deadline: at, interval_s: 30 }], heldMessages: ['m'] }],
    ['dashControlDataSchema', { held: true, by: 'me', reason: null }],
    ['incidentDetailsSchema', { kind: 'timeout', limit: 'inactivity', attempt: 2, exhausted: false, elapsedMs: 900_000 }],
    ['exhaustedDetailsSchema', { episodeMs: 1_200_000 }],
  ];
  assert.deepEqual(new Set(good.map(([k]) => k)), new Set(Object.keys(S)), 'a sample for every schema');
  for (const [name, sample] of good) {
    const schema: z.ZodType = S[name];
    assert.ok(agrees(schema, sample), `${name}: a good entry takes the fast path`);
    let accepted = 0;
    fc.assert(
      fc.property(mutated(sample, 12), (value) => {
        if (agrees(schema, value)) accepted++;
        // safeParseFast answers exactly as zod: success and data, or zod's own error.
        const z1 = schema.safeParse(value);
        const f1 = safeParseFast(schema, value);
        assert.equal(f1.success, z1.success);
        if (z1.success) assert.deepEqual(f1.data, z1.data);
        else assert.deepEqual(f1.error?.issues, z1.error.issues);
      }),
      { numRuns: 300 },
    );
    assert.ok(accepted > 0, `${name}: some mutated entry accepted`);
  }
});
