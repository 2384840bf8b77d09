/**
 * Our owner's journal (`<home>/loop-dash/actions.jsonl`, SPEC §4.2), read incrementally, and the
 * consumer's acks (`<home>/loop-dash/control/<sid>/<id>.ack.json`).
 */
import { homePaths } from '../contract/paths.js';
import { controlAckSchema, journalEntrySchema, type ControlAck, type JournalEntry } from '../contract/control.js';
import type { Warning } from '../model/types.js';
import { readJsonObjectFile, type SmallFileRead } from './json-file.js';
import { JsonlFollower } from './small-jsonl.js';
import { validateStrict } from './validate.js';

/** Acks are a few hundred bytes; requests are capped at 4 KiB. */
const ACK_MAX_BYTES = 64 * 1024;

/** Incremental reader of one home's journal. */
export class JournalReader {
  private readonly follower: JsonlFollower;

  constructor(readonly home: string) {
    this.follower = new JsonlFollower(homePaths(home).journal);
  }

  /** Entries appended since the last call; `reset` when the journal shrank, was replaced or vanished. */
  async update(): Promise<{ entries: JournalEntry[]; reset: boolean; missing: boolean; warnings: Warning[] }> {
    const r = await this.follower.update();
    const warnings = [...r.warnings];
    const entries: JournalEntry[] = [];
    for (const { line, offset, value } of r.lines) {
      const { data, warnings: w } = validateStrict(journalEntrySchema, value, this.follower.file, line);
      for (const x of w) warnings.push({ ...x, offset });
      if (data !== null) entries.push(data);
    }
    return { entries, reset: r.reset, missing: r.missing, warnings };
  }
}

/** The whole journal at once (for `status`-style one-shot use); keep a JournalReader to follow it. */
export async function readJournal(home: string): Promise<{ entries: JournalEntry[]; missing: boolean; warnings: Warning[] }> {
  const { entries, missing, warnings } = await new JournalReader(home).update();
  return { entries, missing, warnings };
}

/** True for `<id>.ack.json` names. */
export function isAckFileName(name: string): boolean {
  return name.endsWith('.ack.json') && !name.startsWith('.');
}

/** Read one `<id>.ack.json`, validated strictly (our own contract). */
export async function readAck(file: string): Promise<SmallFileRead<ControlAck>> {
  const { object, read } = await readJsonObjectFile(file, { maxBytes: ACK_MAX_BYTES });
  if (object === null) return read;
  const { data, warnings } = validateStrict(controlAckSchema, object, file);
  return { ...read, warnings: [...read.warnings, ...warnings], record: data };
}
