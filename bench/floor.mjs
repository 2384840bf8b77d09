#!/usr/bin/env node
// The floor of start-up: list and stat every file of a home, nothing else. Prints the file count.
import fs from 'node:fs';
import path from 'node:path';

let files = 0;
let bytes = 0;
const walk = (dir) => {
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
walk(process.argv[2]);
process.stdout.write(`${files} ${bytes}\n`);
