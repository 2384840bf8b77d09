#!/usr/bin/env node
/**
 * A stand-in for a live pi process with the loop-dash extension: it listens on its liveness
 * socket in each home given (the extension's own code, docs/CONTRACT.md §5) and sleeps until
 * killed. Spawned by the benchmark (bench/lib.mjs startSleeper: the pid its live checkpoints name)
 * and by test/liveness.test.ts. Needs the compiled modules (`npm run build`).
 *
 *   node scripts/liveness-listener.mjs [home …]
 */
import os from 'node:os';

const dist = new URL('../dist/src/', import.meta.url);
const { LivenessSocket } = await import(new URL('extension/liveness-socket.js', dist).href);
const { processStartIdentity } = await import(new URL('readers/process-probe.js', dist).href);
for (const home of process.argv.slice(2)) new LivenessSocket(() => {}).start(home, os.hostname(), process.pid, processStartIdentity(process.pid));
setInterval(() => {}, 1 << 30);
