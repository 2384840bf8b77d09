/**
 * A generated demo home whose session and run ids are its own. The generator derives ids from
 * scenario names, so two generated homes would share every id (real session ids are UUIDs and never
 * do); this rewrites the ids in every file and file name, keeping modification times.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { generateHome, type DemoManifest } from '../../src/demo/generate.js';
import { processStartIdentity } from '../../src/readers/process-probe.js';

const hex = (s: string, n: number) => createHash('sha256').update(s).digest('hex').slice(0, n);

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    const st = statSync(full);
    if (st.isDirectory()) walk(full, out);
    out.push(full);
  }
  return out;
}

/** `generateHome` in a new temp dir (`<base>/<label>/home`), with ids salted by `label`. */
export async function distinctHome(label: string, now: number): Promise<DemoManifest> {
  const base = path.join(mkdtempSync(path.join(os.tmpdir(), 'loop-dash-home-')), label);
  const m = await generateHome(path.join(base, 'home'), {
    now,
    livePid: process.pid,
    livePidStart: processStartIdentity(process.pid),
    deadPid: spawnSync(process.execPath, ['-e', '0']).pid!,
    repoDir: path.join(base, 'repo'),
  });
  const map = new Map<string, string>();
  for (const s of m.sessions) map.set(s.session, `${hex(`${label}:${s.session}`, 8)}${s.session.slice(8)}`);
  const runs = path.join(m.home, 'tmp', 'async-subagent-runs');
  try {
    for (const run of readdirSync(runs)) map.set(run, hex(`${label}:${run}`, run.length));
  } catch {
    /* no lanes */
  }
  // Runs dispatched with no session yet (placeholder lanes) have no status file to find them by.
  for (const p of m.placeholders) map.set(p.runId, hex(`${label}:${p.runId}`, p.runId.length));
  const swap = (text: string) => {
    let out = text;
    for (const [from, to] of map) out = out.split(from).join(to);
    return out;
  };
  // Contents first (deepest paths first for the renames that follow).
  const files = [...walk(m.home), ...walk(m.repoDir)].sort((a, b) => b.length - a.length);
  for (const f of files) {
    const st = statSync(f);
    if (st.isFile()) {
      const text = readFileSync(f, 'utf8');
      const swapped = swap(text);
      if (swapped !== text) {
        writeFileSync(f, swapped);
        utimesSync(f, st.atime, st.mtime);
      }
    }
  }
  for (const f of files) {
    const name = path.basename(f);
    const renamed = swap(name);
    if (renamed !== name) renameSync(f, path.join(path.dirname(f), renamed));
  }
  return {
    ...m,
    sessions: m.sessions.map((s) => ({
      ...s,
      session: map.get(s.session)!,
      root: s.root ? map.get(s.root)! : null,
      file: s.file ? swap(s.file) : null,
      checkpoint: s.checkpoint ? swap(s.checkpoint) : null,
    })),
    incidents: m.incidents.map((i) => ({ ...i, file: swap(i.file), session: map.get(i.session) ?? i.session })),
    placeholders: m.placeholders.map((p) => ({ ...p, runId: map.get(p.runId)!, root: map.get(p.root)! })),
  };
}
