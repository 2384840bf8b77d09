/**
 * The dashboard's first frame, drawn before Ink and React are loaded.
 *
 * Ink (with React, its reconciler and Yoga's WebAssembly) takes ~100 ms of a 2-core machine to
 * load: a third of the time to the first frame on a big home. Nothing in the first frame needs
 * it: the lines are planned by `buildScreen` from the model, the initial view state and the
 * terminal's size, and written by the frame writer. So the start draws that frame first and loads
 * Ink after; Ink's first render plans the same lines from the same snapshot cache, and the
 * writer, which rewrites only changed lines, writes nothing for it. Plain keys pressed in between
 * are handled here as App would (`FirstScreen.press`, fed by early-keys.ts), and App starts from
 * the view state they left; any other input waits in the terminal for Ink (raw mode is set
 * before the frame).
 *
 * No React or Ink here: this module must stay out of their chunk.
 */
import type { Key } from 'ink';
import type { AuditResult } from '../model/audit.js';
import type { ModelState } from '../model/reducer.js';
import { buildSnapshot, COMMIT, snapshotSteps, type Snapshot, type SnapshotCache } from '../model/snapshot.js';
import { nextTurn, SLICE_MS } from '../readers/time-slices.js';
import { mergeRemote } from '../remote/merge-remote.js';
import type { RemoteFeedState } from '../remote/remote-feeds.js';
import { timing } from '../app/timing.js';
import { buildScreen } from './screen.js';
import { ColumnWidths } from './table-layout.js';
import type { FrameSink } from './terminal-frame.js';
import { readKeypresses } from './keymap.js';
import { initialViewState, viewReducer, visibleRowList, type KeyContext, type ViewState } from './view-state.js';

/** NO_COLOR set and not empty: no colours or styles. */
export const envNoColor = (): boolean => typeof process.env.NO_COLOR === 'string' && process.env.NO_COLOR !== '';

export interface FirstFrameInput {
  model: ModelState;
  now: number;
  host: string;
  /** The cache the dashboard's renders go on with (so its first render rebuilds nothing). */
  cache: SnapshotCache;
  feeds: readonly RemoteFeedState[];
  audits: readonly AuditResult[] | null;
  readOnly: boolean;
  noColor: boolean;
  rows: number;
  columns: number;
}

/** The snapshot a frame shows: the model's rows (re-timed from `cache` where unchanged) and the other machines'. */
export function frameSnapshot(model: ModelState, now: number, host: string, cache: SnapshotCache, feeds: readonly RemoteFeedState[]): Snapshot {
  return mergeRemote(buildSnapshot(model, now, { host, cache }), feeds, now);
}

/**
 * How long (ms) preparing a snapshot runs before the event loop first gets a turn. Longer than
 * the readers' slices (SLICE_MS), which it goes on in after that: a build from scratch that fits
 * (a big home's 1 213 rows: ~20–30 ms on the start's interpreter) runs in one go, as it did in
 * the render, and gives no turn away on the start's path; a build of 12 000 rows (~150–350 ms)
 * no longer holds a key for all of it.
 */
export const PREPARE_FIRST_SLICE_MS = 32;

/**
 * The snapshot of `model` built into `cache` ahead of its frame (model/snapshot.ts snapshotSteps),
 * giving the event loop a turn (`between`) after the first `firstMs` of work, after every
 * `sliceMs` from then on and, once it gave one, before the result is written to the cache; the
 * frame's own `frameSnapshot` then only re-times it. Resolves with the time it worked (ms), once
 * the cache holds it: the caller publishes the state then, with no turn in between (a frame of
 * the state on screen built in one would be built from the new snapshot, back).
 */
export async function prepareFrameSnapshot(
  model: ModelState,
  now: number,
  host: string,
  cache: SnapshotCache,
  { firstMs = PREPARE_FIRST_SLICE_MS, sliceMs = SLICE_MS, between = nextTurn }: { firstMs?: number; sliceMs?: number; between?: () => Promise<void> } = {},
): Promise<number> {
  let worked = 0;
  let t0 = performance.now();
  let sliced = false;
  const steps = snapshotSteps(model, now, { host, cache });
  for (let step = steps.next(); !step.done; step = steps.next()) {
    const t = performance.now();
    // A build in slices gives a turn before it is written to the cache too: its last slice and
    // the render that shows it would otherwise be one block.
    if (t - t0 < (sliced ? sliceMs : firstMs) && !(sliced && step.value === COMMIT)) continue;
    worked += t - t0;
    await between();
    t0 = performance.now();
    sliced = true;
  }
  return worked + performance.now() - t0;
}

/** Every home has been read once (the benchmark's "populated"). */
export function everyHomeRead(model: ModelState): boolean {
  return model.progress.size > 0 && [...model.progress.values()].every((p) => p.done);
}

/**
 * The screen before Ink: the first frame, and the frames of keys typed while Ink loads. It plans
 * each frame as App does (same snapshot, same view reducer, same `buildScreen`), so App can go on
 * from its view state and key count with a first render that rewrites nothing.
 */
export class FirstScreen {
  /** The view state the keys so far left (App starts from it). */
  view: ViewState = initialViewState();
  /** Keys handled (App's count goes on from it: the benchmark's frames carry it). */
  keys = 0;
  /** The table's column widths so far (App goes on with them, so its first render moves none). */
  readonly columnWidths = new ColumnWidths();
  private readonly snapshot: Snapshot;
  private ctx: KeyContext;

  constructor(
    private readonly input: FirstFrameInput,
    private readonly sink: FrameSink,
  ) {
    // As App does: the snapshot with the other machines' rows.
    this.snapshot = frameSnapshot(input.model, input.now, input.host, input.cache, input.feeds);
    // Sizes until the first draw plans the screen (the constructor is always followed by one).
    this.ctx = { roots: this.snapshot.roots, incidents: this.snapshot.incidents, now: input.now, tableRows: 1, detailLines: 0, detailRows: 0, incidentRows: 1, recordLines: 0 };
  }

  /** Plans the frame for the current view state and draws it. */
  draw(): void {
    const t0 = timing.enabled ? performance.now() : 0;
    const { input, snapshot, view } = this;
    const rows = visibleRowList(view, snapshot.roots);
    const screen = buildScreen({ snapshot, model: input.model, view, rows, width: input.columns, height: input.rows, readOnly: input.readOnly, noColor: input.noColor, audits: input.audits, columnWidths: this.columnWidths });
    // App's key context takes `now` from its clock tick, which is the snapshot's instant here.
    this.ctx = { roots: snapshot.roots, incidents: snapshot.incidents, now: input.now, ...screen.sizes };
    if (timing.enabled) timing.rendered({ version: input.model.version, keys: this.keys, roots: snapshot.roots.length, populated: everyHomeRead(input.model), renderMs: performance.now() - t0 });
    this.sink.draw(
      screen.lines.map((l) => l.line),
      input.columns,
      input.noColor,
    );
  }

  /** One input event as Ink's `useInput` reports it: dispatched as App's handler does, then drawn. */
  press(text: string, key: Key): void {
    for (const press of readKeypresses(text, key, { readOnly: this.input.readOnly })) {
      this.keys++;
      this.view = viewReducer(this.view, { type: 'key', press, ctx: this.ctx });
    }
    this.draw();
  }
}

/** Plans the frame the dashboard's first render would show (no key pressed yet) and draws it. */
export function drawFirstFrame(input: FirstFrameInput, sink: FrameSink): FirstScreen {
  const first = new FirstScreen(input, sink);
  first.draw();
  return first;
}
