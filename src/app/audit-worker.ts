/**
 * The dashboard's bounds audit, run in a worker thread with a heap of its own (see
 * `backgroundAudit` in run-dashboard.tsx): it samples up to 256 MB of session tails, and its
 * garbage then never grows the dashboard's heap; the worker's memory goes when it ends.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadAudit } from '../cli/audit-command.js';
import type { AuditResult } from '../model/audit.js';

const { homes, now } = workerData as { homes: string[]; now: number };
const results: AuditResult[] = [];
for (const home of homes) results.push(await loadAudit(home, { now }));
parentPort?.postMessage(results);
