/** Parses `--now ISO` and `--since DURATION` flags; errors name what to fix. */

export class InputError extends Error {}

export function parseNow(value: string | undefined, fallback: () => number): number {
  if (value === undefined) return fallback();
  const bad = (why: string) => new InputError(`--now: "${value}" ${why} (e.g. 2026-11-30T12:00:00Z)`);
  const m = NOW_ISO.exec(value);
  if (!m) {
    if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/.test(value)) throw bad('has no zone: give Z or ±hh:mm (a time without one would be read in this machine\'s zone)');
    throw bad('is not an ISO-8601 time');
  }
  // Date.parse rolls an impossible date over (02-30 → 03-02, T24:00 → the next day): refused.
  const [y, mo, d, h, mi, sec] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? '0'].map(Number) as [number, number, number, number, number, number];
  const wall = new Date(Date.UTC(y, mo - 1, d, h, mi, sec));
  if (wall.getUTCFullYear() !== y || wall.getUTCMonth() !== mo - 1 || wall.getUTCDate() !== d || wall.getUTCHours() !== h || wall.getUTCMinutes() !== mi || wall.getUTCSeconds() !== sec) {
    throw bad('is not a time that exists');
  }
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw bad('is not an ISO-8601 time');
  return t;
}

/** `YYYY-MM-DDThh:mm[:ss[.fff]]` and a zone. */
const NOW_ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/;

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
