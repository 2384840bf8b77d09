/**
 * The main table's rows as an immutable list kept in chunks of 256, so the list of the next frame
 * shares every chunk in which no row changed. At 100 appends/s a frame changes the rows of a few
 * roots (and re-times the live ones), and a flat array of a wide home's ~12 000 rows copied for
 * every frame was 96 KB of garbage a frame — the largest single share of what a frame allocated
 * there (a sampling heap profile, 12-05; docs/PERFORMANCE.md). A patch copies the chunks it
 * writes into, once each.
 *
 * Reads are those of a read-only array ({@link RowSeq}): `length`, `at`, `slice`, `findIndex` and
 * iteration, so code that is handed rows takes either.
 */
import type { TreeRow } from './session-rows.js';

const SHIFT = 8;
const SIZE = 1 << SHIFT;
const MASK = SIZE - 1;

/** What the frame reads of its rows: satisfied by a read-only array and by {@link RowList}. */
export interface RowSeq extends Iterable<TreeRow> {
  readonly length: number;
  at(index: number): TreeRow | undefined;
  slice(start?: number, end?: number): TreeRow[];
  findIndex(predicate: (row: TreeRow) => boolean): number;
}

export class RowList implements RowSeq {
  static readonly EMPTY = new RowList([], 0);

  private constructor(
    private readonly chunks: readonly (readonly TreeRow[])[],
    readonly length: number,
  ) {}

  /** The rows of `parts`, one after the other (`total`: the sum of their lengths). */
  static concat(parts: readonly (readonly TreeRow[])[], total: number): RowList {
    const chunks: TreeRow[][] = [];
    for (let at = 0; at < total; at += SIZE) chunks.push(new Array<TreeRow>(Math.min(SIZE, total - at)));
    let k = 0;
    for (const p of parts) {
      for (let i = 0; i < p.length; i++, k++) if (k < total) chunks[k >> SHIFT]![k & MASK] = p[i]!;
    }
    if (k !== total) throw new Error(`RowList.concat: ${total} rows announced, ${k} given`);
    return total === 0 ? RowList.EMPTY : new RowList(chunks, total);
  }

  static of(rows: readonly TreeRow[]): RowList {
    return RowList.concat([rows], rows.length);
  }

  at(index: number): TreeRow | undefined {
    const i = index < 0 ? index + this.length : index;
    if (i < 0 || i >= this.length) return undefined;
    return this.chunks[i >> SHIFT]![i & MASK];
  }

  /** As `Array.prototype.slice` (negative and out-of-range bounds included). */
  slice(start = 0, end = this.length): TreeRow[] {
    const from = clampIndex(start, this.length);
    const to = clampIndex(end, this.length);
    const out: TreeRow[] = [];
    for (let i = from; i < to; i++) out.push(this.chunks[i >> SHIFT]![i & MASK]!);
    return out;
  }

  findIndex(predicate: (row: TreeRow) => boolean): number {
    for (let c = 0; c < this.chunks.length; c++) {
      const chunk = this.chunks[c]!;
      for (let i = 0; i < chunk.length; i++) if (predicate(chunk[i]!)) return (c << SHIFT) + i;
    }
    return -1;
  }

  *[Symbol.iterator](): Iterator<TreeRow> {
    for (const chunk of this.chunks) yield* chunk;
  }

  toArray(): TreeRow[] {
    const out = new Array<TreeRow>(this.length);
    let at = 0;
    for (const chunk of this.chunks) for (let i = 0; i < chunk.length; i++) out[at++] = chunk[i]!;
    return out;
  }

  /**
   * A patch of this list: the rows it sets replace those places in the list `done` returns (this
   * one when nothing was replaced); this list itself is never changed.
   */
  patch(): RowPatch {
    const base = this.chunks;
    const length = this.length;
    let chunks: (readonly TreeRow[])[] | null = null;
    let finished = false;
    return {
      set: (index, row) => {
        if (finished) throw new Error('RowPatch.set after done');
        if (!Number.isInteger(index) || index < 0 || index >= length) throw new RangeError(`RowPatch.set: ${index} is outside 0..${length - 1}`);
        const c = index >> SHIFT;
        if ((chunks ?? base)[c]![index & MASK] === row) return;
        chunks ??= base.slice();
        // A chunk still the base's is copied before its first write.
        if (chunks[c] === base[c]) chunks[c] = base[c]!.slice();
        (chunks[c] as TreeRow[])[index & MASK] = row;
      },
      done: () => {
        finished = true;
        return chunks === null ? this : new RowList(chunks, length);
      },
    };
  }

  /** Whether the two lists hold a chunk in common (one was patched from the other, or both from one). */
  shares(other: RowList): boolean {
    for (let c = 0; c < this.chunks.length && c < other.chunks.length; c++) if (this.chunks[c] === other.chunks[c]) return true;
    return false;
  }

  /**
   * The places where this list holds another row object than `was`; null when their lengths
   * differ. Chunks the two share are skipped unread.
   */
  changedSince(was: RowList): number[] | null {
    if (this.length !== was.length) return null;
    const places: number[] = [];
    for (let c = 0; c < this.chunks.length; c++) {
      const now = this.chunks[c]!;
      const before = was.chunks[c]!;
      if (now === before) continue;
      for (let i = 0; i < now.length; i++) if (now[i] !== before[i]) places.push((c << SHIFT) + i);
    }
    return places;
  }
}

/** Writes for {@link RowList.patch}: each chunk written into is copied at its first write. */
export interface RowPatch {
  set(index: number, row: TreeRow): void;
  /** The patched list; no write is taken after it. */
  done(): RowList;
}

function clampIndex(i: number, length: number): number {
  const n = Math.trunc(i);
  if (Number.isNaN(n)) return 0;
  return n < 0 ? Math.max(0, length + n) : Math.min(n, length);
}
