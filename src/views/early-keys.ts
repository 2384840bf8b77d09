/**
 * Keys typed while Ink loads.
 *
 * Between the first frame and Ink's first render (~100 ms on a big home: Ink's chunk is compiled
 * and run, then mounted) a key would wait in the terminal, and a key typed just after the first
 * frame took 80–140 ms to show. Here the plain keys of that window — one printable character or a
 * run of them, Enter, Tab, Backspace, Esc, an arrow — are read from stdin and handled by the
 * first screen as App would (`FirstScreen.press`), each drawn at once. Anything else (a control
 * character, any other escape sequence, a key mixed with a sequence in one read) is put back
 * unread, and it and everything after it are left to Ink, in order: Ink's parser is the one that
 * knows those. App then starts from the view state and key count these keys left.
 *
 * No React or Ink here: this module must stay out of their chunk.
 */
import type { Key } from 'ink';
import type { FirstScreen } from './first-frame.js';
import { NO_KEY } from './keymap.js';

const ARROWS: Record<string, Partial<Key>> = {
  '\x1b[A': { upArrow: true },
  '\x1b[B': { downArrow: true },
  '\x1b[C': { rightArrow: true },
  '\x1b[D': { leftArrow: true },
};

/**
 * What Ink 6's `useInput` hands its handler for a read of exactly `chunk`, for the reads handled
 * before Ink; null for any other (left to Ink). `test/views-early-keys.test.tsx` checks each
 * against the App fed the same reads through Ink.
 */
export function earlyKey(chunk: string): { input: string; key: Key } | null {
  // Printable ASCII: one event with the text as typed (a run is split into keys by readKeypresses).
  if (/^[\x20-\x7e]+$/.test(chunk)) return { input: chunk, key: chunk.length === 1 && /[A-Z]/.test(chunk) ? { ...NO_KEY, shift: true } : NO_KEY };
  switch (chunk) {
    case '\r':
      return { input: '\r', key: { ...NO_KEY, return: true } };
    case '\t':
      return { input: '', key: { ...NO_KEY, tab: true } };
    case '\x7f':
      return { input: '', key: { ...NO_KEY, delete: true } };
    case '\x1b':
      return { input: '', key: { ...NO_KEY, escape: true, meta: true } };
    default: {
      const arrow = ARROWS[chunk];
      return arrow ? { input: '', key: { ...NO_KEY, ...arrow } } : null;
    }
  }
}

/** The part of a terminal's stdin the early reader uses (a tty.ReadStream, or a stream in tests). */
export interface EarlyInput {
  on(event: 'readable', listener: () => void): unknown;
  off(event: 'readable', listener: () => void): unknown;
  read(): Buffer | string | null;
  unshift(chunk: Buffer | string): void;
}

export interface EarlyKeys {
  /** Stops reading (before Ink mounts); what was not handled stays in the stream for Ink. */
  stop(): void;
  /** Resolves when a key handled here quit the dashboard (`q`): Ink is then not needed. */
  quit: Promise<void>;
}

/**
 * Reads and handles plain keys on `input` until `stop()`, or until a read it leaves to Ink. `onKey`
 * hears of each read handled here (a printable run typed at once is one read), as the App's own
 * `onKey` hears of the keys after it: the start's full collection waits for a pause in them
 * (app/heap.ts).
 */
export function readEarlyKeys(input: EarlyInput, screen: FirstScreen, onKey: () => void): EarlyKeys {
  let reading = true;
  let quit: () => void = () => undefined;
  const quitting = new Promise<void>((resolve) => (quit = resolve));
  const stop = () => {
    if (!reading) return;
    reading = false;
    input.off('readable', onReadable);
  };
  function onReadable(): void {
    let chunk: Buffer | string | null;
    while (reading && (chunk = input.read()) !== null) {
      const key = earlyKey(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
      if (!key) {
        // Ink's from here on, this read included.
        stop();
        input.unshift(chunk);
        return;
      }
      onKey();
      screen.press(key.input, key.key);
      if (screen.view.quit) {
        stop();
        quit();
      }
    }
  }
  input.on('readable', onReadable);
  return { stop, quit: quitting };
}
