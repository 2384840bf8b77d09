/**
 * The one keymap registry: every action the dashboard understands, its default keys, what it does
 * and whether it is dangerous. The matcher, the footer and the `?` overlay are all generated from
 * this table, and `--read-only` removes the dangerous rows from all three at once.
 *
 * Ink 6 quirks are handled here and nowhere else: Esc arrives with `meta` set, 0x7F (what most
 * terminals send for Backspace) arrives as `delete`, Alt+letter arrives as `meta` + the letter.
 */
import type { Key } from 'ink';

/** Every action id (SPEC §5 keys, plus paging). */
export type ActionId =
  | 'up'
  | 'down'
  | 'pageUp'
  | 'pageDown'
  | 'top'
  | 'bottom'
  | 'collapse'
  | 'expand'
  | 'detail'
  | 'switchPane'
  | 'filter'
  | 'sort'
  | 'incidents'
  | 'audit'
  | 'abort'
  | 'disarm'
  | 'arm'
  | 'help'
  | 'quit'
  | 'back';

/** A named key as Ink reports it, or one typed character. */
export type KeySpec =
  | { named: 'up' | 'down' | 'left' | 'right' | 'return' | 'tab' | 'escape' | 'pageUp' | 'pageDown' | 'home' | 'end' }
  | { char: string };

/** Help overlay groups, in display order. */
export const HELP_GROUPS = ['Move', 'View', 'Owner actions', 'General'] as const;
export type HelpGroup = (typeof HELP_GROUPS)[number];

/** One row of the registry. */
export interface Binding {
  action: ActionId;
  keys: readonly KeySpec[];
  /** How the keys are written in help (`↑/k`). */
  label: string;
  description: string;
  group: HelpGroup;
  /** Writes a control request: needs a confirmation, and `--read-only` unbinds it. */
  dangerous: boolean;
  /** Footer hint (`[keys, word]`), or null to leave it out of the footer. */
  footer: readonly [string, string] | null;
}

const ch = (c: string): KeySpec => ({ char: c });
const named = (n: Extract<KeySpec, { named: string }>['named']): KeySpec => ({ named: n });

/** The registry. Order is the footer and help order. */
export const KEYMAP: readonly Binding[] = [
  { action: 'up', keys: [named('up'), ch('k')], label: '↑/k', description: 'move up', group: 'Move', dangerous: false, footer: ['↑↓', 'move'] },
  { action: 'down', keys: [named('down'), ch('j')], label: '↓/j', description: 'move down', group: 'Move', dangerous: false, footer: null },
  { action: 'pageUp', keys: [named('pageUp')], label: 'PgUp', description: 'one page up', group: 'Move', dangerous: false, footer: null },
  { action: 'pageDown', keys: [named('pageDown')], label: 'PgDn', description: 'one page down', group: 'Move', dangerous: false, footer: null },
  { action: 'top', keys: [named('home'), ch('g')], label: 'Home/g', description: 'first row', group: 'Move', dangerous: false, footer: null },
  { action: 'bottom', keys: [named('end'), ch('G')], label: 'End/G', description: 'last row', group: 'Move', dangerous: false, footer: null },
  { action: 'collapse', keys: [named('left'), ch('h')], label: '←/h', description: "collapse a root's lanes (on a lane: go to its root)", group: 'Move', dangerous: false, footer: ['←→', 'fold'] },
  { action: 'expand', keys: [named('right'), ch('l')], label: '→/l', description: "expand a root's lanes", group: 'Move', dangerous: false, footer: null },
  { action: 'detail', keys: [named('return')], label: 'Enter', description: 'open/close the detail pane (in incidents: open the record)', group: 'View', dangerous: false, footer: ['⏎', 'detail'] },
  { action: 'switchPane', keys: [named('tab')], label: 'Tab', description: 'switch focus between the table and the detail pane', group: 'View', dangerous: false, footer: ['⇥', 'pane'] },
  { action: 'filter', keys: [ch('/')], label: '/', description: 'filter by name, session, model or state (Esc clears)', group: 'View', dangerous: false, footer: ['/', 'filter'] },
  { action: 'sort', keys: [ch('s')], label: 's', description: 'cycle sort: first limit, name, state, activity', group: 'View', dangerous: false, footer: ['s', 'sort'] },
  { action: 'incidents', keys: [ch('i')], label: 'i', description: 'incidents and warnings', group: 'View', dangerous: false, footer: ['i', 'incidents'] },
  { action: 'audit', keys: [ch('b')], label: 'b', description: 'bounds audit: every limit against maxTokens ÷ the slowest measured rate', group: 'View', dangerous: false, footer: ['b', 'bounds'] },
  { action: 'abort', keys: [ch('x')], label: 'x', description: 'owner-abort the request in flight; hold the session', group: 'Owner actions', dangerous: true, footer: ['x', 'abort'] },
  { action: 'disarm', keys: [ch('d')], label: 'd', description: 'disarm: hold automatic restarts until armed', group: 'Owner actions', dangerous: true, footer: ['d', 'disarm'] },
  { action: 'arm', keys: [ch('a')], label: 'a', description: 'arm: clear the hold, release held turn starts', group: 'Owner actions', dangerous: true, footer: ['a', 'arm'] },
  { action: 'help', keys: [ch('?')], label: '?', description: 'this help', group: 'General', dangerous: false, footer: ['?', 'help'] },
  { action: 'quit', keys: [ch('q')], label: 'q', description: 'quit', group: 'General', dangerous: false, footer: ['q', 'quit'] },
  { action: 'back', keys: [named('escape')], label: 'Esc', description: 'back: close the pane, overlay or record; clear the filter', group: 'General', dangerous: false, footer: null },
];

/** Options that change which bindings are live. */
export interface KeymapOptions {
  readOnly: boolean;
}

/** The live bindings: `--read-only` drops the dangerous ones. */
export function activeBindings(opts: KeymapOptions): Binding[] {
  return KEYMAP.filter((b) => !(opts.readOnly && b.dangerous));
}

function isNamed(spec: KeySpec, key: Key): boolean {
  if (!('named' in spec)) return false;
  switch (spec.named) {
    case 'up':
      return key.upArrow;
    case 'down':
      return key.downArrow;
    case 'left':
      return key.leftArrow;
    case 'right':
      return key.rightArrow;
    case 'return':
      return key.return;
    case 'tab':
      return key.tab && !key.shift;
    case 'escape':
      return key.escape;
    case 'pageUp':
      return key.pageUp;
    case 'pageDown':
      return key.pageDown;
    case 'home':
      return key.home;
    case 'end':
      return key.end;
    default: {
      const never: never = spec.named;
      return never;
    }
  }
}

/** A named (non-character) key: its `input` is empty or meaningless. */
function isNamedKey(key: Key): boolean {
  return (
    key.upArrow || key.downArrow || key.leftArrow || key.rightArrow || key.return || key.tab || key.escape ||
    key.pageUp || key.pageDown || key.home || key.end || key.backspace || key.delete
  );
}

/** Ink's `(input, key)` as the action it is bound to, or null. */
export function matchAction(input: string, key: Key, opts: KeymapOptions): ActionId | null {
  const namedKey = isNamedKey(key);
  // Esc sets `meta` in Ink; a real Alt/Meta chord on a character is not one of our keys.
  const chord = !namedKey && (key.meta || key.ctrl);
  for (const b of activeBindings(opts)) {
    for (const spec of b.keys) {
      if ('named' in spec) {
        if (isNamed(spec, key)) return b.action;
      } else if (!namedKey && !chord && input === spec.char) return b.action;
    }
  }
  return null;
}

/** A key press in the terms the views need: the bound action, and what it means as typed text. */
export interface KeyPress {
  action: ActionId | null;
  /** Printable text typed (empty for named keys and chords). A paste arrives as one string. */
  text: string;
  /** Backspace (0x08) or 0x7F, which Ink 6 reports as `delete`. */
  erase: boolean;
  /** Enter. */
  submit: boolean;
}

/** The matcher plus the text-entry reading used by the filter prompt and the confirm dialog. */
export function readKeypress(input: string, key: Key, opts: KeymapOptions): KeyPress {
  const namedKey = isNamedKey(key);
  const chord = !namedKey && (key.meta || key.ctrl);
  const text = namedKey || chord ? '' : input.replace(/[\u0000-\u001f\u007f-\u009f]/g, '');
  return { action: matchAction(input, key, opts), text, erase: key.backspace || key.delete, submit: key.return };
}

/** How a binding's keys look in the footer. */
export interface FooterHint {
  keys: string;
  word: string;
  action: ActionId;
}

/** The footer hints, generated from the registry. */
export function footerHints(opts: KeymapOptions): FooterHint[] {
  return activeBindings(opts).flatMap((b) => (b.footer ? [{ keys: b.footer[0], word: b.footer[1], action: b.action }] : []));
}

/** The `?` overlay: bindings that have keys, by group. */
export function helpSections(opts: KeymapOptions): { group: HelpGroup; bindings: Binding[] }[] {
  const live = activeBindings(opts).filter((b) => b.keys.length > 0);
  return HELP_GROUPS.map((group) => ({ group, bindings: live.filter((b) => b.group === group) })).filter((s) => s.bindings.length > 0);
}

/** Ink's key flags with none set (a plain character). */
export const NO_KEY: Key = {
  upArrow: false, downArrow: false, leftArrow: false, rightArrow: false, pageDown: false, pageUp: false,
  home: false, end: false, return: false, escape: false, ctrl: false, shift: false, tab: false,
  backspace: false, delete: false, meta: false, super: false, hyper: false, capsLock: false, numLock: false,
} as Key;

/**
 * Ink 6 splits its input only at escape sequences: keys typed faster than a read (`jj⏎` from a
 * fast typist, a terminal multiplexer, or a paste) arrive as ONE input string with no key flags.
 * Split such a string into one press per character so no key is lost; everything else is one press.
 */
export function readKeypresses(input: string, key: Key, opts: KeymapOptions): KeyPress[] {
  const chars = [...input];
  if (chars.length <= 1 || isNamedKey(key) || key.meta || key.ctrl) return [readKeypress(input, key, opts)];
  return chars.map((ch) => {
    if (ch === '\r' || ch === '\n') return readKeypress('', { ...NO_KEY, return: true }, opts);
    if (ch === '\t') return readKeypress('', { ...NO_KEY, tab: true }, opts);
    if (ch === '\x7f' || ch === '\b') return readKeypress('', { ...NO_KEY, delete: true }, opts);
    return readKeypress(ch, NO_KEY, opts);
  });
}
