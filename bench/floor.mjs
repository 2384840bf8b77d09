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
import v8 from 'node:v8';

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

// The session cache's layout (src/readers/session-cache.ts): [magic: 4 bytes][u32 length, V8 value]…
let entries = 0;
if (cacheFile) {
  const buf = fs.readFileSync(cacheFile);
  for (let at = 4, slice = 0; at < buf.length; slice++) {
    const length = buf.readUInt32LE(at);
    const value = v8.deserialize(buf.subarray(at + 4, at + 4 + length));
    if (slice > 0) entries += value.length; // slice 0 is the header
    at += 4 + length;
  }
  if (entries === 0) throw new Error(`${cacheFile}: no entries (is it a session cache?)`);
  for (const w of watchers) w.close();
}
process.stdout.write(cacheFile ? `${files} ${bytes} ${dirs} ${entries}\n` : `${files} ${bytes}\n`);
