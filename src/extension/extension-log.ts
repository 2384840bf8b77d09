/**
 * The extension's diagnostics: `<home>/loop-dash/extension.log`. Nothing the extension does may
 * throw into pi or print into its terminal, so failures land here. Never throws; the file is
 * rotated to `extension.log.1` past 1 MiB so a session that fails in a loop cannot fill the disk.
 */
import fs from 'node:fs';
import path from 'node:path';
import { appendLineSync, ensureDir } from './atomic-file.js';

/** Rotate past this size. */
export const LOG_MAX_BYTES = 1024 * 1024;

/** Writes one line: what happened, and the error when there is one. */
export type ExtensionLog = (message: string, err?: unknown) => void;

function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}

/** A log appending to `file`; `now` stamps each line. */
export function createExtensionLog(file: string, now: () => number = () => Date.now()): ExtensionLog {
  return (message, err) => {
    try {
      ensureDir(path.dirname(file), 0o700);
      try {
        if (fs.statSync(file).size > LOG_MAX_BYTES) fs.renameSync(file, `${file}.1`);
      } catch {
        // no log yet
      }
      const line = `${new Date(now()).toISOString()} [pid ${process.pid}] ${message}${err === undefined ? '' : `: ${describe(err)}`}\n`;
      // Never blocks on a FIFO put where the log should be: this runs on pi's main thread.
      appendLineSync(file, line, 0o600);
    } catch {
      // Nowhere left to report to; the session carries on.
    }
  };
}
