/**
 * Benchmark homes: the demo generator's scale mode (roots with lanes, checkpoints, lane statuses,
 * state logs) grown to a realistic size distribution with fast filler, plus thousands of incidents.
 * Homes are cached outside the repository (`~/.cache/loop-dash-bench/`), keyed by GEN_VERSION and
 * the shape; a manifest written last marks a home complete (a half-built one is rebuilt).
 *
 * Shape of a home (see SHAPES): every root gets a session file grown right after its first user
 * message (so its latest state entries stay near the end); root 0 is the largest file; a few roots
 * get filler appended AFTER their latest state entries (state far from the end); every lane gets
 * 0..laneMaxBytes appended; every 4th root has a live `requesting` checkpoint (refreshed with a
 * live pid and current times before each run by `refreshLiveCheckpoints`).
 */
import { createHash } from 'node:crypto';
import { existsSync, promises as fs, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(here, '..', 'dist', 'src');
/** Bump when what a home contains changes: old caches are then ignored (and can be deleted). */
export const GEN_VERSION = 3;

const MB = 1024 * 1024;
const KB = 1024;

/** Named shapes. `bytes` figures are targets; the manifest records what was written. */
export const SHAPES = {
  big: { roots: 200, lanesPerRoot: 5, rootBytes: 2.55 * MB, largestBytes: 220 * MB, farRoots: 4, farBytes: 6 * MB, laneMaxBytes: 600 * KB, incidents: 5000 },
  quick: { roots: 80, lanesPerRoot: 5, rootBytes: 1.6 * MB, largestBytes: 64 * MB, farRoots: 3, farBytes: 3 * MB, laneMaxBytes: 300 * KB, incidents: 2000 },
  small: { roots: 20, lanesPerRoot: 5, rootBytes: 260 * KB, largestBytes: 2.2 * MB, farRoots: 2, farBytes: 600 * KB, laneMaxBytes: 60 * KB, incidents: 500 },
  // The big home's counts (200 roots, 1 000 lanes, 5 000 incidents, 50 live requests; the far
  // roots' state past the 32 KiB tail window) in small files: the issue's "10 MB home of the same
  // shape" read as the same files. It comes to ~18 MB (14 MB of session JSONL), not 10: the demo
  // generator's files of a session's first turns are ~20 KB a root and ~8 KB a lane already, and
  // the sizes below only grow them (since session 20; `small`, a tenth of the counts at 12 MB,
  // was the only small home before).
  same: { roots: 200, lanesPerRoot: 5, rootBytes: 10 * KB, largestBytes: 2.2 * MB, farRoots: 4, farBytes: 60 * KB, laneMaxBytes: 2 * KB, incidents: 5000 },
  // Many sessions, little in each: what a batch costs as the number of sessions grows (bench --only scale).
  // The big home's 50 live requests (`live`: the demo's scale mode makes a quarter of its roots live;
  // 500 processes in requests at once is another question than how many sessions a home keeps).
  wide: { roots: 2000, lanesPerRoot: 5, rootBytes: 24 * KB, largestBytes: 2 * MB, farRoots: 0, farBytes: 0, laneMaxBytes: 6 * KB, incidents: 5000, live: 50 },
  huge: { roots: 200, lanesPerRoot: 5, rootBytes: 25.5 * MB, largestBytes: 2200 * MB, farRoots: 4, farBytes: 6 * MB, laneMaxBytes: 6 * MB, incidents: 5000 },
};

export function cacheRoot() {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'loop-dash-bench');
}

/** The cached home of a shape, generated when missing. Returns { dir, home, manifest }. */
export async function ensureHome(shapeName, log = () => {}) {
  const shape = SHAPES[shapeName];
  if (!shape) throw new Error(`unknown shape ${shapeName}`);
  const key = createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 8);
  const dir = path.join(cacheRoot(), `v${GEN_VERSION}-${shapeName}-${key}`);
  const manifestFile = path.join(dir, 'bench-manifest.json');
  if (existsSync(manifestFile)) return { dir, home: path.join(dir, 'home'), manifest: JSON.parse(readFileSync(manifestFile, 'utf8')) };
  // Generated in place (paths inside the home are absolute); the manifest, written last, marks it complete.
  await fs.rm(dir, { recursive: true, force: true });
  await fs.mkdir(dir, { recursive: true });
  const t0 = Date.now();
  log(`generating the ${shapeName} home in ${dir} (once; cached) …`);
  const final = await generate(path.join(dir, 'home'), path.join(dir, 'repo'), shape, log);
  await fs.writeFile(manifestFile, JSON.stringify(final));
  log(`generated ${shapeName}: ${(final.totalBytes / MB).toFixed(0)} MB in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return { dir, home: path.join(dir, 'home'), manifest: final };
}

async function generate(home, repoDir, shape, log) {
  const { generateHome } = await import(path.join(dist, 'demo', 'generate.js'));
  // Generated at a fixed past instant: the home is a fixture, reused for months. A dead pid for
  // the demo's own "live" sessions; the bench's live checkpoints are refreshed before each run.
  const now = Date.now();
  const deadPid = 2 ** 22 - 7;
  const demo = await generateHome(home, {
    now,
    host: os.hostname(),
    livePid: deadPid,
    livePidStart: null,
    deadPid,
    repoDir,
    scale: { roots: shape.roots, lanesPerRoot: shape.lanesPerRoot, sessionBytes: 0 },
  });
  const bulk = demo.sessions.filter((s) => s.name.startsWith('bulk-') && s.file);
  const roots = bulk.filter((s) => s.role === 'root').sort((a, b) => a.name.localeCompare(b.name));
  const lanes = bulk.filter((s) => s.role === 'lane');
  log(`  ${roots.length} roots, ${lanes.length} lanes: growing session files …`);
  let done = 0;
  for (const [i, r] of roots.entries()) {
    const target = i === 0 ? shape.largestBytes : shape.rootBytes * (0.6 + 0.8 * frac(i));
    await growAfterFirstUser(r.file, target);
    if (i >= 1 && i <= shape.farRoots) await appendFiller(r.file, shape.farBytes);
    if (++done % 50 === 0) log(`  … ${done}/${roots.length} roots`);
  }
  for (const [i, l] of lanes.entries()) {
    const extra = Math.round(shape.laneMaxBytes * frac(i + 0.5));
    if (extra > 0) await appendFiller(l.file, extra);
  }
  log(`  writing ${shape.incidents} incidents …`);
  await writeIncidents(home, bulk, shape.incidents, now);

  const liveCheckpoints = [];
  for (const s of roots) {
    if (!s.checkpoint) continue;
    const cp = JSON.parse(readFileSync(s.checkpoint, 'utf8'));
    if (cp.state === 'requesting' && liveCheckpoints.length < (shape.live ?? Infinity)) liveCheckpoints.push(s.checkpoint);
  }
  const sessionFiles = bulk.map((s) => s.file);
  const total = await homeBytes(home);
  const sizes = sessionFiles.map((f) => statSync(f).size);
  return {
    shape,
    generatedAt: now,
    home,
    repoDir,
    roots: roots.map((r) => r.file),
    lanes: lanes.map((l) => l.file),
    farRoots: roots.slice(1, 1 + shape.farRoots).map((r) => r.file),
    liveCheckpoints,
    totalBytes: total.bytes,
    files: total.files,
    sessionBytes: sizes.reduce((a, b) => a + b, 0),
    largestBytes: Math.max(...sizes),
  };
}

/** A deterministic value in [0, 1). */
const frac = (i) => (i * 0.6180339887) % 1;

const FILLER_TEXT =
  'Reading the module again to line up the call sites with the plan; nothing here changes behaviour, ' +
  'it only moves the request options into one place so retries and timeouts are decided by the client. ';

let seq = 0;
const hex8 = () => (0x10000000 + ((seq++ * 2654435761) >>> 4)).toString(16).slice(-8);

/** One ordinary tool turn (assistant tool call + tool result) in pi's layout, two lines. */
function fillerPair(model, at, parent) {
  const a = hex8();
  const b = hex8();
  const call = `call_${hex8()}`;
  const ts = new Date(at).toISOString();
  const assistant = {
    type: 'message',
    id: a,
    parentId: parent,
    timestamp: ts,
    message: {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: FILLER_TEXT.repeat(4) },
        { type: 'toolCall', id: call, name: 'read', arguments: { path: `src/module-${seq % 97}.ts` } },
      ],
      api: model.api,
      provider: model.provider,
      model: model.model,
      usage: { input: 30000, output: 180, cacheRead: 24000, cacheWrite: 0, totalTokens: 30180, cost: { input: 0.0375, output: 0.0018, cacheRead: 0.003, cacheWrite: 0, total: 0.0423 } },
      stopReason: 'toolUse',
      timestamp: at,
    },
  };
  const result = {
    type: 'message',
    id: b,
    parentId: a,
    timestamp: ts,
    message: { role: 'toolResult', toolCallId: call, toolName: 'read', content: [{ type: 'text', text: FILLER_TEXT.repeat(8) }], isError: false, timestamp: at },
  };
  return { text: JSON.stringify(assistant) + '\n' + JSON.stringify(result) + '\n', last: b };
}

function modelOf(text) {
  const m = /"api":"([^"]+)","provider":"([^"]+)","model":"([^"]+)"/.exec(text);
  return m ? { api: m[1], provider: m[2], model: m[3] } : { api: 'openai-responses', provider: 'openai', model: 'gpt-6.1-sol' };
}

/** Writes about `bytes` of filler turns to `fh`, timestamps spread from `from` to `to`. */
async function writeFiller(fh, bytes, model, from, to, parent) {
  let written = 0;
  let chunk = [];
  let chunkBytes = 0;
  const pairBytes = Buffer.byteLength(fillerPair(model, from, parent).text);
  const pairs = Math.max(1, Math.round(bytes / pairBytes));
  for (let i = 0; i < pairs; i++) {
    const at = Math.round(from + ((to - from) * (i + 1)) / (pairs + 1));
    const p = fillerPair(model, at, parent);
    parent = p.last;
    chunk.push(p.text);
    chunkBytes += p.text.length;
    if (chunkBytes >= MB) {
      await fh.write(chunk.join(''));
      written += chunkBytes;
      chunk = [];
      chunkBytes = 0;
    }
  }
  if (chunk.length) await fh.write(chunk.join(''));
  return written + chunkBytes;
}

/** Rewrites `file` to about `target` bytes: filler inserted after its first user message. */
async function growAfterFirstUser(file, target) {
  const text = readFileSync(file, 'utf8');
  const extra = target - Buffer.byteLength(text);
  if (extra <= 0) return;
  const lines = text.split('\n');
  const k = lines.findIndex((l) => l.includes('"role":"user"'));
  const cut = k < 0 ? 1 : k + 1;
  const head = lines.slice(0, cut).join('\n') + '\n';
  const rest = lines.slice(cut).join('\n');
  const atOf = (l) => Date.parse(/"timestamp":"([^"]+)"/.exec(l ?? '')?.[1] ?? '') || Date.now();
  const from = atOf(lines[cut - 1]);
  const to = atOf(lines[cut]);
  const st = statSync(file);
  const tmp = `${file}.grow.tmp`;
  const fh = await fs.open(tmp, 'w');
  try {
    await fh.write(head);
    await writeFiller(fh, extra, modelOf(text), from, Math.max(from, to), null);
    await fh.write(rest);
  } finally {
    await fh.close();
  }
  await fs.rename(tmp, file);
  await fs.utimes(file, st.atime, st.mtime);
}

/** Appends about `bytes` of filler after the last entry (so state entries end up that far back). */
async function appendFiller(file, bytes) {
  const st = statSync(file);
  const fd = await fs.open(file, 'r');
  const tailLen = Math.min(st.size, 64 * KB);
  const { buffer } = await fd.read(Buffer.alloc(tailLen), 0, tailLen, st.size - tailLen);
  await fd.close();
  const tail = buffer.toString('utf8');
  const lastTs = [...tail.matchAll(/"timestamp":"([^"]+)"/g)].pop()?.[1];
  const from = Date.parse(lastTs ?? '') || st.mtimeMs;
  const fh = await fs.open(file, 'a');
  try {
    await writeFiller(fh, bytes, modelOf(tail), from, from + 10 * 60_000, null);
  } finally {
    await fh.close();
  }
  const end = new Date(from + 10 * 60_000);
  await fs.utimes(file, end, end);
}

const INCIDENT_CLASSES = [
  ['request', 'loop-request-empty-length-stop', 'empty-length'],
  ['request', 'loop-request-inactivity-timeout', 'inactivity'],
  ['request', 'loop-request-absolute-timeout', 'absolute'],
  ['root', 'loop-root-recovery-stopped', 'quota'],
  ['ops', 'loop-ops-grants-rejected', null],
];

async function writeIncidents(home, sessions, count, now) {
  const dir = path.join(home, 'incidents');
  const stamp = (ms) => new Date(ms).toISOString().replace(/[:.]/g, '-');
  const jobs = [];
  for (let i = 0; i < count; i++) {
    const s = sessions[i % sessions.length];
    const [sub, cls, limit] = INCIDENT_CLASSES[i % INCIDENT_CLASSES.length];
    const at = now - 60_000 * (5 + i * 7);
    const file = path.join(dir, sub, `${s.session}-${stamp(at)}-${i}.json`);
    const body = { v: 1, session: s.session, class: cls, at: new Date(at).toISOString(), home, cwd: '/repo', model: 'openai/gpt-6.1-sol', elapsed_ms: 60_000, attempt: 1 + (i % 4), ...(limit ? { limit } : {}) };
    jobs.push({ file, body, at });
  }
  await fs.mkdir(path.join(dir, 'request'), { recursive: true });
  await fs.mkdir(path.join(dir, 'root'), { recursive: true });
  await fs.mkdir(path.join(dir, 'ops'), { recursive: true });
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const j = jobs[next++];
      await fs.writeFile(j.file, JSON.stringify(j.body, null, 2));
      const t = new Date(j.at);
      await fs.utimes(j.file, t, t);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

async function homeBytes(dir) {
  let bytes = 0;
  let files = 0;
  const walk = async (d) => {
    for (const e of await fs.readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) {
        bytes += (await fs.stat(p)).size;
        files++;
      }
    }
  };
  await walk(dir);
  return { bytes, files };
}

/**
 * Makes the home's live checkpoints live now: a running pid (with its start identity) and request
 * clocks relative to `now`, so their countdowns tick on screen. Written atomically (temp + rename).
 */
export async function refreshLiveCheckpoints(manifest, pid, pidStart, now) {
  let i = 0;
  for (const file of manifest.liveCheckpoints) {
    const cp = JSON.parse(readFileSync(file, 'utf8'));
    const started = now - (((i * 7) % 50) + 1) * 60_000;
    const last = now - ((i % 9) + 1) * 1000;
    cp.pid = pid;
    cp.pidStart = pidStart;
    cp.host = os.hostname();
    cp.state = 'requesting';
    cp.request = { ...(cp.request ?? {}), turn: cp.request?.turn ?? 1, startedAt: started, lastModelEventAt: last, lastTransportEventAt: last, modelEvents: 100 + i, keepalives: 0 };
    cp.updatedAt = last;
    const tmp = path.join(path.dirname(file), `.${path.basename(file)}.bench.tmp`);
    await fs.writeFile(tmp, JSON.stringify(cp, null, 2));
    await fs.rename(tmp, file);
    i++;
  }
}
