/**
 * The part of pi's extension API the loop-dash extension uses, as structural types. pi's own
 * `ExtensionAPI` satisfies them (the unit tests check it at the type level), and a test can drive
 * the extension with a fake that has only these members. Nothing here is imported at run time:
 * the extension loads without `@earendil-works/pi-coding-agent` being resolvable.
 *
 * Proved against pi 1.6.0 (`test/extension-pi.e2e.test.ts`).
 */

/** The session manager as an extension sees it (read-only). */
export interface PiSessionManager {
  getSessionId(): string;
  /** Absent for `--no-session`; a path before the file exists (pi writes it after the first reply). */
  getSessionFile(): string | undefined;
  getHeader(): { parentSession?: string } | null | undefined;
  /** The active branch, root first. */
  getBranch(): readonly PiSessionEntry[];
}

/** One session entry; only custom entries are read. */
export interface PiSessionEntry {
  type: string;
  customType?: string;
  data?: unknown;
}

/** The context every handler receives. Valid until the next `session_shutdown`. */
export interface PiContext {
  cwd: string;
  sessionManager: PiSessionManager;
  model: { provider: string; id: string } | undefined;
  thinkingLevel?: string;
  isIdle(): boolean;
  /** Aborts the current agent operation (the in-flight request, or a pending retry wait). */
  abort(): void;
}

/** An assistant stream update (`message_update.assistantMessageEvent`). */
export interface PiAssistantMessageEvent {
  type: string;
  delta?: string;
}

/** The messages the extension looks at: role, and for assistant messages how they ended. */
export interface PiMessage {
  role: string;
  stopReason?: string;
  errorMessage?: string;
  /** A custom message's type (`role: "custom"`, sent by an extension with `pi.sendMessage`). */
  customType?: string;
  /** A custom message's content: text, or parts. */
  content?: unknown;
}

/** Return value of an `input` handler. */
export type PiInputResult = { action: 'continue' } | { action: 'handled' } | undefined;
/** Return value of an `agent_before_settle` handler: replaces only the fields it sets. */
export type PiBoundaryResult = { continue?: boolean } | undefined;

type Handler<E, R = void> = (event: E, ctx: PiContext) => R | Promise<R>;

/** The events and methods used; each `on` overload names one pi event. */
export interface PiApi {
  on(event: 'session_start', handler: Handler<{ type: 'session_start'; reason: string }>): unknown;
  on(event: 'session_shutdown', handler: Handler<{ type: 'session_shutdown'; reason?: string }>): unknown;
  on(event: 'turn_start', handler: Handler<{ type: 'turn_start'; turnIndex: number; timestamp: number }>): unknown;
  on(event: 'before_agent_start', handler: Handler<{ type: 'before_agent_start'; messageType?: string; message?: PiMessage }, undefined>): unknown;
  on(event: 'message_start', handler: Handler<{ type: 'message_start'; message: PiMessage }>): unknown;
  on(
    event: 'message_update',
    handler: Handler<{ type: 'message_update'; message: PiMessage; assistantMessageEvent: PiAssistantMessageEvent }>,
  ): unknown;
  on(event: 'message_end', handler: Handler<{ type: 'message_end'; message: PiMessage }, undefined>): unknown;
  on(event: 'provider_stream_event', handler: Handler<{ type: 'provider_stream_event'; data: unknown }>): unknown;
  on(event: 'after_provider_response', handler: Handler<{ type: 'after_provider_response'; status: number }>): unknown;
  on(event: 'tool_execution_start', handler: Handler<{ type: 'tool_execution_start'; toolName: string }>): unknown;
  on(event: 'agent_settled', handler: Handler<{ type: 'agent_settled'; aborted: boolean }>): unknown;
  on(event: 'agent_before_settle', handler: Handler<{ type: 'agent_before_settle'; continue: boolean }, PiBoundaryResult>): unknown;
  on(
    event: 'input',
    handler: Handler<{ type: 'input'; text: string; source: 'interactive' | 'rpc' | 'extension'; streamingBehavior?: 'steer' | 'followUp' }, PiInputResult>,
  ): unknown;
  on(event: 'model_select', handler: Handler<{ type: 'model_select'; model: { provider: string; id: string } }>): unknown;
  on(event: 'thinking_level_select', handler: Handler<{ type: 'thinking_level_select'; level: string }>): unknown;
  on(
    event: 'turn_end',
    handler: Handler<{ type: 'turn_end'; continue: boolean; message: PiMessage }, PiBoundaryResult>,
  ): unknown;
  appendEntry(customType: string, data?: unknown): void;
  /** pi's effective settings (home and project merged); optional so older or fake hosts work. */
  getSettings?(): unknown;
  sendUserMessage(content: string, options?: { deliverAs?: 'steer' | 'followUp' }): void;
  sendMessage(
    message: { customType: string; content: string; display: boolean; details?: unknown },
    options?: { triggerTurn?: boolean; deliverAs?: 'steer' | 'followUp' | 'nextTurn' },
  ): void;
}
