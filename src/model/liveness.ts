/**
 * Is the process behind a checkpoint still there? (SPEC §2 `lost`, §4.1.) Pure: the probe is
 * taken by readers/process-probe; `now` is injected.
 */
import type { Checkpoint } from '../contract/checkpoint.js';
import type { ProcessProbe } from './types.js';

/** A checkpoint from another host older than this is stale (we cannot probe its pid). */
export const REMOTE_STALE_MS = 60_000;

/** How a checkpoint's process was judged. */
export type LivenessStatus = 'alive' | 'gone' | 'pid-reused' | 'unknown' | 'remote-fresh' | 'remote-stale';

/** The verdict plus a short human reason. */
export interface Liveness {
  status: LivenessStatus;
  detail: string;
}

/**
 * Same host: judge by pid and start identity (a live pid whose start differs is a new process
 * that reused the pid). Other host: only the checkpoint's age can tell.
 */
export function judgeLiveness(
  checkpoint: Pick<Checkpoint, 'pid' | 'pidStart' | 'host' | 'updatedAt'>,
  probe: ProcessProbe | null,
  localHost: string,
  now: number,
): Liveness {
  if (checkpoint.host.toLowerCase() !== localHost.toLowerCase()) {
    const age = now - checkpoint.updatedAt;
    const ageText = `${Math.round(age / 1000)} s`;
    return age > REMOTE_STALE_MS
      ? { status: 'remote-stale', detail: `on host ${checkpoint.host}; checkpoint not updated for ${ageText}` }
      : { status: 'remote-fresh', detail: `on host ${checkpoint.host}; checkpoint updated ${ageText} ago` };
  }
  if (probe === null || probe.pid !== checkpoint.pid) {
    return { status: 'unknown', detail: `pid ${checkpoint.pid} not probed yet` };
  }
  switch (probe.status) {
    case 'gone':
      return { status: 'gone', detail: `process ${checkpoint.pid} is gone` };
    case 'unknown':
      return { status: 'unknown', detail: `could not tell whether process ${checkpoint.pid} exists` };
    case 'alive':
      if (checkpoint.pidStart !== null && probe.start !== null && checkpoint.pidStart !== probe.start) {
        return { status: 'pid-reused', detail: `process gone (pid ${checkpoint.pid} reused by another process)` };
      }
      if (checkpoint.pidStart === null || probe.start === null) {
        return { status: 'alive', detail: `pid ${checkpoint.pid} exists (start identity not comparable)` };
      }
      return { status: 'alive', detail: `process ${checkpoint.pid} is running${probe.linked ? '; linked, its exit shows at once' : ''}` };
    default: {
      const never: never = probe.status;
      return never;
    }
  }
}
