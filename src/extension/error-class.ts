/**
 * A failed request's error message, sorted into the classes the dashboard shows and the article's
 * recovery rules use: transient failures pi retries, and failures that need the owner
 * (authentication, quota, policy, context length). First match wins; the order matters (a quota
 * error often arrives as a 429).
 */

/** The class of a request error (`episode.lastErrorClass`). */
export type ErrorClass = 'quota' | 'auth' | 'policy' | 'context-length' | 'rate-limit' | 'server' | 'timeout' | 'network' | 'other';

// The phrases of pi's own retry decision, verbatim (pi-ai `utils/retry.js`,
// `isRetryableAssistantError`, pi 1.6): an error whose text matches the second list and not the
// first is retried. An extension cannot call it, so a copy: `piRetries` below.
const PI_NON_RETRYABLE = new RegExp(
  [
    'GoUsageLimitError',
    'FreeUsageLimitError',
    'Monthly usage limit reached',
    'available balance',
    'insufficient_quota',
    'out of budget',
    'quota exceeded',
    'billing',
    'subscription_sharing_usage_limit_exceeded',
    'subscription_sharing_workplace_individual_usage_limit_exceeded',
    '"code"\\s*:\\s*"?1308(?![0-9])',
  ].join('|'),
  'i',
);
const PI_RETRYABLE = new RegExp(
  [
    'overloaded',
    'server_busy',
    'servers are currently busy',
    'currently experiencing high demand',
    'model is at capacity',
    'rate.?limit',
    'too many requests',
    '(?<![a-z0-9])(?:429|500|502|503|504|520|524)(?![a-z0-9])',
    'service.?(?:is.?)?(?:temporarily.?)?unavailable',
    'server.?error',
    'internal.?error',
    'provider.?returned.?(?:an.?)?error',
    'exceeded request buffer limit while retrying upstream',
    'unable to forward upstream',
    'upstream.?request.?failed',
    'upstream_stream_read_error',
    'stream was interrupted',
    'http/?2 stream failed',
    'network.?error',
    'connection.?error',
    'connection.?refused',
    'connection.?lost',
    'connection.?closed',
    'other side closed',
    'fetch failed',
    'request to \\S+ failed, reason:',
    'getaddrinfo',
    '(?<![a-z0-9_])(?:ECONNRESET|ECONNABORTED|ECONNREFUSED|ETIMEDOUT|EPIPE)(?![a-z0-9_])',
    'connection reset by peer',
    'ENOTFOUND',
    'EAI_AGAIN',
    'upstream.?connect',
    'reset before headers',
    'socket hang up',
    'socket connection was closed',
    'timed? out',
    'timeout',
    'terminated',
    'websocket.?closed',
    'websocket.?error',
    'websocket.?connection.?limit.?reached',
    'ended without',
    'stream ended before message_stop',
    'stream ended before a terminal response event',
    'http2 request did not get a response',
    'stream disconnected before completion',
    'cut short after the reply had begun',
    'pending stream has been canceled',
    'retry delay',
    'you can retry your request',
    'try your request again',
    'please retry your request',
    'ResourceExhausted',
    'subscription_sharing_usage_unavailable',
    'subscription_sharing_user_unavailable',
  ].join('|'),
  'i',
);

// First match wins. A quota pi refuses to retry comes first (it often arrives as a 429); a
// "usage limit" in other words only after the transient classes, since pi retries a 429 or a
// rate limit whatever else the text says (a per-minute usage limit).
const RULES: Array<[ErrorClass, RegExp]> = [
  ['quota', PI_NON_RETRYABLE],
  ['auth', /\b401\b|\b403\b|unauthori[sz]ed|forbidden|invalid.{0,20}api.?key|authentication|no api key|expired token/i],
  ['policy', /content.?policy|safety|moderation|refus(ed|al) by policy|policy violation/i],
  // A rate limit before the context length: "429 … too many tokens per minute" is a rate limit,
  // which pi retries (its overflow check exempts rate limits).
  ['rate-limit', /\b429\b|rate.?limit|too many requests|resourceexhausted/i],
  ['context-length', /context.?length|context.?window|maximum context|too many tokens|prompt is too long|context_length_exceeded/i],
  ['timeout', /timed? ?out|timeout|etimedout/i],
  ['server', /\b5\d\d\b|overloaded|server.?error|internal.?error|service.?(is.?)?(temporarily.?)?unavailable|bad gateway|upstream|capacity|server_busy|servers are currently busy|high demand|provider.?returned.?(an.?)?error|request buffer limit/i],
  ['network', /network|connection|econnreset|econnrefused|econnaborted|epipe|socket|fetch failed|terminated|getaddrinfo|enotfound|eai_again|stream (ended|disconnected|was interrupted)|ended without|other side closed|http\/?2 stream failed|request to \S+ failed, reason:/i],
  ['quota', /usage.?limit/i],
];

/** The class of `message`; `other` when nothing matches. */
export function classifyError(message: string | null | undefined): ErrorClass {
  const text = message ?? '';
  for (const [cls, re] of RULES) if (re.test(text)) return cls;
  return 'other';
}

/**
 * Whether pi retries a failed request with this error text: its own decision, copied (pi-ai's
 * `isRetryableAssistantError`; pi first leaves a context overflow to compaction, which the
 * caller checks by class). Still a prediction of what pi will do, not a report: a `turn_start`
 * before the run settles confirms a retry, `agent_settled` without one refutes it.
 */
export function piRetries(message: string | null | undefined): boolean {
  if (!message) return false;
  return !PI_NON_RETRYABLE.test(message) && PI_RETRYABLE.test(message);
}
