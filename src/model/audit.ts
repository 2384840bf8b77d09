/**
 * `loop-dash audit` (SPEC §8): every limit between the loop and the model, judged against the
 * time the model's token budget needs at its slowest measured generation rate. Pure: no fs, no
 * clock — readers measure the rates, this module only does the arithmetic and the verdicts.
 *
 * Why the bound comes from the budget: a timeout sized from an observed latency tail censors the
 * tail it was sized from (a cut generation is a retry, not a long call), so the safe rule is
 * `bound ≥ maxTokens / slowest rate + time to first token`, on every hop; the smallest binds.
 */
import { z } from 'zod';
import { episodeCovers, MAX_TIMER_MS, piRetryDelayMs, type HomeLimits } from './limits.js';

/** The four verdicts of SPEC §8. */
export type AuditVerdict = 'OK' | 'BELOW BOUND' | 'UNKNOWN' | 'NOT A REQUEST BOUND';

/**
 * What a limit cuts: `request` a whole request (its total time), `silence` a request that sends no
 * model event for that long (judged against the time to first token), `transport` neither — a
 * timer that streamed bytes or the response headers disarm.
 */
export type LimitKind = 'request' | 'silence' | 'transport';

/** A model as `provider/id`; `provider` is null when only a bare id is known. */
export interface ModelKey {
  provider: string | null;
  id: string;
}

/** `provider/id`, or the bare id. */
export function modelLabel(m: ModelKey): string {
  return m.provider ? `${m.provider}/${m.id}` : m.id;
}

/** The stop reasons of a call that counts for a rate (SPEC §8). */
export const COUNTED_STOP_REASONS: readonly string[] = ['stop', 'toolUse', 'length'];
/** SPEC §8: a call counts only with at least this many output tokens (`--min-output`). */
export const DEFAULT_MIN_OUTPUT = 500;
/** loop-pi `backoff.ts` `SERVER_JITTER_RATIO`: the jitter added to a wait is below half of its floor. */
export const RETRY_JITTER_RATIO = 0.5;

// ---------------------------------------------------------------------------------------------
// Model references

const THINKING_SUFFIX = /:(off|minimal|low|medium|high|xhigh)$/i;

/**
 * The models a reference names, as agent files, lane steps and checkpoints write one
 * (`provider/id`, a bare `id`, either with a `:thinking` suffix). A known `provider/id` wins; a
 * bare id matches every known provider that has it (judging all of them is the safe side).
 */
export function resolveModelRef(ref: string, known: readonly ModelKey[]): ModelKey[] {
  const text = ref.trim().replace(THINKING_SUFFIX, '');
  if (text === '') return [];
  const exact = known.find((k) => modelLabel(k) === text);
  if (exact) return [exact];
  // An id may itself contain a slash (OpenRouter's `anthropic/claude-…`): a known id wins over a guessed provider.
  const byId = uniqueKeys(known.filter((k) => k.id === text));
  if (byId.length > 0) return byId;
  const slash = text.indexOf('/');
  if (slash > 0 && slash < text.length - 1) return [{ provider: text.slice(0, slash), id: text.slice(slash + 1) }];
  return [{ provider: null, id: text }];
}

/** Keys without duplicates, in first-seen order. */
export function uniqueKeys(keys: readonly ModelKey[]): ModelKey[] {
  const seen = new Map<string, ModelKey>();
  for (const k of keys) if (!seen.has(modelLabel(k))) seen.set(modelLabel(k), k);
  return [...seen.values()];
}

// ---------------------------------------------------------------------------------------------
// models.json: the token budgets

/** One model's budget as `models.json` states it. */
export interface CatalogEntry {
  provider: string;
  id: string;
  /** `modelOverrides.<id>.maxTokens` when valid, else `models[].maxTokens`, else null. */
  maxTokens: number | null;
  source: 'modelOverrides' | 'models' | null;
}

/** The budgets of a home (`models.json`), with a note for every value that could not be used. */
export interface ModelCatalog {
  entries: CatalogEntry[];
  notes: string[];
}

const maxTokensSchema = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const modelEntrySchema = z.looseObject({ id: z.string().min(1), maxTokens: z.unknown().optional() });

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads `providers.<p>.models[]` and `providers.<p>.modelOverrides.<id>` from a parsed `models.json`. */
export function modelCatalog(models: Record<string, unknown> | null): ModelCatalog {
  const entries = new Map<string, CatalogEntry>();
  const notes: string[] = [];
  const providers = models?.providers;
  if (models && providers !== undefined && !isObject(providers)) notes.push('models.json: providers is not an object; no budgets read');
  if (!isObject(providers)) return { entries: [], notes };
  const budget = (where: string, v: unknown): number | null => {
    if (v === undefined || v === null) return null;
    const r = maxTokensSchema.safeParse(v);
    if (r.success) return r.data;
    notes.push(`models.json: ${where}.maxTokens ${JSON.stringify(v)} is not a whole number of tokens ≥ 1; ignored`);
    return null;
  };
  for (const [provider, p] of Object.entries(providers)) {
    if (!isObject(p)) continue;
    const list = Array.isArray(p.models) ? p.models : [];
    list.forEach((raw, i) => {
      const r = modelEntrySchema.safeParse(raw);
      if (!r.success) {
        notes.push(`models.json: providers.${provider}.models[${i}] has no id; ignored`);
        return;
      }
      const maxTokens = budget(`providers.${provider}.models[${i}]`, r.data.maxTokens);
      entries.set(`${provider}/${r.data.id}`, { provider, id: r.data.id, maxTokens, source: maxTokens === null ? null : 'models' });
    });
    if (isObject(p.modelOverrides)) {
      for (const [id, o] of Object.entries(p.modelOverrides)) {
        if (!isObject(o)) continue;
        const maxTokens = budget(`providers.${provider}.modelOverrides.${id}`, o.maxTokens);
        if (maxTokens === null) continue;
        entries.set(`${provider}/${id}`, { provider, id, maxTokens, source: 'modelOverrides' });
      }
    }
  }
  return { entries: [...entries.values()], notes };
}

/** The budget of one model: from its provider's entry, or — for a bare id — the largest of its providers'. */
export function maxTokensFor(catalog: ModelCatalog, key: ModelKey): { maxTokens: number | null; note: string } {
  const matches = catalog.entries.filter((e) => e.id === key.id && (key.provider === null || e.provider === key.provider));
  const known = matches.filter((e) => e.maxTokens !== null);
  if (known.length === 0) {
    return {
      maxTokens: null,
      note:
        matches.length > 0
          ? `maxTokens unknown: models.json lists ${modelLabel(key)} without a maxTokens`
          : `maxTokens unknown: ${modelLabel(key)} is not in models.json (pi's built-in catalogue is not read)`,
    };
  }
  // Several providers for a bare id: the largest budget is the safe side.
  const best = known.reduce((a, b) => ((b.maxTokens ?? 0) > (a.maxTokens ?? 0) ? b : a));
  const where = best.source === 'modelOverrides' ? `modelOverrides.${best.id}` : 'models[]';
  return { maxTokens: best.maxTokens, note: `maxTokens ${best.maxTokens} from models.json providers.${best.provider}.${where}` };
}

// ---------------------------------------------------------------------------------------------
// Rates

/** What the audit knows of one model's measured rates. */
export interface ModelRateInput {
  provider: string | null;
  id: string;
  /** Generation rate (output tokens per second) of every call that counts. */
  tokPerS: number[];
  /** Longest measured time to the first model event, or null when none was recorded. */
  firstTokenMs: number | null;
  /** Calls of this model left out, by reason. */
  excluded: Record<string, number>;
}

/** SPEC §8 `rate`: the slowest and median measured rate and how many calls they come from. */
export interface RateSummary {
  slowestTokPerS: number | null;
  medianTokPerS: number | null;
  calls: number;
}

/** Slowest and median of the given rates (non-finite or non-positive rates are ignored). */
export function summarizeRates(rates: readonly number[]): RateSummary {
  const sorted = rates.filter((r) => Number.isFinite(r) && r > 0).sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return { slowestTokPerS: null, medianTokPerS: null, calls: 0 };
  const mid = Math.floor(n / 2);
  const median = n % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { slowestTokPerS: sorted[0]!, medianTokPerS: median, calls: n };
}

interface MergedRate {
  summary: RateSummary;
  firstTokenMs: number | null;
  excluded: Record<string, number>;
}

/** The rates of `key`: its own, or — for a bare id — every provider's calls of that id together. */
function rateFor(rates: readonly ModelRateInput[], key: ModelKey): MergedRate {
  const matches = rates.filter((r) => r.id === key.id && (key.provider === null || r.provider === key.provider));
  const all = matches.flatMap((m) => m.tokPerS);
  const ttfts = matches.map((m) => m.firstTokenMs).filter((t): t is number => t !== null);
  const excluded: Record<string, number> = {};
  for (const m of matches) for (const [k, v] of Object.entries(m.excluded)) excluded[k] = (excluded[k] ?? 0) + v;
  return { summary: summarizeRates(all), firstTokenMs: ttfts.length ? Math.max(...ttfts) : null, excluded };
}

// ---------------------------------------------------------------------------------------------
// Agent files and pi-subagents settings (lane deadlines)

/** A pi-subagents agent file (`<home>/agents/<name>.md`), as far as the audit needs it. */
export interface AgentDef {
  name: string;
  file: string;
  /** Model references from the frontmatter (`model: a, b` lists fallbacks). */
  models: string[];
  /** The agent's own run timeout, or null. */
  timeoutMs: number | null;
  notes: string[];
}

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h)$/i;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, sec: 1000, m: 60_000, min: 60_000, h: 3_600_000 };

/** A positive finite number of ms within the timer range, or null. */
function timerMsOrNull(v: number): number | null {
  return Number.isFinite(v) && v >= 1 && v <= MAX_TIMER_MS ? Math.round(v) : null;
}

/**
 * Reads the YAML frontmatter of an agent file tolerantly: flat `key: value` lines only (what
 * agent files use), quotes and trailing comments stripped. Timeouts: `timeoutMs` (ms),
 * `timeoutSeconds`/`maxRuntimeSeconds` (s), or `timeout` with a unit (`45m`, `600s`, `1h`).
 */
export function parseAgentFile(file: string, text: string, fallbackName: string): AgentDef {
  const agent: AgentDef = { name: fallbackName, file, models: [], timeoutMs: null, notes: [] };
  const body = text.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
  if (!body.startsWith('---\n')) return agent;
  const end = body.indexOf('\n---', 4);
  if (end < 0) {
    agent.notes.push(`${file}: frontmatter has no closing ---; ignored`);
    return agent;
  }
  const fields = new Map<string, string>();
  for (const line of body.slice(4, end).split('\n')) {
    const m = /^([A-Za-z_][\w-]*)\s*:\s*(.*)$/.exec(line);
    if (!m) continue;
    let value = m[2]!.trim();
    const quote = value[0];
    const close = quote === '"' || quote === "'" ? value.lastIndexOf(quote) : -1;
    value = close > 0 ? value.slice(1, close) : value.replace(/\s+#.*$/, '').trim();
    fields.set(m[1]!, value);
  }
  const name = fields.get('name');
  if (name) agent.name = name;
  const model = fields.get('model');
  if (model) agent.models = model.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const num = (key: string, scale: number): number | null | undefined => {
    const raw = fields.get(key);
    if (raw === undefined || raw === '') return undefined;
    const v = timerMsOrNull(Number(raw) * scale);
    if (v === null) agent.notes.push(`${file}: ${key}: ${raw} is not a usable duration; ignored`);
    return v;
  };
  const timeout =
    num('timeoutMs', 1) ??
    num('timeoutSeconds', 1000) ??
    num('maxRuntimeSeconds', 1000) ??
    (() => {
      const raw = fields.get('timeout');
      if (raw === undefined || raw === '') return null;
      const m = DURATION.exec(raw);
      const v = m ? timerMsOrNull(Number(m[1]) * UNIT_MS[m[2]!.toLowerCase()]!) : null;
      if (v === null) agent.notes.push(`${file}: timeout: ${raw} has no unit (ms, s, m, h) or is out of range; ignored`);
      return v;
    })();
  agent.timeoutMs = timeout ?? null;
  return agent;
}

/** Where pi-subagents settings may sit in `settings.json` (none is published; read tolerantly). */
const SUBAGENT_SETTING_KEYS = ['subagents', 'subagent', 'piSubagents', 'pi-subagents'] as const;

/** A default lane timeout from `settings.json`, if any of the tolerated shapes holds one. */
export function subagentDefaultTimeout(settings: Record<string, unknown> | null): { timeoutMs: number; path: string } | null {
  if (!settings) return null;
  for (const key of SUBAGENT_SETTING_KEYS) {
    const block = settings[key];
    if (!isObject(block)) continue;
    for (const [field, scale] of [
      ['timeoutMs', 1],
      ['defaultTimeoutMs', 1],
      ['maxRuntimeSeconds', 1000],
    ] as const) {
      const v = block[field];
      if (typeof v === 'number') {
        const ms = timerMsOrNull(v * scale);
        if (ms !== null) return { timeoutMs: ms, path: `${key}.${field}` };
      }
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Rows, verdicts, binding, composition

/** A lane deadline and the models that run under it. */
export interface LaneLimitInput {
  /** Row label, e.g. `lane deadline [worker]`. */
  limit: string;
  configuredMs: number;
  /** Models of the lane's agent; empty when none is known. */
  models: ModelKey[];
  /** Where the value came from, shown with the row. */
  source: string;
}

/** Why calls were left out of the rates, in total and by reason. */
export interface ExcludedSummary {
  total: number;
  reasons: Record<string, number>;
}

/** How much of the session files the rates come from. */
export interface SampledSummary {
  files: number;
  /** Files longer than the window, of which only the tail was read. */
  filesCut: number;
  /** Oldest files not read at all because the total budget was spent. */
  filesSkipped: number;
  bytesSampled: number;
  bytesTotal: number;
  /** The window: at most this many bytes from the end of each session file. */
  tailBytes: number;
  /** At most this many bytes in all. */
  totalBytes: number;
}

/** Everything the audit judges, gathered by the command from one home. */
export interface AuditInput {
  home: string;
  now: number;
  minOutput: number;
  limits: HomeLimits;
  /** Settings values that fell back to their defaults. */
  settingsNotes: string[];
  catalog: ModelCatalog;
  rates: ModelRateInput[];
  /** Every model used by a root or lane of the home: the loop-pi and pi limits apply to each. */
  models: ModelKey[];
  lanes: LaneLimitInput[];
  excluded: ExcludedSummary;
  sampled: SampledSummary;
  notes: string[];
  warnings: { file: string; line: number | null; message: string }[];
}

/** One (limit, model) row of SPEC §8. Times in ms. */
export interface AuditRow {
  limit: string;
  model: string;
  kind: LimitKind;
  /** The configured value; null when unset (e.g. no `retry.provider.timeoutMs`). */
  configuredMs: number | null;
  /** The time a healthy request needs under this limit; null when unknown or not a request bound. */
  boundMs: number | null;
  /** configuredMs ÷ boundMs. */
  margin: number | null;
  verdict: AuditVerdict;
  rate: RateSummary;
  firstTokenMs: number | null;
  maxTokens: number | null;
  note: string;
}

/** A limit several models share, judged at the one that needs the most time (SPEC §8). */
export interface LimitSummary {
  limit: string;
  kind: LimitKind;
  configuredMs: number | null;
  models: number;
  /** The model the limit is judged at: the largest bound (the slowest to finish its budget). */
  judgedAt: string | null;
  boundMs: number | null;
  margin: number | null;
  /** BELOW BOUND if any model is; else UNKNOWN if any model's bound is unknown; else OK. */
  verdict: AuditVerdict;
  unknownModels: number;
  /** What the limit bounds and how it is judged. */
  explanation: string;
}

/** One retry wait at its worst. */
export interface RetryWait {
  /** 1 for the wait before the first retry. */
  retry: number;
  /** pi's own delay: baseDelayMs·2^(n−1) capped at maxAgentDelayMs. */
  piDelayMs: number;
  /** The longest the wait can be: a 429 (floor max(pi's delay, rateLimitDelayMs)) plus its full jitter. */
  worstMs: number;
}

/** The worst-case time of one request across retry layers, against the episode and the absolute limit. */
export interface WorstCase {
  /** The model whose budget needs the most time (null when no bound is known). */
  model: string | null;
  perAttemptMs: number | null;
  /** episodeMaxAttempts: attempts = retries + 1. */
  attempts: number;
  waits: RetryWait[];
  waitsMs: number;
  /** attempts × perAttemptMs + waitsMs. */
  composedMs: number | null;
  episode: {
    /** The model's provider is one of `loopPi.retryRecovery.providerIds`: the episode bounds its retries. */
    applies: boolean;
    configuredMs: number;
    /** What the retries need inside the episode, which opens at the first failure: (attempts − 1) × per attempt + waits. */
    neededMs: number | null;
    fits: boolean | null;
    retries: number;
    /** How many retries at the full budget the episode holds. */
    retriesThatFit: number | null;
  };
  absolute: {
    configuredMs: number;
    /** Each attempt is a new request with its own absolute clock: does one full-budget attempt fit? */
    perAttemptFits: boolean | null;
    /** composedMs ÷ absoluteMs: how far retries let one request outlive the absolute limit. */
    composedOverAbsolute: number | null;
  };
  /** The longest the limits let one request with all its retries run: absolute + what the episode allows. */
  ceilingMs: number;
  assumptions: string;
}

/** The audit of one home: the `audit --json` document (SPEC §8), JSON-ready. */
export interface AuditResult {
  v: 1;
  home: string;
  now: string;
  minOutput: number;
  rows: AuditRow[];
  binding: { limit: string; model: string; margin: number } | null;
  limits: LimitSummary[];
  worstCase: WorstCase;
  /** The calls whose rate counts, each once (a bare id's row pools its providers' calls: the rows' `rate.calls` overlap). */
  callsCounted: number;
  excluded: ExcludedSummary;
  sampled: SampledSummary;
  notes: string[];
  warnings: { file: string; line: number | null; message: string }[];
}

/** Limit names (the settings paths) of the rows every model gets. */
export const LIMIT_NAMES = {
  inactivity: 'loopPi.requestCeiling.inactivityMs',
  absolute: 'loopPi.requestCeiling.absoluteMs',
  legacyCeiling: 'loopPi.requestCeiling.wallClockMs',
  httpIdle: 'httpIdleTimeoutMs',
  providerTimeout: 'retry.provider.timeoutMs',
} as const;

/** A row before rounding; `exactMargin` decides verdict and binding. */
type DraftRow = AuditRow & { exactMargin: number | null; exactBound: number | null };

const round = (v: number, places: number): number => {
  const f = 10 ** places;
  return Math.round(v * f) / f;
};
const roundOrNull = (v: number | null, places: number): number | null => (v === null ? null : round(v, places));
/** A margin to 3 places that stays on its side of 1: 0.9998 is 0.999 (BELOW BOUND), never 1. */
const roundMargin = (m: number): number => (m < 1 ? Math.floor(m * 1000) / 1000 : round(m, 3));

/** A human duration for notes: `45.0 s`, `12m24s`, `1h15m00s`. */
export function formatAuditDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return 'unknown';
  if (ms < 100_000) return `${(ms / 1000).toFixed(1)} s`;
  const total = Math.ceil(ms / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, '0');
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m${s}s` : `${m}m${s}s`;
}

const fmtRate = (r: number): string => `${round(r, 2)} tok/s`;

/** The worst wait before retry n: a 429's floor (max of pi's delay and rateLimitDelayMs) plus its full jitter. */
export function worstRetryWait(n: number, limits: Pick<HomeLimits, 'baseDelayMs' | 'maxAgentDelayMs' | 'rateLimitDelayMs'>): RetryWait {
  const piDelayMs = piRetryDelayMs(n, limits);
  // loop-pi backoff.ts: extra = max(0, floor − pi) + random·floor·0.5 (capped at the timer range);
  // a 5xx or other error has floor = pi's delay, so the 429 case is always the longer one.
  const floor = Math.max(piDelayMs, limits.rateLimitDelayMs);
  const extra = Math.min(MAX_TIMER_MS, floor - piDelayMs + floor * RETRY_JITTER_RATIO);
  return { retry: n, piDelayMs, worstMs: piDelayMs + extra };
}

const WAIT_ASSUMPTIONS =
  'every wait taken at its worst: a 429, which loop-pi holds to at least max(pi delay, rateLimitDelayMs) ' +
  'and then adds up to half of that again at random (60 s + 30 s = 90 s with the defaults); a 5xx waits ' +
  "pi's delay plus up to half again, never longer. pi's delay is baseDelayMs·2^(n−1) capped at maxAgentDelayMs.";

/** Composes attempts, waits and the per-attempt bound (null when no bound is known). */
export function composeWorstCase(limits: HomeLimits, model: string | null, perAttemptMs: number | null): WorstCase {
  // loop-pi's recovery episode (and its cap of 5 attempts) covers only the providers of
  // `loopPi.retryRecovery.providerIds`; any other runs pi's retries to `retry.maxRetries`.
  // With no model known (none has a bound), the episode is taken to apply when any provider is covered.
  const applies = model === null ? limits.episodeProviders.length > 0 : episodeCovers(limits.episodeProviders, model);
  // pi's own attempts: maxRetries + 1, or 1 when it does not retry (episodeMaxAttempts is 1 then).
  const piAttempts = limits.episodeMaxAttempts === 1 ? 1 : limits.maxRetries + 1;
  const attempts = Math.max(1, applies ? limits.episodeMaxAttempts : piAttempts);
  const retries = attempts - 1;
  const waits = Array.from({ length: retries }, (_, i) => worstRetryWait(i + 1, limits));
  const waitsMs = waits.reduce((s, w) => s + w.worstMs, 0);
  const composedMs = perAttemptMs === null ? null : attempts * perAttemptMs + waitsMs;
  const neededMs = perAttemptMs === null ? null : retries * perAttemptMs + waitsMs;
  let retriesThatFit: number | null = null;
  if (perAttemptMs !== null) {
    let used = 0;
    retriesThatFit = 0;
    for (const w of waits) {
      used += w.worstMs + perAttemptMs;
      if (used > limits.episodeMs) break;
      retriesThatFit += 1;
    }
  }
  // What the limits allow: the first attempt up to the absolute limit, then the episode (which
  // joins the race once open) over every wait and retry, each retry again up to the absolute limit.
  const ceilingMs = limits.absoluteMs + (applies ? Math.min(limits.episodeMs, retries * limits.absoluteMs + waitsMs) : retries * limits.absoluteMs + waitsMs);
  return {
    model,
    perAttemptMs: perAttemptMs === null ? null : Math.ceil(perAttemptMs),
    attempts,
    waits: waits.map((w) => ({ ...w, worstMs: Math.ceil(w.worstMs) })),
    waitsMs: Math.ceil(waitsMs),
    composedMs: composedMs === null ? null : Math.ceil(composedMs),
    episode: {
      applies,
      configuredMs: limits.episodeMs,
      neededMs: neededMs === null ? null : Math.ceil(neededMs),
      fits: neededMs === null || !applies ? null : neededMs <= limits.episodeMs,
      retries,
      retriesThatFit: applies ? retriesThatFit : null,
    },
    absolute: {
      configuredMs: limits.absoluteMs,
      perAttemptFits: perAttemptMs === null ? null : perAttemptMs <= limits.absoluteMs,
      composedOverAbsolute: composedMs === null ? null : round(composedMs / limits.absoluteMs, 3),
    },
    ceilingMs,
    assumptions: WAIT_ASSUMPTIONS,
  };
}

const EXCLUSION_TEXT: Record<string, string> = {
  error: 'error',
  aborted: 'aborted',
  retried: 'retried',
  'below-min-output': 'under the output minimum',
  'no-usage': 'without usage.output',
  'no-start': 'without a known start',
  'bad-duration': 'without a positive duration',
  'other-stop-reason': 'with another stop reason',
  'no-model': 'without a model',
};

/** `3 retried, 2 under the output minimum`: the reasons, most frequent first. */
export function describeExclusions(reasons: Record<string, number>): string {
  return Object.entries(reasons)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${n} ${EXCLUSION_TEXT[k] ?? k}`)
    .join(', ');
}

interface ModelFacts {
  key: ModelKey;
  label: string;
  rate: MergedRate;
  maxTokens: number | null;
  maxTokensNote: string;
  /** maxTokens ÷ slowest × 1000 + time to first token; null with `why` when unknown. */
  boundMs: number | null;
  why: string | null;
  derivation: string;
}

function modelFacts(input: AuditInput, key: ModelKey): ModelFacts {
  const label = modelLabel(key);
  const rate = rateFor(input.rates, key);
  const { maxTokens, note: maxTokensNote } = maxTokensFor(input.catalog, key);
  const whys: string[] = [];
  if (maxTokens === null) whys.push(maxTokensNote);
  const slowest = rate.summary.slowestTokPerS;
  if (slowest === null) {
    const ex = describeExclusions(rate.excluded);
    whys.push(
      `no rate measured (never a guessed one): no call ended ${COUNTED_STOP_REASONS.join('/')} with ≥ ${input.minOutput} output tokens` +
        (ex ? `; left out: ${ex}` : ' in the sampled sessions'),
    );
  }
  const ttft = rate.firstTokenMs ?? 0;
  const boundMs = maxTokens !== null && slowest !== null ? (maxTokens / slowest) * 1000 + ttft : null;
  const derivation =
    boundMs === null
      ? ''
      : `${maxTokens} tokens at ${fmtRate(slowest!)} (slowest of ${rate.summary.calls} call${rate.summary.calls === 1 ? '' : 's'}) = ` +
        `${formatAuditDuration((maxTokens! / slowest!) * 1000)} + first token ${rate.firstTokenMs === null ? '0 (none recorded)' : formatAuditDuration(ttft)}` +
        ` → needs ${formatAuditDuration(boundMs)}`;
  return { key, label, rate, maxTokens, maxTokensNote, boundMs, why: whys.length ? whys.join('; ') : null, derivation };
}

function baseRow(f: ModelFacts, limit: string, kind: LimitKind, configuredMs: number | null): Omit<DraftRow, 'verdict' | 'note'> {
  return {
    limit,
    model: f.label,
    kind,
    configuredMs,
    boundMs: null,
    margin: null,
    exactMargin: null,
    exactBound: null,
    rate: f.rate.summary,
    firstTokenMs: f.rate.firstTokenMs,
    maxTokens: f.maxTokens,
  };
}

/** A row for a limit that bounds the whole request. */
function requestRow(f: ModelFacts, limit: string, configuredMs: number, context: string): DraftRow {
  const base = baseRow(f, limit, 'request', configuredMs);
  if (f.boundMs === null) return { ...base, verdict: 'UNKNOWN', note: `${context}${context ? ' ' : ''}${f.why ?? ''}`.trim() };
  const margin = configuredMs / f.boundMs;
  const below = margin < 1;
  const tail = below
    ? ` — a healthy full-budget generation would be cut; raise it to at least ${formatAuditDuration(f.boundMs)}`
    : '';
  return {
    ...base,
    boundMs: f.boundMs,
    exactBound: f.boundMs,
    margin,
    exactMargin: margin,
    verdict: below ? 'BELOW BOUND' : 'OK',
    note: `${context}${context ? ' ' : ''}${f.derivation}${tail}`,
  };
}

const INACTIVITY_EXPLANATION =
  'Reset by every model event (keepalives do not count), so it never cuts a request that keeps producing events; ' +
  'it cuts one that is silent this long — judged against the longest measured time to the first model event ' +
  '(reasoning a provider does not stream as events is silence too).';

const ABSOLUTE_EXPLANATION =
  'Fixed at the request start and never moved: it must hold a full-budget generation at the slowest measured rate ' +
  'plus the time to first token (maxTokens ÷ slowest tok/s + first token).';

const LEGACY_EXPLANATION = `Legacy wall-clock ceiling of older loop-pi, taken as the absolute limit (absoluteMs is not set). ${ABSOLUTE_EXPLANATION}`;

const LANE_EXPLANATION =
  'A lane deadline covers the whole lane run, so this checks only that one full-budget request of the lane’s agent fits in it.';

/** The inactivity limit: a model event resets it, so it is judged against the longest measured silence before the first one. */
function inactivityRow(f: ModelFacts, configuredMs: number): DraftRow {
  const base = baseRow(f, LIMIT_NAMES.inactivity, 'silence', configuredMs);
  const what = INACTIVITY_EXPLANATION;
  const ttft = f.rate.firstTokenMs;
  if (ttft === null || ttft <= 0) {
    return { ...base, verdict: 'UNKNOWN', note: `${what} No time to first token recorded (loopPiTiming.firstTokenAt) for this model.` };
  }
  const margin = configuredMs / ttft;
  return {
    ...base,
    boundMs: ttft,
    exactBound: ttft,
    margin,
    exactMargin: margin,
    verdict: margin < 1 ? 'BELOW BOUND' : 'OK',
    note: `${what} Longest measured time to first model event: ${formatAuditDuration(ttft)}.`,
  };
}

function transportRow(f: ModelFacts, limit: string, configuredMs: number | null, note: string): DraftRow {
  return { ...baseRow(f, limit, 'transport', configuredMs), verdict: 'NOT A REQUEST BOUND', note };
}

function httpIdleExplanation(limits: HomeLimits): string {
  if (limits.httpIdleTimeoutMs === 0) return "pi's HTTP idle timeout is disabled (0 / \"disabled\"): it bounds nothing.";
  const idle = formatAuditDuration(limits.httpIdleTimeoutMs);
  return (
    `pi's HTTP idle timer (headers and body) is reset by every streamed byte, keepalives included, so it never ends a request that keeps streaming. ` +
    `It ends one only when nothing at all arrives for ${idle}: before the response headers, or between two chunks — so it bounds the time to the first byte and any fully silent gap, never the generation.`
  );
}

function httpIdleNote(limits: HomeLimits, f: ModelFacts): string {
  if (limits.httpIdleTimeoutMs === 0) return httpIdleExplanation(limits);
  const idle = formatAuditDuration(limits.httpIdleTimeoutMs);
  const ttft = f.rate.firstTokenMs;
  const measured =
    ttft === null
      ? ' No time to first token recorded for this model.'
      : ttft >= limits.httpIdleTimeoutMs
        ? ` Longest measured time to first model event ${formatAuditDuration(ttft)} ≥ ${idle}: that call got bytes (keepalives or unsurfaced reasoning) before its first event, or it would have been cut.`
        : ` Longest measured time to first model event: ${formatAuditDuration(ttft)}.`;
  return httpIdleExplanation(limits) + measured;
}

function providerTimeoutNote(limits: HomeLimits): string {
  const value =
    limits.providerTimeoutMs === null
      ? 'Not set: the provider SDK uses its own default (unknown here).'
      : `Set to ${formatAuditDuration(limits.providerTimeoutMs)}.`;
  return (
    `${value} It is the provider SDK's request timeout, which pi clears once the response headers arrive, ` +
    'so it bounds only the time to the response headers (connection and queueing), never the generation.'
  );
}

function summarizeLimits(rows: readonly DraftRow[], explanations: ReadonlyMap<string, string>): LimitSummary[] {
  const groups = new Map<string, DraftRow[]>();
  for (const r of rows) {
    const list = groups.get(r.limit) ?? [];
    list.push(r);
    groups.set(r.limit, list);
  }
  return [...groups.entries()].map(([limit, list]) => {
    const known = list.filter((r) => r.exactMargin !== null);
    // Judged at the model that needs the most time: for a shared value, the smallest margin.
    const worst = known.reduce<DraftRow | null>((a, b) => (a === null || (b.exactMargin ?? Infinity) < (a.exactMargin ?? Infinity) ? b : a), null);
    const transport = list[0]!.kind === 'transport';
    const unknownModels = transport ? 0 : list.length - known.length;
    const verdict: AuditVerdict = transport
      ? 'NOT A REQUEST BOUND'
      : list.some((r) => r.verdict === 'BELOW BOUND')
        ? 'BELOW BOUND'
        : unknownModels > 0
          ? 'UNKNOWN'
          : 'OK';
    return {
      limit,
      kind: list[0]!.kind,
      configuredMs: list[0]!.configuredMs,
      models: list.length,
      judgedAt: worst?.model ?? null,
      boundMs: worst?.exactBound != null ? Math.ceil(worst.exactBound) : null,
      margin: worst?.exactMargin != null ? roundMargin(worst.exactMargin) : null,
      verdict,
      unknownModels,
      explanation: explanations.get(limit) ?? '',
    };
  });
}

const finalize = (r: DraftRow): AuditRow => ({
  limit: r.limit,
  model: r.model,
  kind: r.kind,
  configuredMs: r.configuredMs,
  boundMs: r.exactBound === null ? null : Math.ceil(r.exactBound),
  margin: r.exactMargin === null ? null : roundMargin(r.exactMargin),
  verdict: r.verdict,
  rate: {
    slowestTokPerS: roundOrNull(r.rate.slowestTokPerS, 3),
    medianTokPerS: roundOrNull(r.rate.medianTokPerS, 3),
    calls: r.rate.calls,
  },
  firstTokenMs: r.firstTokenMs === null ? null : Math.round(r.firstTokenMs),
  maxTokens: r.maxTokens,
  note: r.note,
});

/** The model label used when a lane's agent names no model we can find. */
export const UNKNOWN_MODEL = '(unknown model)';

/**
 * Judges every (limit, model) pair of one home: the loop-pi inactivity and absolute limits and
 * pi's transport timers for every model the home uses, each lane deadline for the models of its
 * agent; then the binding row, the per-limit summaries and the worst case across retries.
 */
export function buildAudit(input: AuditInput): AuditResult {
  const { limits } = input;
  const facts = new Map<string, ModelFacts>();
  const factsOf = (key: ModelKey): ModelFacts => {
    const label = modelLabel(key);
    let f = facts.get(label);
    if (!f) {
      f = modelFacts(input, key);
      facts.set(label, f);
    }
    return f;
  };
  const models = uniqueKeys(input.models).sort((a, b) => modelLabel(a).localeCompare(modelLabel(b)));
  const home = models.map(factsOf);

  const legacy = limits.absoluteSource === 'wallClockMs';
  const absoluteName = legacy ? LIMIT_NAMES.legacyCeiling : LIMIT_NAMES.absolute;
  const absoluteContext = legacy ? 'Legacy wall-clock ceiling of older loop-pi, taken as the absolute limit (absoluteMs is not set).' : '';
  const explanations = new Map<string, string>([
    [LIMIT_NAMES.inactivity, INACTIVITY_EXPLANATION],
    [absoluteName, legacy ? LEGACY_EXPLANATION : ABSOLUTE_EXPLANATION],
    [LIMIT_NAMES.httpIdle, httpIdleExplanation(limits)],
    [LIMIT_NAMES.providerTimeout, providerTimeoutNote(limits)],
  ]);

  const rows: DraftRow[] = [];
  for (const f of home) rows.push(inactivityRow(f, limits.inactivityMs));
  for (const f of home) rows.push(requestRow(f, absoluteName, limits.absoluteMs, absoluteContext));
  for (const lane of [...input.lanes].sort((a, b) => a.limit.localeCompare(b.limit))) {
    const context = `${lane.source}; it covers the whole lane run, so this checks only that one full-budget request fits.`;
    explanations.set(lane.limit, `From ${lane.source}. ${LANE_EXPLANATION}`);
    const laneModels = uniqueKeys(lane.models).sort((a, b) => modelLabel(a).localeCompare(modelLabel(b)));
    if (laneModels.length === 0) {
      rows.push({
        limit: lane.limit,
        model: UNKNOWN_MODEL,
        kind: 'request',
        configuredMs: lane.configuredMs,
        boundMs: null,
        margin: null,
        exactBound: null,
        exactMargin: null,
        verdict: 'UNKNOWN',
        rate: { slowestTokPerS: null, medianTokPerS: null, calls: 0 },
        firstTokenMs: null,
        maxTokens: null,
        note: `${context} No model is known for this lane's agent.`,
      });
      continue;
    }
    for (const key of laneModels) rows.push(requestRow(factsOf(key), lane.limit, lane.configuredMs, context));
  }
  for (const f of home) rows.push(transportRow(f, LIMIT_NAMES.httpIdle, limits.httpIdleTimeoutMs, httpIdleNote(limits, f)));
  for (const f of home) rows.push(transportRow(f, LIMIT_NAMES.providerTimeout, limits.providerTimeoutMs, providerTimeoutNote(limits)));

  let binding: DraftRow | null = null;
  for (const r of rows) {
    if (r.exactMargin === null) continue;
    if (binding === null || r.exactMargin < binding.exactMargin!) binding = r;
  }

  // The worst case follows the model whose budget needs the most time under the absolute limit.
  const slowest = home.filter((f) => f.boundMs !== null).reduce<ModelFacts | null>((a, b) => (a === null || b.boundMs! > a.boundMs! ? b : a), null);
  const worstCase = composeWorstCase(limits, slowest?.label ?? null, slowest?.boundMs ?? null);

  const notes = [...input.notes, ...input.settingsNotes.map((n) => `settings.json: ${n}`), ...input.catalog.notes];
  if (models.length === 0) notes.push('No model seen in this home (no session, checkpoint, lane run, agent file or default model names one): no rows for the loop-pi limits.');

  return {
    v: 1,
    home: input.home,
    now: new Date(input.now).toISOString(),
    minOutput: input.minOutput,
    rows: rows.map(finalize),
    binding: binding ? { limit: binding.limit, model: binding.model, margin: roundMargin(binding.exactMargin!) } : null,
    limits: summarizeLimits(rows, explanations),
    worstCase,
    callsCounted: input.rates.reduce((n, r) => n + summarizeRates(r.tokPerS).calls, 0),
    excluded: input.excluded,
    sampled: input.sampled,
    notes,
    warnings: input.warnings,
  };
}

/** SPEC §8 exit code: 1 when any row of any home is BELOW BOUND, else 0. */
export function auditExitCode(results: readonly AuditResult[]): 0 | 1 {
  return results.some((r) => r.rows.some((row) => row.verdict === 'BELOW BOUND')) ? 1 : 0;
}
