/**
 * What one piece of stream activity counts as (SPEC §1): a **model event** moves the inactivity
 * clock; a **keepalive** is transport activity that carries no model progress and does not.
 *
 * pi gives an extension no transport-level keepalive event (SSE comment lines never reach it).
 * What it does give, and how each is counted here:
 * - `message_update` (pi's normalized stream): block start/end and non-empty deltas are model
 *   events; an empty delta is a keepalive.
 * - `provider_stream_event` (each raw provider event, before pi normalizes it; fired only when the
 *   provider reports raw events, as pi's built-in transports do): a `ping`/`keepalive`/`heartbeat`
 *   event (Anthropic sends SSE `ping`) is a keepalive, and so is an OpenAI-style chat chunk that
 *   carries nothing (every choice's delta empty, no finish, no usage: pi's `openai-completions`
 *   sends no `message_update` for an empty `content`, so this is the only sign of it); any other
 *   raw event is transport activity whose model content, if any, arrives as its own `message_update`.
 * - `after_provider_response` and the assistant `message_start` (response headers, stream open):
 *   transport activity, neither a model event nor a keepalive.
 */

/** How a stream event is counted. */
export type StreamActivity = 'model' | 'keepalive' | 'transport';

const BLOCK_EDGES = new Set(['text_start', 'text_end', 'thinking_start', 'thinking_end', 'toolcall_start', 'toolcall_end']);
const DELTAS = new Set(['text_delta', 'thinking_delta', 'toolcall_delta']);

/** Classifies `message_update.assistantMessageEvent`. */
export function classifyAssistantEvent(event: { type?: unknown; delta?: unknown } | null | undefined): StreamActivity {
  const type = typeof event?.type === 'string' ? event.type : '';
  if (BLOCK_EDGES.has(type)) return 'model';
  if (DELTAS.has(type)) {
    // Encrypted reasoning arrives as non-empty (opaque) deltas or block edges, so it counts.
    return typeof event?.delta === 'string' && event.delta.length > 0 ? 'model' : 'keepalive';
  }
  return 'transport';
}

const KEEPALIVE_NAMES = /^(ping|keep-?alive|heartbeat)$/i;

/** Classifies the `data` of a `provider_stream_event` (a raw provider event). */
export function classifyProviderEvent(data: unknown): StreamActivity {
  if (typeof data === 'object' && data !== null) {
    const record = data as Record<string, unknown>;
    for (const key of ['type', 'event']) {
      const value = record[key];
      if (typeof value === 'string' && KEEPALIVE_NAMES.test(value)) return 'keepalive';
    }
    if (emptyChatChunk(record)) return 'keepalive';
  }
  return 'transport';
}

/**
 * A chat-completions chunk with nothing in it: `choices` whose deltas hold only empty strings,
 * empty arrays or nulls, none finished, and no `usage`. A delta naming its `role` opens the stream
 * (transport); one with any content, reasoning or tool call is the model's.
 */
function emptyChatChunk(record: Record<string, unknown>): boolean {
  const choices = record.choices;
  if (!Array.isArray(choices) || record.usage != null) return false;
  for (const choice of choices) {
    if (typeof choice !== 'object' || choice === null) return false;
    const c = choice as Record<string, unknown>;
    if (c.finish_reason != null || c.usage != null) return false;
    const delta = c.delta;
    if (delta == null) continue;
    if (typeof delta !== 'object') return false;
    for (const value of Object.values(delta as Record<string, unknown>)) {
      if (value == null || value === '' || (Array.isArray(value) && value.length === 0)) continue;
      return false;
    }
  }
  return true;
}
