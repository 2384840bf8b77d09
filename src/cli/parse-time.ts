/** Parses `--now ISO` and `--since DURATION` flags; errors name what to fix. */

export class InputError extends Error {}

export function parseNow(value: string | undefined, fallback: () => number): number {
  if (value === undefined) return fallback();
  const t = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(t)) throw new InputError(`--now: "${value}" is not an ISO-8601 time (e.g. 2026-11-30T12:00:00Z)`);
  return t;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `15m`, `2h`, `1d`, or combinations like `1h30m`. */
export function parseDuration(value: string): number {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;
  let total = 0;
  let consumed = 0;
  for (const m of value.matchAll(re)) {
    total += Number(m[1]) * UNITS[m[2]!]!;
    consumed += m[0].length;
  }
  if (consumed === 0 || consumed !== value.length) throw new InputError(`"${value}" is not a duration (use e.g. 90s, 15m, 2h, 1d)`);
  return total;
}
