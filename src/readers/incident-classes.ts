/**
 * Everything loop-dash knows about incident classes (SPEC §3.2), in one place: the published
 * classes with a plain-English line each, pattern rules for the classes the two-limit loop-pi
 * has not published yet, the limit each one names, and the classes implied by file paths.
 */

/** The limit or rule an incident says fired. */
export type IncidentLimit =
  | 'inactivity'
  | 'absolute'
  | 'wall-clock'
  | 'empty-length'
  | 'episode'
  | 'auth'
  | 'quota'
  | 'policy'
  | 'context-length';

/** A published class: its name, a short label, a one-line explanation for the UI, its limit. */
export interface KnownIncidentClass {
  cls: string;
  label: string;
  explanation: string;
  limit: IncidentLimit | null;
}

const FOLLOW_UP = 'loop-pi follows up with a new request (at most 2 in a row).';

/** The classes loop-pi publishes (SPEC §3.2). */
export const KNOWN_INCIDENT_CLASSES: readonly KnownIncidentClass[] = [
  {
    cls: 'loop-continuation-chain-exhausted',
    label: 'continuation chain exhausted',
    explanation: 'The loop nudged the root to continue as many times in a row as it may, then stopped nudging; the root waits for the owner.',
    limit: null,
  },
  {
    cls: 'loop-request-wall-clock-ceiling',
    label: 'wall-clock ceiling',
    explanation: `A model request ran past the wall-clock ceiling (older loop-pi) and was aborted; ${FOLLOW_UP}`,
    limit: 'wall-clock',
  },
  {
    cls: 'loop-request-empty-length-stop',
    label: 'empty length stop',
    explanation: `The model hit its output-token limit without any text or tool call; ${FOLLOW_UP}`,
    limit: 'empty-length',
  },
  {
    cls: 'loop-arm-refused',
    label: 'arm refused',
    explanation: 'The loop refused to arm this root, so it will not restart itself; the reason is in the record.',
    limit: null,
  },
  {
    cls: 'loop-root-context-overflow',
    label: 'root context overflow',
    explanation: "The root's context window overflowed while lanes were still running; it stopped instead of resuming.",
    limit: 'context-length',
  },
  {
    cls: 'loop-ops-grants-rejected',
    label: 'ops grants rejected',
    explanation: 'An ops grants file was rejected and is not in force; the reason and the file are in the record.',
    limit: null,
  },
  {
    cls: 'loop-audit-grants-rejected',
    label: 'audit grants rejected',
    explanation: 'An audit grants file was rejected and is not in force; the reason and the file are in the record.',
    limit: null,
  },
  {
    cls: 'loop-standing-rejected',
    label: 'standing orders rejected',
    explanation: 'A standing-orders file was rejected and is not in force; the reason and the file are in the record.',
    limit: null,
  },
];

const BY_NAME = new Map(KNOWN_INCIDENT_CLASSES.map((c) => [c.cls, c]));

const EXHAUSTED_SUFFIX = '-exhausted';
const EXHAUSTED_NOTE = ' The follow-up budget is used up: nothing automatic retries this request.';

/** How a class was recognised. */
export type IncidentClassMatch = 'table' | 'pattern' | 'unknown';

/** What we can say about one incident's class (plus the fields that refine it). */
export interface IncidentClassInfo {
  cls: string;
  known: boolean;
  match: IncidentClassMatch;
  label: string;
  explanation: string;
  /** A normalised limit, or the file's own `limit` string when we do not recognise it. */
  limit: string | null;
  exhausted: boolean;
}

/** The fields of an incident file that refine its class (all optional, untrusted). */
export interface IncidentClassFields {
  kind?: unknown;
  limit?: unknown;
  reason?: unknown;
  errorClass?: unknown;
  error_class?: unknown;
  lastErrorClass?: unknown;
  exhausted?: unknown;
}

/**
 * Map free text (a class name, `kind`, `limit` or `reason`) to a limit. Order matters: a more
 * specific name wins (`wall-clock` before `absolute`, `context-length` before anything else).
 */
export function normaliseLimit(text: unknown): IncidentLimit | null {
  if (typeof text !== 'string') return null;
  const s = text.toLowerCase();
  if (/context[-_ ]?(length|window|overflow|limit)|context_length_exceeded|prompt[-_ ]?too[-_ ]?long/.test(s)) return 'context-length';
  if (/wall[-_ ]?clock/.test(s)) return 'wall-clock';
  if (/empty[-_ ]?length/.test(s)) return 'empty-length';
  if (/inactiv|\bidle\b/.test(s)) return 'inactivity';
  if (/absolute/.test(s)) return 'absolute';
  if (/quota|billing|insufficient[-_ ]?(funds|credit)/.test(s)) return 'quota';
  if (/\bauth(?![a-z])|authenticat|authori[sz]ation|unauthori[sz]ed|forbidden|api[-_ ]?key|credential/.test(s)) return 'auth';
  if (/polic|content[-_ ]?filter|moderation|safety/.test(s)) return 'policy';
  if (/episode|recovery[-_ ]?exhausted|retry[-_ ]?exhausted/.test(s)) return 'episode';
  return null;
}

const RECOVERY_REASONS: readonly IncidentLimit[] = ['auth', 'quota', 'policy', 'context-length'];

/** A ceiling abort of the two-limit loop-pi: `loop-request-…` naming inactivity/absolute, or a bare ceiling with the limit in a field. */
function ceilingPattern(base: string, fields: IncidentClassFields): IncidentLimit | null | undefined {
  if (!/^loop-request-/.test(base) && !/ceiling/.test(base)) return undefined;
  const named = normaliseLimit(base);
  if (named === 'inactivity' || named === 'absolute') return named;
  if (!/ceiling/.test(base)) return undefined;
  const fromField = normaliseLimit(fields.limit) ?? normaliseLimit(fields.kind);
  return fromField === 'inactivity' || fromField === 'absolute' || fromField === 'wall-clock' ? fromField : null;
}

/** A recovery stop: the class speaks of recovery/resume stopping; the reason names the rule. */
function recoveryStopPattern(base: string, fields: IncidentClassFields): IncidentLimit | null | undefined {
  if (!/recover|resume/.test(base) || !/stop|halt|refus|abandon|gave-up|give-up/.test(base)) return undefined;
  for (const source of [base, fields.limit, fields.reason, fields.kind, fields.errorClass, fields.error_class, fields.lastErrorClass]) {
    const limit = normaliseLimit(source);
    if (limit !== null && RECOVERY_REASONS.includes(limit)) return limit;
  }
  return null;
}

function patternLabel(limit: IncidentLimit | null, kind: 'ceiling' | 'recovery' | 'episode'): { label: string; explanation: string } {
  switch (kind) {
    case 'ceiling':
      return {
        label: limit ? `${limit} ceiling` : 'request ceiling',
        explanation:
          limit === 'inactivity'
            ? `A model request went without a model event for the inactivity limit and was aborted; ${FOLLOW_UP}`
            : limit === 'absolute'
              ? `A model request reached the absolute limit counted from its start and was aborted; ${FOLLOW_UP}`
              : `A model request was aborted by a request ceiling; ${FOLLOW_UP}`,
      };
    case 'recovery':
      return {
        label: limit ? `recovery stopped: ${limit}` : 'recovery stopped',
        explanation: `The root stopped instead of resuming${limit ? ` because of a${limit === 'auth' ? 'n' : ''} ${limit} error` : ''}: authentication, quota, policy and context-length errors are never retried.`,
      };
    case 'episode':
      return {
        label: 'retry episode exhausted',
        explanation: 'The retry episode ran out of time or attempts; the active work was aborted and nothing automatic restarts that request.',
      };
    default: {
      const never: never = kind;
      return never;
    }
  }
}

/** Classify an incident class, refined by the file's own fields. */
export function classifyIncident(cls: string, fields: IncidentClassFields = {}): IncidentClassInfo {
  const suffixed = cls.endsWith(EXHAUSTED_SUFFIX);
  const exhaustedField = fields.exhausted === true;
  const explicit = typeof fields.limit === 'string' && fields.limit.trim() !== '' ? fields.limit.trim() : null;
  const explicitLimit = explicit === null ? null : (normaliseLimit(explicit) ?? explicit.slice(0, 40));

  const exact = BY_NAME.get(cls);
  const base = exact ? cls : suffixed ? cls.slice(0, -EXHAUSTED_SUFFIX.length) : cls;
  const table = exact ?? BY_NAME.get(base);
  const exhausted = suffixed || exhaustedField;
  const note = !exact && suffixed ? EXHAUSTED_NOTE : '';

  if (table) {
    return {
      cls,
      known: true,
      match: 'table',
      label: table.label + (note ? ' (exhausted)' : ''),
      explanation: table.explanation + note,
      limit: explicitLimit ?? table.limit ?? normaliseLimit(fields.kind),
      exhausted,
    };
  }

  const recovery = recoveryStopPattern(base, fields);
  if (recovery !== undefined) {
    const { label, explanation } = patternLabel(recovery, 'recovery');
    return { cls, known: true, match: 'pattern', label, explanation, limit: explicitLimit ?? recovery, exhausted };
  }
  if (/recovery-exhausted|episode-exhausted|retry-episode/.test(cls)) {
    const { label, explanation } = patternLabel('episode', 'episode');
    return { cls, known: true, match: 'pattern', label, explanation, limit: explicitLimit ?? 'episode', exhausted: true };
  }
  const ceiling = ceilingPattern(base, fields);
  if (ceiling !== undefined) {
    const { label, explanation } = patternLabel(ceiling, 'ceiling');
    return {
      cls,
      known: true,
      match: 'pattern',
      label: label + (suffixed ? ' (exhausted)' : ''),
      explanation: explanation + note,
      limit: explicitLimit ?? ceiling,
      exhausted,
    };
  }
  return {
    cls,
    known: false,
    match: 'unknown',
    label: cls,
    explanation: 'An incident class loop-dash does not know; it is shown with its raw fields.',
    limit: explicitLimit,
    exhausted,
  };
}

/** The one-line plain-English explanation of a class, for the UI. */
export function explainIncidentClass(cls: string): string {
  return classifyIncident(cls).explanation;
}

/** What a file's place under `incidents/` says about it (SPEC §3.2 path table). */
export interface IncidentPathFacts {
  /** The class the path implies, or null (ops files name three classes; unknown places). */
  cls: string | null;
  session: string | null;
  /** The `<UTC>` stamp of the name, as written. */
  stamp: string | null;
  kind: string | null;
  attempt: number | null;
  exhausted: boolean;
  /** Under `incidents/bad/`: moved aside by an external watchdog. */
  movedAside: boolean;
}

const STAMP_IN_NAME = /^(.+?)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:-\d{1,9})?Z)(?:-(.*))?$/;

/** Read the path of an incident file relative to `<home>/incidents` (`/`-separated). */
export function incidentPathFacts(relPath: string): IncidentPathFacts {
  const parts = relPath.split(/[/\\]+/).filter((p) => p !== '' && p !== '.');
  const movedAside = parts[0] === 'bad';
  const rest = movedAside ? parts.slice(1) : parts;
  const name = (rest[rest.length - 1] ?? '').replace(/\.json$/i, '');
  const dir = rest.length > 1 ? rest[0] : '';
  const facts: IncidentPathFacts = { cls: null, session: null, stamp: null, kind: null, attempt: null, exhausted: false, movedAside };
  const m = STAMP_IN_NAME.exec(name);
  if (!m) return facts;
  facts.session = m[1] ?? null;
  facts.stamp = m[2] ?? null;
  let tail = m[3] ?? '';
  if (tail.endsWith('exhausted')) {
    facts.exhausted = true;
    tail = tail.replace(/-?exhausted$/, '');
  }
  if (dir === '' && rest.length === 1 && tail === '') {
    facts.cls = 'loop-continuation-chain-exhausted';
  } else if (dir === 'request') {
    const r = /^(.+)-(\d+)$/.exec(tail);
    const kind = r ? (r[1] ?? '') : tail;
    facts.attempt = r ? Number(r[2]) : null;
    facts.kind = kind || null;
    const base =
      kind === 'wall-clock' ? 'loop-request-wall-clock-ceiling'
      : kind === 'empty-length' ? 'loop-request-empty-length-stop'
      : kind === 'inactivity' || kind === 'absolute' ? `loop-request-${kind}-ceiling`
      : kind ? `loop-request-${kind}`
      : null;
    facts.cls = base && facts.exhausted ? `${base}${EXHAUSTED_SUFFIX}` : base;
  } else if (dir === 'root') {
    if (tail === 'arm-refused') facts.cls = 'loop-arm-refused';
    else if (tail === 'context-overflow') facts.cls = 'loop-root-context-overflow';
  }
  return facts;
}
