/**
 * The limits of SPEC §2, read from a home's `settings.json` with the published fallbacks, and the
 * two backoff ladders (pi's retry wait, loop-pi's root resume). Pure: no fs, no clock.
 *
 * Where the limit values come from:
 * - loop-pi `extensions/request-ceiling/core.ts`, `recovery.ts`, `backoff.ts` (rknightion/loop-pi):
 *   a ms limit is a finite number in (0, 2147483647] (Node's timer range) or its default, so a bad
 *   value never turns a limit off; `maxFollowUps` is an integer ≥ 0; `rateLimitDelayMs` may be 0.
 * - pi `packages/coding-agent/src/core/settings-manager.ts` (`getRetrySettings`) and
 *   `packages/ai/src/utils/retry.ts` (`DEFAULT_MAX_AGENT_RETRY_DELAY_MS`, `retryDelayMs`):
 *   retry.maxRetries 3, retry.baseDelayMs 2000, retry.maxAgentDelayMs 60000, delay
 *   baseDelayMs·2^(n−1) capped at maxAgentDelayMs. Older pi builds (before maxAgentDelayMs) have no
 *   cap setting; 60000 is then still the effective cap loop-pi assumes.
 * - pi `packages/coding-agent/src/core/http-dispatcher.ts`: httpIdleTimeoutMs 300000; pi reads
 *   0 or "disabled" as "no idle timeout" and accepts numeric strings.
 */
import type { CheckpointLimits } from '../contract/checkpoint.js';

const MIN = 60_000;

/** Node fires a setTimeout longer than this after 1 ms, so no timer-backed limit may exceed it. */
export const MAX_TIMER_MS = 2_147_483_647;

/** loop-pi request ceiling: 15 min without a model event. */
export const DEFAULT_INACTIVITY_MS = 15 * MIN;
/** loop-pi request ceiling: 75 min in total, fixed at the request start. */
export const DEFAULT_ABSOLUTE_MS = 75 * MIN;
/** Older loop-pi's only ceiling (`DEFAULT_WALL_CLOCK_MS`): what a present but bad `wallClockMs` falls back to. */
export const LEGACY_WALL_CLOCK_DEFAULT_MS = 14 * MIN;
/** loop-pi retry recovery: one 20-minute episode from the first recoverable failure. */
export const DEFAULT_EPISODE_MS = 20 * MIN;
/** loop-pi retry recovery: at most 5 attempts per episode, whatever pi allows. */
export const EPISODE_ATTEMPT_CAP = 5;
/** pi `getRetrySettings()`: `retry.maxRetries ?? 3`. */
export const PI_DEFAULT_MAX_RETRIES = 3;
/** pi `getRetrySettings()`: `retry.baseDelayMs ?? 2000` (2 s, 4 s, 8 s, …). */
export const PI_DEFAULT_BASE_DELAY_MS = 2_000;
/** pi-ai `utils/retry.ts`: `DEFAULT_MAX_AGENT_RETRY_DELAY_MS = 60_000`, the default of `retry.maxAgentDelayMs`. */
export const PI_DEFAULT_MAX_AGENT_DELAY_MS = 60_000;
/** loop-pi request ceiling: at most 2 follow-up turns in a row. */
export const DEFAULT_MAX_FOLLOW_UPS = 2;
/** loop-pi retry backoff: a 429 waits at least 60 s in total. */
export const DEFAULT_RATE_LIMIT_DELAY_MS = 60_000;
/** pi `DEFAULT_HTTP_IDLE_TIMEOUT_MS`: header/body idle timeout, reset by every streamed byte. */
export const PI_DEFAULT_HTTP_IDLE_TIMEOUT_MS = 300_000;
/** loop-pi root recovery: the resume ladder doubles from 1 min up to this cap. */
export const RESUME_CAP_MS = 15 * MIN;

/** Where a home-level value came from. */
export type HomeLimitSource = 'settings' | 'default';
/** Where an applied limit came from: the request's checkpoint, the home's settings, or a default. */
export type LimitSource = 'checkpoint' | HomeLimitSource;

/** The limits and retry settings of one pi home, after fallbacks (SPEC §2, §3.6). */
export interface HomeLimits {
  inactivityMs: number;
  absoluteMs: number;
  /** Which setting gave `absoluteMs`: `absoluteMs`, the legacy `wallClockMs`, or neither. */
  absoluteSource: 'absoluteMs' | 'wallClockMs' | 'default';
  episodeMs: number;
  /** pi's `retry.maxRetries` (0 = pi does not retry). */
  maxRetries: number;
  /** min(5, maxRetries + 1); 1 when pi's retry is disabled (`retry.enabled: false`). */
  episodeMaxAttempts: number;
  baseDelayMs: number;
  maxAgentDelayMs: number;
  maxFollowUps: number;
  rateLimitDelayMs: number;
  /** pi's HTTP idle timeout; 0 = disabled (pi's own meaning of 0 / "disabled"). */
  httpIdleTimeoutMs: number;
  /** `retry.provider.timeoutMs`, or null when not set (the provider SDK's own default applies, unknown to us). */
  providerTimeoutMs: number | null;
  /**
   * `loopPi.retryRecovery.providerIds`: the providers whose retries loop-pi's recovery episode
   * bounds (its `recovery.ts`: a request of any other provider has no episode; pi's own
   * `retry.maxRetries` alone bounds its retries). Default none.
   */
  episodeProviders: readonly string[];
  /** For each value above, whether a valid setting gave it or its default did. */
  sources: Record<HomeLimitKey, HomeLimitSource>;
}

/** The values of `HomeLimits` that carry a source. */
export type HomeLimitKey =
  | 'inactivityMs'
  | 'absoluteMs'
  | 'episodeMs'
  | 'maxRetries'
  | 'episodeMaxAttempts'
  | 'baseDelayMs'
  | 'maxAgentDelayMs'
  | 'maxFollowUps'
  | 'rateLimitDelayMs'
  | 'httpIdleTimeoutMs'
  | 'providerTimeoutMs';

/** The four limits a request is held to (the checkpoint's `limits` shape), with where each came from. */
export interface EffectiveLimits {
  inactivityMs: number;
  absoluteMs: number;
  episodeMs: number;
  episodeMaxAttempts: number;
  /**
   * loop-pi's recovery episode bounds this request's retries: its provider is one of
   * `loopPi.retryRecovery.providerIds` — as the checkpoint says (`limits.episodeApplies`, what the
   * process read at the request start), else as the home's settings say for the checkpoint's model.
   */
  episodeApplies: boolean;
  source: Record<'inactivityMs' | 'absoluteMs' | 'episodeMs' | 'episodeMaxAttempts', LimitSource>;
}

type Check = (value: unknown) => number | undefined;

/** A timer-backed limit: finite, 1..2147483647 ms. Anything else never turns the limit off. */
const timerMs: Check = (v) => (typeof v === 'number' && Number.isFinite(v) && v >= 1 && v <= MAX_TIMER_MS ? v : undefined);
/** A wait that may be 0 (no wait), still within the timer range. */
const waitMs: Check = (v) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= MAX_TIMER_MS ? v : undefined);
/** A count: an integer ≥ 0. */
const count: Check = (v) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined);
/** pi's `parseHttpIdleTimeoutMs`: a number ≥ 0 (floored), a numeric string, or "disabled" (= 0). */
const httpIdle: Check = (v) => {
  if (typeof v === 'string') {
    const t = v.trim();
    if (t.toLowerCase() === 'disabled') return 0;
    return t.length === 0 ? undefined : httpIdle(Number(t));
  }
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined;
};
/** A provider SDK timeout: a positive finite number. */
const positiveMs: Check = (v) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined);

const RULES = {
  timer: 'is not a finite number of ms within 1..2147483647',
  wait: 'is not a finite number of ms within 0..2147483647',
  count: 'is not a whole number ≥ 0',
  httpIdle: 'is not a number of ms ≥ 0 or "disabled"',
  positive: 'is not a positive finite number of ms',
} as const;

/** Shows a bad setting value as the user wrote it ("600000" keeps its quotes, NaN stays NaN). */
function show(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value === undefined) return 'undefined';
  try {
    const text = JSON.stringify(value);
    return text.length > 60 ? `${text.slice(0, 57)}...` : text;
  } catch {
    return String(value);
  }
}

function fmtDefault(ms: number | null, unit: 'ms' | 'count'): string {
  if (ms === null) return 'unset';
  if (unit === 'count') return String(ms);
  return ms % MIN === 0 && ms >= MIN ? `${ms} (${ms / MIN} min)` : String(ms);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads settings by path: own properties only, and a note when something on the way is not an object. */
class SettingsReader {
  readonly notes: string[] = [];
  private readonly badParents = new Set<string>();

  constructor(private readonly root: Record<string, unknown> | null) {}

  /** `{present: false}` when the path is absent (or a parent is missing or not an object). */
  get(path: string): { present: boolean; value: unknown } {
    const parts = path.split('.');
    let node: unknown = this.root;
    for (let i = 0; i < parts.length; i++) {
      const key = parts[i] as string;
      if (!isPlainObject(node)) {
        if (node !== undefined && node !== null && i > 0) this.noteBadParent(parts.slice(0, i).join('.'), node);
        return { present: false, value: undefined };
      }
      if (!Object.hasOwn(node, key)) return { present: false, value: undefined };
      node = node[key];
    }
    return { present: true, value: node };
  }

  private noteBadParent(path: string, value: unknown): void {
    if (this.badParents.has(path)) return;
    this.badParents.add(path);
    this.notes.push(`${path}: ${show(value)} is not an object; the defaults below it apply`);
  }

  /** The setting's value when it passes `check`, else the fallback with a note naming path and value. */
  read(
    path: string,
    check: Check,
    rule: string,
    fallback: number | null,
    unit: 'ms' | 'count' = 'ms',
  ): { value: number | null; source: HomeLimitSource; present: boolean } {
    const { present, value } = this.get(path);
    if (!present) return { value: fallback, source: 'default', present: false };
    const ok = check(value);
    if (ok !== undefined) return { value: ok, source: 'settings', present: true };
    this.notes.push(`${path}: ${show(value)} ${rule}; using the default ${fmtDefault(fallback, unit)}`);
    return { value: fallback, source: 'default', present: true };
  }
}

/**
 * The home's limits from its parsed `settings.json` (null when absent), each bad value replaced by
 * its default with a note naming the setting path and the value. Never throws.
 */
export function limitsFromSettings(settings: Record<string, unknown> | null): { limits: HomeLimits; notes: string[] } {
  const r = new SettingsReader(isPlainObject(settings) ? settings : null);
  const num = (x: { value: number | null }): number => x.value as number;

  const inactivity = r.read('loopPi.requestCeiling.inactivityMs', timerMs, RULES.timer, DEFAULT_INACTIVITY_MS);

  // SPEC §2: the legacy wallClockMs stands in for absoluteMs only when absoluteMs is absent.
  // A present but invalid absoluteMs falls back to the default, not to wallClockMs.
  let absolute: { value: number | null; source: HomeLimitSource };
  let absoluteSource: HomeLimits['absoluteSource'];
  const abs = r.read('loopPi.requestCeiling.absoluteMs', timerMs, RULES.timer, DEFAULT_ABSOLUTE_MS);
  if (abs.present) {
    absolute = abs;
    absoluteSource = abs.source === 'settings' ? 'absoluteMs' : 'default';
  } else {
    // A present but bad wallClockMs falls back to the legacy ceiling's own default (14 min), as
    // the older loop-pi that reads it does (SPEC §2: a bad value falls back to its default) —
    // not to the newer 75 min, which would show an hour more than such a process allows.
    const wall = r.read('loopPi.requestCeiling.wallClockMs', timerMs, RULES.timer, LEGACY_WALL_CLOCK_DEFAULT_MS);
    if (wall.present) {
      absolute = wall;
      absoluteSource = 'wallClockMs';
    } else {
      absolute = { value: DEFAULT_ABSOLUTE_MS, source: 'default' };
      absoluteSource = 'default';
    }
  }

  const episode = r.read('loopPi.retryRecovery.episodeMs', timerMs, RULES.timer, DEFAULT_EPISODE_MS);
  const maxRetries = r.read('retry.maxRetries', count, RULES.count, PI_DEFAULT_MAX_RETRIES, 'count');
  const baseDelay = r.read('retry.baseDelayMs', waitMs, RULES.wait, PI_DEFAULT_BASE_DELAY_MS);
  const maxAgentDelay = r.read('retry.maxAgentDelayMs', waitMs, RULES.wait, PI_DEFAULT_MAX_AGENT_DELAY_MS);
  const followUps = r.read('loopPi.requestCeiling.maxFollowUps', count, RULES.count, DEFAULT_MAX_FOLLOW_UPS, 'count');
  const rateLimit = r.read('loopPi.retryBackoff.rateLimitDelayMs', waitMs, RULES.wait, DEFAULT_RATE_LIMIT_DELAY_MS);
  const httpIdleTimeout = r.read('httpIdleTimeoutMs', httpIdle, RULES.httpIdle, PI_DEFAULT_HTTP_IDLE_TIMEOUT_MS);
  const providerTimeout = r.read('retry.provider.timeoutMs', positiveMs, RULES.positive, null);
  // loop-pi takes the strings of an array and ignores the rest (an array of none: no provider).
  const ids = r.get('loopPi.retryRecovery.providerIds');
  const episodeProviders = ids.present && Array.isArray(ids.value) ? ids.value.filter((x): x is string => typeof x === 'string') : [];
  if (ids.present && !Array.isArray(ids.value)) r.notes.push(`loopPi.retryRecovery.providerIds: ${show(ids.value)} is not an array of provider ids; no provider's retries have a recovery episode`);

  // pi retries only when `retry.enabled` is not false; then every failure is the episode's last attempt.
  const enabled = r.get('retry.enabled');
  const retryDisabled = enabled.present && enabled.value === false;
  const episodeMaxAttempts = retryDisabled ? 1 : Math.min(EPISODE_ATTEMPT_CAP, num(maxRetries) + 1);
  const attemptsSource: HomeLimitSource = retryDisabled || maxRetries.source === 'settings' ? 'settings' : 'default';

  const limits: HomeLimits = {
    inactivityMs: num(inactivity),
    absoluteMs: num(absolute),
    absoluteSource,
    episodeMs: num(episode),
    maxRetries: num(maxRetries),
    episodeMaxAttempts,
    baseDelayMs: num(baseDelay),
    maxAgentDelayMs: num(maxAgentDelay),
    maxFollowUps: num(followUps),
    rateLimitDelayMs: num(rateLimit),
    httpIdleTimeoutMs: num(httpIdleTimeout),
    providerTimeoutMs: providerTimeout.value,
    episodeProviders,
    sources: {
      inactivityMs: inactivity.source,
      absoluteMs: absolute.source,
      episodeMs: episode.source,
      maxRetries: maxRetries.source,
      episodeMaxAttempts: attemptsSource,
      baseDelayMs: baseDelay.source,
      maxAgentDelayMs: maxAgentDelay.source,
      maxFollowUps: followUps.source,
      rateLimitDelayMs: rateLimit.source,
      httpIdleTimeoutMs: httpIdleTimeout.source,
      providerTimeoutMs: providerTimeout.source,
    },
  };
  return { limits, notes: r.notes };
}

/**
 * The limits one request is held to. SPEC §2 "which limits apply": the checkpoint's own `limits`
 * (what the running process read when it started the request) win; without them, the home's.
 * A checkpoint value that is not a usable number falls back to the home's, field by field.
 */
export function effectiveLimits(home: HomeLimits, checkpointLimits: CheckpointLimits | null, model: string | null = null): EffectiveLimits {
  // Run for every session at each snapshot, interpreted for most of a start: no closures or
  // tuple destructuring (an array pattern runs the iterator protocol).
  const c = checkpointLimits ?? null;
  const ownInactivity = c !== null && isPositive(c.inactivityMs);
  const ownAbsolute = c !== null && isPositive(c.absoluteMs);
  const ownEpisode = c !== null && isPositive(c.episodeMs);
  const ownAttempts = c !== null && isPositiveInteger(c.episodeMaxAttempts);
  return {
    inactivityMs: ownInactivity ? (c.inactivityMs as number) : home.inactivityMs,
    absoluteMs: ownAbsolute ? (c.absoluteMs as number) : home.absoluteMs,
    episodeMs: ownEpisode ? (c.episodeMs as number) : home.episodeMs,
    episodeMaxAttempts: ownAttempts ? (c.episodeMaxAttempts as number) : home.episodeMaxAttempts,
    episodeApplies: c !== null && typeof c.episodeApplies === 'boolean' ? c.episodeApplies : episodeCovers(home.episodeProviders, model),
    source: {
      inactivityMs: ownInactivity ? 'checkpoint' : home.sources.inactivityMs,
      absoluteMs: ownAbsolute ? 'checkpoint' : home.sources.absoluteMs,
      episodeMs: ownEpisode ? 'checkpoint' : home.sources.episodeMs,
      episodeMaxAttempts: ownAttempts ? 'checkpoint' : home.sources.episodeMaxAttempts,
    },
  };
}

/** Whether a model (`provider/id`) is of a provider the recovery episode covers. */
export function episodeCovers(providers: readonly string[], model: string | null): boolean {
  if (model === null || providers.length === 0) return false;
  const cut = model.indexOf('/');
  return cut > 0 && providers.includes(model.slice(0, cut));
}

/** A usable limit: positive and within Node's timer range (SPEC §2; past it, a deadline leaves `Date`'s range). */
function isPositive(v: unknown): boolean {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= MAX_TIMER_MS;
}

function isPositiveInteger(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v > 0;
}

/**
 * pi's own wait before retry n (n = 1 for the first retry): baseDelayMs·2^(n−1), capped at
 * maxAgentDelayMs — pi-ai `retryDelayMs`, before loop-pi adds its jitter or 429 floor.
 */
export function piRetryDelayMs(n: number, limits: Pick<HomeLimits, 'baseDelayMs' | 'maxAgentDelayMs'>): number {
  const exponent = Math.max(0, Math.floor(n) - 1);
  const raw = limits.baseDelayMs * 2 ** exponent;
  // 2^exponent overflows to Infinity for huge n; the cap still holds (pi clamps to MAX_SAFE_INTEGER first).
  return Math.min(Number.isFinite(raw) ? raw : Number.MAX_SAFE_INTEGER, limits.maxAgentDelayMs);
}

/** The wait before the n-th resume of a stopped root (n ≥ 1): 1, 2, 4, 8, 15, 15, … minutes. */
export function resumeDelayMs(n: number): number {
  const exponent = Math.max(0, Math.floor(n) - 1);
  // 2^4 = 16 min is already past the cap, so larger exponents need not be computed.
  return exponent >= 4 ? RESUME_CAP_MS : Math.min(2 ** exponent * MIN, RESUME_CAP_MS);
}
