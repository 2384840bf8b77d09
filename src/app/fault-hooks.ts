/**
 * Fault injection for the terminal reliability tests (RELIABILITY.md F4, F5), driven by one
 * environment variable so the product's code paths stay the real ones:
 *   LOOP_DASH_FAULT=throw:<ms>    an uncaught exception <ms> after the dashboard starts
 *   LOOP_DASH_FAULT=console:<ms>  a background module calling console.log every <ms>
 *   LOOP_DASH_FAULT=slow-ink:<ms> Ink takes <ms> longer to load (keys typed before it, early-keys.ts)
 *   LOOP_DASH_FAULT=no-ink:<ms>   Ink's load fails after <ms> (a broken install)
 * Unset (always, outside tests) it does nothing.
 */

/** `LOOP_DASH_FAULT=<kind>:<ms>`, or null when unset or malformed. */
function faultSpec(env: NodeJS.ProcessEnv): { kind: string; ms: number } | null {
  const [kind, msText] = (env.LOOP_DASH_FAULT ?? '').split(':');
  const ms = Number(msText);
  return kind && Number.isFinite(ms) && ms > 0 ? { kind, ms } : null;
}

export function installFaultHooks(env: NodeJS.ProcessEnv = process.env): () => void {
  const spec = faultSpec(env);
  if (!spec) return () => undefined;
  const { kind, ms } = spec;
  if (kind === 'throw') {
    const t = setTimeout(() => {
      throw new Error('injected fault (LOOP_DASH_FAULT)');
    }, ms);
    return () => clearTimeout(t);
  }
  if (kind === 'console') {
    let n = 0;
    const t = setInterval(() => console.log(`injected background log line ${++n}`), ms);
    return () => clearInterval(t);
  }
  return () => undefined;
}

/**
 * Resolves when Ink's load may begin: at once, or `<ms>` later under `LOOP_DASH_FAULT=slow-ink:<ms>`;
 * rejects `<ms>` later under `LOOP_DASH_FAULT=no-ink:<ms>`.
 */
export function inkLoadDelay(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const spec = faultSpec(env);
  if (spec?.kind === 'no-ink') return new Promise((_, reject) => setTimeout(() => reject(new Error('injected fault: Ink could not be loaded (LOOP_DASH_FAULT)')), spec.ms).unref());
  if (spec?.kind !== 'slow-ink') return Promise.resolve();
  return new Promise((resolve) => setTimeout(resolve, spec.ms).unref());
}
