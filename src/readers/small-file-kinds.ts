/** The small record files a home holds besides checkpoints, and the function that reads each. */
import { readIncidentFile } from './incident-file.js';
import type { KnownStat, SmallFileRead } from './json-file.js';
import { readLaneStatus } from './lane-status.js';
import { readReceipt } from './receipt-file.js';

export type SmallFileKind = 'incident' | 'lane-status' | 'receipt';

/** Reads one file of a kind; never throws (each reader reports problems as warnings). `stat`: as a walk just saw it (ReadJsonOptions.stat). */
export const SMALL_FILE_READERS: Record<SmallFileKind, (home: string, file: string, stat?: KnownStat) => Promise<SmallFileRead<unknown>>> = {
  incident: readIncidentFile,
  'lane-status': readLaneStatus,
  receipt: readReceipt,
};
