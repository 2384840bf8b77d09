/**
 * The owner's hold on a session (SPEC §4.3): set by `disarm` or `abort`, cleared by `arm`. While
 * held, automatic turn starts are kept instead of run — a continuation requested at
 * `agent_before_settle`, and user messages an extension sends (`input` with source `extension`) —
 * so that `arm` can release exactly what was held. Pure: the runtime persists and applies it.
 *
 * Persisted as `custom` session entries of type `loop-dash-control` (the last one on the branch
 * wins), so a reload or resume of the session keeps the hold and the held text.
 */
import type { HeldSummary } from './request-tracker.js';

/** The custom entry type the hold is persisted under. */
export const HOLD_ENTRY_TYPE = 'loop-dash-control';

/** A hold in force. */
export interface Hold {
  since: number;
  by: string | null;
  reason: string | null;
  action: 'abort' | 'disarm';
  /** Texts of automatic user messages that were not sent, oldest first. */
  messages: string[];
  /** Continuations vetoed at `agent_before_settle`. */
  continuations: number;
}

/** The data of a `loop-dash-control` entry. */
export interface HoldEntryData {
  held: boolean;
  by: string | null;
  reason: string | null;
  at: number;
  /** When the hold began (absent on a release). */
  since?: number;
  action?: 'abort' | 'disarm' | 'arm';
  requestId?: string | null;
  heldMessages?: string[];
  heldContinuations?: number;
}

/** Holds the session (or keeps holding it: an abort on a disarmed session keeps what was held). */
export function startHold(current: Hold | null, at: number, by: string | null, reason: string | null, action: 'abort' | 'disarm'): Hold {
  if (current) return { ...current, action: action === 'abort' ? 'abort' : current.action };
  return { since: at, by, reason, action, messages: [], continuations: 0 };
}

/** Keeps the text of an automatic user message that was not sent. */
export function holdMessage(h: Hold, text: string): Hold {
  return { ...h, messages: [...h.messages, text] };
}

/** Counts a vetoed continuation. */
export function holdContinuation(h: Hold): Hold {
  return { ...h, continuations: h.continuations + 1 };
}

/** How many automatic turn starts are being held. */
export function heldTurnStarts(h: Hold): number {
  return h.messages.length + h.continuations;
}

/** What `arm` sends to release a hold: one user message with the held texts, one nudge, or nothing. */
export type Release = { kind: 'message'; text: string } | { kind: 'continue'; text: string } | null;

/** The text a released continuation is replayed with (the continuation's own entries are already in context). */
export const RELEASE_CONTINUE_TEXT = 'The owner armed this session again: continue where you left off.';

/** What to replay when `h` is released: held turn starts become one message, or none. */
export function releaseOf(h: Hold): Release {
  if (h.messages.length > 0) return { kind: 'message', text: h.messages.join('\n\n') };
  if (h.continuations > 0) return { kind: 'continue', text: RELEASE_CONTINUE_TEXT };
  return null;
}

/** The checkpoint's `held`. */
export function holdSummary(h: Hold | null): HeldSummary | null {
  if (!h) return null;
  return { since: h.since, by: h.by, heldTurnStarts: heldTurnStarts(h), action: h.action, reason: h.reason };
}

/** The entry data persisting `h` (or its release, when `h` is null). */
export function holdEntry(h: Hold | null, at: number, by: string | null, reason: string | null, requestId: string | null = null): HoldEntryData {
  if (!h) return { held: false, by, reason, at, action: 'arm', requestId };
  return {
    held: true,
    by: h.by,
    reason: h.reason,
    at,
    since: h.since,
    action: h.action,
    requestId,
    heldMessages: [...h.messages],
    heldContinuations: h.continuations,
  };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The hold recorded by the last `loop-dash-control` entry of `entries` (a branch, root first). */
export function restoreHold(entries: readonly { type: string; customType?: string; data?: unknown }[]): Hold | null {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i];
    if (!entry || entry.type !== 'custom' || entry.customType !== HOLD_ENTRY_TYPE) continue;
    const data = entry.data;
    if (!isRecord(data) || typeof data.held !== 'boolean') continue;
    if (!data.held) return null;
    const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
    const since = finite(data.since) ? data.since : finite(data.at) ? data.at : 0;
    const messages = Array.isArray(data.heldMessages) ? data.heldMessages.filter((m): m is string => typeof m === 'string') : [];
    const continuations =
      typeof data.heldContinuations === 'number' && Number.isInteger(data.heldContinuations) && data.heldContinuations > 0 ? data.heldContinuations : 0;
    return {
      since,
      by: typeof data.by === 'string' ? data.by : null,
      reason: typeof data.reason === 'string' ? data.reason : null,
      action: data.action === 'abort' ? 'abort' : 'disarm',
      messages,
      continuations,
    };
  }
  return null;
}
