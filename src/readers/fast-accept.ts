/**
 * A fast accept path for zod schemas of JSON documents. zod stays the one contract (the extension
 * writes against the same schemas): this only answers, for a value zod would accept, what zod would
 * return — in a straight function built once from the schema's definition, with none of zod's
 * per-field result objects and issue lists. On a cold start 1 213 checkpoints cost ~25 ms in zod,
 * ~5 ms here. Anything it is not sure of (a failure, a construct it does not know) gets `NOT_SURE`,
 * and the caller asks zod, so every message and every rejection stays zod's.
 *
 * Known constructs: objects (zod's strip, loose and strict), arrays, numbers (zod 4 rejects NaN
 * and ±∞; `greater_than`, `less_than`, `safeint` checks), strings (length checks), booleans,
 * literals, enums, unions of those scalars, nullable, optional, unknown/any. Anything else
 * (unions of objects, refinements, transforms, defaults, …) makes the whole schema `NOT_SURE`
 * for every value. `test/fast-accept.test.ts`
 * checks, by property, that an accepted value is one zod accepts with the same output (key order
 * included).
 */
import type { z } from 'zod';

/** Not accepted here: zod decides. */
export const NOT_SURE: unique symbol = Symbol('not sure');

type Accept = (v: unknown) => unknown;

/** The part of a zod definition this module reads. */
interface Def {
  type: string;
  checks?: readonly { _zod: { def: CheckDef } }[];
  innerType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  values?: readonly unknown[];
  entries?: Record<string, unknown>;
  element?: z.ZodType;
  options?: readonly z.ZodType[];
}

interface CheckDef {
  check: string;
  when?: unknown;
  value?: unknown;
  inclusive?: boolean;
  format?: string;
  minimum?: number;
  maximum?: number;
  length?: number;
}

class Unsupported extends Error {}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

const accepted = new WeakMap<z.ZodType, Accept>();

let misses = 0;
/** How many values the fast path has left to zod in this thread so far (the timing marks report it: a build that broke the fast path shows). */
export function fastAcceptMisses(): number {
  return misses;
}

/**
 * What zod's `safeParse(value).data` would be when it succeeds, or NOT_SURE. The accepting function
 * is built on the first call per schema.
 */
export function fastAccept<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> | typeof NOT_SURE {
  let accept = accepted.get(schema);
  if (!accept) {
    try {
      accept = build(schema);
    } catch (err) {
      if (!(err instanceof Unsupported)) throw err;
      accept = () => NOT_SURE;
    }
    accepted.set(schema, accept);
  }
  const out = accept(value);
  if (out === NOT_SURE) misses++;
  return out as z.infer<S> | typeof NOT_SURE;
}

/**
 * `schema.safeParse(value)` with the fast path first: a value accepted here gets zod's success
 * shape around the same output; anything else is zod's own answer.
 */
export function safeParseFast<S extends z.ZodType>(schema: S, value: unknown): z.ZodSafeParseResult<z.output<S>> {
  const fast = fastAccept(schema, value);
  if (fast !== NOT_SURE) return { success: true, data: fast as z.output<S> };
  return schema.safeParse(value) as z.ZodSafeParseResult<z.output<S>>;
}

function build(schema: z.ZodType): Accept {
  const def = defOf(schema);
  switch (def.type) {
    case 'unknown':
    case 'any':
      return (v) => (v === undefined ? NOT_SURE : v);
    case 'number':
      return numberAccept(def);
    case 'string':
      return stringAccept(def);
    case 'boolean':
      if (def.checks?.length) throw new Unsupported();
      return (v) => (typeof v === 'boolean' ? v : NOT_SURE);
    case 'literal': {
      const values = def.values ?? [];
      if (def.checks?.length || !values.every((x) => x === null || ['string', 'number', 'boolean'].includes(typeof x))) throw new Unsupported();
      return (v) => (values.includes(v) ? v : NOT_SURE);
    }
    case 'enum': {
      const values = Object.values(def.entries ?? {});
      if (def.checks?.length || !values.every((x) => typeof x === 'string')) throw new Unsupported();
      return (v) => (typeof v === 'string' && values.includes(v) ? v : NOT_SURE);
    }
    case 'nullable': {
      if (def.checks?.length || !def.innerType) throw new Unsupported();
      const inner = build(def.innerType);
      return (v) => (v === null ? null : inner(v));
    }
    case 'object':
      return objectAccept(def);
    case 'array': {
      if (def.checks?.length || !def.element) throw new Unsupported();
      const element = build(def.element);
      return (v) => {
        if (!Array.isArray(v)) return NOT_SURE;
        const out: unknown[] = new Array(v.length);
        for (let i = 0; i < v.length; i++) {
          const r = element(v[i]);
          if (r === NOT_SURE) return NOT_SURE;
          out[i] = r;
        }
        return out;
      };
    }
    case 'union': {
      // zod takes the first option that accepts. Only options whose answer here is exact (a
      // scalar: NOT_SURE exactly when zod rejects it, the output the value itself) may be tried
      // in turn, so a later option never answers for a value an earlier one would have taken.
      const options = def.options ?? [];
      if (def.checks?.length || options.length === 0 || !options.every(isScalar)) throw new Unsupported();
      const accepts = options.map(build);
      return (v) => {
        for (const a of accepts) {
          const r = a(v);
          if (r !== NOT_SURE) return r;
        }
        return NOT_SURE;
      };
    }
    default:
      // optional is handled by its object (a value JSON gives is never undefined); the rest is zod's.
      throw new Unsupported();
  }
}

/** A schema whose accept function is exact: scalars, and nullable scalars. */
function isScalar(schema: z.ZodType): boolean {
  const d = defOf(schema);
  if (d.type === 'nullable') return !d.checks?.length && !!d.innerType && isScalar(d.innerType);
  return ['number', 'string', 'boolean', 'literal', 'enum'].includes(d.type);
}

function numberAccept(def: Def): Accept {
  const tests = (def.checks ?? []).map(({ _zod: { def: c } }): ((n: number) => boolean) => {
    if (c.when !== undefined) throw new Unsupported();
    if (c.check === 'greater_than' && typeof c.value === 'number') {
      const min = c.value;
      return c.inclusive ? (n) => n >= min : (n) => n > min;
    }
    if (c.check === 'less_than' && typeof c.value === 'number') {
      const max = c.value;
      return c.inclusive ? (n) => n <= max : (n) => n < max;
    }
    if (c.check === 'number_format' && c.format === 'safeint') return Number.isSafeInteger;
    throw new Unsupported();
  });
  return (v) => (typeof v === 'number' && Number.isFinite(v) && tests.every((t) => t(v)) ? v : NOT_SURE);
}

function stringAccept(def: Def): Accept {
  const tests = (def.checks ?? []).map(({ _zod: { def: c } }): ((s: string) => boolean) => {
    // zod's length checks apply only to a value with a length (every string has one); any other
    // condition is zod's to evaluate.
    if (c.when !== undefined && (typeof c.when !== 'function' || c.when.name !== '_whenHasLength')) throw new Unsupported();
    if (c.check === 'min_length' && typeof c.minimum === 'number') {
      const min = c.minimum;
      return (s) => s.length >= min;
    }
    if (c.check === 'max_length' && typeof c.maximum === 'number') {
      const max = c.maximum;
      return (s) => s.length <= max;
    }
    if (c.check === 'length_equals' && typeof c.length === 'number') {
      const len = c.length;
      return (s) => s.length === len;
    }
    throw new Unsupported();
  });
  return (v) => (typeof v === 'string' && tests.every((t) => t(v)) ? v : NOT_SURE);
}

function objectAccept(def: Def): Accept {
  if (def.checks?.length || !def.shape) throw new Unsupported();
  const fields = Object.entries(def.shape).map(([key, schema]) => {
    const d = defOf(schema);
    if (d.type !== 'optional') return { key, optional: false, accept: build(schema) };
    if (d.checks?.length || !d.innerType) throw new Unsupported();
    return { key, optional: true, accept: build(d.innerType) };
  });
  if (fields.some((f) => f.key === '__proto__')) throw new Unsupported();
  const known = new Set(fields.map((f) => f.key));
  const catchall = def.catchall ? defOf(def.catchall).type : 'strip';
  if (!['strip', 'unknown', 'never'].includes(catchall)) throw new Unsupported();
  return (v) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return NOT_SURE;
    const input = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const f of fields) {
      if (!(f.key in input)) {
        if (f.optional) continue;
        return NOT_SURE;
      }
      const r = f.accept(input[f.key]);
      if (r === NOT_SURE || r === undefined) return NOT_SURE;
      out[f.key] = r;
    }
    if (catchall === 'strip') return out;
    for (const key of Object.keys(input)) {
      if (known.has(key)) continue;
      if (catchall === 'never' || key === '__proto__' || input[key] === undefined) return NOT_SURE;
      out[key] = input[key];
    }
    return out;
  };
}
