/**
 * The dashboard's bounds audit, run in a short-lived child process (see `backgroundAudit` in
 * run-dashboard.tsx): it samples up to 256 MB of session tails, and that work's memory and garbage
 * then never grow the long-lived dashboard; all of it goes back when the child ends.
 *
 * Input: the JSON `{homes, now}` as the one argument; output: the audit results as JSON on stdout.
 */
import { loadAudit } from '../cli/audit-command.js';
import type { AuditResult } from '../model/audit.js';

const { homes, now } = JSON.parse(process.argv[2] ?? '{}') as { homes: string[]; now: number };
const results: AuditResult[] = [];
for (const home of homes) results.push(await loadAudit(home, { now }));
process.stdout.write(JSON.stringify(results));
