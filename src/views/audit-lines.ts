/**
 * The audit (SPEC §8) as text: a one-line header warning for the dashboard when a limit is below
 * its bound, and the full report — used by the TUI's audit view and by `loop-dash audit`. Pure.
 */
import { describeExclusions, formatAuditDuration, LIMIT_NAMES, type AuditResult, type AuditRow } from '../model/audit.js';
import { displayWidth, fit, sanitize, wrapWords } from './text.js';
import { formatAge } from './cells.js';

/** Names of the fixed limits in prose; lane limits keep their own. */
const LONG: Record<string, string> = {
  [LIMIT_NAMES.inactivity]: 'loop-pi inactivity',
  [LIMIT_NAMES.absolute]: 'loop-pi absolute',
  [LIMIT_NAMES.legacyCeiling]: 'loop-pi wall-clock (legacy)',
  [LIMIT_NAMES.httpIdle]: 'pi HTTP idle timeout',
  [LIMIT_NAMES.providerTimeout]: 'pi provider timeout',
};

/** Names of the fixed limits in the table, where width is scarce. */
const SHORT: Record<string, string> = {
  [LIMIT_NAMES.inactivity]: 'inactivity',
  [LIMIT_NAMES.absolute]: 'absolute',
  [LIMIT_NAMES.legacyCeiling]: 'wall-clock (legacy)',
  [LIMIT_NAMES.httpIdle]: 'pi HTTP idle',
  [LIMIT_NAMES.providerTimeout]: 'pi provider timeout',
};

/** The display name of a limit. */
export function limitDisplayName(limit: string, short = false): string {
  return (short ? SHORT[limit] : LONG[limit]) ?? limit;
}

/** `0.81×`; a margin just under 1 never shows as `1.00×`. */
export function formatMargin(margin: number | null, verdict: AuditRow['verdict']): string {
  if (margin === null || !Number.isFinite(margin)) return '—';
  if (margin >= 100) return `${Math.round(margin)}×`;
  const text = margin.toFixed(2);
  if (verdict === 'BELOW BOUND' && Number(text) >= 1) return '<1.00×';
  return `${text}×`;
}

/** A row's margin from its own configured value and bound (the JSON margin is already rounded). */
function rowMargin(r: Pick<AuditRow, 'configuredMs' | 'boundMs' | 'margin' | 'verdict'>): string {
  const exact = r.configuredMs !== null && r.boundMs !== null && r.boundMs > 0 ? r.configuredMs / r.boundMs : r.margin;
  return formatMargin(exact, r.verdict);
}

const dur = (ms: number | null): string => (ms === null ? '—' : formatAuditDuration(ms));

/** One line for the dashboard header when any row is below bound; null otherwise. */
export function auditHeaderWarning(result: AuditResult): string | null {
  const below = result.rows.filter((r) => r.verdict === 'BELOW BOUND');
  if (below.length === 0) return null;
  const worst = below.reduce((a, b) => ((b.margin ?? Infinity) < (a.margin ?? Infinity) ? b : a));
  const what = `${limitDisplayName(worst.limit)} for ${worst.model} at ${rowMargin(worst)} (${dur(worst.configuredMs)}, needs ${dur(worst.boundMs)})`;
  const text =
    below.length === 1
      ? `audit: ${what} is below bound: it cuts healthy generations — see loop-dash audit`
      : `audit: ${below.length} limits below bound, worst ${what} — see loop-dash audit`;
  return sanitize(text);
}

interface Column {
  title: string;
  width: number;
  align: 'left' | 'right';
  cell: (r: AuditRow) => string;
}

function rateCell(r: AuditRow): string {
  const { slowestTokPerS: s, medianTokPerS: m, calls } = r.rate;
  if (s === null) return calls === 0 ? 'none' : '—';
  return `${s.toFixed(1)}/${(m ?? s).toFixed(1)} (${calls})`;
}

function columns(width: number, rows: readonly AuditRow[]): Column[] {
  const fixed: Column[] = [
    { title: 'VALUE', width: 9, align: 'right', cell: (r) => (r.configuredMs === null ? 'unset' : r.configuredMs === 0 && r.kind === 'transport' ? 'disabled' : dur(r.configuredMs)) },
    { title: 'NEEDS', width: 9, align: 'right', cell: (r) => dur(r.boundMs) },
    { title: 'MARGIN', width: 7, align: 'right', cell: (r) => rowMargin(r) },
    // Narrow terminals get the long verdict shortened; the "Why" lines below spell it out.
    width >= 100
      ? { title: 'VERDICT', width: 19, align: 'left', cell: (r) => r.verdict }
      : { title: 'VERDICT', width: 15, align: 'left', cell: (r) => (r.verdict === 'NOT A REQUEST BOUND' ? 'NOT A REQ BOUND' : r.verdict) },
  ];
  const rate: Column = { title: 'TOK/S SLOW/MED (N)', width: 18, align: 'right', cell: rateCell };
  const withRate = width >= 110;
  const used = fixed.reduce((s, c) => s + c.width + 2, 0) + (withRate ? rate.width + 2 : 0);
  const free = Math.max(20, width - used) - 2;
  // LIMIT and MODEL take what their longest cell needs when it fits; else the model comes first
  // (up to 60% of the room): a cut model name is worse than a cut limit name.
  const needLimit = Math.max(5, ...rows.map((r) => displayWidth(sanitize(limitDisplayName(r.limit, true)))));
  const needModel = Math.max(5, ...rows.map((r) => displayWidth(sanitize(r.model))));
  let modelWidth = needModel;
  let limitWidth = needLimit;
  if (needLimit + needModel > free) {
    modelWidth = Math.min(needModel, Math.max(8, Math.floor(free * 0.6)));
    limitWidth = Math.max(8, free - modelWidth);
  }
  return [
    { title: 'LIMIT', width: limitWidth, align: 'left', cell: (r) => limitDisplayName(r.limit, true) },
    { title: 'MODEL', width: modelWidth, align: 'left', cell: (r) => r.model },
    ...fixed,
    ...(withRate ? [rate] : []),
  ];
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** Wrapped text with a hanging indent. */
function para(text: string, width: number, indent = '', hang = '  '): string[] {
  const lines = wrapWords(text, Math.max(20, width - indent.length - hang.length));
  return lines.map((l, i) => (i === 0 ? indent : indent + hang) + l);
}

/**
 * The full report of one home, every line at most `width` cells. `shownAt`: the instant it is shown
 * at, when that is later than it was measured (the dashboard's `b`, measured every 10 minutes): its
 * age is said, as every figure's on screen is.
 */
export function auditLines(result: AuditResult, width: number, shownAt?: number): string[] {
  const w = Math.max(40, Math.floor(width));
  const out: string[] = [];
  const push = (...lines: string[]) => out.push(...lines);
  const measured = Date.parse(result.now);
  const age = shownAt !== undefined && Number.isFinite(measured) ? ` (measured ${formatAge(Math.max(0, shownAt - measured))} ago)` : '';
  push(...para(`loop-dash audit — ${result.home} — ${result.now}${age}`, w));

  const calls = result.callsCounted;
  const ex = result.excluded.total ? `; ${result.excluded.total} left out: ${describeExclusions(result.excluded.reasons)}` : '';
  push(...para(`Rates: ${calls} call${calls === 1 ? '' : 's'} counted (ended stop, toolUse or length with ≥ ${result.minOutput} output tokens)${ex}.`, w));
  const s = result.sampled;
  push(
    ...para(
      `Sampled ${bytes(s.bytesSampled)} of ${bytes(s.bytesTotal)} in ${s.files} session file${s.files === 1 ? '' : 's'} ` +
        `(at most the last ${bytes(s.tailBytes)} of each${s.filesCut ? `; ${s.filesCut} file${s.filesCut === 1 ? '' : 's'} read only in part` : ''}` +
        `${s.filesSkipped ? `; ${s.filesSkipped} older file${s.filesSkipped === 1 ? '' : 's'} skipped: the ${bytes(s.totalBytes)} budget was spent` : ''}).`,
      w,
    ),
  );
  push('');

  const cols = columns(w, result.rows);
  const row = (cells: string[]) =>
    cols
      .map((c, i) => fit(cells[i] ?? '', c.width, c.align))
      .join('  ')
      .trimEnd();
  if (result.rows.length === 0) {
    push('(no rows: no model seen in this home)');
  } else {
    push(row(cols.map((c) => c.title)));
    for (const r of result.rows) push(row(cols.map((c) => c.cell(r))));
  }
  push('');

  const b = result.binding;
  const bindingRow = b ? result.rows.find((r) => r.limit === b.limit && r.model === b.model) : undefined;
  push(
    ...para(
      b && bindingRow
        ? `Binding: ${limitDisplayName(b.limit)} for ${b.model} — margin ${rowMargin(bindingRow)} (configured ${dur(bindingRow.configuredMs)}, needs ${dur(bindingRow.boundMs)}); the smallest margin of every limit that can cut a request.`
        : 'Binding: none — no limit that can cut a request has a measured bound.',
      w,
    ),
  );

  const shared = result.limits.filter((l) => l.models > 1 && l.kind !== 'transport');
  if (shared.length) {
    push('', 'Shared limits, judged at the model that needs the most time:');
    for (const l of shared) {
      const at = l.judgedAt ? `judged at ${l.judgedAt}: needs ${dur(l.boundMs)}, ${rowMargin({ configuredMs: l.configuredMs, boundMs: l.boundMs, margin: l.margin, verdict: l.verdict })}` : 'no model with a known bound';
      const unknown = l.unknownModels ? ` (${l.unknownModels} model${l.unknownModels === 1 ? '' : 's'} unknown)` : '';
      push(...para(`${limitDisplayName(l.limit)} ${dur(l.configuredMs)} over ${l.models} models, ${at} → ${l.verdict}${unknown}`, w, '  '));
    }
  }

  const wc = result.worstCase;
  push('', `Worst case of one request across retries (${wc.attempts} attempt${wc.attempts === 1 ? '' : 's'}):`);
  const waits = wc.waits.map((x) => dur(x.worstMs)).join(' + ') || 'no wait';
  if (wc.perAttemptMs === null || wc.model === null) {
    push(...para(`no model has a known bound, so only the waits are known: ${waits} = ${dur(wc.waitsMs)}.`, w, '  '));
  } else {
    push(...para(`${wc.model}: ${wc.attempts} × ${dur(wc.perAttemptMs)} + waits ${waits} = ${dur(wc.composedMs)}.`, w, '  '));
    const e = wc.episode;
    const episodeText =
      e.retries === 0
        ? `Retry episode ${dur(e.configuredMs)}: pi does not retry, nothing to hold.`
        : !e.applies
          ? `No retry episode: ${wc.model} is of a provider not in loopPi.retryRecovery.providerIds, so pi's ${e.retries} retries run to retry.maxRetries with no time bound (they need ${dur(e.neededMs)}).`
          : e.fits
          ? `Retry episode ${dur(e.configuredMs)} (opens at the first failure) holds all ${e.retries} retries: they need ${dur(e.neededMs)}.`
          : `Retry episode ${dur(e.configuredMs)} (opens at the first failure) holds ${e.retriesThatFit} of ${e.retries} retries at the full budget: they need ${dur(e.neededMs)}; it cuts the rest.`;
    push(...para(episodeText, w, '  '));
    push(
      ...para(
        `Absolute ${dur(wc.absolute.configuredMs)} applies to each attempt (a retry is a new request): one full-budget attempt ${wc.absolute.perAttemptFits ? 'fits' : 'does NOT fit'}; all ${wc.attempts} attempts at the full budget, with their waits, would need ${wc.absolute.composedOverAbsolute?.toFixed(2)}× the absolute limit.`,
        w,
        '  ',
      ),
    );
  }
  push(...para(`The limits let one request with all its retries run at most ${dur(wc.ceilingMs)} (${wc.episode.applies ? 'the absolute limit, then the retry episode' : 'each attempt up to the absolute limit, with the waits: no episode'}).`, w, '  '));
  push(...para(`Waits: ${wc.assumptions}`, w, '  '));

  // Each limit's explanation once, then the rows that need attention.
  push('', 'Why:');
  for (const l of result.limits) push(...para(`${limitDisplayName(l.limit)}: ${l.explanation}`, w, '  '));
  const unknownSilence: string[] = [];
  for (const r of result.rows) {
    if (r.verdict !== 'BELOW BOUND' && r.verdict !== 'UNKNOWN') continue;
    // A missing time to first token says the same for every model: one line below.
    if (r.kind === 'silence' && r.verdict === 'UNKNOWN') {
      unknownSilence.push(r.model);
      continue;
    }
    push(...para(`${r.verdict} ${limitDisplayName(r.limit)} × ${r.model}: ${r.note}`, w, '  '));
  }
  if (unknownSilence.length) {
    push(...para(`UNKNOWN ${limitDisplayName(LIMIT_NAMES.inactivity)} × ${unknownSilence.join(', ')}: no time to first token recorded (loopPiTiming.firstTokenAt).`, w, '  '));
  }

  if (result.notes.length) {
    push('', 'Notes:');
    for (const n of result.notes) push(...para(`- ${n}`, w, '  '));
  }
  if (result.warnings.length) {
    push('', `Warnings (${result.warnings.length}):`);
    for (const x of result.warnings.slice(0, 10)) push(...para(`- ${x.file}${x.line !== null ? `:${x.line}` : ''}: ${x.message}`, w, '  '));
    if (result.warnings.length > 10) push(`  … ${result.warnings.length - 10} more`);
  }
  return out.map((l) => fit(l, w).trimEnd());
}
