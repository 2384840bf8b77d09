/**
 * What the CLI and `bin/loop-dash.js` tell each other when the CLI runs from the script bundle
 * (dist/src/cli/main.script.cjs, compiled with V8's code cache: see the bin and
 * docs/PERFORMANCE.md). Without the bin (tests, the compiled modules) every hook is a no-op.
 *
 * - `preloadInk`: the script bundle holds Ink but not yoga-layout (its index awaits at its top
 *   level, which a script cannot); the bin loads it (`yoga.cjs` beside the script: its
 *   `yoga-layout/load` entry as CommonJS) before Ink is first imported.
 * - `startComplete`: the start's reads are done (the live store's start, just before V8's flags
 *   go back to their defaults: tiering.ts); the bin writes V8's code cache of what the start
 *   compiled if it had none it could use (once per process). V8 rejects a cache made under
 *   other flags than those it is loaded with, so it must be made before they change.
 */
export interface LauncherHooks {
  /** Whether the script was compiled with a code cache: used, rejected by V8, none yet, or off (LOOP_DASH_NO_CODE_CACHE). */
  codeCache?: 'used' | 'rejected' | 'none' | 'off';
  preloadInk?(): Promise<void>;
  startComplete?(): void;
}

const KEY = Symbol.for('loop-dash.launcher');

function hooks(): LauncherHooks | undefined {
  return (globalThis as { [KEY]?: LauncherHooks })[KEY];
}

/** How the CLI was compiled: the code cache's state, or null when it does not run from the script bundle. */
export function codeCacheState(): LauncherHooks['codeCache'] | null {
  return hooks()?.codeCache ?? null;
}

/** Before `import('ink')`: what Ink needs that the bin loads. */
export async function preloadInk(): Promise<void> {
  await hooks()?.preloadInk?.();
}

/** The start's reads are done, V8's flags not yet changed back (tiering.ts restoreInterruptBudget calls it). */
export function startComplete(): void {
  try {
    hooks()?.startComplete?.();
  } catch {
    /* a cache not written is only a slower next start */
  }
}

/**
 * Whether code at `url` (its `import.meta.url`) runs from a bundle in dist/src/cli/ — the ES
 * module bundle and its chunks, or the script bundle — so its helpers (the read worker, the audit
 * helper) are the bundled ones beside it.
 */
export function runsFromBundle(url: string): boolean {
  return /\/(chunk-[A-Z0-9]+|main\.bundle)\.mjs$|\/main\.script\.cjs$/.test(url);
}
