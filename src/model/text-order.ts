/**
 * The order rows are listed in by name: `a.localeCompare(b)`'s, without ICU for the names loop-pi
 * gives sessions and lanes. A process's first `localeCompare` builds ICU's collator (~7.5 ms here),
 * and the first frame sorts every row by name: that cost sat on the path to it.
 *
 * For strings made only of ASCII letters, digits, `-`, `.` and `/`, the root collation ICU uses
 * (CLDR, punctuation not ignorable, no numeric ordering) orders them as this does: first by each
 * character's primary weight (`-` < `.` < `/` < digits < letters, a letter's case ignored), a string
 * that is a prefix of the other at that level first; with no difference there, by case at the
 * first letter whose case differs (lowercase first); else equal. Any other character, in either
 * string, and the comparison is `localeCompare`'s. `test/text-order.test.ts` checks both agree.
 */

/** The primary weight of a character of the fast set, or -1 outside it. */
function primary(c: number): number {
  if (c >= 97 && c <= 122) return c; // a-z
  if (c >= 65 && c <= 90) return c + 32; // A-Z: as lowercase
  if (c >= 48 && c <= 57) return c; // 0-9
  if (c === 45) return 1; // -
  if (c === 46) return 2; // .
  if (c === 47) return 3; // /
  return -1;
}

/** Negative when `a` sorts before `b`, positive after, 0 when equal: the sign of `a.localeCompare(b)`. */
export function compareText(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.max(a.length, b.length);
  let first = 0; // the first primary difference (or length)
  let tertiary = 0; // the first difference of case alone
  for (let i = 0; i < n; i++) {
    const x = i < a.length ? primary(a.charCodeAt(i)) : 0;
    const y = i < b.length ? primary(b.charCodeAt(i)) : 0;
    if (x < 0 || y < 0) return a.localeCompare(b);
    if (first !== 0) continue; // decided; the rest is only checked to be in the fast set
    if (x !== y) first = x < y ? -1 : 1; // 0 (past the end) sorts before every character
    else if (tertiary === 0 && a.charCodeAt(i) !== b.charCodeAt(i)) tertiary = a.charCodeAt(i) > b.charCodeAt(i) ? -1 : 1; // lowercase (the larger code) first
  }
  return first !== 0 ? first : tertiary;
}
