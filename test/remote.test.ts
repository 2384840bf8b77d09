/**
 * `--remote`: one live store serves `/api/status` on loopback (`loop-dash serve`'s code); another
 * reads it as remote rows. Countdowns are recomputed from the remote instants against the reading
 * side's clock, owner actions are refused for remote rows (dialog, reducer and action port), and a
 * feed that stops answering keeps its rows, marked stale, with the error in the header.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Key } from 'ink';
import { actionPort } from '../src/app/run-dashboard.js';
import { createLiveStore } from '../src/app/live-store.js';
import { homePaths } from '../src/contract/paths.js';
import { generateHome } from '../src/demo/generate.js';
import { initialModelState, reduceEvents } from '../src/model/reducer.js';
import { buildSnapshot, createSnapshotCache, hasRunningClock, type SessionView } from '../src/model/snapshot.js';
import { statusJson } from '../src/model/status-json.js';
import { loadHomeOnce } from '../src/readers/home-reader.js';
import { processStartIdentity } from '../src/readers/process-probe.js';
import { mergeRemote } from '../src/remote/merge-remote.js';
import { createRemoteFeeds, fetchStatusDoc, statusUrl, type RemoteFeedState } from '../src/remote/remote-feeds.js';
import { parseStatusDoc, type RemoteStatusDoc } from '../src/remote/status-doc.js';
import { startServe } from '../src/serve/serve-command.js';
import { startHttpServer } from '../src/serve/server.js';
import { readKeypress } from '../src/views/keymap.js';
import { lineText } from '../src/views/line.js';
import { confirmText } from '../src/views/owner-actions.js';
import { buildScreen } from '../src/views/screen.js';
import { treeRows } from '../src/views/session-rows.js';
import { initialViewState, viewReducer, type KeyContext, type ViewState } from '../src/views/view-state.js';
import { distinctHome } from './support/distinct-home.js';
import { freeLoopbackPort } from './support/prometheus.js';
import { waitFor } from './support/wait-for.js';

const run = promisify(execFile);
const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'loop-dash.js');
const HOST = os.hostname();
/** The reading machine's clock runs 7 s ahead: the recomputed countdowns must follow it. */
const AHEAD_MS = 7_000;

function key(): Key {
  const k: Record<string, boolean> = {};
  for (const n of ['upArrow', 'downArrow', 'leftArrow', 'rightArrow', 'pageDown', 'pageUp', 'home', 'end', 'return', 'escape', 'ctrl', 'shift', 'tab', 'backspace', 'delete', 'meta', 'super', 'hyper', 'capsLock', 'numLock']) k[n] = false;
  return k as unknown as Key;
}

const flat = (roots: readonly SessionView[]) => roots.flatMap((r) => [r, ...r.lanes]);

test('remote rows: served by one live store, read by another; countdowns recomputed on the local clock; actions refused', async () => {
  const now = Date.now();
  const studio = await distinctHome('studio', now); // the other machine
  const laptop = await distinctHome('laptop', now); // this one
  const serve = await startServe({ homes: [studio.home], listen: { host: '127.0.0.1', port: 0 }, version: 't', defaultMetrics: false });
  const local = createLiveStore([laptop.home], { reconcileMs: 60_000 });
  try {
    await Promise.all([serve.ready, local.start()]);
    const clock = () => Date.now() + AHEAD_MS;
    const u = statusUrl(serve.url);
    assert.ok('url' in u);
    assert.equal(u.url, `${serve.url}/api/status`, 'a base URL means its /api/status');
    const feeds = createRemoteFeeds([u.url], { clock });
    await feeds.refresh();
    const [feed] = feeds.get();
    assert.equal(feed!.error, null);
    assert.ok(feed!.doc && feed!.fetchedAt !== null);
    assert.ok(feed!.skewMs !== null && Math.abs(feed!.skewMs + AHEAD_MS) < 1_000, `the clock difference is noticed (${feed!.skewMs})`);

    const localNow = clock() + 3_000; // rendered a while after the fetch
    const merged = mergeRemote(buildSnapshot(local.getState(), localNow, { host: HOST }), feeds.get(), localNow);
    const rows = flat(merged.roots);
    const remoteRows = rows.filter((r) => r.remote);
    assert.equal(remoteRows.length, studio.sessions.length + studio.placeholders.length, 'every session (and lane with no session yet) of the other machine is shown');
    assert.equal(rows.length - remoteRows.length, laptop.sessions.length + laptop.placeholders.length, 'and every local one');
    // A lane with no session yet comes across as one, and stays read-only here.
    const remotePlaceholder = remoteRows.find((r) => r.session === `run:${studio.placeholders[0]!.runId}`);
    assert.equal(remotePlaceholder?.placeholder, 'dispatch');
    assert.equal(remotePlaceholder?.state, 'dispatched');
    assert.deepEqual(merged.remotes?.map((r) => ({ host: r.host, roots: r.roots, stale: r.stale, error: r.error })), [{ host: HOST, roots: merged.roots.filter((r) => r.remote).length, stale: false, error: null }]);

    // The served document's remainingMs is as old as the fetch; ours are recomputed from `at`.
    const doc = (await (await fetch(u.url)).json()) as { roots: { session: string; clocks: { inactivity: { remainingMs: number } | null } }[] };
    for (const s of studio.sessions) {
      const row = remoteRows.find((r) => r.session === s.session);
      assert.ok(row, s.name);
      assert.equal(row.remote?.url, u.url);
      assert.equal(row.state, s.expect.state, `${s.name} state`);
      assert.equal(row.clocks.inactivity?.remainingMs ?? null, s.expect.inactivityAt === null ? null : s.expect.inactivityAt - localNow, `${s.name} inactivity`);
      assert.equal(row.clocks.absolute?.remainingMs ?? null, s.expect.absoluteAt === null ? null : s.expect.absoluteAt - localNow, `${s.name} absolute`);
      assert.equal(row.clocks.episode?.remainingMs ?? null, s.expect.episode ? s.expect.episode.at - localNow : null, `${s.name} episode`);
      assert.equal(row.clocks.episode?.attemptsLeft ?? null, s.expect.episode ? s.expect.episode.maxAttempts - s.expect.episode.attempts : null);
      assert.equal(row.clocks.nextResume?.remainingMs ?? null, s.expect.nextResume ? s.expect.nextResume.at - localNow : null, `${s.name} resume`);
      assert.equal(row.clocks.nextResume?.source ?? null, s.expect.nextResume?.source ?? null);
      assert.equal(row.clocks.firstToFire, s.expect.firstToFire, `${s.name} first`);
      const served = doc.roots.find((r) => r.session === s.session)?.clocks.inactivity?.remainingMs;
      if (served !== undefined && row.clocks.inactivity) assert.ok(Math.abs(served - row.clocks.inactivity.remainingMs) >= AHEAD_MS, 'not the served remainingMs');
    }
    const lane = remoteRows.find((r) => r.role === 'lane' && r.name === 'api-refactor/L1')!;
    assert.equal(lane.parent, studio.sessions.find((s) => s.name === 'api-refactor')!.session, 'lanes stay under their root');

    // The TUI: a header line for the feed, grouped rows labelled local / <host>.
    const view = initialViewState();
    const tree = treeRows(merged.roots, { sort: 'first-limit', filter: '', collapsed: new Set() });
    const screen = buildScreen({ snapshot: merged, model: { journal: new Map(), acks: new Map() }, view, rows: tree, width: 160, height: 80, readOnly: false, noColor: true });
    const text = screen.lines.map((l) => lineText(l.line));
    assert.ok(text[0]!.includes('+ 1 remote'), text[0]);
    assert.ok(text.some((t) => t.startsWith(`remote ${HOST}: ${merged.remotes![0]!.roots} roots · fetched 3s ago · read-only here`)), text.slice(0, 4).join('\n'));
    assert.ok(tree.filter((r) => r.depth === 0 && !r.view.remote).every((r) => r.home === 'local'));
    assert.ok(tree.filter((r) => r.depth === 0 && r.view.remote).every((r) => r.home === HOST));
    const firstRemote = tree.findIndex((r) => r.view.remote);
    assert.ok(firstRemote > 0 && tree.slice(firstRemote).every((r) => r.view.remote), 'remote rows grouped after the local ones');

    // Owner actions: the dialog refuses and says why; `y` sends nothing; a local row still works.
    const remoteRoot = merged.roots.find((r) => r.remote && r.name === 'api-refactor')!;
    const ctx: KeyContext = { roots: merged.roots, incidents: merged.incidents, now: localNow, tableRows: 40, detailLines: 0, detailRows: 0, incidentRows: 10, recordLines: 0 };
    const press = (s: ViewState, input: string) => viewReducer(s, { type: 'key', press: readKeypress(input, key(), { readOnly: false }), ctx });
    for (const action of ['x', 'd', 'a']) {
      let s: ViewState = { ...initialViewState(), cursor: remoteRoot.session };
      s = press(s, action);
      assert.equal(s.confirm?.session, remoteRoot.session, `${action} opens the dialog`);
      const words = confirmText(s.confirm!.action, s.confirm!.captured, localNow);
      assert.ok(words.refused, 'the dialog refuses');
      assert.match(words.title, /^Cannot (abort|disarm|arm) api-refactor from this machine$/);
      assert.match(words.effect, new RegExp(`read from ${HOST} .*read-only here: owner actions stay on the machine that owns the root`));
      const dialog = buildScreen({ snapshot: merged, model: { journal: new Map(), acks: new Map() }, view: s, rows: tree, width: 160, height: 80, readOnly: false, noColor: true }).lines.map((l) => lineText(l.line));
      assert.ok(dialog.some((l) => l.includes('Cannot ')) && dialog.at(-1) === 'any key closes', dialog.slice(-6).join('\n'));
      s = press(s, 'y');
      assert.equal(s.confirm, null);
      assert.equal(s.pending.length, 0, 'nothing is sent for a remote row');
    }
    const localRoot = merged.roots.find((r) => !r.remote && r.name === 'api-refactor')!;
    let s: ViewState = { ...initialViewState(), cursor: localRoot.session };
    s = press(press(s, 'd'), 'y');
    assert.equal(s.pending.length, 1, 'a local row can still be acted on');

    // The action port refuses too, and writes nothing into the (here reachable) remote home.
    const result = await actionPort(clock).request('abort', remoteRoot);
    assert.ok('error' in result && /read-only here/.test(result.error));
    const controlDir = homePaths(studio.home).control;
    assert.ok(!existsSync(controlDir) || readdirSync(controlDir).length === 0, 'no control request was written for the remote root');

    // The feed stops answering: rows stay, marked stale, with the error in the header.
    await serve.stop();
    await feeds.refresh();
    const later = clock();
    const stale = mergeRemote(buildSnapshot(local.getState(), later, { host: HOST }), feeds.get(), later);
    assert.equal(flat(stale.roots).filter((r) => r.remote).length, studio.sessions.length + studio.placeholders.length, 'rows kept');
    assert.ok(flat(stale.roots).filter((r) => r.remote).every((r) => r.source.stale));
    assert.equal(stale.remotes![0]!.error, 'ECONNREFUSED');
    const staleScreen = buildScreen({ snapshot: stale, model: { journal: new Map(), acks: new Map() }, view: initialViewState(), rows: treeRows(stale.roots, { sort: 'first-limit', filter: '', collapsed: new Set() }), width: 160, height: 80, readOnly: false, noColor: true });
    assert.ok(staleScreen.lines.map((l) => lineText(l.line)).some((t) => t.startsWith(`⚠ remote ${HOST}: rows are`) && t.includes('last fetch failed: ECONNREFUSED')));
    feeds.stop();
  } finally {
    await serve.stop().catch(() => undefined);
    await local.stop();
  }
});

test('remote fetch: only http(s) URLs; errors are short and bad documents refused; a session read locally is shown once', async () => {
  assert.ok('error' in statusUrl('file:///etc/passwd'));
  assert.ok('error' in statusUrl('not a url'));
  assert.ok('error' in statusUrl('http://u:p@127.0.0.1:1/'));
  assert.deepEqual(statusUrl('http://127.0.0.1:9464/custom/path'), { url: 'http://127.0.0.1:9464/custom/path' });

  const port = await freeLoopbackPort();
  const refused = await fetchStatusDoc(`http://127.0.0.1:${port}/api/status`, { timeoutMs: 2_000 });
  assert.deepEqual('error' in refused && refused.error, 'ECONNREFUSED');

  assert.match((parseStatusDoc({ v: 2 }) as { error: string }).error, /not a loop-dash status document/);
  assert.match((parseStatusDoc({ v: 1, now: 'soon', roots: [] }) as { error: string }).error, /now/);
  const partial = parseStatusDoc({ v: 1, now: new Date().toISOString(), roots: [{ session: 'x' }, { session: 's', name: 'n', role: 'root', state: 'weird', clocks: {} }] });
  assert.ok('doc' in partial);
  assert.equal(partial.doc.roots.length, 1);
  assert.equal(partial.doc.invalid, 1, 'the bad session is counted, the good one kept');

  // The same home read locally and through a feed: the local rows win.
  const now = Date.now();
  const home = await distinctHome('same', now);
  const serve = await startServe({ homes: [home.home], listen: { host: '127.0.0.1', port: 0 }, version: 't', defaultMetrics: false });
  const local = createLiveStore([home.home], { reconcileMs: 60_000 });
  try {
    await Promise.all([serve.ready, local.start()]);
    const feeds = createRemoteFeeds([`${serve.url}/api/status`]);
    await feeds.refresh();
    const merged = mergeRemote(buildSnapshot(local.getState(), Date.now(), { host: HOST }), feeds.get(), Date.now());
    assert.equal(flat(merged.roots).filter((r) => r.remote).length, 0);
    const alone = buildSnapshot(local.getState(), Date.now(), { host: HOST });
    assert.equal(merged.remotes![0]!.hidden, alone.roots.length);
    // Their incidents too: counted once (they were listed twice, the feed's beside the local ones).
    assert.ok(alone.incidents.length > 0, 'the home has incidents');
    assert.deepEqual(merged.incidents.map((i) => i.file).sort(), alone.incidents.map((i) => i.file).sort());
    feeds.stop();
  } finally {
    await serve.stop();
    await local.stop();
  }
});

test('loop-dash --remote URL with stdout not a terminal prints local and remote rows, grouped and labelled', async () => {
  const now = Date.now();
  const studio = await distinctHome('studio', now);
  const laptop = await distinctHome('laptop', now);
  const serve = await startServe({ homes: [studio.home], listen: { host: '127.0.0.1', port: 0 }, version: 't', defaultMetrics: false });
  try {
    await serve.ready;
    const { stdout } = await run(process.execPath, [BIN, '--home', laptop.home, '--remote', serve.url]);
    const lines = stdout.split('\n');
    assert.match(lines[0]!, /^HOME +NAME/);
    assert.ok(lines.some((l) => l.startsWith('local ') && l.includes('api-refactor')));
    assert.ok(lines.some((l) => l.startsWith(`${HOST} `) && l.includes('api-refactor')), stdout);
    assert.ok(stdout.includes(`remote ${HOST} (${serve.url}/api/status): `), stdout);
    // `status` takes the same --remote (it was accepted and ignored).
    const status = (await run(process.execPath, [BIN, 'status', '--home', laptop.home, '--remote', serve.url])).stdout;
    assert.ok(status.split('\n').some((l) => l.startsWith(`${HOST} `) && l.includes('api-refactor')), status);
    // A monitoring machine with no pi home of its own: the remote rows, not "no pi home".
    const bare = await run(process.execPath, [BIN, 'status', '--remote', serve.url], { env: { ...process.env, PI_CODING_AGENT_DIR: path.join(laptop.home, 'no-such-home') } });
    assert.ok(bare.stdout.split('\n').some((l) => l.includes('api-refactor')), bare.stdout);
    // status --json says how each feed fared: a script sees one that failed (only the text table said so).
    const dead = await freeLoopbackPort();
    const json = JSON.parse((await run(process.execPath, [BIN, 'status', '--json', '--home', laptop.home, '--remote', serve.url, '--remote', `http://127.0.0.1:${dead}`])).stdout) as { remotes: { url: string; error: string | null; roots: number; fetchedAt: string | null }[] };
    const [good, down] = [json.remotes.find((f) => f.url.startsWith(serve.url))!, json.remotes.find((f) => f.url.includes(`:${dead}/`))!];
    assert.ok(good.roots > 0 && good.error === null && good.fetchedAt !== null, JSON.stringify(json.remotes));
    assert.equal(down.error, 'ECONNREFUSED');
    assert.equal(down.fetchedAt, null);
    const bad = await run(process.execPath, [BIN, '--home', laptop.home, '--remote', 'ftp://x']).catch((e: { code: number; stderr: string }) => e);
    assert.equal((bad as { code: number }).code, 2);
    assert.match((bad as { stderr: string }).stderr, /--remote: "ftp:\/\/x" must be an http/);
  } finally {
    await serve.stop();
  }
});

test('a fetched document is turned into rows and incidents once: later frames re-time the rows with running clocks and share everything else', async (t) => {
  // The other machine's document, as its `serve` answers it (statusJson of its snapshot).
  // Its live requests belong to this test's process (so their countdowns run), on the real clock.
  const NOW = Math.floor(Date.now() / 1000) * 1000;
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-remote-memo-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const m = await generateHome(path.join(base, 'home'), { now: NOW, host: 'studio', livePid: process.pid, livePidStart: processStartIdentity(process.pid), deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
  const served = buildSnapshot(reduceEvents(initialModelState(), await loadHomeOnce(m.home, { now: () => NOW, host: 'studio' })), NOW, { host: 'studio' });
  const parsed = parseStatusDoc(JSON.parse(JSON.stringify(statusJson(served))));
  assert.ok('doc' in parsed, 'the document parses');
  assert.ok(parsed.doc.incidents.length > 0 && parsed.doc.roots.length > 0, 'it has rows and incidents');
  const url = 'http://studio.invalid:9464/api/status';
  const feedOf = (doc: RemoteStatusDoc, fetchedAt: number): RemoteFeedState => ({ url, doc, fetchedAt, error: null, errorAt: null, skewMs: null });
  const feed = feedOf(parsed.doc, NOW + 500);

  // This machine's own rows: an empty home, its snapshot re-timed from one cache as the dashboard's is.
  const cache = createSnapshotCache();
  const localState = initialModelState();
  const frame = (now: number, f: RemoteFeedState = feed) => mergeRemote(buildSnapshot(localState, now, { host: HOST, cache }), [f], now);
  /** The same frame built from a copy of the document: nothing remembered from an earlier frame. */
  const fresh = (now: number, f: RemoteFeedState = feed) => mergeRemote(buildSnapshot(localState, now, { host: HOST }), [{ ...f, doc: structuredClone(f.doc) }], now);

  const frames = [1_000, 2_000, 3_000, 9_000].map((dt) => ({ now: NOW + dt, snap: frame(NOW + dt) }));
  for (const { now, snap } of frames) {
    const want = fresh(now);
    assert.deepEqual(snap.roots, want.roots, `the rows at +${now - NOW} ms are those of a document read afresh`);
    assert.deepEqual(snap.incidents, want.incidents, `and the incidents at +${now - NOW} ms`);
    assert.deepEqual(snap.remotes, want.remotes);
  }
  const rows = (s: (typeof frames)[number]['snap']) => flat(s.roots);
  const running = rows(frames[0]!.snap).filter(hasRunningClock);
  const still = rows(frames[0]!.snap).filter((r) => !hasRunningClock(r));
  assert.ok(running.length > 0 && still.length > 0, `rows of both kinds (${running.length} with a running clock, ${still.length} without)`);
  for (let i = 1; i < frames.length; i++) {
    const before = new Map(rows(frames[i - 1]!.snap).map((r) => [r.session, r]));
    for (const r of rows(frames[i]!.snap)) {
      const was = before.get(r.session)!;
      if (hasRunningClock(r)) {
        assert.notEqual(r, was, `${r.name}: re-timed, a new row`);
        for (const d of [r.clocks.inactivity, r.clocks.absolute, r.clocks.episode, r.clocks.nextRetry, r.clocks.nextResume]) if (d) assert.equal(d.remainingMs, d.at - frames[i]!.now, `${r.name}: counted down to this frame`);
      } else assert.equal(r, was, `${r.name}: no running clock, the same row object`);
    }
    assert.equal(frames[i]!.snap.incidents, frames[i - 1]!.snap.incidents, 'the merged incident list is the same array');
  }

  // The feed goes stale (over three intervals, 15 s, after the fetch): rows built again, marked so.
  const staleAt = NOW + 16_000;
  const stale = frame(staleAt);
  assert.ok(rows(stale).every((r) => r.source.stale), 'every remote row marked stale');
  assert.deepEqual(stale.roots, fresh(staleAt).roots);
  // A new fetch (a new document, a later fetchedAt): new rows, and its incidents.
  const refetched = feedOf(structuredClone(parsed.doc), NOW + 20_000);
  const next = frame(NOW + 20_500, refetched);
  assert.deepEqual(next.roots, fresh(NOW + 20_500, refetched).roots);
  assert.ok(rows(next).every((r) => !r.source.stale && r.remote?.fetchedAt === NOW + 20_000), 'the rows of the new document');
  assert.notEqual(next.incidents, stale.incidents, 'the incidents of the new document');
  assert.deepEqual(next.incidents, fresh(NOW + 20_500, refetched).incidents);
});

test('the status document carries an entity tag: a client holding it is answered 304 until something but the countdowns changes, and keeps its document meanwhile', async () => {
  const now = Date.now();
  const studio = await distinctHome('studio-etag', now);
  const serve = await startServe({ homes: [studio.home], listen: { host: '127.0.0.1', port: 0 }, version: 't', defaultMetrics: false });
  try {
    await serve.ready;
    const u = statusUrl(serve.url);
    assert.ok('url' in u);
    // Once the served store is idle. A row's stable window may still end between two requests
    // (a retry falling due changes its state: a new snapshot, a new tag), so each check below
    // takes the first of a few tries in which nothing moved.
    await serve.store.background();
    await waitFor(() => serve.store.settled(), 'the served store settled');
    // The server: a tag with the document, 304 without a body for that tag, 200 for another.
    const { first, firstDoc, tag, again, againBody } = await waitFor(async () => {
      const first = await fetch(u.url);
      const firstDoc = (await first.json()) as { now: string };
      const tag = first.headers.get('etag');
      const again = await fetch(u.url, { headers: { 'if-none-match': tag ?? '' } });
      const againBody = await again.text();
      return again.status === 304 ? { first, firstDoc, tag, again, againBody } : null;
    }, 'a request with the tag just received answered 304');
    assert.equal(first.status, 200);
    assert.match(tag ?? '', /^"[^"]+"$/, 'a quoted entity tag');
    assert.equal(againBody, '', 'no body');
    assert.equal(again.headers.get('etag'), tag);
    const other = await fetch(u.url, { headers: { 'if-none-match': '"not-this-one"' } });
    assert.equal(other.status, 200, 'another tag: the document');
    assert.ok(Date.parse(((await other.json()) as { now: string }).now) >= Date.parse(firstDoc.now));
    await waitFor(async () => {
      const res = await fetch(u.url);
      await res.arrayBuffer();
      const weak = await fetch(u.url, { headers: { 'if-none-match': `W/${res.headers.get('etag')}, "other"` } });
      await weak.arrayBuffer();
      return weak.status === 304;
    }, 'a list, and a weak tag, understood');

    // The client: the document kept (the same object) while the server answers 304, as of the
    // latest answer; a change on the served home brings a new document and tag.
    let clock = Date.now();
    const feeds = createRemoteFeeds([u.url], { clock: () => clock });
    const { held, kept } = await waitFor(async () => {
      await feeds.refresh();
      const held = feeds.get()[0]!;
      clock += 5_000;
      await feeds.refresh();
      const kept = feeds.get()[0]!;
      return kept.fetchedAt === clock && kept.doc === held.doc ? { held, kept } : null;
    }, 'a refresh answered 304');
    assert.ok(held.doc && held.etag, 'a document and its tag');
    assert.equal(kept.etag, held.etag);
    assert.equal(kept.error, null);

    const target = studio.sessions.find((s) => s.checkpoint && s.name === 'docs-sweep')!;
    const cp = JSON.parse(readFileSync(target.checkpoint!, 'utf8')) as { model: string };
    assert.notEqual(cp.model, 'openai/gpt-test-9');
    writeFileSync(target.checkpoint!, JSON.stringify({ ...cp, model: 'openai/gpt-test-9' }, null, 2));
    const changed = await waitFor(async () => {
      clock += 1_000;
      await feeds.refresh();
      const f = feeds.get()[0]!;
      return f.doc !== held.doc ? f : null;
    }, 'a new document after the served home changed', 10_000, 50);
    assert.notEqual(changed.etag, held.etag, 'a new tag');
    assert.equal(changed.doc!.roots.find((r) => r.session === target.session)?.model, 'openai/gpt-test-9', 'the change is in it');
    feeds.stop();
  } finally {
    await serve.stop();
  }
});

test('a request answered 304 does not make the document', async () => {
  let made = 0;
  const server = await startHttpServer(
    {
      metrics: async () => ({ contentType: 'text/plain', body: '' }),
      status: () => ({ etag: '"v1"', doc: () => ({ v: 1, made: ++made }) }),
      health: () => ({ ready: true, body: {} }),
    },
    { host: '127.0.0.1', port: 0 },
  );
  try {
    const full = await fetch(`${server.url}/api/status`);
    assert.equal(full.status, 200);
    assert.equal(full.headers.get('etag'), '"v1"');
    assert.deepEqual(await full.json(), { v: 1, made: 1 });
    const held = await fetch(`${server.url}/api/status`, { headers: { 'if-none-match': '"v1"' } });
    assert.equal(held.status, 304);
    assert.equal(await held.text(), '');
    assert.equal(made, 1, 'the document was made for the 200 only');
  } finally {
    await server.close();
  }
});
