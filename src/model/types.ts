/**
 * The facts readers hand to the model. Readers own the file system and parse; the model folds
 * these facts and does clock arithmetic. Everything here is plain data (epoch ms for times).
 */
import type { Checkpoint } from '../contract/checkpoint.js';
import type { ControlAck, JournalEntry } from '../contract/control.js';

/** A bad file or line, shown to the user; `line` is 1-based, or null for a whole-file problem. */
export interface Warning {
  file: string;
  line: number | null;
  message: string;
  /** Byte offset of the bad line, when known. */
  offset?: number;
  /** `warning` for transient or cosmetic problems (a torn last line), `error` for invalid data. */
  severity?: 'warning' | 'error';
}

/** The `loop-continuation-state` custom entry (last one wins). */
export interface ContinuationState {
  at: number | null;
  armed: boolean | null;
  launch: { report: string | null; loop: string | null; launchTs: string | number | null } | null;
  nudgeCount: number | null;
  raw: Record<string, unknown>;
}

export interface LoopTimer {
  id: string;
  at: number | null;
  reason: string | null;
}

export interface LoopWatcher {
  id: string;
  label: string | null;
  pid: number | null;
  phase: string | null;
  command: string | null;
  deadline: number | null;
  intervalS: number | null;
}

/** The `loop-wait-state` custom entry (last one wins). */
export interface WaitState {
  at: number | null;
  timers: LoopTimer[];
  watchers: LoopWatcher[];
  /** Present = wakes are being held after an owner abort. */
  heldMessages: unknown[] | null;
}

/** Our own `loop-dash-control` custom entry (last one wins). */
export interface DashControlEntry {
  at: number | null;
  held: boolean;
  by: string | null;
  reason: string | null;
  raw: Record<string, unknown>;
}

/** The last assistant message of a session, summarised. */
export interface AssistantOutcome {
  at: number | null;
  stopReason: string | null;
  errorMessage: string | null;
  provider: string | null;
  model: string | null;
  outputTokens: number | null;
  /** loop-pi's `loopPiRecovery` when present. */
  recovery: { code: string | null; status: number | null; disposition: string | null; reason: string | null } | null;
}

/** One thing the loop did, for the history in the detail pane (bounded list, newest last). */
export interface SessionHistoryItem {
  at: number | null;
  /** e.g. `assistant-error`, `assistant-aborted`, `loop-request-incident`, `loop-continuation`, `loop-wake`, … */
  kind: string;
  summary: string;
}

/** What a session file tells us, folded from its header and (a tail of) its entries. */
export interface SessionFileFacts {
  file: string;
  home: string;
  /** Header id, else the id taken from the file name. */
  sessionId: string;
  role: 'root' | 'lane';
  /** For a lane: the root's session file. */
  rootFile: string | null;
  /** For a lane: the directory right below the root's directory (pi-subagents run id). */
  runId: string | null;
  header: { id: string; timestamp: number | null; cwd: string | null; parentSession: string | null } | null;
  name: string | null;
  model: { provider: string | null; id: string } | null;
  thinking: string | null;
  /** Time of the newest entry seen (entry `timestamp`), else the file's mtime. */
  lastEntryAt: number | null;
  lastAssistant: AssistantOutcome | null;
  continuation: ContinuationState | null;
  waitState: WaitState | null;
  dashControl: DashControlEntry | null;
  history: SessionHistoryItem[];
  /** Set when the file ends in an incomplete line; the time it was first seen incomplete. */
  incompleteSince: number | null;
  size: number;
  mtimeMs: number;
}

/** A checkpoint file as read (valid or not). */
export interface CheckpointRecord {
  file: string;
  home: string;
  session: string;
  checkpoint: Checkpoint;
  mtimeMs: number;
}

/** One incident file (SPEC §3.2). */
export interface IncidentRecord {
  file: string;
  home: string;
  /** The `class` field, or a class derived from the path when the file has none. */
  cls: string;
  /** true when the class is one we know (see the class table in readers/incident-classes). */
  known: boolean;
  session: string | null;
  at: number | null;
  /** The limit or rule that fired when the file says so: inactivity, absolute, wall-clock, empty-length, episode, auth, quota, … */
  limit: string | null;
  attempt: number | null;
  exhausted: boolean;
  /** Moved aside into `incidents/bad/` by an external watchdog. */
  movedAside: boolean;
  summary: string;
  /**
   * The file's fields as written — only for an incident of a remote feed, whose document carries
   * them. A local incident's are not kept (the list, the counts and the status need only the
   * fields above): they are read from its file when it is opened ({@link IncidentFields}).
   */
  raw?: Record<string, unknown>;
}

/** An opened incident's fields, read from its file (readers/incident-file.ts readIncidentFields). */
export type IncidentFields =
  | { state: 'reading' }
  | { state: 'read'; fields: Record<string, unknown> }
  | { state: 'unreadable'; message: string };

/** pi-subagents `status.json` (SPEC §3.3). */
export interface LaneRunStatus {
  file: string;
  home: string;
  runId: string;
  sessionId: string | null;
  state: string;
  pid: number | null;
  startedAt: number | null;
  endedAt: number | null;
  lastActivityAt: number | null;
  deadlineAt: number | null;
  timeoutMs: number | null;
  currentTool: string | null;
  currentToolStartedAt: number | null;
  sessionFile: string | null;
  steps: { agent: string | null; model: string | null; status: string | null; sessionFile: string | null }[];
  error: string | null;
}

/** One line of a state log (SPEC §3.4). */
export interface StateLogEvent {
  file: string;
  line: number;
  seq: number | null;
  at: number | null;
  ev: string;
  by: string | null;
  raw: Record<string, unknown>;
}

/** A watcher receipt (SPEC §3.5). */
export interface WatcherReceipt {
  file: string;
  home: string;
  session: string;
  id: string;
  phase: string | null;
  observations: number | null;
  lastObservedAt: number | null;
  deadline: number | null;
  result: unknown;
  pid: number | null;
  command: string | null;
  intervalS: number | null;
  label: string | null;
  note: string | null;
}

/** The parts of `settings.json` and `models.json` we use, raw (fallbacks are applied in the model). */
export interface HomeSettings {
  home: string;
  /** Parsed settings.json, or null when absent/unreadable. */
  settings: Record<string, unknown> | null;
  /** Parsed models.json, or null when absent/unreadable. */
  models: Record<string, unknown> | null;
}

/** What a process probe saw for a pid (same host only). */
export interface ProcessProbe {
  pid: number;
  /** `alive`: the pid exists; `gone`: ESRCH; `unknown`: could not tell (EPERM is alive). */
  status: 'alive' | 'gone' | 'unknown';
  /** The start identity now, when alive and readable. */
  start: string | null;
  checkedAt: number;
  /** How it was judged (`ESRCH…`, `EPERM…`), so EPERM and ESRCH are told apart on screen. */
  detail?: string;
  /**
   * The dashboard is connected to the process's liveness socket (docs/CONTRACT.md §5): its exit
   * is reported the moment it happens, not at the next probe.
   */
  linked?: boolean;
}

/** A control request, its ack, and its journal lines, as the dashboard sees them. */
export interface ActionRecord {
  id: string;
  home: string;
  session: string;
  action: 'abort' | 'disarm' | 'arm';
  requestedAt: number;
  expiresAt: number | null;
  ack: ControlAck | null;
  journal: JournalEntry[];
}

/** Events emitted by readers, folded by the model reducer. Each is a whole replacement of one item. */
export type ReaderEvent =
  | { type: 'session-file'; facts: SessionFileFacts }
  | { type: 'session-file-removed'; file: string }
  | { type: 'checkpoint'; record: CheckpointRecord }
  | { type: 'checkpoint-removed'; file: string }
  | { type: 'incident'; record: IncidentRecord }
  | { type: 'incident-removed'; file: string }
  | { type: 'lane-status'; status: LaneRunStatus }
  | { type: 'lane-status-removed'; file: string }
  | { type: 'state-log'; file: string; events: StateLogEvent[]; reset: boolean }
  | { type: 'receipt'; receipt: WatcherReceipt }
  | { type: 'receipt-removed'; file: string }
  | { type: 'settings'; settings: HomeSettings }
  | { type: 'probe'; probe: ProcessProbe }
  | { type: 'journal'; home: string; entries: JournalEntry[]; reset: boolean }
  | { type: 'ack'; home: string; session: string; ack: ControlAck }
  | { type: 'warnings'; file: string; warnings: Warning[] }
  /**
   * How far a home's start has got. `listing`: its sessions are still being listed (the live
   * store says so for each home as its start begins, so a frame drawn before the list names the
   * home being read instead of "no sessions"); the reader's own events list them.
   */
  | { type: 'progress'; home: string; read: number; total: number; done: boolean; listing?: true }
  /**
   * After a home's start, its session files still to be searched before their tail windows for
   * the state entries the start did not find (the background search, roots first): until then a
   * cell those entries decide may show "—" for a value the file holds. 0 once all are searched.
   */
  | { type: 'searching'; home: string; left: number }
  /** `everyMs`: how often the polling sweep runs (the reader's `pollMs`), which the degraded banner states. */
  | { type: 'watch-mode'; mode: 'native' | 'polling' | 'degraded'; detail: string | null; everyMs: number };
