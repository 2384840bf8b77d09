/**
 * The model's maps, shared between versions. A batch that replaces one session file's facts used
 * to copy the whole map (every one of a home's sessions, per batch); a map here is the previous
 * version's map, untouched, plus the few entries set or deleted since. Reading it is a native
 * `Map`'s lookup or two; iterating it gives a native `Map`'s order (insertion order, a replaced
 * key in its place, a deleted and re-added key at the end). When the entries on top grow past
 * about twice the square root of the base's size, they are folded into a new native `Map` (one
 * copy every so many batches instead of one per batch).
 *
 * {@link changedKeys} says which keys can differ between two versions that share a base, so the
 * snapshot's patch looks at those instead of comparing every entry.
 */

/** A map version: `base` (never mutated) with `over` set and `gone` deleted on top of it. */
export class SharedMap<K, V> implements ReadonlyMap<K, V> {
  /** @internal */
  constructor(
    /** The version this one is built on: a native map nobody mutates. */
    readonly base: ReadonlyMap<K, V>,
    /** Entries set since `base`; a key of `base` here keeps its place in iteration order. */
    readonly over: ReadonlyMap<K, V>,
    /** Keys of `base` deleted since (if also in `over`: deleted then set again, so at the end). */
    readonly gone: ReadonlySet<K>,
    readonly size: number,
  ) {}

  get(key: K): V | undefined {
    return layeredGet(this.base, this.over, this.gone, key);
  }

  has(key: K): boolean {
    return layeredHas(this.base, this.over, this.gone, key);
  }

  forEach(fn: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    const { base, over, gone } = this;
    base.forEach((v, k) => {
      if (gone.has(k)) return;
      fn.call(thisArg, over.has(k) ? (over.get(k) as V) : v, k, this);
    });
    over.forEach((v, k) => {
      if (gone.has(k) || !base.has(k)) fn.call(thisArg, v, k, this);
    });
  }

  *entries(): MapIterator<[K, V]> {
    const { base, over, gone } = this;
    for (const [k, v] of base) {
      if (gone.has(k)) continue;
      yield [k, over.has(k) ? (over.get(k) as V) : v];
    }
    for (const [k, v] of over) if (gone.has(k) || !base.has(k)) yield [k, v];
  }

  *keys(): MapIterator<K> {
    const { base, over, gone } = this;
    for (const k of base.keys()) if (!gone.has(k)) yield k;
    for (const k of over.keys()) if (gone.has(k) || !base.has(k)) yield k;
  }

  *values(): MapIterator<V> {
    const { base, over, gone } = this;
    for (const [k, v] of base) {
      if (gone.has(k)) continue;
      yield over.has(k) ? (over.get(k) as V) : v;
    }
    for (const [k, v] of over) if (gone.has(k) || !base.has(k)) yield v;
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  get [Symbol.toStringTag](): string {
    return 'SharedMap';
  }
}

/**
 * The map a batch of the reducer writes to: the previous version is never copied whole, only the
 * entries on top of its base. {@link MapDraft.done} gives the new version.
 */
export class MapDraft<K, V> {
  private readonly base: ReadonlyMap<K, V>;
  private readonly over: Map<K, V>;
  private readonly gone: Set<K>;
  private size: number;

  constructor(from: ReadonlyMap<K, V>) {
    this.size = from.size;
    if (from instanceof SharedMap) {
      this.base = from.base;
      // forEach, not `new Map(map)`: the constructor goes through the iterator, an array per entry.
      this.over = copyMap(from.over);
      this.gone = new Set(from.gone);
    } else {
      this.base = from;
      this.over = new Map();
      this.gone = new Set();
    }
  }

  get(key: K): V | undefined {
    return layeredGet(this.base, this.over, this.gone, key);
  }

  has(key: K): boolean {
    return layeredHas(this.base, this.over, this.gone, key);
  }

  set(key: K, value: V): this {
    if (!this.has(key)) this.size++;
    this.over.set(key, value);
    return this;
  }

  delete(key: K): boolean {
    if (!this.has(key)) return false;
    this.size--;
    this.over.delete(key);
    if (this.base.has(key)) this.gone.add(key);
    return true;
  }

  /** The new version: shared with the base, or folded into a native map when too much sits on top. */
  done(): ReadonlyMap<K, V> {
    const { base, over, gone } = this;
    if (over.size + gone.size <= foldAfter(base.size)) return new SharedMap<K, V>(base, over, gone, this.size);
    // Folded: what a native map given the same sets and deletes holds, in its order — a key of the
    // base keeps its place when set again, one deleted (and set again) goes (to the end), new ones
    // follow in the order they were set. The draft's own map is that already when the base is empty
    // (the first batch of a start).
    if (base.size === 0) return over;
    const flat = copyMap(base);
    gone.forEach((k) => flat.delete(k));
    over.forEach((v, k) => flat.set(k, v));
    return flat;
  }
}

/**
 * How many entries may sit on top of a base of `n` before they are folded in. With t entries
 * changed per batch, a batch copies up to L of them and a fold of n entries comes every L/t
 * batches: L/2 + n·t/L, least at L = √(2nt); ~2√n covers a few changes per batch.
 */
export function foldAfter(n: number): number {
  return Math.max(32, Math.ceil(2 * Math.sqrt(n)));
}

/**
 * Keys whose values can differ between `now` and `was` (a superset; each still to be compared),
 * when one is built on the other or both on one base; null when that is not known (then every
 * entry has to be compared).
 */
export function changedKeys<K, V>(now: ReadonlyMap<K, V>, was: ReadonlyMap<K, V>): Set<K> | null {
  if (now === was) return new Set();
  const nowBase = now instanceof SharedMap ? now.base : now;
  const wasBase = was instanceof SharedMap ? was.base : was;
  if (nowBase !== wasBase) return null;
  const keys = new Set<K>();
  for (const m of [now, was]) {
    if (!(m instanceof SharedMap)) continue;
    m.over.forEach((_, k) => keys.add(k));
    m.gone.forEach((k) => keys.add(k));
  }
  return keys;
}

/** `key`'s value in `base` with `over` set and `gone` deleted on top of it (a version or a draft). */
function layeredGet<K, V>(base: ReadonlyMap<K, V>, over: ReadonlyMap<K, V>, gone: ReadonlySet<K>, key: K): V | undefined {
  if (over.has(key)) return over.get(key);
  return gone.has(key) ? undefined : base.get(key);
}

function layeredHas<K, V>(base: ReadonlyMap<K, V>, over: ReadonlyMap<K, V>, gone: ReadonlySet<K>, key: K): boolean {
  return over.has(key) || (!gone.has(key) && base.has(key));
}

function copyMap<K, V>(from: ReadonlyMap<K, V>): Map<K, V> {
  const copy = new Map<K, V>();
  from.forEach((v, k) => copy.set(k, v));
  return copy;
}
