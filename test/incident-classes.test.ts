import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { utcStamp } from '../src/contract/paths.js';
import {
  classifyIncident,
  explainIncidentClass,
  incidentPathFacts,
  KNOWN_INCIDENT_CLASSES,
  normaliseLimit,
} from '../src/readers/incident-classes.js';
import { readIncidentFields, readIncidentFile } from '../src/readers/incident-file.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'loop-dash-incidents-'));
dirs.push(home);

const AT = Date.UTC(2026, 10, 30, 12, 0, 1, 5);
const STAMP = utcStamp(AT);
const SID = '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

async function incident(rel: string, body: Record<string, unknown>) {
  const file = path.join(home, 'incidents', rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(body));
  const r = await readIncidentFile(home, file);
  assert.ok(r.record, `no record for ${rel}: ${JSON.stringify(r.warnings)}`);
  return r;
}

describe('published classes (SPEC §3.2)', () => {
  test('continuation chain exhausted', async () => {
    const { record, warnings } = await incident(`${SID}-${STAMP}.json`, {
      v: 1, session: SID, class: 'loop-continuation-chain-exhausted', at: new Date(AT).toISOString(), home: '/h', cwd: '/r',
    });
    assert.deepEqual(warnings, []);
    assert.equal(record?.known, true);
    assert.equal(record?.session, SID);
    assert.equal(record?.at, AT);
    assert.equal(record?.limit, null);
    assert.equal(record?.exhausted, true);
    assert.equal(record?.movedAside, false);
    assert.match(record?.summary ?? '', /continuation chain exhausted/);
  });

  test('wall-clock ceiling, then its -exhausted variant', async () => {
    const base = { v: 1, session: SID, at: AT, home: '/h', cwd: '/r', model: 'gpt-x', elapsed_ms: 840_000, wall_clock_ms: 840_000 };
    const a = await incident(`request/${SID}-${STAMP}-wall-clock-1.json`, { ...base, class: 'loop-request-wall-clock-ceiling', attempt: 1 });
    assert.equal(a.record?.limit, 'wall-clock');
    assert.equal(a.record?.attempt, 1);
    assert.equal(a.record?.exhausted, false);
    assert.equal(a.record?.summary, 'wall-clock ceiling — attempt 1, after 14m 00s, model gpt-x');
    const b = await incident(`request/${SID}-${STAMP}-wall-clock-2-exhausted.json`, { ...base, class: 'loop-request-wall-clock-ceiling-exhausted', attempt: 2 });
    assert.equal(b.record?.known, true);
    assert.equal(b.record?.limit, 'wall-clock');
    assert.equal(b.record?.attempt, 2);
    assert.equal(b.record?.exhausted, true);
    assert.match(b.record?.summary ?? '', /exhausted/);
    assert.match(explainIncidentClass('loop-request-wall-clock-ceiling-exhausted'), /follow-up budget is used up/);
  });

  test('empty length stop (exhausted) with attempt from the file name only', async () => {
    const r = await incident(`request/${SID}-${STAMP}-empty-length-3-exhausted.json`, {
      v: 1, session: SID, class: 'loop-request-empty-length-stop-exhausted', at: AT, model: 'm', elapsed_ms: 5000, wall_clock_ms: 840000,
    });
    assert.equal(r.record?.limit, 'empty-length');
    assert.equal(r.record?.attempt, 3);
    assert.equal(r.record?.exhausted, true);
  });

  test('arm refused and root context overflow', async () => {
    const a = await incident(`root/${SID}-${STAMP}-arm-refused.json`, { v: 1, session: SID, class: 'loop-arm-refused', at: AT, cwd: '/r', reason: 'no launch record' });
    assert.equal(a.record?.limit, null);
    assert.match(a.record?.summary ?? '', /arm refused — reason: no launch record/);
    const c = await incident(`root/${SID}-${STAMP}-context-overflow.json`, {
      v: 1, session: SID, class: 'loop-root-context-overflow', at: AT, home: '/h', cwd: '/r', live_runs: ['r1'], detail: '210k > 200k',
    });
    assert.equal(c.record?.limit, 'context-length');
    assert.match(c.record?.summary ?? '', /210k > 200k/);
  });

  test('the three ops classes', async () => {
    for (const cls of ['loop-ops-grants-rejected', 'loop-audit-grants-rejected', 'loop-standing-rejected']) {
      const r = await incident(`ops/${SID}-${STAMP}.json`, { v: 1, session: SID, class: cls, at: AT, reason: 'bad signature', grants_path: '/g' });
      assert.equal(r.record?.cls, cls);
      assert.equal(r.record?.known, true);
      assert.equal(r.record?.limit, null);
      assert.match(r.record?.summary ?? '', /rejected — reason: bad signature/);
    }
  });

  test('a file moved into incidents/bad/ is flagged; its class comes from its path', async () => {
    const r = await incident(`bad/request/${SID}-${STAMP}-wall-clock-2.json`, { v: 1, session: SID });
    assert.equal(r.record?.movedAside, true);
    assert.equal(r.record?.cls, 'loop-request-wall-clock-ceiling');
    assert.equal(r.record?.limit, 'wall-clock');
    assert.equal(r.record?.attempt, 2);
    assert.equal(r.record?.at, AT, 'at from the <UTC> stamp in the name');
    assert.match(r.record?.summary ?? '', /^\[moved aside\] /);
  });

  test('session and class from the path when the file has neither', async () => {
    const r = await incident(`${SID}-${STAMP}.json`, { v: 1 });
    assert.equal(r.record?.session, SID);
    assert.equal(r.record?.cls, 'loop-continuation-chain-exhausted');
    assert.equal(r.record?.at, AT);
  });

  test('every table class has a distinct one-line explanation', () => {
    const seen = new Set<string>();
    for (const c of KNOWN_INCIDENT_CLASSES) {
      const e = explainIncidentClass(c.cls);
      assert.ok(e.length > 20 && !e.includes('\n'), c.cls);
      assert.equal(seen.has(e), false, `duplicate explanation for ${c.cls}`);
      seen.add(e);
    }
    assert.equal(KNOWN_INCIDENT_CLASSES.length, 8);
  });
});

describe('unpublished classes, recognised by pattern', () => {
  test('loop-request-inactivity-ceiling → inactivity; absolute from a limit field', async () => {
    const r = await incident(`request/${SID}-${STAMP}-inactivity-1.json`, { v: 1, session: SID, class: 'loop-request-inactivity-ceiling', at: AT, attempt: 1 });
    assert.equal(r.record?.known, true);
    assert.equal(r.record?.limit, 'inactivity');
    assert.match(explainIncidentClass('loop-request-inactivity-ceiling'), /without a model event/);
    const b = await incident(`request/${SID}-${STAMP}-ceiling-2-exhausted.json`, { v: 1, session: SID, class: 'loop-request-ceiling-exhausted', limit: 'absolute', at: AT });
    assert.equal(b.record?.limit, 'absolute');
    assert.equal(b.record?.exhausted, true);
    assert.equal(b.record?.attempt, 2);
    assert.equal(classifyIncident('loop-request-ceiling', { kind: 'inactivity' }).limit, 'inactivity');
  });

  test('a recovery stop names its reason', async () => {
    const r = await incident(`root/${SID}-${STAMP}-recovery-stopped.json`, { v: 1, session: SID, class: 'loop-root-recovery-stopped', at: AT, reason: 'quota' });
    assert.equal(r.record?.known, true);
    assert.equal(r.record?.limit, 'quota');
    assert.match(r.record?.summary ?? '', /recovery stopped: quota/);
    assert.equal(classifyIncident('loop-root-recovery-stopped-auth').limit, 'auth');
    assert.equal(classifyIncident('loop-root-recovery-stopped', { reason: 'HTTP 401 Unauthorized' }).limit, 'auth');
    assert.equal(classifyIncident('loop-root-recovery-stopped', { lastErrorClass: 'context_length_exceeded' }).limit, 'context-length');
    assert.equal(classifyIncident('loop-recovery-stop', { reason: 'content policy violation' }).limit, 'policy');
    assert.equal(classifyIncident('loop-root-recovery-stopped', { reason: 'owner said so' }).limit, null);
  });

  test('a retry episode exhausted', () => {
    const info = classifyIncident('loop-recovery-exhausted', {});
    assert.equal(info.limit, 'episode');
    assert.equal(info.exhausted, true);
    assert.equal(info.match, 'pattern');
  });

  test('a wholly unknown class is shown raw', async () => {
    const r = await incident(`ops/${SID}-${STAMP}.json`, { v: 1, session: SID, class: 'loop-flux-capacitor-overload', at: AT, gigawatts: 1.21, where: { year: 1955 } });
    assert.equal(r.record?.known, false);
    assert.equal(r.record?.cls, 'loop-flux-capacitor-overload');
    assert.equal(r.record?.limit, null);
    assert.equal(r.record?.raw, undefined, 'the record keeps no raw fields');
    const opened = await readIncidentFields(r.record!.file);
    assert.ok(opened.state === 'read' && opened.fields.gigawatts === 1.21, 'read from the file when opened');
    assert.match(r.record?.summary ?? '', /^loop-flux-capacitor-overload — gigawatts=1\.21, where=\{"year":1955\}$/);
    assert.match(explainIncidentClass('loop-flux-capacitor-overload'), /does not know/);
    const limited = classifyIncident('loop-something-new', { limit: 'tokens-per-day' });
    assert.equal(limited.known, false);
    assert.equal(limited.limit, 'tokens-per-day', 'the file’s own limit is kept even when we do not know it');
  });
});

describe('tolerance', () => {
  test('a bad field is named and ignored; the incident still shows', async () => {
    const r = await incident(`request/${SID}-${STAMP}-wall-clock-1.json`, { v: 1, session: SID, class: 'loop-request-wall-clock-ceiling', at: AT, attempt: 'one' });
    assert.equal(r.record?.attempt, 1, 'falls back to the attempt in the file name');
    assert.match(r.warnings[0]?.message ?? '', /attempt/);
    const opened = await readIncidentFields(r.record!.file);
    assert.ok(opened.state === 'read' && opened.fields.attempt === 'one', 'the fields read when opened keep the original');
  });

  test('an unreadable time is a warning; the name’s stamp is used', async () => {
    const r = await incident(`${SID}-${STAMP}.json`, { v: 1, session: SID, class: 'loop-continuation-chain-exhausted', at: 'last tuesday' });
    assert.equal(r.record?.at, AT);
    assert.match(r.warnings[0]?.message ?? '', /^at: not a time/);
  });

  test('control characters never reach the summary', async () => {
    const r = await incident(`root/${SID}-${STAMP}-arm-refused.json`, { v: 1, session: SID, class: 'loop-arm-refused', reason: 'a\u001b]0;pwned\u0007b\r\nc' });
    assert.doesNotMatch(r.record?.summary ?? '', /[\u0000-\u001f]/);
    // Escape sequences go whole: no `[2J`, `]0;title` or `[?1049h` left of them.
    const s = await incident(`root/${SID}-${STAMP}-arm-refused-2.json`, { v: 1, session: SID, class: 'loop-arm-refused', reason: 'x\u001b[2J\u001b[H\u001b]0;HACKED\u0007\u001b[?1049h\u001b[?25l OVERWRITE' });
    assert.match(s.record?.summary ?? '', /reason: xOVERWRITE|reason: x OVERWRITE/);
    assert.doesNotMatch(s.record?.summary ?? '', /\[2J|\[H|HACKED|\[\?1049h|\[\?25l/);
  });

  test('bad JSON, missing, not an object', async () => {
    const dir = path.join(home, 'incidents');
    fs.writeFileSync(path.join(dir, 'broken.json'), '{\n"class": "x",\n"at": \n');
    const bad = await readIncidentFile(home, path.join(dir, 'broken.json'));
    assert.equal(bad.record, null);
    assert.equal(bad.warnings[0]?.line, 4);
    assert.equal(bad.transient, true);
    assert.equal((await readIncidentFile(home, path.join(dir, 'nope.json'))).missing, true);
    fs.writeFileSync(path.join(dir, 'num.json'), '42');
    assert.match((await readIncidentFile(home, path.join(dir, 'num.json'))).warnings[0]?.message ?? '', /found number/);
  });

  test('an opened incident\'s fields: as the file says them now, in their order; a file gone, broken or not an object says so', async () => {
    const dir = path.join(home, 'incidents', 'opened');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'x.json');
    // Integer-like keys come first in a JS object whatever the file's order: as JSON.parse gives them.
    fs.writeFileSync(file, '{"class":"loop-x","v":2,"cwd":"/w","nested":{"a":[1,2]},"10":"ten"}');
    const read = await readIncidentFields(file);
    assert.equal(read.state, 'read');
    assert.deepEqual(read.state === 'read' ? Object.keys(read.fields) : [], ['10', 'class', 'v', 'cwd', 'nested']);
    assert.deepEqual(read.state === 'read' ? read.fields.nested : null, { a: [1, 2] });
    fs.writeFileSync(file, '{"class":"loop-y"}');
    const again = await readIncidentFields(file);
    assert.ok(again.state === 'read' && again.fields.class === 'loop-y', 'read again: what the file says now');
    fs.rmSync(file);
    const gone = await readIncidentFields(file);
    assert.ok(gone.state === 'unreadable' && /gone/.test(gone.message), JSON.stringify(gone));
    fs.writeFileSync(file, '{"class": ');
    const broken = await readIncidentFields(file);
    assert.equal(broken.state, 'unreadable');
    fs.writeFileSync(file, '[1]');
    const array = await readIncidentFields(file);
    assert.ok(array.state === 'unreadable' && /array/.test(array.message), JSON.stringify(array));
  });

  test('path facts and limit names', () => {
    assert.deepEqual(incidentPathFacts(`request/${SID}-${STAMP}-empty-length-2-exhausted.json`), {
      cls: 'loop-request-empty-length-stop-exhausted', session: SID, stamp: STAMP, kind: 'empty-length', attempt: 2, exhausted: true, movedAside: false,
    });
    assert.equal(incidentPathFacts(`ops/${SID}-${STAMP}.json`).cls, null);
    assert.equal(incidentPathFacts('weird.json').session, null);
    assert.equal(normaliseLimit('wallClockMs'), 'wall-clock');
    assert.equal(normaliseLimit('insufficient_quota'), 'quota');
    assert.equal(normaliseLimit('author'), null);
    assert.equal(normaliseLimit(42), null);
  });
});
