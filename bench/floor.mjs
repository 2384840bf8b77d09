#!/usr/bin/env node
// The floor of start-up: list and stat every file of a home, nothing else. Prints the file count.
//
// `--warm <cache file>`: the floor of a warm start instead — what any correct warm start with this
// cache must do whatever it draws: load what it remembered of the home (the session cache, every
// slice deserialised), then walk the home as a warm start does — a stat and a watch (inotify, set
// before the directory is listed) per directory, the listing of a directory the cache records
// unchanged taken from it and every other directory read (src/readers/dir-listings.ts), a stat
// per file except the incidents of an unchanged incident directory (their stats are the cache's).
// Nothing is read from the home, validated, reduced or drawn. Prints files, bytes, directories,
// directories read and cache entries.
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const warmAt = args.indexOf('--warm');
const cacheFile = warmAt >= 0 ? args[warmAt + 1] : null;
const home = path.resolve(args.find((a, i) => !a.startsWith('--') && (warmAt < 0 || i !== warmAt + 1)));
const watchers = [];

// Loaded as the dashboard loads it: its own slice reader and listings (the build's src/readers/).
const entries = new Map();
let listings = null;
let isRecordedDir = null;
if (cacheFile) {
  const { CacheFile } = await import(new URL('../dist/src/readers/session-cache.js', import.meta.url).href);
  const dirListings = await import(new URL('../dist/src/readers/dir-listings.js', import.meta.url).href);
  const file = CacheFile.open(cacheFile);
  if (!file?.readMagic()) throw new Error(`${cacheFile}: not a session cache`);
  file.next(); // the header
  while (!file.atEnd) for (const [k, v] of file.next()) entries.set(k, v);
  file.close();
  if (entries.size === 0) throw new Error(`${cacheFile}: no entries`);
  // Keyed as the dashboard keys them: the path inside the home (a directory's ends in a separator).
  const entryOf = (f) => entries.get(f.slice(home.length + 1));
  listings = new dirListings.DirListings(home, entryOf);
  isRecordedDir = (dir, st) => dirListings.isRecordedDir(entryOf(dir + path.sep), st);
}

let files = 0;
let bytes = 0;
let dirs = 0;
let read = 0;
const walk = (dir) => {
  dirs++;
  if (!listings) {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const st = fs.statSync(p);
        files++;
        bytes += st.size;
      }
    }
    return;
  }
  const own = fs.statSync(dir);
  watchers.push(fs.watch(dir, { persistent: false }, () => undefined));
  let known = listings.known(dir, own);
  if (!known) {
    read++;
    known = { files: [], dirs: [] };
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) (e.isDirectory() ? known.dirs : known.files).push(e.name);
  }
  const statsKnown = isRecordedDir(dir, own);
  for (const name of known.files) {
    const p = path.join(dir, name);
    const cached = statsKnown ? entries.get(p.slice(home.length + 1)) : undefined;
    const size = cached?.k === 'small' ? cached.size : fs.statSync(p).size;
    files++;
    bytes += size;
  }
  for (const name of known.dirs) walk(path.join(dir, name));
};
walk(home);
for (const w of watchers) w.close();
process.stdout.write(cacheFile ? `${files} ${bytes} ${dirs} ${read} ${entries.size}\n` : `${files} ${bytes}\n`);
