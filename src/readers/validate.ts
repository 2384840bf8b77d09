/**
 * zod validation at the reader boundary, with issues turned into warnings (path + message).
 */
import type { z } from 'zod';
import type { Warning } from '../model/types.js';
import { fastAccept, NOT_SURE } from './fast-accept.js';
import { isJsonObject } from './json-text.js';

/** `steps[0].agent`-style path of a zod issue; `(root)` for the value itself. */
export function issuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(root)' : out;
}

/** One line describing up to `max` zod issues. */
export function describeIssues(issues: readonly z.core.$ZodIssue[], max = 4): string {
  const parts = issues.slice(0, max).map((i) => `${issuePath(i.path)}: ${i.message}`);
  if (issues.length > max) parts.push(`… ${issues.length - max} more`);
  return parts.join('; ');
}

/** Strict validation: the parsed value or one warning listing the issues. */
export function validateStrict<S extends z.ZodType>(
  schema: S,
  value: unknown,
  file: string,
  line: number | null = null,
): { data: z.infer<S> | null; warnings: Warning[] } {
  const fast = fastAccept(schema, value);
  if (fast !== NOT_SURE) return { data: fast, warnings: [] };
  const r = schema.safeParse(value);
  if (r.success) return { data: r.data, warnings: [] };
  // Our contract's files carry `v: 1`: another version is said to be one, not dumped as a schema
  // failure (docs/CONTRACT.md, "Versioned").
  if (r.error.issues.some((i) => i.path.length === 1 && i.path[0] === 'v') && value !== null && typeof value === 'object' && 'v' in value) {
    const v = (value as { v: unknown }).v;
    return { data: null, warnings: [{ file, line, message: `unknown version: v ${JSON.stringify(v) ?? String(v)} (this loop-dash reads version 1); not read`, severity: 'error' }] };
  }
  return { data: null, warnings: [{ file, line, message: `schema: ${describeIssues(r.error.issues)}`, severity: 'error' }] };
}

/**
 * Lenient validation of an object whose fields are mostly optional: a field that fails its
 * schema is dropped (and named in a warning) so the rest of the record still shows. Fails only
 * when the value is not an object or a required field is bad.
 */
export function validateLenient<S extends z.ZodType>(
  schema: S,
  value: unknown,
  file: string,
  line: number | null = null,
): { data: z.infer<S> | null; warnings: Warning[] } {
  const fast = fastAccept(schema, value);
  if (fast !== NOT_SURE) return { data: fast, warnings: [] };
  const first = schema.safeParse(value);
  if (first.success) return { data: first.data, warnings: [] };
  const warning = (message: string): Warning => ({ file, line, message, severity: 'error' });
  if (!isJsonObject(value)) return { data: null, warnings: [warning(`schema: ${describeIssues(first.error.issues)}`)] };
  const bad = new Set<string>();
  for (const issue of first.error.issues) {
    const key = issue.path[0];
    if (typeof key !== 'string') return { data: null, warnings: [warning(`schema: ${describeIssues(first.error.issues)}`)] };
    bad.add(key);
  }
  const trimmed: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (!bad.has(k) && k !== '__proto__') trimmed[k] = v;
  const second = schema.safeParse(trimmed);
  const message = `schema: ${describeIssues(first.error.issues)}`;
  if (!second.success) return { data: null, warnings: [warning(message)] };
  return { data: second.data, warnings: [warning(`${message} (field${bad.size > 1 ? 's' : ''} ignored)`)] };
}
