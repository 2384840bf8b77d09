/**
 * `loop-dash audit [--home DIR]… [--json] [--min-output N]` (SPEC §8): gathers one home's limits,
 * budgets, lanes and measured rates, and hands them to the pure audit. Exit 0 when no row is
 * below bound, 1 when one is, 2 on bad input. Nothing here calls process.exit.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import {
  auditExitCode,
  buildAudit,
  DEFAULT_MIN_OUTPUT,
  formatAuditDuration,
  modelCatalog,
  modelLabel,
  parseAgentFile,
  resolveModelRef,
  subagentDefaultTimeout,
  uniqueKeys,
  type AgentDef,
  type AuditResult,
  type LaneLimitInput,
  type ModelKey,
} from '../model/audit.js';
import { limitsFromSettings, type HomeLimits } from '../model/limits.js';
import type { CheckpointRecord, LaneRunStatus, Warning } from '../model/types.js';
import { readCheckpointFile } from '../readers/checkpoint-file.js';
import { walkHome } from '../readers/home-walk.js';
import { homePaths } from '../contract/paths.js';
import { looksLikePiHome } from './resolve-homes.js';
import { readLaneStatus } from '../readers/lane-status.js';
import { DEFAULT_SAMPLE_BYTES, sampleRates, type SessionSampleFile } from '../readers/rate-sampler.js';
import { readHomeSettings } from '../readers/settings-file.js';
import { auditLines } from '../views/audit-lines.js';

/** Where the command writes. */
export interface AuditIo {
  out: (s: string) => void;
  err: (s: string) => void;
  /** Width of the text report; default 120. */
  columns?: number;
}

/** Options of {@link runAudit}; `minOutput` is taken as the user typed it. */
export interface RunAuditOptions {
  homes: string[];
  json: boolean;
  minOutput?: string | number;
  /** Epoch ms the report is stamped with. */
  now: number;
  io: AuditIo;
  /** Bytes read from the end of each session file (default 8 MiB). */
  tailBytes?: number;
}

/** Options of {@link loadAudit}. */
export interface LoadAuditOptions {
  now: number;
  minOutput?: number;
  tailBytes?: number;
}

/** Agent files are a few KiB; anything past this is not read. */
const AGENT_FILE_MAX_BYTES = 64 * 1024;
const AGENT_FILES_MAX = 500;

/** `--min-output`: a whole number of tokens ≥ 1, or null when it is not one. */
export function parseMinOutput(value: string | number | undefined): number | null {
  if (value === undefined) return DEFAULT_MIN_OUTPUT;
  const text = String(value).trim();
  if (!/^\d+$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) && n >= 1 ? n : null;
}

/** Reads `<home>/agents/*.md` (pi-subagents user agents); a missing directory is no agent. */
export async function readAgentFiles(home: string): Promise<{ agents: AgentDef[]; warnings: Warning[] }> {
  const dir = path.join(home, 'agents');
  const warnings: Warning[] = [];
  let names: string[];
  try {
    names = (await fsp.readdir(dir)).filter((n) => n.endsWith('.md') && !n.startsWith('.')).sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') warnings.push({ file: dir, line: null, message: `cannot read directory (${code ?? String(err)})` });
    return { agents: [], warnings };
  }
  const agents: AgentDef[] = [];
  for (const name of names.slice(0, AGENT_FILES_MAX)) {
    const file = path.join(dir, name);
    try {
      const handle = await fsp.open(file, 'r');
      try {
        const st = await handle.stat();
        if (!st.isFile()) continue;
        const buf = Buffer.alloc(Math.min(st.size, AGENT_FILE_MAX_BYTES));
        const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
        const agent = parseAgentFile(file, buf.subarray(0, bytesRead).toString('utf8'), name.slice(0, -'.md'.length));
        for (const note of agent.notes) warnings.push({ file, line: null, message: note, severity: 'warning' });
        agents.push(agent);
      } finally {
        await handle.close();
      }
    } catch (err) {
      warnings.push({ file, line: null, message: `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}` });
    }
  }
  return { agents, warnings };
}

/** What the gathering found: which models the home uses and which lane deadlines apply to which. */
export interface ModelUsage {
  models: ModelKey[];
  lanes: LaneLimitInput[];
}

/** The facts {@link deriveModelUsage} works from. */
export interface UsageFacts {
  files: readonly SessionSampleFile[];
  checkpoints: readonly CheckpointRecord[];
  statuses: readonly LaneRunStatus[];
  agents: readonly AgentDef[];
  settings: Record<string, unknown> | null;
  /** Models whose `provider/id` is known (models.json, sessions): references resolve against them. */
  known: readonly ModelKey[];
}

/**
 * Which models go through which limit (pure). The loop-pi and pi limits apply to every model a
 * root or lane of the home uses: seen in a session, named by a checkpoint, a lane step, an agent
 * file or the default model. A lane deadline applies to the models of that lane's agent.
 */
export function deriveModelUsage(f: UsageFacts): ModelUsage {
  const known = uniqueKeys([...f.known, ...f.files.flatMap((x) => x.models)]);
  const resolve = (ref: string | null | undefined): ModelKey[] => (ref ? resolveModelRef(ref, known) : []);
  const fileModels = new Map<string, ModelKey[]>(f.files.map((x) => [x.file, x.models]));
  const runModels = new Map<string, ModelKey[]>();
  for (const x of f.files) if (x.runId) runModels.set(x.runId, [...(runModels.get(x.runId) ?? []), ...x.models]);
  const ofFile = (file: string | null | undefined): ModelKey[] => (file ? fileModels.get(file) ?? [] : []);

  const agentModels = new Map<string, ModelKey[]>();
  const addAgent = (agent: string | null | undefined, models: ModelKey[]) => {
    if (!agent) return;
    agentModels.set(agent, [...(agentModels.get(agent) ?? []), ...models]);
  };
  for (const a of f.agents) addAgent(a.name, a.models.flatMap((m) => resolve(m)));
  for (const c of f.checkpoints) addAgent(c.checkpoint.agent, [...resolve(c.checkpoint.model), ...ofFile(c.checkpoint.sessionFile)]);
  const statusAgents = (s: LaneRunStatus): string[] => [...new Set(s.steps.map((x) => x.agent).filter((a): a is string => !!a))].sort();
  for (const s of f.statuses) {
    for (const step of s.steps) addAgent(step.agent, [...resolve(step.model), ...ofFile(step.sessionFile)]);
    const agents = statusAgents(s);
    // A one-agent run: every model its lane sessions used is that agent's.
    if (agents.length === 1) addAgent(agents[0], [...(runModels.get(s.runId) ?? []), ...ofFile(s.sessionFile)]);
  }

  const laneModelsAll: ModelKey[] = [
    ...f.files.filter((x) => x.role === 'lane').flatMap((x) => x.models),
    ...[...agentModels.values()].flat(),
    ...f.statuses.flatMap((s) => s.steps.flatMap((x) => resolve(x.model))),
  ];
  const defaults: ModelKey[] = [];
  const dm = f.settings?.defaultModel;
  const dp = f.settings?.defaultProvider;
  if (typeof dm === 'string' && dm.trim() !== '') {
    defaults.push(...(typeof dp === 'string' && dp.trim() !== '' && !dm.includes('/') ? resolve(`${dp}/${dm}`) : resolve(dm)));
  }
  const models = uniqueKeys([
    ...f.files.flatMap((x) => x.models),
    ...f.checkpoints.flatMap((c) => resolve(c.checkpoint.model)),
    ...laneModelsAll,
    ...defaults,
  ]);

  const lanes: LaneLimitInput[] = [];
  // pi-subagents runs, grouped by agent: the smallest deadline of an agent's runs binds.
  const groups = new Map<string, { configuredMs: number; runs: string[]; models: ModelKey[] }>();
  for (const s of f.statuses) {
    const configured = laneDeadlineMs(s);
    if (configured === null) continue;
    const agents = statusAgents(s);
    const key = agents.length ? agents.join(', ') : '(no agent named)';
    const models = [
      ...s.steps.flatMap((x) => [...resolve(x.model), ...ofFile(x.sessionFile)]),
      ...agents.flatMap((a) => agentModels.get(a) ?? []),
      ...(runModels.get(s.runId) ?? []),
      ...ofFile(s.sessionFile),
    ];
    const g = groups.get(key) ?? { configuredMs: configured, runs: [], models: [] };
    g.configuredMs = Math.min(g.configuredMs, configured);
    g.runs.push(s.runId);
    g.models.push(...models);
    groups.set(key, g);
  }
  for (const [key, g] of groups) {
    const runs = g.runs.length > 3 ? `${g.runs.slice(0, 3).join(', ')}, …` : g.runs.join(', ');
    lanes.push({
      limit: `lane deadline [${key}]`,
      configuredMs: g.configuredMs,
      models: uniqueKeys(g.models),
      source: `pi-subagents status.json timeoutMs/deadlineAt, the smallest of ${g.runs.length} run${g.runs.length === 1 ? '' : 's'} (${runs})`,
    });
  }
  for (const a of f.agents) {
    if (a.timeoutMs === null) continue;
    lanes.push({ limit: `agent timeout [${a.name}]`, configuredMs: a.timeoutMs, models: uniqueKeys(agentModels.get(a.name) ?? []), source: `${a.file} frontmatter` });
  }
  const def = subagentDefaultTimeout(f.settings);
  if (def) lanes.push({ limit: 'subagent default timeout', configuredMs: def.timeoutMs, models: uniqueKeys(laneModelsAll), source: `settings.json ${def.path}` });
  return { models, lanes };
}

/** A run's deadline: its `timeoutMs`, else `deadlineAt − startedAt`; null when neither is usable. */
function laneDeadlineMs(s: LaneRunStatus): number | null {
  if (s.timeoutMs !== null && Number.isFinite(s.timeoutMs) && s.timeoutMs > 0) return s.timeoutMs;
  if (s.deadlineAt !== null && s.startedAt !== null && s.deadlineAt > s.startedAt) return s.deadlineAt - s.startedAt;
  return null;
}

/** Running sessions keep the limits they read at their start: say so when they differ from the settings. */
function checkpointLimitNotes(checkpoints: readonly CheckpointRecord[], limits: HomeLimits): string[] {
  const notes: string[] = [];
  for (const c of checkpoints) {
    const l = c.checkpoint.limits;
    if (!l || c.checkpoint.state === 'ended') continue;
    const diffs: string[] = [];
    for (const [key, label] of [
      ['inactivityMs', 'inactivity'],
      ['absoluteMs', 'absolute'],
      ['episodeMs', 'episode'],
    ] as const) {
      // A field a bad checkpoint lacked falls back to the settings (checkpoint-file.ts).
      if (typeof l[key] === 'number' && l[key] !== limits[key]) diffs.push(`${label} ${formatAuditDuration(l[key])} (settings: ${formatAuditDuration(limits[key])})`);
    }
    if (typeof l.episodeMaxAttempts === 'number' && l.episodeMaxAttempts !== limits.episodeMaxAttempts) diffs.push(`episode attempts ${l.episodeMaxAttempts} (settings: ${limits.episodeMaxAttempts})`);
    if (diffs.length) {
      notes.push(`Session ${c.checkpoint.session} (${c.checkpoint.role}) runs with the limits it read at its start — ${diffs.join(', ')}; it keeps them until it restarts.`);
    }
  }
  return notes;
}

/** Gathers and audits one home. Never throws on bad files: they become warnings. */
export async function loadAudit(home: string, opts: LoadAuditOptions): Promise<AuditResult> {
  const minOutput = opts.minOutput ?? DEFAULT_MIN_OUTPUT;
  const walk = await walkHome(home);
  const warnings: Warning[] = walk.problems.map((p) => ({ file: p.file, line: null, message: p.message }));
  const settingsRead = await readHomeSettings(home);
  warnings.push(...settingsRead.warnings);
  const { limits, notes: settingsNotes } = limitsFromSettings(settingsRead.settings.settings);
  const catalog = modelCatalog(settingsRead.settings.models);

  const checkpoints: CheckpointRecord[] = [];
  const statuses: LaneRunStatus[] = [];
  for (const f of walk.files) {
    if (f.kind === 'checkpoint') {
      const r = await readCheckpointFile(home, f.file);
      if (!r.transient) warnings.push(...r.warnings);
      if (r.record) checkpoints.push(r.record);
    } else if (f.kind === 'lane-status') {
      const r = await readLaneStatus(home, f.file);
      if (!r.transient) warnings.push(...r.warnings);
      if (r.record) statuses.push(r.record);
    }
  }
  const { agents, warnings: agentWarnings } = await readAgentFiles(home);
  warnings.push(...agentWarnings);

  const sample = await sampleRates(home, {
    minOutput,
    tailBytes: opts.tailBytes ?? DEFAULT_SAMPLE_BYTES,
    files: walk.files.filter((f) => f.kind === 'session').map((f) => f.file),
    checkpoints,
  });
  warnings.push(...sample.warnings);

  const usage = deriveModelUsage({
    files: sample.files,
    checkpoints,
    statuses,
    agents,
    settings: settingsRead.settings.settings,
    known: [...catalog.entries, ...sample.models].map((m) => ({ provider: m.provider, id: m.id })),
  });
  const used = new Set(usage.models.map(modelLabel));
  const configuredOnly = catalog.entries.map((e) => modelLabel(e)).filter((l) => !used.has(l));
  const notes = checkpointLimitNotes(checkpoints, limits);
  if (configuredOnly.length) {
    notes.push(`Configured in models.json but never seen in use (no rows; their rate would be UNKNOWN): ${configuredOnly.join(', ')}.`);
  }
  return buildAudit({
    home,
    now: opts.now,
    minOutput,
    limits,
    settingsNotes,
    catalog,
    rates: sample.models,
    models: usage.models,
    lanes: usage.lanes,
    excluded: sample.excluded,
    sampled: sample.sampled,
    notes,
    warnings: warnings.map((w) => ({ file: w.file, line: w.line, message: w.message })),
  });
}

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await fsp.stat(p)).isDirectory();
  } catch {
    return false;
  }
}

/** Runs the audit for every home and prints it; returns the exit code (0 OK, 1 below bound, 2 bad input). */
export async function runAudit(opts: RunAuditOptions): Promise<number> {
  const { io } = opts;
  const minOutput = parseMinOutput(opts.minOutput);
  if (minOutput === null) {
    io.err(`loop-dash audit: --min-output must be a whole number of tokens ≥ 1 (got ${JSON.stringify(String(opts.minOutput))})\n`);
    return 2;
  }
  if (opts.homes.length === 0) {
    io.err('loop-dash audit: no pi home to audit (pass --home DIR)\n');
    return 2;
  }
  for (const home of opts.homes) {
    if (!(await isDirectory(home))) {
      io.err(`loop-dash audit: ${home} is not a directory; pass an existing pi home with --home DIR\n`);
      return 2;
    }
    // A gate that passes on a mistyped path (the directory above the home, say) gates nothing: a
    // directory with none of a pi home's files is said to be none (the check status makes too).
    if (!looksLikePiHome(home)) {
      io.err(`loop-dash audit: ${home} does not look like a pi home (no settings.json, models.json, sessions/, extensions/ or loop-dash/ in it); pass your pi agent directory with --home DIR\n`);
      return 2;
    }
  }
  const results: AuditResult[] = [];
  for (const home of opts.homes) {
    results.push(await loadAudit(home, { now: opts.now, minOutput, ...(opts.tailBytes !== undefined ? { tailBytes: opts.tailBytes } : {}) }));
  }
  if (opts.json) {
    const doc = results.length === 1 ? results[0] : { v: 1, audits: results };
    io.out(JSON.stringify(doc, null, 2) + '\n');
  } else {
    const width = Math.max(60, opts.io.columns ?? 120);
    io.out(results.map((r) => auditLines(r, width).join('\n')).join('\n\n') + '\n');
  }
  return auditExitCode(results);
}
