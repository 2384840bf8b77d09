#!/usr/bin/env node
// Runs the compiled CLI (no TypeScript loader at start-up): the one-file bundle when it is present
// and at least as new as the compiled sources (scripts/bundle.mjs; it starts ~0.3 s sooner), else
// the compiled modules. LOOP_DASH_NO_BUNDLE=1 forces the modules; LOOP_DASH_BUNDLE=1 the bundle
// (the benchmark, which builds it first, while others may be recompiling the modules).
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';

const main = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
const bundle = fileURLToPath(new URL('../dist/src/cli/main.bundle.mjs', import.meta.url));
if (!existsSync(main)) {
  process.stderr.write('loop-dash: not built yet — run `npm install && npm run build` in the loop-dash checkout.\n');
  process.exit(2);
}
const fresh = () => {
  try {
    return statSync(bundle).mtimeMs >= statSync(main).mtimeMs;
  } catch {
    return false;
  }
};
// React's development build records a performance measure and debug data for every render and
// never frees them (measured: +50 MB a minute with the dashboard open). Run the production build
// unless the environment asks otherwise. Set before the CLI (and so React) is imported.
process.env.NODE_ENV ??= 'production';

// `loop-dash incidents | head`: a reader that went away is not an error.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});
// The start runs with a larger V8 interrupt budget, so TurboFan compiles only what stays hot
// (src/app/tiering.ts, which restores the default once the start's reads are done; its
// START_INTERRUPT_BUDGET). Set before anything else is loaded; one given on the command line is kept.
if (!process.execArgv.some((a) => a.startsWith('--interrupt-budget'))) setFlagsFromString('--interrupt-budget=1000000');
const entry = !process.env.LOOP_DASH_NO_BUNDLE && ((process.env.LOOP_DASH_BUNDLE && existsSync(bundle)) || fresh()) ? bundle : main;
const { run } = await import(entry);
process.exitCode = await run(process.argv);
