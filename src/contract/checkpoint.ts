/**
 * The request checkpoint of SPEC §4.1 — written by the loop-dash pi extension, read by the
 * dashboard. One schema for both sides, so producer and consumer cannot drift apart.
 */
import { z } from 'zod';
import { checkpointStates } from './checkpoint-states.js';
import { MAX_EPOCH_MS } from './epoch.js';

/** Epoch milliseconds, 1970 to 9999 (epoch.ts: beyond, `Date` cannot print it). */
const epochMs = z.number().finite().min(0).max(MAX_EPOCH_MS);

export const checkpointLimitsSchema = z.looseObject({
  inactivityMs: z.number().finite().positive(),
  absoluteMs: z.number().finite().positive(),
  episodeMs: z.number().finite().positive(),
  episodeMaxAttempts: z.number().int().positive(),
  /**
   * loop-pi's recovery episode bounds this request's retries (its provider is one of
   * `loopPi.retryRecovery.providerIds`); optional: a reader without it judges by the home's settings.
   */
  episodeApplies: z.boolean().optional(),
});

export const checkpointRequestSchema = z.looseObject({
  turn: z.number().int().nonnegative(),
  startedAt: epochMs,
  lastModelEventAt: epochMs.nullable(),
  lastTransportEventAt: epochMs.nullable(),
  modelEvents: z.number().int().nonnegative(),
  keepalives: z.number().int().nonnegative(),
});

/**
 * `{turn, startedAt}` of a request a checkpoint names — `request`, or the producer's extra
 * `lastRequest` (docs/CONTRACT.md): what an abort targets.
 */
export const checkpointRequestRefSchema = z.looseObject({ turn: z.number().int().nonnegative(), startedAt: epochMs });

export const checkpointEpisodeSchema = z.looseObject({
  startedAt: epochMs,
  attempts: z.number().int().nonnegative(),
  lastError: z.string().nullable(),
  lastErrorClass: z.string().nullable(),
  /** When pi's next retry is due; computed by the producer from pi's retry settings. */
  nextRetryAt: epochMs.nullable(),
});

export const checkpointRecoverySchema = z.looseObject({
  stoppedAt: epochMs,
  /** Resumes already made since the root first stopped. */
  resumes: z.number().int().nonnegative(),
  /** Written by the loop when it scheduled the resume; null when nothing recorded it. */
  nextResumeAt: epochMs.nullable(),
  reason: z.string().nullable(),
});

export const checkpointLastStopSchema = z.looseObject({
  at: epochMs,
  reason: z.string().nullable(),
  error: z.string().nullable(),
  limit: z.string().nullable(),
});

export const checkpointHeldSchema = z.looseObject({
  since: epochMs,
  by: z.string().nullable(),
  heldTurnStarts: z.number().int().nonnegative(),
});

export const checkpointOwnerAbortSchema = z.looseObject({
  at: epochMs,
  requestId: z.string().nullable(),
});

export { checkpointStates, REFRESHED_STATES, type CheckpointState } from './checkpoint-states.js';

export const checkpointSchema = z.looseObject({
  v: z.literal(1),
  session: z.string().min(1),
  sessionFile: z.string().nullable(),
  role: z.enum(['root', 'lane']),
  parentSession: z.string().nullable(),
  runId: z.string().nullable().optional(),
  agent: z.string().nullable().optional(),
  cwd: z.string(),
  pid: z.number().int().positive(),
  pidStart: z.string().nullable(),
  host: z.string(),
  model: z.string().nullable(),
  thinking: z.string().nullable(),
  limits: checkpointLimitsSchema.nullable(),
  state: z.enum(checkpointStates),
  request: checkpointRequestSchema.nullable(),
  episode: checkpointEpisodeSchema.nullable(),
  recovery: checkpointRecoverySchema.nullable(),
  lastStop: checkpointLastStopSchema.nullable(),
  held: checkpointHeldSchema.nullable(),
  ownerAbort: checkpointOwnerAbortSchema.nullable(),
  updatedAt: epochMs,
});

/** A validated request checkpoint (unknown fields kept). */
export type Checkpoint = z.infer<typeof checkpointSchema>;
export type CheckpointLimits = z.infer<typeof checkpointLimitsSchema>;
export type CheckpointRequest = z.infer<typeof checkpointRequestSchema>;
export type CheckpointEpisode = z.infer<typeof checkpointEpisodeSchema>;
export type CheckpointRecovery = z.infer<typeof checkpointRecoverySchema>;
