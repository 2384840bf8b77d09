#!/usr/bin/env node
// The floor of start-up: list and stat every file of a home, nothing else. Prints the file count.
//
// `--warm <cache file>`: the floor of a warm start instead — what any correct warm start must do
// whatever it draws: list and stat every file (to know what changed while nothing watched), watch
// every directory (inotify, one watch each, set before the directory is listed, as the dashboard
// does), and load what it remembered of the home (the session cache, every slice deserialised).
// Nothing is read from the home, validated, reduced or drawn. Prints files, bytes, directories and
// cache entries.
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const warmAt = args.indexOf('--warm');
const cacheFile = warmAt >= 0 ? args[warmAt + 1] : null;
const home = args.find((a, i) => !a.startsWith('--') && (warmAt < 0 || i !== warmAt + 1));
const watchers = [];

let files = 0;
let bytes = 0;
let dirs = 0;
const walk = (dir) => {
  dirs++;
  if (cacheFile) watchers.push(fs.watch(dir, { persistent: false }, () => undefined));
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p);
    else {
      const st = fs.statSync(p);
      files++;
      bytes += st.size;
    }
  }
};
walk(home);

// Loaded as the dashboard loads it: its own slice reader (the build's src/readers/session-cache.ts).
let entries = 0;
if (cacheFile) {
  const { CacheFile } = await import(new URL('../dist/src/readers/session-cache.js', import.meta.url).href);
  const file = CacheFile.open(cacheFile);
  if (!file?.readMagic()) throw new Error(`${cacheFile}: not a session cache`);
  file.next(); // the header
  while (!file.atEnd) entries += file.next().length;
  file.close();
  if (entries === 0) throw new Error(`${cacheFile}: no entries`);
  for (const w of watchers) w.close();
}
process.stdout.write(cacheFile ? `${files} ${bytes} ${dirs} ${entries}\n` : `${files} ${bytes}\n`);
