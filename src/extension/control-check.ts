/**
 * The consumer's checks on one control request file (SPEC §4.2), in the order they are made.
 * Pure: the caller lstat's and reads the file, this decides. Every refusal names its reason.
 */
import {
  CONTROL_MAX_BYTES,
  controlRequestSchema,
  type AckStatus,
  type ControlAction,
  type ControlRequest,
} from '../contract/control.js';
import type { CheckpointRequest } from '../contract/checkpoint.js';

/** A request file name: `<id>.json`, where the id is what the contract allows. */
const REQUEST_NAME = /^([A-Za-z0-9_-]{1,80})\.json$/;

/**
 * The request id a directory entry names, or null for anything the consumer must not read: dot
 * files and temp names (a writer mid-write), acks, and other names.
 */
export function requestIdFromName(name: string): string | null {
  if (name.startsWith('.') || name.includes('.tmp') || name.endsWith('.ack.json')) return null;
  return REQUEST_NAME.exec(name)?.[1] ?? null;
}

/** What the lstat of a request file said. */
export interface RequestFileStat {
  isSymbolicLink: boolean;
  isFile: boolean;
  uid: number;
  size: number;
}

/** A request that passed every check but the action's own. */
export type FileCheck =
  | { ok: true; request: ControlRequest }
  | { ok: false; status: AckStatus; detail: string; action: ControlAction | null };

function actionOf(value: unknown): ControlAction | null {
  if (typeof value !== 'object' || value === null) return null;
  const action = (value as { action?: unknown }).action;
  return action === 'abort' || action === 'disarm' || action === 'arm' ? action : null;
}

/**
 * Checks a request file: a plain file (not a symlink), owned by `ownUid` (null: not checkable on
 * this platform), at most `CONTROL_MAX_BYTES`, valid JSON matching the contract, naming itself
 * and this session, and not expired at `now`.
 */
export function checkRequestFile(input: {
  id: string;
  stat: RequestFileStat;
  bytes: Uint8Array | null;
  ownUid: number | null;
  session: string;
  now: number;
}): FileCheck {
  const { id, stat } = input;
  const refuse = (detail: string, action: ControlAction | null = null): FileCheck => ({ ok: false, status: 'refused', detail, action });
  if (stat.isSymbolicLink) return refuse('the request file is a symlink; refused unread');
  if (!stat.isFile) return refuse('the request is not a plain file; refused unread');
  if (input.ownUid !== null && stat.uid !== input.ownUid) {
    return refuse(`the request file belongs to uid ${stat.uid}, not to this session's user (uid ${input.ownUid}); refused unread`);
  }
  if (stat.size > CONTROL_MAX_BYTES || (input.bytes && input.bytes.length > CONTROL_MAX_BYTES)) {
    return refuse(`the request is over ${CONTROL_MAX_BYTES} bytes; refused unread`);
  }
  if (!input.bytes) return refuse('the request could not be read');
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(input.bytes).toString('utf8'));
  } catch {
    return refuse('the request is not valid JSON');
  }
  const parsed = controlRequestSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'request';
    return refuse(`the request does not match the contract (${where}: ${issue?.message ?? 'invalid'})`, actionOf(value));
  }
  const request = parsed.data;
  if (request.id !== id) return refuse(`the request says its id is ${request.id}, but its file is named ${id}.json`, request.action);
  if (request.session !== input.session) {
    return refuse(`the request is for session ${request.session}, not this session (${input.session})`, request.action);
  }
  if (!(input.now <= request.expiresAt)) {
    const late = Math.round((input.now - request.expiresAt) / 100) / 10;
    return { ok: false, status: 'expired', detail: `the request expired ${late} s before this session saw it; nothing was done`, action: request.action };
  }
  return { ok: true, request };
}

/**
 * For an abort: null when its target is what runs — the request in flight, or, while tools run,
 * the request that asked for them (`running.tools`) — or it has no target and nothing runs;
 * otherwise why it is stale. The owner must never cut a request they did not see.
 */
export function staleTargetReason(target: ControlRequest['target'], running: { turn: number; startedAt: number; tools?: boolean } | null): string | null {
  const what = running?.tools ? 'the one whose tools are running' : 'the one in flight';
  if (target) {
    if (!running) return `the targeted request (turn ${target.turn}) has already ended; nothing is in flight`;
    if (running.turn !== target.turn || running.startedAt !== target.startedAt) {
      return `the targeted request (turn ${target.turn}, started ${new Date(target.startedAt).toISOString()}) is not ${what} (turn ${running.turn}, started ${new Date(running.startedAt).toISOString()})`;
    }
    return null;
  }
  if (running) return `the request named no target, but turn ${running.turn} is now ${running.tools ? 'running tools' : 'in flight'} (started after the owner looked)`;
  return null;
}
