/**
 * The owner's journal, `<home>/loop-dash/actions.jsonl` (SPEC §4.2): one `requested` line per
 * control request and one `outcome` line per answer (or lack of one).
 */
import {
  journalEntrySchema,
  type AckStatus,
  type ControlRequest,
  type JournalEntry,
} from '../contract/control.js';
import { homePaths } from '../contract/paths.js';
import { appendLineDurable, nodeControlFs, type ControlFs } from './atomic-write.js';

/** Statuses an `outcome` line can carry. */
export type OutcomeStatus = AckStatus | 'no-answer' | 'write-failed';

/** Who asked, as one short string for the journal: `user@host`. */
export function requesterLabel(request: ControlRequest): string {
  return `${request.by.user}@${request.by.host}`;
}

/** The `requested` line for a request just written. */
export function requestedEntry(request: ControlRequest, now: number): JournalEntry {
  return {
    v: 1,
    at: now,
    kind: 'requested',
    id: request.id,
    session: request.session,
    action: request.action,
    status: 'pending',
    detail: request.reason,
    by: requesterLabel(request),
  };
}

/** The `outcome` line for a request: the consumer's answer, no answer, or a failed write. */
export function outcomeEntry(
  request: Pick<ControlRequest, 'id' | 'session' | 'action'>,
  status: OutcomeStatus,
  detail: string,
  now: number,
): JournalEntry {
  return { v: 1, at: now, kind: 'outcome', id: request.id, session: request.session, action: request.action, status, detail };
}

/** Validates `entry` and appends it to the home's journal as one line. */
export async function appendJournal(home: string, entry: JournalEntry, fs: ControlFs = nodeControlFs): Promise<void> {
  const parsed = journalEntrySchema.safeParse(entry);
  if (!parsed.success) throw new TypeError(`journal entry does not match the contract: ${parsed.error.message}`);
  await appendLineDurable(homePaths(home).journal, JSON.stringify(parsed.data), fs);
}
