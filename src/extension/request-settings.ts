/**
 * The limits a request is held to and pi's retry settings, read when a request starts (so the
 * checkpoint's `limits` are what the running process read for that request, SPEC §2). The limits
 * come from the home's `settings.json` with SPEC §2's fallbacks (`limitsFromSettings`); pi's retry
 * settings, and the episode's attempt cap they decide, come from pi's effective settings (home and
 * project merged) when pi offers them.
 */
import fs from 'node:fs';
import type { CheckpointLimits } from '../contract/checkpoint.js';
import { limitsFromSettings } from '../model/limits.js';
import type { RetrySettings } from './request-tracker.js';

/** What one read of the settings gives. */
export interface RequestSettings {
  limits: CheckpointLimits;
  retry: RetrySettings;
  /** Problems worth a log line: unreadable file, bad values (with the fallback used). */
  notes: string[];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads `<home>/settings.json`; null when absent; a note when unreadable or not a JSON object. */
export function readSettingsFile(file: string): { settings: Record<string, unknown> | null; note: string | null } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { settings: null, note: code === 'ENOENT' ? null : `cannot read ${file}: ${code ?? String(err)}; using the defaults` };
  }
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? { settings: value, note: null } : { settings: null, note: `${file} is not a JSON object; using the defaults` };
  } catch {
    return { settings: null, note: `${file} is not valid JSON; using the defaults` };
  }
}

/**
 * The request's limits and retry settings from the home's settings and pi's effective settings.
 * `provider`: the model's provider at the request start — loop-pi's recovery episode covers it only
 * when it is one of `loopPi.retryRecovery.providerIds` (`limits.episodeApplies`).
 */
export function requestSettings(home: Record<string, unknown> | null, effective: unknown, provider: string | null = null): RequestSettings {
  const { limits, notes } = limitsFromSettings(home);
  const retrySource = isRecord(effective) ? effective : home;
  const retry = retrySource === home ? limits : limitsFromSettings(retrySource).limits;
  const retryBlock = retrySource && isRecord(retrySource.retry) ? retrySource.retry : null;
  return {
    limits: {
      inactivityMs: limits.inactivityMs,
      absoluteMs: limits.absoluteMs,
      episodeMs: limits.episodeMs,
      // min(5, maxRetries + 1) of the retry settings pi runs with (1 when it does not retry).
      episodeMaxAttempts: retry.episodeMaxAttempts,
      episodeApplies: provider !== null && limits.episodeProviders.includes(provider),
    },
    retry: {
      enabled: retryBlock?.enabled !== false,
      maxRetries: retry.maxRetries,
      baseDelayMs: retry.baseDelayMs,
      maxAgentDelayMs: retry.maxAgentDelayMs,
      // loop-pi's own setting, read where its other limits are.
      rateLimitDelayMs: limits.rateLimitDelayMs,
    },
    notes,
  };
}
