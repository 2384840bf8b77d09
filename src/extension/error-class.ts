/**
 * A failed request's error message, sorted into the classes the dashboard shows and the article's
 * recovery rules use: transient failures pi retries, and failures that need the owner
 * (authentication, quota, policy, context length). First match wins; the order matters (a quota
 * error often arrives as a 429).
 */

/** The class of a request error (`episode.lastErrorClass`). */
export type ErrorClass = 'quota' | 'auth' | 'policy' | 'context-length' | 'rate-limit' | 'server' | 'timeout' | 'network' | 'other';

// The retryable and non-retryable phrases of pi's own list (pi-ai's `isRetryableAssistantError`,
// as of pi 1.x) are in these classes, so `likelyRetried` agrees with pi on the errors it names.
const RULES: Array<[ErrorClass, RegExp]> = [
  ['quota', /insufficient_quota|quota exceeded|out of budget|billing|usage.?limit|available balance|"code"\s*:\s*"?1308(?![0-9])/i],
  ['auth', /\b401\b|\b403\b|unauthori[sz]ed|forbidden|invalid.{0,20}api.?key|authentication|no api key|expired token/i],
  ['policy', /content.?policy|safety|moderation|refus(ed|al) by policy|policy violation/i],
  ['context-length', /context.?length|context.?window|maximum context|too many tokens|prompt is too long|context_length_exceeded/i],
  ['rate-limit', /\b429\b|rate.?limit|too many requests|resourceexhausted/i],
  ['timeout', /timed? ?out|timeout|etimedout/i],
  ['server', /\b5\d\d\b|overloaded|server.?error|internal.?error|service.?(is.?)?(temporarily.?)?unavailable|bad gateway|upstream|capacity|server_busy|servers are currently busy|high demand|provider.?returned.?(an.?)?error|request buffer limit/i],
  ['network', /network|connection|econnreset|econnrefused|econnaborted|epipe|socket|fetch failed|terminated|getaddrinfo|enotfound|eai_again|stream (ended|disconnected|was interrupted)|ended without|other side closed|http\/?2 stream failed|request to \S+ failed, reason:/i],
];

/** The class of `message`; `other` when nothing matches. */
export function classifyError(message: string | null | undefined): ErrorClass {
  const text = message ?? '';
  for (const [cls, re] of RULES) if (re.test(text)) return cls;
  return 'other';
}

/**
 * Whether pi will probably retry an error of this class. pi decides with its own pattern list,
 * which an extension cannot call, so this is a prediction: a new `turn_start` before the run
 * settles confirms a retry (whatever was predicted), `agent_settled` without one refutes it.
 */
export function likelyRetried(cls: ErrorClass): boolean {
  return cls === 'rate-limit' || cls === 'server' || cls === 'timeout' || cls === 'network';
}
