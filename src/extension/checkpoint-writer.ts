/**
 * Writes the request checkpoint (SPEC §4.1) atomically, at most once per `minIntervalMs` for
 * stream activity and at once for state changes. The pending write is one unref'd timer, so the
 * writer never keeps pi alive; `dispose` cancels it.
 */
import path from 'node:path';
import { checkpointSchema } from '../contract/checkpoint.js';
import { ensureDir, writeFileAtomicSync } from './atomic-file.js';
import type { ExtensionLog } from './extension-log.js';

/** Options of {@link CheckpointWriter}. */
export interface CheckpointWriterOptions {
  file: string;
  /** Builds the checkpoint to write at `now`. */
  snapshot: (now: number) => unknown;
  now: () => number;
  log: ExtensionLog;
  /** Throttle for stream activity; default 1000 ms (SPEC §4.1: model events at most once a second). */
  minIntervalMs?: number;
}

/** One session's checkpoint file. */
export class CheckpointWriter {
  private lastWriteAt = -Infinity;
  private timer: NodeJS.Timeout | null = null;
  private disposed = false;
  private failing = false;
  private readonly minIntervalMs: number;

  constructor(private readonly opts: CheckpointWriterOptions) {
    this.minIntervalMs = opts.minIntervalMs ?? 1000;
  }

  /** When the last successful write happened (epoch ms; -Infinity before the first). */
  get lastWrite(): number {
    return this.lastWriteAt;
  }

  /** Writes now (a state change). */
  writeNow(): void {
    if (this.disposed) return;
    this.clearTimer();
    const now = this.opts.now();
    let value: unknown;
    try {
      value = this.opts.snapshot(now);
    } catch (err) {
      // Called from a timer too: nothing may escape into pi's process.
      this.opts.log('cannot build the checkpoint', err);
      return;
    }
    const parsed = checkpointSchema.safeParse(value);
    if (!parsed.success) {
      this.opts.log(`checkpoint does not match the contract; not written (${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message})`);
      return;
    }
    try {
      ensureDir(path.dirname(this.opts.file));
      writeFileAtomicSync(this.opts.file, `${JSON.stringify(value)}\n`);
      this.lastWriteAt = now;
      if (this.failing) this.opts.log(`checkpoint writes to ${this.opts.file} work again`);
      this.failing = false;
    } catch (err) {
      // Log once per failing streak, not once a second.
      if (!this.failing) this.opts.log(`cannot write the checkpoint ${this.opts.file}`, err);
      this.failing = true;
    }
  }

  /** Writes soon: now if the last write is older than the throttle, else once the throttle allows. */
  writeSoon(): void {
    if (this.disposed || this.timer) return;
    const wait = this.lastWriteAt + this.minIntervalMs - this.opts.now();
    if (wait <= 0) {
      this.writeNow();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.writeNow();
    }, wait);
    this.timer.unref();
  }

  /** Cancels any pending write; later calls do nothing. */
  dispose(): void {
    this.disposed = true;
    this.clearTimer();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
