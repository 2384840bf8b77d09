/**
 * Waits until `check` returns a truthy value, polling; fails with `what` after `timeoutMs` (`what`
 * may be a function, evaluated only on failure, e.g. to show the screen then).
 */
export async function waitFor<T>(check: () => T | Promise<T>, what: string | (() => string), timeoutMs = 5_000, everyMs = 10): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
