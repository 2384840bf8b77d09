/**
 * Writes a realistic pi home (SPEC §3, byte for byte in pi's and loop-pi's formats) plus loop-dash
 * checkpoints (SPEC §4.1) from the scenario plan, and returns a manifest of what the dashboard must
 * show for each session. It only writes files; `scenarios.ts` says what they contain.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { homePaths } from '../contract/paths.js';
import {
  addScale,
  demoPlan,
  demoShortId,
  iso,
  type DemoExpect,
  type DemoScale,
  type EntrySpec,
  type HomePlan,
  type ScenarioContext,
  type SessionPlan,
} from './scenarios.js';
import { makeDir, writeFileAtomic, writeJsonAtomic } from './write-atomic.js';

/** Options of {@link generateHome}; `now` is epoch ms and every time in the home is relative to it. */
export interface GenerateHomeOptions {
  now: number;
  /** Host written into checkpoints; default `os.hostname()`. */
  host?: string;
  /** A running process for the live sessions' checkpoints (usually the demo's own). */
  livePid: number;
  livePidStart: string | null;
  /** A pid that is gone, for the crashed root (→ lost). */
  deadPid: number;
  /** The target repository for state logs; default `<home>/../demo-repo`. */
  repoDir?: string;
  /** Extra bulk roots and lanes, for benchmarks. */
  scale?: DemoScale;
}

/** One session of the demo and what the dashboard must show for it at `now`. */
export interface DemoManifestSession {
  session: string;
  name: string;
  role: 'root' | 'lane';
  /** The root's session id for a lane, else null. */
  root: string | null;
  /** The session file, or null while pi has not written it. */
  file: string | null;
  checkpoint: string | null;
  expect: DemoExpect;
}

/** One incident file of the demo. */
export interface DemoManifestIncident {
  file: string;
  class: string;
  session: string;
  limit: string | null;
}

/** What {@link generateHome} wrote, with the expected dashboard values. */
export interface DemoManifest {
  home: string;
  repoDir: string;
  now: number;
  sessions: DemoManifestSession[];
  incidents: DemoManifestIncident[];
  /** Lanes dispatched with no session yet: shown as placeholder rows keyed `run:<runId>` under their root. */
  placeholders: { runId: string; root: string; lane: string }[];
}

/** The id of entry `n` of a session file (8 hex digits, like pi's). */
export const entryId = (sessionId: string, n: number | string): string => demoShortId(`${sessionId}:entry:${n}`);

/** One session-file line in pi's layout: `{type, id, parentId, timestamp, …}` and a newline. */
export function entryLine(spec: EntrySpec, id: string, parentId: string | null): string {
  const { type, ...rest } = spec.body;
  return JSON.stringify({ type, id, parentId, timestamp: iso(spec.at), ...rest }) + '\n';
}

/** Build a demo home in `dir` (see `scenarios.ts` for what is in it). */
export async function generateHome(dir: string, opts: GenerateHomeOptions): Promise<DemoManifest> {
  const home = path.resolve(dir);
  const ctx: ScenarioContext = {
    now: opts.now,
    home,
    repoDir: path.resolve(opts.repoDir ?? path.join(home, '..', 'demo-repo')),
    host: opts.host ?? os.hostname(),
    livePid: opts.livePid,
    livePidStart: opts.livePidStart,
    deadPid: opts.deadPid,
  };
  const plan = demoPlan(ctx);
  if (opts.scale) addScale(plan, ctx, opts.scale);
  await writePlan(plan);
  return manifestOf(plan);
}

/** The manifest of a plan: expected values as the scenarios wrote them, incidents counted per session. */
export function manifestOf(plan: HomePlan): DemoManifest {
  const counts = new Map<string, number>();
  for (const i of plan.incidents) counts.set(i.session, (counts.get(i.session) ?? 0) + 1);
  return {
    home: plan.home,
    repoDir: plan.repoDir,
    now: plan.now,
    sessions: plan.sessions.map((s) => ({
      session: s.id,
      name: s.name,
      role: s.role,
      root: s.rootId,
      file: s.writeFile ? s.sessionFile : null,
      checkpoint: s.checkpointFile,
      expect: { ...s.expect, incidents: counts.get(s.id) ?? 0 },
    })),
    incidents: plan.incidents.map((i) => ({ file: i.file, class: i.cls, session: i.session, limit: i.limit })),
    placeholders: plan.placeholders.map((p) => ({ ...p })),
  };
}

async function writePlan(plan: HomePlan): Promise<void> {
  const cwds = new Set(plan.sessions.filter((s) => s.role === 'root').map((s) => s.cwd));
  for (const d of [...plan.dirs, ...cwds]) makeDir(d);
  const p = homePaths(plan.home);
  await writeJsonAtomic(p.settings, plan.settings);
  await writeJsonAtomic(p.models, plan.models);

  // Modification times match the content (pi touches a session file with each append), so a
  // reader falling back to mtime sees the same age as the entries say.
  await inPool(plan.sessions, 8, async (s) => {
    if (s.writeFile) {
      await writeSessionFile(s);
      await touch(s.sessionFile, s.entries[s.entries.length - 1]?.at ?? s.createdAt);
    }
    if (s.checkpoint && s.checkpointFile) {
      await writeJsonAtomic(s.checkpointFile, s.checkpoint);
      await touch(s.checkpointFile, s.checkpoint.updatedAt);
    }
  });
  await inPool(plan.jsonFiles, 16, (f) => writeJsonAtomic(f.file, f.body, { mkdir: true }));
  await inPool(plan.stateLogs, 16, async (l) => {
    makeDir(path.dirname(l.file));
    await fs.writeFile(l.file, l.lines.map((x) => JSON.stringify(x) + '\n').join(''));
  });
  await inPool(plan.textFiles, 16, (t) => writeFileAtomic(t.file, t.text, { mkdir: true }));
  // Incidents are written in one go (SPEC §3.2).
  await inPool(plan.incidents, 16, async (i) => {
    await writeJsonAtomic(i.file, i.body, { mkdir: true });
    const at = Date.parse(String(i.body['at']));
    if (Number.isFinite(at)) await touch(i.file, at);
  });
}

/** Set a file's access and modification time to `ms` (epoch ms). */
async function touch(file: string, ms: number): Promise<void> {
  const t = new Date(ms);
  await fs.utimes(file, t, t);
}

/** Large files are written in chunks of about this size. */
const CHUNK_BYTES = 1 << 20;

/** Header, entries with ids and parent links, and (for benchmark homes) filler in large chunks. */
async function writeSessionFile(s: SessionPlan): Promise<void> {
  makeDir(path.dirname(s.sessionFile));
  let n = 0;
  let parent: string | null = null;
  const line = (spec: EntrySpec): string => {
    n += 1;
    const id = entryId(s.id, n);
    const text = entryLine(spec, id, parent);
    parent = id;
    return text;
  };
  const head = JSON.stringify(s.header) + '\n';
  const fill = s.fill;
  if (!fill || fill.bytes <= 0) {
    await fs.writeFile(s.sessionFile, head + s.entries.map(line).join(''));
    return;
  }

  const before = s.entries.slice(0, fill.index);
  const after = s.entries.slice(fill.index);
  // Ids are all 8 hex digits, so the tail's size is known before the filler is numbered.
  const tailBytes = after.reduce((sum, e) => sum + Buffer.byteLength(entryLine(e, '00000000', '00000000')), 0);
  const fh = await fs.open(s.sessionFile, 'w');
  try {
    let pending: string[] = [];
    let pendingBytes = 0;
    let total = 0;
    const push = async (text: string): Promise<void> => {
      const bytes = Buffer.byteLength(text);
      pending.push(text);
      pendingBytes += bytes;
      total += bytes;
      if (pendingBytes >= CHUNK_BYTES) await flush();
    };
    const flush = async (): Promise<void> => {
      if (pending.length === 0) return;
      await fh.write(pending.join(''));
      pending = [];
      pendingBytes = 0;
    };

    await push(head);
    for (const e of before) await push(line(e));
    const from = before[before.length - 1]?.at ?? s.createdAt;
    const to = after[0]?.at ?? from;
    const sample = fillerPair(s, 0, from).reduce((sum, e) => sum + Buffer.byteLength(entryLine(e, '00000000', '00000000')), 0);
    const pairs = Math.max(0, Math.ceil((fill.bytes - total - tailBytes) / sample));
    for (let i = 0; i < pairs; i += 1) {
      const at = from + Math.floor(((to - from) * (i + 1)) / (pairs + 1));
      for (const e of fillerPair(s, i, at)) await push(line(e));
    }
    for (const e of after) await push(line(e));
    await flush();
  } finally {
    await fh.close();
  }
}

const FILLER_TEXT =
  'Reading the module again to line up the call sites with the plan; nothing here changes behaviour, ' +
  'it only moves the request options into one place so retries and timeouts are decided by the client. ';

/** An ordinary tool turn, used to pad benchmark files (output below audit's 500-token floor). */
function fillerPair(s: SessionPlan, i: number, at: number): EntrySpec[] {
  const callId = `call_${demoShortId(`${s.id}:filler:${i}`)}`;
  return [
    {
      at,
      body: {
        type: 'message',
        message: {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: FILLER_TEXT.repeat(4) },
            { type: 'toolCall', id: callId, name: 'read', arguments: { path: `src/module-${i % 97}.ts` } },
          ],
          api: s.model.api,
          provider: s.model.provider,
          model: s.model.id,
          usage: { input: 30_000, output: 180, cacheRead: 24_000, cacheWrite: 0, totalTokens: 30_180, cost: { input: 0.0375, output: 0.0018, cacheRead: 0.003, cacheWrite: 0, total: 0.0423 } },
          stopReason: 'toolUse',
          timestamp: at,
        },
      },
    },
    {
      at,
      body: {
        type: 'message',
        message: { role: 'toolResult', toolCallId: callId, toolName: 'read', content: [{ type: 'text', text: FILLER_TEXT.repeat(8) }], isError: false, timestamp: at },
      },
    },
  ];
}

/** Run `fn` over `items` with at most `limit` in flight. */
async function inPool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next]!;
      next += 1;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
