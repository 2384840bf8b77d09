/**
 * A JSON document printed in pieces, byte for byte what `JSON.stringify(value, null, 2)` prints.
 *
 * `status --json` on a home of 12 000 sessions prints ~26 MB of JSON. Made as one string (two
 * bytes a character as soon as one "—" is in it) and then encoded for stdout, it held ~130 MB at
 * the process's peak beside the model. Here the top object and the arrays in it are written an
 * element at a time, each element stringified alone and indented under its parent.
 */

/** Where pieces go; they are gathered into chunks of about this many characters first. */
const CHUNK_CHARS = 64 * 1024;

/** Calls `write` with chunks whose concatenation is `JSON.stringify(value, null, 2)` (and nothing for a value it prints as `undefined`). */
export function writeJson(value: unknown, write: (chunk: string) => void): void {
  let buf = '';
  const put = (s: string) => {
    buf += s;
    if (buf.length >= CHUNK_CHARS) {
      write(buf);
      buf = '';
    }
  };
  for (const piece of jsonPieces(value)) put(piece);
  if (buf !== '') write(buf);
}

/** `JSON.stringify(v, null, 2)` with every line after the first indented by `pad` (`undefined` as `JSON.stringify` returns it). */
function nested(v: unknown, pad: string): string | undefined {
  const text = JSON.stringify(v, null, 2) as string | undefined;
  return text === undefined || !text.includes('\n') ? text : text.replaceAll('\n', `\n${pad}`);
}

/** A plain array or object whose members are written one at a time; anything else (toJSON, Maps, …) is left to `JSON.stringify` whole. */
function splittable(v: unknown): v is unknown[] | Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  if (Array.isArray(v)) return true;
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
}

/** Whether JSON.stringify prints the value (a member it cannot print is left out of an object, and is null in an array). */
function printable(v: unknown): boolean {
  if (typeof v === 'object' && v !== null && typeof (v as { toJSON?: unknown }).toJSON === 'function') return JSON.stringify(v) !== undefined;
  return v !== undefined && typeof v !== 'function' && typeof v !== 'symbol';
}

/** The pieces of the value at `depth` (0: the document; its members at 1 are split again, deeper ones not). */
function* jsonPieces(value: unknown, depth = 0): Generator<string> {
  const pad = '  '.repeat(depth);
  if (depth > 1 || !splittable(value)) {
    const text = nested(value, pad);
    if (text !== undefined) yield text;
    return;
  }
  const inner = `${pad}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return yield '[]';
    yield '[\n';
    for (let i = 0; i < value.length; i++) {
      yield inner;
      // An array member JSON cannot print (undefined, a function) is printed as null, as JSON.stringify does.
      if (printable(value[i])) yield* jsonPieces(value[i], depth + 1);
      else yield 'null';
      yield i < value.length - 1 ? ',\n' : '\n';
    }
    return yield `${pad}]`;
  }
  // An object's members JSON cannot print are left out, as JSON.stringify does.
  const members = Object.keys(value).filter((k) => printable(value[k]));
  if (members.length === 0) return yield '{}';
  yield '{\n';
  for (let i = 0; i < members.length; i++) {
    const k = members[i]!;
    yield `${inner}${JSON.stringify(k)}: `;
    yield* jsonPieces(value[k], depth + 1);
    yield i < members.length - 1 ? ',\n' : '\n';
  }
  yield `${pad}}`;
}
