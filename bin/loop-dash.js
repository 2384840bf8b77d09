#!/usr/bin/env node
// Runs the compiled CLI (no TypeScript loader at start-up).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
if (!existsSync(main)) {
  process.stderr.write('loop-dash: not built yet — run `npm install && npm run build` in the loop-dash checkout.\n');
  process.exit(2);
}
const { run } = await import(main);
process.exitCode = await run(process.argv);
