/**
 * Control requests, acks and the owner's journal (SPEC §4.2). Shared by the dashboard (writer)
 * and the extension (consumer).
 */
import { z } from 'zod';
import { MAX_EPOCH_MS } from './epoch.js';

/** Epoch milliseconds, 1970 to 9999 (epoch.ts). */
const epochMs = z.number().finite().min(0).max(MAX_EPOCH_MS);

export const controlActions = ['abort', 'disarm', 'arm'] as const;
export type ControlAction = (typeof controlActions)[number];

/** Largest control request a consumer accepts, in bytes. */
export const CONTROL_MAX_BYTES = 4096;
/** A control request expires this long after it was requested. */
export const CONTROL_TTL_MS = 30_000;

export const controlTargetSchema = z.looseObject({
  turn: z.number().int().nonnegative(),
  startedAt: epochMs,
});

export const controlRequestSchema = z.looseObject({
  v: z.literal(1),
  id: z.string().regex(/^[A-Za-z0-9_-]{1,80}$/),
  session: z.string().min(1),
  action: z.enum(controlActions),
  reason: z.string().max(500),
  requestedAt: epochMs,
  expiresAt: epochMs,
  by: z.looseObject({
    user: z.string(),
    host: z.string(),
    pid: z.number().int(),
    tool: z.string(),
  }),
  target: controlTargetSchema.nullable().optional(),
});
export type ControlRequest = z.infer<typeof controlRequestSchema>;

export const ackStatuses = ['applied', 'refused', 'expired', 'stale-target'] as const;
export type AckStatus = (typeof ackStatuses)[number];

export const controlAckSchema = z.looseObject({
  v: z.literal(1),
  id: z.string(),
  status: z.enum(ackStatuses),
  at: epochMs,
  detail: z.string(),
});
export type ControlAck = z.infer<typeof controlAckSchema>;

/** One line of `<home>/loop-dash/actions.jsonl`: a request made, or its outcome. */
export const journalEntrySchema = z.looseObject({
  v: z.literal(1),
  at: epochMs,
  kind: z.enum(['requested', 'outcome']),
  id: z.string(),
  session: z.string(),
  /** Absent only on an outcome for a request refused before it could be read (malformed, too big). */
  action: z.enum(controlActions).optional(),
  status: z.enum([...ackStatuses, 'pending', 'no-answer', 'write-failed']).optional(),
  detail: z.string().optional(),
  by: z.string().optional(),
});
export type JournalEntry = z.infer<typeof journalEntrySchema>;

/** A session id safe to use as a path component: no separators, no dot-dot, no control chars. */
export function isSafeSessionId(id: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/.test(id) && !id.includes('..');
}
