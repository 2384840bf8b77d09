/**
 * The checkpoint's states (SPEC §4.1), apart from its schema so the model can use them without
 * loading zod.
 */
export const checkpointStates = ['idle', 'requesting', 'tools', 'retry-wait', 'stopped', 'ended'] as const;
export type CheckpointState = (typeof checkpointStates)[number];

/**
 * The states in which a checkpoint is rewritten at least every 15 s (a request in flight, its tools
 * running, a retry awaited; CONTRACT.md "When it is written"): a reader marks one older than that,
 * with some grace, stale.
 */
export const REFRESHED_STATES: ReadonlySet<CheckpointState> = new Set<CheckpointState>(['requesting', 'tools', 'retry-wait']);
