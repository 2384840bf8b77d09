#!/usr/bin/env node
// The floor of start-up: list and stat every file of a home, nothing else. Prints the file count.
//
// `--warm <cache file>`: the floor of a warm start instead — what any correct warm start with this
// cache must do whatever it draws: load what it remembered of the home (the session cache, every
// slice deserialised), then walk the home as a warm start does, with the dashboard's `walkHome`
// (its walk roots only) — a stat and a watch (inotify, set before the directory is listed) per directory, the listing of a directory the cache records
// unchanged taken from it and every other directory read (src/readers/dir-listings.ts), a stat
// per file except the incidents of an unchanged incident directory (their stats are the cache's).
// Nothing is read from the home, validated, reduced or drawn. Prints files, bytes, directories,
// directories read and cache entries.
//
// Last on its line, either way: `done=<ms since the epoch>`, when the work was done — before the
// watches are closed and the process exits. The dashboard's marks are taken inside a process that
// goes on; this floor's exit is not part of what a start must do (on the big home, closing its
// 2 429 watches and exiting took 55–65 ms against 17–25 ms on the 10 MB home, which the floor's
// wall time had counted until 12-07).
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const warmAt = args.indexOf('--warm');
const cacheFile = warmAt >= 0 ? args[warmAt + 1] : null;
const home = path.resolve(args.find((a, i) => !a.startsWith('--') && (warmAt < 0 || i !== warmAt + 1)));

let files = 0;
let bytes = 0;
let dirs = 0;
let read = 0;
let done = NaN;
const entries = new Map();

if (!cacheFile) {
  const walk = (dir) => {
    dirs++;
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
  done = performance.timeOrigin + performance.now();
} else {
  // Loaded as the dashboard loads it, and walked with its own walk and listings (the build's src/readers/).
  const built = (m) => import(new URL(`../dist/src/readers/${m}`, import.meta.url).href);
  const [{ CacheFile }, { bundleRecords, cachedIncidentStats, DirListings, trustedBundle }, { walkHome }] = await Promise.all([built('session-cache.js'), built('dir-listings.js'), built('home-walk.js')]);
  const file = CacheFile.open(cacheFile);
  if (!file?.readMagic()) throw new Error(`${cacheFile}: not a session cache`);
  file.next(); // the header
  while (!file.atEnd) file.nextEntries((k, v) => entries.set(k, v));
  file.close();
  if (entries.size === 0) throw new Error(`${cacheFile}: no entries`);
  // Keyed as the dashboard keys them: the path inside the home (a directory's ends in a separator).
  const entryOf = (f) => entries.get(f.slice(home.length + 1));
  const listings = new DirListings(home, entryOf);
  const watchers = [];
  const incidents = path.join(home, 'incidents');
  const taken = [];
  let takenFiles = 0;
  let takenBytes = 0;
  const walk = await walkHome(home, {
    onDir: (dir) => watchers.push(fs.watch(dir, { persistent: false }, () => undefined)),
    knownListing: (dir, own) => listings.known(dir, own),
    onListing: (_dir, _own, _listing, known) => (read += known ? 0 : 1),
    // As HomeReader.takeIncidentDir: an unchanged incident directory with a bundle is taken whole,
    // its records deserialised (a start must have them to show them) and kept.
    takeDir: (dir, own) => {
      const bundle = dir.startsWith(incidents) ? trustedBundle(entryOf(dir + path.sep), own) : null;
      if (!bundle) return null;
      for (let j = 0; j < bundle.parts.length; j++) taken.push(bundleRecords(bundle, j));
      takenFiles += bundle.names.length;
      for (let i = 0; i < bundle.size.length; i++) takenBytes += bundle.size[i];
      return bundle.dirs;
    },
    // As HomeReader.knownIncidentStats: an unchanged incident directory's incidents take the cache's stats.
    knownStats: (dir, own) => cachedIncidentStats(dir, own, entryOf),
  });
  done = performance.timeOrigin + performance.now();
  for (const w of watchers) w.close();
  files = walk.files.length + takenFiles;
  bytes = walk.files.reduce((sum, f) => sum + f.size, takenBytes);
  dirs = walk.dirs.length;
}
process.stdout.write(`${cacheFile ? `${files} ${bytes} ${dirs} ${read} ${entries.size}` : `${files} ${bytes}`} done=${done.toFixed(3)}\n`);
