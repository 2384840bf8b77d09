/**
 * Same-host process liveness (SPEC §4.1, RELIABILITY E1–E3). Only signal 0 is ever used: it
 * checks that a pid exists without delivering anything. A bare pid from a file is never signalled.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import type { ProcessProbe } from '../model/types.js';
import { errorCode } from './json-file.js';

/** `/proc/<pid>/stat` split into what we need; null when it does not look like one. */
export function parseProcStat(text: string): { comm: string; state: string; startTime: string } | null {
  // comm is in parentheses and may itself contain spaces and ')': split after the LAST ')'.
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const rest = text.slice(close + 1).trim().split(/\s+/);
  // rest[0] is field 3 (state), so field 22 (starttime) is rest[19].
  const startTime = rest[19];
  if (startTime === undefined || !/^\d+$/.test(startTime)) return null;
  return { comm: text.slice(open + 1, close), state: rest[0] ?? '', startTime };
}

function isPid(pid: number): boolean {
  return Number.isSafeInteger(pid) && pid > 0;
}

/**
 * The start identity of a process, as the checkpoint's `pidStart` records it: on Linux the
 * `starttime` field of `/proc/<pid>/stat`, on macOS `ps -o lstart=` trimmed; null when unknown.
 */
export function processStartIdentity(pid: number): string | null {
  if (!isPid(pid)) return null;
  try {
    if (process.platform === 'linux') {
      return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.startTime ?? null;
    }
    if (process.platform === 'darwin') {
      const out = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], {
        encoding: 'utf8',
        timeout: 2000,
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
      return out === '' ? null : out;
    }
  } catch {
    // Gone between the check and the read, or not readable: unknown.
  }
  return null;
}

/** A probe plus how the answer was reached (EPERM and ESRCH are reported distinctly). */
export interface ProcessProbeResult extends ProcessProbe {
  /** `signal-0 ok`, `EPERM` (exists, another user's), `ESRCH` (no such process), or another reason. */
  detail: string;
}

/** Probe `pid` with signal 0 and, when it exists, read its start identity. */
export function probeProcess(pid: number, now: number): ProcessProbeResult {
  if (!isPid(pid)) return { pid, status: 'unknown', start: null, checkedAt: now, detail: 'not a valid pid' };
  return process.platform === 'linux' ? probeLinux(pid, now) : probeBySignal(pid, now, () => processStartIdentity(pid));
}

/**
 * Linux: `/proc/<pid>/stat` answers in one read what signal 0 and the start identity take two
 * for — and tells a zombie apart: a process that has exited but is not yet reaped by its parent
 * still answers signal 0, yet it is gone (it will never write again). Signal 0 is still the judge
 * when `/proc` cannot be read (hidepid, a foreign pid namespace).
 */
function probeLinux(pid: number, now: number): ProcessProbeResult {
  // No entry: gone, or hidden by /proc (signal 0 tells which). Asked without an exception first:
  // a failed read throws, and the exception cost ~20 µs of the ~40 µs a dead pid's probe took.
  if (!procEntryMayExist(pid)) return probeBySignal(pid, now, () => null);
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    // No entry (gone), or /proc hides it: signal 0 tells which (and no start identity is readable).
    return probeBySignal(pid, now, () => null);
  }
  const stat = parseProcStat(text);
  if (stat && (stat.state === 'Z' || stat.state === 'X')) {
    return { pid, status: 'gone', start: null, checkedAt: now, detail: 'exited (a zombie not yet reaped)' };
  }
  const start = stat?.startTime ?? null;
  return probeBySignal(pid, now, () => start);
}

/** False when `/proc/<pid>` is surely missing (asked without throwing); true otherwise. */
function procEntryMayExist(pid: number): boolean {
  try {
    return statSync(`/proc/${pid}`, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return true; // another error: the read below tells
  }
}

/** Signal 0 judges; `start` gives the start identity of a process that exists. */
function probeBySignal(pid: number, now: number, start: () => string | null): ProcessProbeResult {
  let detail = 'signal-0 ok';
  try {
    process.kill(pid, 0);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ESRCH') return { pid, status: 'gone', start: null, checkedAt: now, detail: 'ESRCH: no such process' };
    if (code !== 'EPERM') return { pid, status: 'unknown', start: null, checkedAt: now, detail: code ?? String(err) };
    detail = 'EPERM: exists, owned by another user';
  }
  return { pid, status: 'alive', start: start(), checkedAt: now, detail };
}
