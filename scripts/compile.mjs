#!/usr/bin/env node
// `npm run build`'s first step: `tsc -b` (incremental, its state in dist/.tsbuildinfo), with
// `--force` when the installed packages changed since the last compile (scripts/build-freshness.mjs).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileAfresh } from './build-freshness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const force = compileAfresh({ root }) ? ['--force'] : [];
if (force.length) console.log('compile: the installed packages changed since the last compile; compiling everything');
const r = spawnSync(process.execPath, [tsc, '-b', path.join(root, 'tsconfig.json'), ...force], { stdio: 'inherit' });
process.exit(r.status ?? 1);
