/**
 * Several homes at once: rows grouped by home with a HOME column in the plain `status` table and
 * in the TUI table, with short labels that tell the homes apart. Two generated homes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, symlinkSync, utimesSync } from 'node:fs';
import os from 'node:os';
import { promisify } from 'node:util';
import path from 'node:path';
import { loadSnapshot } from '../src/cli/load-snapshot.js';
import { renderStatusTable } from '../src/cli/status-table.js';
import { homeKey, homeLabels } from '../src/views/home-groups.js';
import { lineText } from '../src/views/line.js';
import { detailLines } from '../src/views/detail-lines.js';
import { buildScreen } from '../src/views/screen.js';
import { treeRowList, treeRows } from '../src/views/session-rows.js';
import { initialViewState } from '../src/views/view-state.js';
import { distinctHome } from './support/distinct-home.js';
import { resolveHomes } from '../src/cli/resolve-homes.js';

const run = promisify(execFile);
const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'loop-dash.js');
const NOW = Date.UTC(2026, 10, 30, 14, 0, 0, 0);

test('home labels: the shortest distinct path tail; host names once remote rows are shown', () => {
  const v = (home: string, remoteHost?: string) => ({ home, ...(remoteHost ? { remote: { url: `http://${remoteHost}:9464/api/status`, host: remoteHost, fetchedAt: 0 } } : {}) });
  const two = homeLabels([v('/tmp/a/laptop/home'), v('/tmp/b/studio/home')]);
  assert.deepEqual([...two.values()], ['laptop/home', 'studio/home']);
  const plain = homeLabels([v('/home/me/.pi/agent'), v('/home/me/.loop-pi')]);
  assert.deepEqual([...plain.values()], ['agent', '.loop-pi']);
  const mixed = homeLabels([v('/home/me/.pi/agent'), v('/home/me/.pi/agent', 'studio'), v('/srv/pi', 'build')]);
  assert.deepEqual([...mixed.values()], ['local', 'studio', 'build']);
  const twoOnOneHost = homeLabels([v('/a/x/home', 'studio'), v('/a/y/home', 'studio'), v('/home/me/.pi/agent')]);
  assert.deepEqual([...twoOnOneHost.values()], ['studio:x/home', 'studio:y/home', 'local:.pi/agent']);
});

test('status with two homes: rows grouped by home, a HOME column with distinct labels, homes spelled out; JSON names them in the order given', async () => {
  const a = await distinctHome('laptop', NOW);
  const b = await distinctHome('studio', NOW);
  const snap = await loadSnapshot([a.home, b.home], NOW);
  const ids = new Set(snap.roots.flatMap((r) => [r.session, ...r.lanes.map((l) => l.session)]));
  assert.equal(ids.size, a.sessions.length + a.placeholders.length + b.sessions.length + b.placeholders.length, 'every session (and lane with no session yet) of both homes is shown once');

  const table = renderStatusTable(snap);
  const lines = table.split('\n');
  assert.match(lines[0]!, /^HOME +NAME +MODEL/);
  const rootLines = lines.slice(1).filter((l) => /^(laptop|studio)\/home /.test(l));
  assert.equal(rootLines.length, snap.roots.length, 'each root row carries its home label');
  assert.ok(snap.roots.length >= 2 * a.sessions.filter((s) => s.role === 'root').length);
  // Grouped: every laptop row comes before every studio row.
  const firstStudio = lines.findIndex((l) => l.startsWith('studio/home '));
  const lastLaptop = lines.map((l) => l.startsWith('laptop/home ')).lastIndexOf(true);
  assert.ok(lastLaptop >= 0 && firstStudio > lastLaptop, table);
  // Lanes sit under their root, with an empty HOME cell.
  const lane = a.sessions.find((s) => s.role === 'lane' && s.name === 'api-refactor/L1')!;
  const laneLine = lines.find((l) => l.includes('├ api-refactor/L1') || l.includes('└ api-refactor/L1'));
  assert.ok(laneLine && /^ +[├└] /.test(laneLine), `lane row: ${laneLine}`);
  assert.ok(lane);
  assert.ok(table.includes(`home laptop/home: ${a.home}`));
  assert.ok(table.includes(`home studio/home: ${b.home}`));

  // One home: no HOME column (the table is as before).
  const single = renderStatusTable(await loadSnapshot([a.home], NOW));
  assert.match(single.split('\n')[0]!, /^NAME +MODEL/);
  // Cells are not cut: a provider/model id, and a state with its stale flag (a minute on, every
  // checkpoint of a request in flight is older than the 20 s it may be).
  assert.ok(single.includes('anthropic/claude-sonnet-4-5 '), single);
  assert.match(renderStatusTable(await loadSnapshot([a.home], NOW + 60_000)), /requesting \(stale\) /);

  // The CLI prints the same grouping.
  const { stdout } = await run(process.execPath, [BIN, 'status', '--now', new Date(NOW).toISOString(), '--home', a.home, '--home', b.home]);
  assert.match(stdout.split('\n')[0]!, /^HOME +NAME/);
  assert.ok(stdout.includes('studio/home '));

  // JSON: `home` is the first home named and `homes` keeps the order given (the alphabetically
  // last named first, so a sorted list cannot pass).
  const given = [a.home, b.home].sort().reverse();
  const json = JSON.parse((await run(process.execPath, [BIN, 'status', '--json', '--now', new Date(NOW).toISOString(), '--home', given[0]!, '--home', given[1]!])).stdout);
  assert.equal(json.home, given[0]);
  assert.deepEqual(json.homes, given);
});

test('a home named twice (again through a symlink) is read once: its incidents are not counted twice', async () => {
  const a = await distinctHome('laptop', NOW);
  const link = path.join(mkdtempSync(path.join(os.tmpdir(), 'loop-dash-link-')), 'agent');
  symlinkSync(a.home, link);
  const missing = path.join(path.dirname(link), 'not-made-yet');
  assert.deepEqual(resolveHomes([a.home, link, missing, `${a.home}/`]), [a.home, missing], 'one spelling per directory, the first given; a home not made yet kept');
  const once = JSON.parse((await run(process.execPath, [BIN, 'status', '--json', '--now', new Date(NOW).toISOString(), '--home', a.home])).stdout);
  const twice = JSON.parse((await run(process.execPath, [BIN, 'status', '--json', '--now', new Date(NOW).toISOString(), '--home', a.home, '--home', link])).stdout);
  assert.deepEqual(twice.homes, [a.home]);
  assert.equal(twice.incidents.length, once.incidents.length);
  assert.equal(twice.incidents.length, a.incidents.length);
  assert.equal(twice.warnings.length, once.warnings.length);
});

test('one session in two homes (a copy of a home given beside it): one row whose file, checkpoint, home and incidents come from the copy written last; a warning names each copy not shown', async () => {
  const a = await distinctHome('laptop', NOW);
  // The copy's path sorts before the original's, so that the home first in order is not the one written last.
  const b = path.join(mkdtempSync(path.join(os.tmpdir(), 'loop-dash-aa-')), 'home');
  cpSync(a.home, b, { recursive: true, preserveTimestamps: true });
  const counts = new Map<string, number>();
  for (const inc of a.incidents) counts.set(inc.session, (counts.get(inc.session) ?? 0) + 1);
  const root = a.sessions.find((s) => s.role === 'root' && s.file && s.checkpoint && (counts.get(s.session) ?? 0) > 0)!;
  assert.ok(root, 'the demo has a root with a session file, a checkpoint and incidents');
  const inB = (f: string) => path.join(b, path.relative(a.home, f));
  const snap = async (homes: string[]) => loadSnapshot(homes, NOW);
  const rowOf = (s: Awaited<ReturnType<typeof snap>>) => s.roots.find((r) => r.session === root.session)!;

  // The original written last (a second after the copy's files): every part of the row from it.
  const later = new Date(NOW + 1_000);
  utimesSync(root.checkpoint!, later, later);
  const fromA = await snap([b, a.home]);
  assert.equal(fromA.roots.filter((r) => r.session === root.session).length, 1, 'one row for the session');
  let row = rowOf(fromA);
  assert.equal(row.home, a.home);
  assert.equal(row.source.sessionFile, root.file);
  assert.equal(row.source.checkpointFile, root.checkpoint);
  assert.equal(row.incidents, counts.get(root.session), "the shown home's incidents, not both homes'");
  // The detail pane lists the same ones (it listed both homes' files).
  const pane = detailLines(row, { now: NOW, width: 120, noColor: true, incidents: fromA.incidents, journal: undefined, acks: new Map(), activity: undefined, local: [] }).map(lineText).join('\n');
  assert.match(pane, new RegExp(`Incidents \\(${counts.get(root.session)}\\)`), pane);
  const copies = (s: Awaited<ReturnType<typeof snap>>) => s.warnings.filter((w) => w.message.includes(`session ${root.session} is also in`));
  assert.deepEqual(copies(fromA).map((w) => w.file).sort(), [inB(root.file!), inB(root.checkpoint!)].sort(), 'a warning for each copy not shown');
  assert.ok(copies(fromA).every((w) => w.message.includes(`(home ${a.home})`)), JSON.stringify(copies(fromA)));

  // Now the copy's checkpoint is written last: the row moves to the copy whole — its session file
  // too, though the original's has the same mtime — and so would an owner action.
  const latest = new Date(NOW + 2_000);
  utimesSync(inB(root.checkpoint!), latest, latest);
  row = rowOf(await snap([a.home, b]));
  assert.equal(row.home, b);
  assert.equal(row.source.sessionFile, inB(root.file!));
  assert.equal(row.source.checkpointFile, inB(root.checkpoint!));
  assert.equal(row.incidents, counts.get(root.session));

  // The CLI says so, naming the copy.
  const { stdout } = await run(process.execPath, [BIN, 'status', '--now', new Date(NOW).toISOString(), '--home', a.home, '--home', b]);
  assert.match(stdout, /warning: .*session .* is also in /);
});

test('TUI with two homes: grouped tree rows, a HOME column on root rows, kept at 100 columns', async () => {
  const a = await distinctHome('laptop', NOW);
  const b = await distinctHome('studio', NOW);
  const snap = await loadSnapshot([a.home, b.home], NOW);
  const rows = treeRows(snap.roots, { sort: 'first-limit', filter: '', collapsed: new Set() });
  const keys = rows.filter((r) => r.depth === 0).map((r) => homeKey(r.view));
  const boundary = keys.indexOf(b.home);
  assert.ok(boundary > 0 && keys.slice(0, boundary).every((k) => k === a.home) && keys.slice(boundary).every((k) => k === b.home), 'grouped by home');
  assert.ok(rows.filter((r) => r.depth === 0).every((r) => r.home === (homeKey(r.view) === a.home ? 'laptop/home' : 'studio/home')));
  assert.ok(rows.filter((r) => r.depth === 1).every((r) => r.home === undefined));
  // Within a group, the sort still holds (nearest limit first).
  const sortedByName = treeRows(snap.roots, { sort: 'name', filter: '', collapsed: new Set() }).filter((r) => r.depth === 0 && homeKey(r.view) === a.home);
  const names = sortedByName.map((r) => r.view.name);
  assert.deepEqual(names, [...names].sort((x, y) => x.localeCompare(y)));

  for (const width of [160, 100]) {
    const screen = buildScreen({ snapshot: snap, model: { journal: new Map(), acks: new Map() }, view: initialViewState(), rows, width, height: 60, readOnly: false, noColor: true });
    const text = screen.lines.map((l) => lineText(l.line));
    const title = text.find((t) => /NAME/.test(t))!;
    assert.match(title, /^ {2}HOME +NAME/, `width ${width}: ${title}`);
    assert.ok(text.some((t) => /^ {2}\S*studio\S* /.test(t) || /^ {2}studio/.test(t)), `width ${width}: a studio row`);
    assert.ok(text[0]!.includes('2 homes'));
  }
  // One home: no HOME column.
  const one = await loadSnapshot([a.home], NOW);
  const oneRows = treeRows(one.roots, { sort: 'first-limit', filter: '', collapsed: new Set() });
  assert.ok(oneRows.every((r) => r.home === undefined));
  const screen = buildScreen({ snapshot: one, model: { journal: new Map(), acks: new Map() }, view: initialViewState(), rows: oneRows, width: 160, height: 60, readOnly: false, noColor: true });
  assert.match(screen.lines.map((l) => lineText(l.line)).find((t) => /NAME/.test(t))!, /^ {2}NAME/);
});

test('tree rows from one frame to the next: a root of another home in the same place groups and labels the rows', async () => {
  const a = await distinctHome('laptop', NOW);
  const b = await distinctHome('studio', NOW);
  const one = await loadSnapshot([a.home], NOW);
  const other = (await loadSnapshot([b.home], NOW)).roots[0]!;
  // The same set, as the dashboard keeps it between frames (the rows are patched from the last call's).
  const collapsed = new Set<string>();
  const before = treeRows(one.roots, { sort: 'first-limit', filter: '', collapsed });
  assert.ok(before.every((r) => r.home === undefined), 'one home: no labels');
  // The same number of roots, one of them now from the other home: two homes from this frame on.
  const mixed = [...one.roots];
  mixed[mixed.length - 1] = other;
  const after = treeRows(mixed, { sort: 'first-limit', filter: '', collapsed });
  assert.deepEqual(after, treeRows(mixed, { sort: 'first-limit', filter: '', collapsed: new Set() }), 'the same as rows built afresh');
  assert.ok(after.filter((r) => r.depth === 0).every((r) => r.home === (homeKey(r.view) === a.home ? 'laptop/home' : 'studio/home')), 'root rows labelled by home');
  assert.equal(after.find((r) => r.depth === 0 && homeKey(r.view) === b.home)?.view, other);
});

test('tree rows of two homes from one frame to the next: patched from the last frame\'s while the homes at every place are the same, and always equal to rows built afresh', async () => {
  const a = await distinctHome('laptop', NOW);
  const b = await distinctHome('studio', NOW);
  const snap = await loadSnapshot([a.home, b.home], NOW);
  // Copies of the roots (each a session of its own) up to rows over several chunks of the list
  // (row-list.ts), so a patched list can share the chunks a frame did not change.
  const copies = (n: number) => Array.from({ length: n }, (_, i) => snap.roots.map((r) => ({ ...r, session: `${r.session}-${i}` }))).flat();
  const roots = copies(60);
  const inB = roots.map((r, i) => [r, i] as const).filter(([r]) => homeKey(r) === b.home);
  const inA = roots.map((r, i) => [r, i] as const).filter(([r]) => homeKey(r) === a.home);
  for (const sort of ['first-limit', 'name'] as const) {
    // One set for every frame, as the dashboard's view keeps it (the memo is keyed by its identity).
    const collapsed = new Set<string>();
    const frames: { roots: typeof roots; list: ReturnType<typeof treeRowList> }[] = [];
    const frame = (rs: typeof roots) => frames.push({ roots: rs, list: treeRowList(rs, { sort, filter: '', collapsed }) });
    frame(roots);
    assert.ok(frames[0]!.list.length > 3 * 256, `${frames[0]!.list.length} rows: several chunks`);
    // A root changed in place, its home the same: another model, so it keeps its place under either sort.
    const changed = [...roots];
    const [r1, i1] = inB[inB.length - 3]!;
    changed[i1] = { ...r1, model: 'other/model' };
    frame(changed);
    assert.ok(frames[1]!.list.shares(frames[0]!.list), `${sort}: the second frame's list shares the chunks it did not change`);
    frame([...changed]);
    assert.ok(frames[2]!.list.shares(frames[1]!.list), `${sort}: a frame with nothing changed shares them too`);
    // A place taken by a root of the other home: grouped and labelled again.
    const moved = [...changed];
    const [, i2] = inA[2]!;
    moved[i2] = { ...inB[0]![0], session: 'moved-root' };
    frame(moved);
    // A root of the same home whose machine reports another host name: labelled again.
    const renamed = [...moved];
    renamed[i1] = { ...changed[i1]!, remote: { url: 'http://studio:9464/api/status', host: 'studio', fetchedAt: NOW } };
    frame(renamed);
    const renamedHost = [...renamed];
    renamedHost[i1] = { ...renamed[i1]!, remote: { url: 'http://studio:9464/api/status', host: 'studio-2', fetchedAt: NOW } };
    frame(renamedHost);
    // Afterwards, each frame's rows against rows built afresh: a call with no roots first leaves
    // the memo nothing to keep (its labels included), and another set keeps the rows from patching.
    const afresh = (rs: typeof roots) => {
      treeRows([], { sort, filter: '', collapsed: new Set() });
      return treeRows(rs, { sort, filter: '', collapsed: new Set() });
    };
    for (const [k, f] of frames.entries()) assert.deepEqual(f.list.toArray(), afresh(f.roots), `${sort}: frame ${k}`);
    const labelOf = (f: (typeof frames)[number]) => f.list.toArray().find((r) => r.depth === 0 && r.view.session === changed[i1]!.session)?.home;
    // The host is in the label (the comparison above holds it to the one built afresh).
    assert.match(labelOf(frames[4]!) ?? '', /^studio:/);
    assert.match(labelOf(frames[5]!) ?? '', /^studio-2:/, 'the new host name is in the label');
  }
});
