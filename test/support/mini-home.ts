/** Hand-made pi home pieces for reader and model tests (real files in a temp dir). */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cwdSlug, utcStamp } from '../../src/contract/paths.js';

export function tempHome(prefix = 'loop-dash-test-'): string {
  const base = mkdtempSync(path.join(os.tmpdir(), prefix));
  const home = path.join(base, 'home');
  mkdirSync(home, { recursive: true });
  return home;
}

export function sessionHeader(id: string, cwd: string, at: number): string {
  return JSON.stringify({ type: 'session', version: 3, id, timestamp: new Date(at).toISOString(), cwd }) + '\n';
}

export function customEntry(customType: string, data: unknown, at: number, id = `e${at}`): string {
  return JSON.stringify({ type: 'custom', id, parentId: null, timestamp: new Date(at).toISOString(), customType, data }) + '\n';
}

export function assistantEntry(at: number, fields: Record<string, unknown> = {}): string {
  return (
    JSON.stringify({
      type: 'message',
      id: `m${at}`,
      parentId: null,
      timestamp: new Date(at).toISOString(),
      message: { role: 'assistant', content: [{ type: 'text', text: 'ok' }], provider: 'p', model: 'm', usage: { input: 1, output: 1, totalTokens: 2 }, stopReason: 'stop', timestamp: at, ...fields },
    }) + '\n'
  );
}

/** Writes a root session file; returns its path. */
export function writeRootSession(home: string, opts: { id: string; cwd: string; at: number; lines?: string[] }): string {
  const dir = path.join(home, 'sessions', cwdSlug(opts.cwd));
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${utcStamp(opts.at)}_${opts.id}.jsonl`);
  writeFileSync(file, sessionHeader(opts.id, opts.cwd, opts.at) + (opts.lines ?? []).join(''));
  return file;
}
