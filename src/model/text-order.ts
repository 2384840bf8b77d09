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

/** Each name's sort key (nameKey), kept as its lowercase form is (bounded: cleared when full). */
const nameKeys = new Map<string, { key: string; fast: boolean }>();

/** A digit run as its length, then its digits (leading zeros dropped): `3` → `13`, `10` → `210`. */
function runKey(run: string): string {
  let z = 0;
  while (z < run.length - 1 && run.charCodeAt(z) === 48) z++;
  const digits = z === 0 ? run : run.slice(z);
  return digits.length < 9 ? `${digits.length}${digits}` : `9${String(digits.length).padStart(2, '0')}${digits}`;
}

function nameKey(s: string): { key: string; fast: boolean } {
  let k = nameKeys.get(s);
  if (k === undefined) {
    if (nameKeys.size >= LOWER_FORMS_MAX) nameKeys.clear();
    const fast = FAST.test(s);
    const base = fast ? lowered(s) : s;
    k = { key: DIGITS.test(base) ? base.replace(DIGIT_RUNS, runKey) : base, fast };
    nameKeys.set(s, k);
  }
  return k;
}

const DIGITS = /[0-9]/;
const DIGIT_RUNS = /[0-9]+/g;

/**
 * Names, as a user reads them: a run of digits by its number (`L3` before `L10`, `bulk-9` before
 * `bulk-131`), everything else as {@link compareText}. Each name has a key, made once: its
 * compareText primary form with each digit run written as its length and then its digits, so a
 * plain comparison of keys puts shorter numbers first; names whose keys are equal (`L03`, `L3`;
 * `Ab`, `ab`) go by compareText. The first frame sorts every row by name, and the bench's names all
 * carry digits: a comparison walking the characters cost ~7 ms more there, these keys ~1 ms.
 */
export function compareNames(a: string, b: string): number {
  if (a === b) return 0;
  const x = nameKey(a);
  const y = nameKey(b);
  if (x.key !== y.key) {
    // Keys of the fast set are lowercase, in their primary order by code unit (as compareText's first branch).
    if (x.fast && y.fast) return x.key < y.key ? -1 : 1;
    const c = x.key.localeCompare(y.key);
    if (c !== 0) return c;
  }
  return compareText(a, b);
}
