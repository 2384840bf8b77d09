/**
 * A binary min-heap of items by a number each item carries (read once, when it is pushed). The
 * snapshot's row cache keeps its rows' stable windows in one, so a tick finds the rows whose window
 * passed, and the earliest edge left, without a walk of every row (model/snapshot.ts).
 */
export class MinQueue<T> {
  private readonly keys: number[] = [];
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  push(item: T, key: number): void {
    const keys = this.keys;
    const items = this.items;
    let i = items.length;
    keys.push(key);
    items.push(item);
    while (i > 0) {
      const up = (i - 1) >> 1;
      if (keys[up]! <= key) break;
      keys[i] = keys[up]!;
      items[i] = items[up]!;
      i = up;
    }
    keys[i] = key;
    items[i] = item;
  }

  /** The smallest key (Infinity when empty). */
  peekKey(): number {
    return this.keys.length > 0 ? this.keys[0]! : Infinity;
  }

  /** The item with the smallest key, or undefined when empty. */
  peek(): T | undefined {
    return this.items[0];
  }

  /** Takes the item with the smallest key out, or undefined when empty. */
  pop(): T | undefined {
    const keys = this.keys;
    const items = this.items;
    if (items.length === 0) return undefined;
    const top = items[0]!;
    const lastKey = keys.pop()!;
    const lastItem = items.pop()!;
    const n = items.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && keys[r]! < keys[l]! ? r : l;
        if (keys[c]! >= lastKey) break;
        keys[i] = keys[c]!;
        items[i] = items[c]!;
        i = c;
      }
      keys[i] = lastKey;
      items[i] = lastItem;
    }
    return top;
  }

  /** Each item with its key, in no particular order. */
  forEach(fn: (item: T, key: number) => void): void {
    for (let i = 0; i < this.items.length; i++) fn(this.items[i]!, this.keys[i]!);
  }

  /** Keeps only the items `keep` accepts (in heap order: the heap is rebuilt). */
  filter(keep: (item: T, key: number) => boolean): void {
    const keys = this.keys.slice();
    const items = this.items.slice();
    this.keys.length = 0;
    this.items.length = 0;
    for (let i = 0; i < items.length; i++) if (keep(items[i]!, keys[i]!)) this.push(items[i]!, keys[i]!);
  }
}
