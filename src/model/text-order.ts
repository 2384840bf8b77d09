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

/** Strings of the fast set only; and of its lowercase part (session ids, most names). */
const FAST = /^[-./0-9A-Za-z]*$/;
const LOWER = /^[-./0-9a-z]*$/;

/** Each name's lowercase form, kept: a sort compares each name many times (bounded: cleared when full). */
const lowerForms = new Map<string, string>();
const LOWER_FORMS_MAX = 8_192;

function lowered(s: string): string {
  let l = lowerForms.get(s);
  if (l === undefined) {
    if (lowerForms.size >= LOWER_FORMS_MAX) lowerForms.clear();
    l = s.toLowerCase();
    lowerForms.set(s, l);
  }
  return l;
}

/** Negative when `a` sorts before `b`, positive after, 0 when equal: the sign of `a.localeCompare(b)`. */
export function compareText(a: string, b: string): number {
  if (a === b) return 0;
  // Lowercase, the fast set's code units are in its primary order (- . / 0-9 a-z), and `<` puts a
  // prefix first. Native string operations throughout: a comparator runs before the JIT compiles it
  // (the start's raised interrupt budget), where a loop over characters cost ~10 times more.
  if (LOWER.test(a) && LOWER.test(b)) return a < b ? -1 : 1;
  if (!FAST.test(a) || !FAST.test(b)) return a.localeCompare(b);
  const la = lowered(a);
  const lb = lowered(b);
  if (la !== lb) return la < lb ? -1 : 1;
  // Case alone differs: at its first difference the lowercase letter (the larger code unit) first.
  return a > b ? -1 : 1;
}
