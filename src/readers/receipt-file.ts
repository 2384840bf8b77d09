/**
 * Watcher receipts (SPEC §3.5): `<home>/loop-wait/<sid>/receipts/<id>.json`, rewritten atomically
 * by a loop-wait watcher. Times may be ISO strings, epoch ms or epoch seconds.
 */
import path from 'node:path';
import { z } from 'zod';
import type { WatcherReceipt } from '../model/types.js';
import { readJsonObjectFile, type KnownStat, type SmallFileRead } from './json-file.js';
import { epochMsOrSecondsFrom } from './time-value.js';
import { validateLenient } from './validate.js';

const str = z.string().nullable().optional();
const time = z.union([z.number().finite(), z.string()]).nullable().optional();

/** The fields we interpret; the rest are kept by the loose object and ignored. */
export const receiptSchema = z.looseObject({
  phase: str,
  observations: z.number().int().nonnegative().nullable().optional(),
  last_observed_at: time,
  deadline: time,
  result: z.unknown().optional(),
  pid: z.number().int().positive().nullable().optional(),
  command: str,
  interval_s: z.number().finite().positive().nullable().optional(),
  label: str,
  note: str,
});

/** Read one receipt; session and id come from its path. */
export async function readReceipt(home: string, file: string, stat?: KnownStat): Promise<SmallFileRead<WatcherReceipt>> {
  const { object, read } = await readJsonObjectFile(file, { stat });
  if (object === null) return read;
  const { data, warnings } = validateLenient(receiptSchema, object, file);
  const out = [...read.warnings, ...warnings];
  if (data === null) return { ...read, warnings: out };
  // <home>/loop-wait/<sid>/receipts/<id>.json
  const session = path.basename(path.dirname(path.dirname(file)));
  const record: WatcherReceipt = {
    file,
    home,
    session,
    id: path.basename(file, '.json'),
    phase: data.phase ?? null,
    observations: data.observations ?? null,
    lastObservedAt: epochMsOrSecondsFrom(data.last_observed_at),
    deadline: epochMsOrSecondsFrom(data.deadline),
    result: data.result ?? null,
    pid: data.pid ?? null,
    command: data.command ?? null,
    intervalS: data.interval_s ?? null,
    label: data.label ?? null,
    note: data.note ?? null,
  };
  return { ...read, warnings: out, record };
}

/** A running receipt is stale when it has not observed for more than two intervals (pure). */
export function isReceiptStale(receipt: WatcherReceipt, now: number): boolean {
  if (receipt.phase !== 'running' || receipt.lastObservedAt === null || receipt.intervalS === null) return false;
  return now - receipt.lastObservedAt > 2 * receipt.intervalS * 1000;
}
