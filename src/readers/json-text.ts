/**
 * Parse untrusted JSON text without crashing, blocking or polluting prototypes (RELIABILITY A12).
 * Pure: no file system. Shared by the small-file readers and the small JSONL readers.
 */

/** Deepest nesting of objects/arrays we accept; real loop-pi and pi files stay far below it. */
export const JSON_MAX_DEPTH = 64;

/** The outcome of parsing one JSON text. */
export type JsonTextResult =
  | { ok: true; value: unknown; droppedProtoKeys: number }
  | {
      ok: false;
      message: string;
      /** 1-based line and column of the problem, when it can be located. */
      line: number | null;
      column: number | null;
      /** UTF-16 offset into the text of the problem, when known. */
      offset: number | null;
      /** The text ended before the JSON did: typical of a writer caught mid-write. */
      truncated: boolean;
    };

/**
 * Parse `text` as JSON. Rejects nesting deeper than `maxDepth` before `JSON.parse` sees it (a
 * deep file can exhaust the stack in later recursive code even when the parser copes), drops
 * every `__proto__` key (so no later copy or merge can reach a prototype), and locates syntax
 * errors by line and column, since Node 20's messages carry no position.
 */
export function parseJsonText(text: string, maxDepth = JSON_MAX_DEPTH): JsonTextResult {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const shift = body === text ? 0 : 1;
  // The nesting scan walks every character in JS; text with no more opening brackets than the
  // limit cannot nest deeper than it (counted natively, strings included: a safe over-count).
  const deep = countOpenings(body, maxDepth) <= maxDepth ? null : findExcessDepth(body, maxDepth);
  if (deep !== null) {
    return failure(text, `nesting deeper than ${maxDepth} levels`, deep + shift, false);
  }
  let dropped = 0;
  try {
    // A reviver makes JSON.parse several times slower; only text that can spell `__proto__` as a
    // key (literally, or with \u escapes) needs one.
    const value: unknown =
      body.includes('proto') || body.includes('\\u')
        ? JSON.parse(body, (key, v: unknown) => {
            if (key === '__proto__') {
              dropped++;
              return undefined;
            }
            return v;
          })
        : JSON.parse(body);
    return { ok: true, value, droppedProtoKeys: dropped };
  } catch (err) {
    const at = locateJsonError(body);
    const reason = err instanceof Error ? err.message : String(err);
    const truncated = at !== null && at >= body.trimEnd().length;
    return failure(text, `invalid JSON: ${firstLine(reason)}`, at === null ? null : at + shift, truncated);
  }
}

function failure(text: string, message: string, offset: number | null, truncated: boolean): JsonTextResult {
  if (offset === null) return { ok: false, message, line: null, column: null, offset: null, truncated };
  const { line, column } = lineAndColumn(text, offset);
  return { ok: false, message: `${message} (line ${line} column ${column})`, line, column, offset, truncated };
}

function firstLine(s: string): string {
  const line = s.split('\n', 1)[0] ?? '';
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}

/** 1-based line and column of a UTF-16 offset. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(offset, text.length);
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

/** How many `{` and `[` `s` holds (anywhere), counting no further than `limit + 1`. */
function countOpenings(s: string, limit: number): number {
  let n = 0;
  for (const ch of ['{', '[']) {
    let i = s.indexOf(ch);
    while (i >= 0) {
      if (++n > limit) return n;
      i = s.indexOf(ch, i + 1);
    }
  }
  return n;
}

/**
 * The rest of a JSON string from just after its opening quote through its closing quote: any
 * character but a quote or a backslash, or a backslash and whatever follows it (sticky: it must
 * match where it is put).
 */
const STRING_REST = /[^"\\]*(?:\\[\s\S][^"\\]*)*"/y;

/**
 * The offset of the bracket that goes deeper than `maxDepth`, or null. Strings are skipped whole:
 * the next quote by `indexOf`, and when a backslash run escapes it (as it does every quote of a
 * tool's JSON output held in a string) the rest of the string by a regular expression — not
 * character by character in JavaScript. It runs only for text with more brackets than
 * `maxDepth` (countOpenings), which is mostly a long line whose brackets are inside its strings.
 * Over 400 flat lines of 60 KB of a tool's output, each node run on its own (2026-12-06): a lock
 * file's JSON 0.31–0.33 → 0.11 ms a line, TypeScript 0.23 → 0.04–0.07 ms (`JSON.parse` of the
 * same lines: 0.10 and 0.06 ms). The same answer as a scan of every character
 * (`test/readers-small.test.ts`, by property; exported for that test).
 */
export function findExcessDepth(s: string, maxDepth: number): number | null {
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) {
      const end = stringEnd(s, i);
      if (end < 0) return null; // a string that never ends holds no bracket
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return i;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return null;
}

/**
 * Past this many characters the rest of a string is walked by hand, not by STRING_REST: V8's
 * first runs of the expression in a process took 300–450 ms over a 4 MB string of escapes against
 * ~11 ms for the walk (measured in review, 2026-12-06), and its backtracking stack would run out
 * past ~7 M characters. A session line is at most 4 MB; a tool's output in one, ~50 KB.
 */
const STRING_REST_MAX = 256 * 1024;

/** The offset of the quote that closes the string opened at `open`, or -1 when none does. */
function stringEnd(s: string, open: number): number {
  const quote = s.indexOf('"', open + 1);
  if (quote < 0) return -1;
  // Escaped only by an odd run of backslashes right before it (the run cannot pass `open`).
  let k = quote - 1;
  while (s.charCodeAt(k) === 0x5c) k--;
  if ((quote - 1 - k) % 2 === 0) return quote;
  // An escaped quote: the string's rest from just after it.
  if (s.length - quote <= STRING_REST_MAX) {
    STRING_REST.lastIndex = quote + 1;
    return STRING_REST.test(s) ? STRING_REST.lastIndex - 1 : -1;
  }
  for (let i = quote + 1; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x22) return i;
  }
  return -1;
}

type Expect = 'value' | 'value-or-close' | 'key' | 'key-or-close' | 'colon' | 'comma-or-close' | 'end';

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * The offset of the first JSON syntax error in `s`, or null when `s` is valid JSON. Iterative
 * (explicit stack), so any input is safe; only used after `JSON.parse` has already failed.
 */
export function locateJsonError(s: string): number | null {
  const stack: number[] = []; // 0x7b '{' or 0x5b '['
  let expect: Expect = 'value';
  let i = 0;
  const afterValue = (): Expect => (stack.length > 0 ? 'comma-or-close' : 'end');
  for (;;) {
    while (i < s.length && isSpace(s.charCodeAt(i))) i++;
    if (i >= s.length) return expect === 'end' ? null : s.length;
    const c = s.charCodeAt(i);
    switch (expect) {
      case 'end':
        return i;
      case 'colon':
        if (c !== 0x3a) return i;
        i++;
        expect = 'value';
        break;
      case 'comma-or-close': {
        const top = stack[stack.length - 1];
        if (c === 0x2c) {
          i++;
          expect = top === 0x7b ? 'key' : 'value';
        } else if ((top === 0x7b && c === 0x7d) || (top === 0x5b && c === 0x5d)) {
          stack.pop();
          i++;
          expect = afterValue();
        } else {
          return i;
        }
        break;
      }
      case 'key':
      case 'key-or-close': {
        if (expect === 'key-or-close' && c === 0x7d) {
          stack.pop();
          i++;
          expect = afterValue();
          break;
        }
        if (c !== 0x22) return i;
        const end = scanString(s, i);
        if (end < 0) return -end - 1;
        i = end;
        expect = 'colon';
        break;
      }
      case 'value':
      case 'value-or-close': {
        if (expect === 'value-or-close' && c === 0x5d) {
          stack.pop();
          i++;
          expect = afterValue();
          break;
        }
        if (c === 0x7b || c === 0x5b) {
          stack.push(c);
          i++;
          expect = c === 0x7b ? 'key-or-close' : 'value-or-close';
          break;
        }
        const end = scanScalar(s, i);
        if (end < 0) return -end - 1;
        i = end;
        expect = afterValue();
        break;
      }
      default: {
        const never: never = expect;
        return never;
      }
    }
  }
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/** End offset of the scalar at `i`, or −(error offset) − 1. */
function scanScalar(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c === 0x22) return scanString(s, i);
  for (const word of ['true', 'false', 'null']) {
    if (s.startsWith(word, i)) return i + word.length;
  }
  NUMBER.lastIndex = i;
  const m = NUMBER.exec(s);
  if (m && m[0].length > 0) return i + m[0].length;
  return -i - 1;
}

/** End offset of the string starting at `i` (a `"`), or −(error offset) − 1. */
function scanString(s: string, i: number): number {
  let j = i + 1;
  while (j < s.length) {
    const c = s.charCodeAt(j);
    if (c === 0x22) return j + 1;
    if (c < 0x20) return -j - 1;
    if (c === 0x5c) {
      const e = s.charCodeAt(j + 1);
      if (e === 0x75) {
        if (!/^[0-9a-fA-F]{4}$/.test(s.slice(j + 2, j + 6))) return -(j + 1) - 1;
        j += 6;
        continue;
      }
      if (!'"\\/bfnrt'.includes(s[j + 1] ?? '')) return -(j + 1) - 1;
      j += 2;
      continue;
    }
    j++;
  }
  return -s.length - 1;
}

/** A plain (non-array) JSON object. */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
