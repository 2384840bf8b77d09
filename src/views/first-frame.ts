/**
 * The dashboard's first frame, drawn before Ink and React are loaded.
 *
 * Ink (with React, its reconciler and Yoga's WebAssembly) takes ~100 ms of a 2-core machine to
 * load: a third of the time to the first frame on a big home. Nothing in the first frame needs
 * it: the lines are planned by `buildScreen` from the model, the initial view state and the
 * terminal's size, and written by the frame writer. So the start draws that frame first and loads
 * Ink after; Ink's first render plans the same lines from the same snapshot cache, and the
 * writer, which rewrites only changed lines, writes nothing for it. Keys pressed in between wait
 * in the terminal (raw mode is set before the frame) and reach Ink once it reads the input.
 *
 * No React or Ink here: this module must stay out of their chunk.
 */
import type { AuditResult } from '../model/audit.js';
import type { ModelState } from '../model/reducer.js';
import { buildSnapshot, type Snapshot, type SnapshotCache } from '../model/snapshot.js';
import { mergeRemote } from '../remote/merge-remote.js';
import type { RemoteFeedState } from '../remote/remote-feeds.js';
import { timing } from '../app/timing.js';
import { buildScreen } from './screen.js';
import type { FrameSink } from './terminal-frame.js';
import { initialViewState, visibleRows } from './view-state.js';

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

/** Every home has been read once (the benchmark's "populated"). */
export function everyHomeRead(model: ModelState): boolean {
  return model.progress.size > 0 && [...model.progress.values()].every((p) => p.done);
}

/** Plans the frame the dashboard's first render would show (no key pressed yet) and draws it. */
export function drawFirstFrame(input: FirstFrameInput, sink: FrameSink): void {
  const t0 = timing.enabled ? performance.now() : 0;
  const view = initialViewState();
  // As App does: the snapshot with the other machines' rows, the rows the view shows, the lines.
  const snapshot = frameSnapshot(input.model, input.now, input.host, input.cache, input.feeds);
  const rows = visibleRows(view, snapshot.roots);
  const screen = buildScreen({ snapshot, model: input.model, view, rows, width: input.columns, height: input.rows, readOnly: input.readOnly, noColor: input.noColor, audits: input.audits });
  if (timing.enabled) timing.rendered({ version: input.model.version, keys: 0, roots: snapshot.roots.length, populated: everyHomeRead(input.model), renderMs: performance.now() - t0 });
  sink.draw(
    screen.lines.map((l) => l.line),
    input.columns,
    input.noColor,
  );
}
