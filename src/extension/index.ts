/**
 * The loop-dash pi extension (SPEC §4): writes the request checkpoint of every root and lane,
 * consumes the owner's control requests (abort, disarm, arm) and holds automatic turn starts
 * while the owner has the session held. Load it with `pi -e <this file>` or install it with
 * `loop-dash install-extension`; see docs/CONTRACT.md for the formats it writes and reads.
 *
 * It never throws into pi: every handler is guarded, failures go to
 * `<home>/loop-dash/extension.log`, and the session carries on.
 */
import { LoopDashRuntime, type RuntimeOptions } from './runtime.js';
import type { PiApi, PiContext } from './pi-api.js';

/** Registers the extension's handlers on `pi`. `options` is for tests; pi passes none. */
export function registerLoopDash(pi: PiApi, options: RuntimeOptions = {}): LoopDashRuntime {
  const rt = new LoopDashRuntime(pi, options);
  const guard = <T>(what: string, fn: () => T): T | undefined => rt.guard(what, fn);
  pi.on('session_start', (_e, ctx: PiContext) => guard('session_start', () => rt.onSessionStart(ctx)));
  pi.on('session_shutdown', () => guard('session_shutdown', () => rt.onSessionShutdown()));
  pi.on('input', (e, ctx) => guard('input', () => rt.onInput(e, ctx)));
  pi.on('before_agent_start', (e, ctx) => {
    guard('before_agent_start', () => rt.onBeforeAgentStart(e, ctx));
    return undefined;
  });
  pi.on('turn_start', (e, ctx) => guard('turn_start', () => rt.onTurnStart(e, ctx)));
  pi.on('message_start', (e, ctx) => guard('message_start', () => rt.onMessageStart(e, ctx)));
  pi.on('message_update', (e, ctx) => guard('message_update', () => rt.onMessageUpdate(e, ctx)));
  pi.on('provider_stream_event', (e) => guard('provider_stream_event', () => rt.onProviderEvent(e.data)));
  pi.on('after_provider_response', () => guard('after_provider_response', () => rt.onProviderResponse()));
  pi.on('message_end', (e, ctx) => {
    guard('message_end', () => rt.onMessageEnd(e, ctx));
    return undefined;
  });
  pi.on('tool_execution_start', (_e, ctx) => guard('tool_execution_start', () => rt.onToolStart(ctx)));
  pi.on('turn_end', (e, ctx) => guard('turn_end', () => rt.onBoundary(e, ctx, 'turn_end')));
  pi.on('agent_before_settle', (e, ctx) => guard('agent_before_settle', () => rt.onBoundary(e, ctx, 'agent_before_settle')));
  pi.on('agent_settled', (e, ctx) => guard('agent_settled', () => rt.onSettled(e, ctx)));
  pi.on('model_select', (e) => guard('model_select', () => rt.onModel(e.model)));
  pi.on('thinking_level_select', (e) => guard('thinking_level_select', () => rt.onThinking(e.level)));
  return rt;
}

/** pi's entry point: the default export of an extension module. */
export default function loopDash(pi: PiApi): void {
  registerLoopDash(pi);
}
