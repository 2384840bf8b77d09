/** Wall-clock instants and relative times as the views write them (local time, like `date`). */
import { formatRemaining } from '../model/clocks.js';

const pad = (n: number) => String(n).padStart(2, '0');

/** `HH:MM:SS` local; with the date (`MM-DD HH:MM:SS`) when more than 20 h away from `now`. */
export function formatClockTime(at: number | null | undefined, now: number): string {
  if (typeof at !== 'number' || !Number.isFinite(at)) return '—';
  const d = new Date(at);
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return Math.abs(at - now) > 20 * 3_600_000 ? `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}` : time;
}

/**
 * `HH:MM` local: the header's clock. Minutes only, so a screen where nothing else moves does not
 * have to be redrawn every second (the countdowns show the seconds).
 */
export function formatClockMinute(at: number): string {
  const d = new Date(at);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** `in 4:00`, `4:00 ago`, or `—` for an unknown instant. */
export function formatRelative(at: number | null | undefined, now: number): string {
  if (typeof at !== 'number' || !Number.isFinite(at)) return '—';
  return at >= now ? `in ${formatRemaining(at - now)}` : `${formatRemaining(now - at)} ago`;
}

/** A remaining time, saying `overdue` instead of a bare minus sign. */
export function formatLeft(ms: number | null | undefined): string {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return 'unknown';
  const text = formatRemaining(ms);
  return text.startsWith('-') ? `overdue by ${text.slice(1)}` : `${text} left`;
}

/** A duration like a limit: `15:00`, `1:15:00`. */
export function formatDuration(ms: number): string {
  return formatRemaining(ms);
}
