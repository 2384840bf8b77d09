/**
 * What a start leaves behind (docs/PERFORMANCE.md, "The start's state freed when the start
 * ends"): V8 keeps one context for all the closures of a function, so a closure made in
 * `HomeReader.startReads` and kept by the reader keeps every variable of the start with it — the
 * walk's file lists, the cache's answers for the small files, the worker's results. Checked in
 * a heap snapshot of this process after a start (watching, with a cache) and its background work.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { generateHome } from '../src/demo/generate.js';
import { createLiveStore } from '../src/app/live-store.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

/** The names of the variables each live closure context holds, from a heap snapshot of this process. */
async function contextsInHeap(): Promise<string[][]> {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  gc();
  gc();
  const chunks: Buffer[] = [];
  for await (const chunk of v8.getHeapSnapshot()) chunks.push(chunk as Buffer);
  const snap = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
    snapshot: { meta: { node_fields: string[]; edge_fields: string[]; node_types: [string[]]; edge_types: [string[]] } };
    nodes: number[];
    edges: number[];
    strings: string[];
  };
  const { node_fields: nf, edge_fields: ef, node_types: [nodeTypes], edge_types: [edgeTypes] } = snap.snapshot.meta;
  const [type, name, edgeCount] = ['type', 'name', 'edge_count'].map((f) => nf.indexOf(f)) as [number, number, number];
  const [edgeType, edgeName] = ['type', 'name_or_index'].map((f) => ef.indexOf(f)) as [number, number];
  const contexts: string[][] = [];
  let e = 0;
  for (let n = 0; n < snap.nodes.length; n += nf.length) {
    const count = snap.nodes[n + edgeCount]!;
    if (nodeTypes[snap.nodes[n + type]!] === 'object' && snap.strings[snap.nodes[n + name]!] === 'system / Context') {
      const vars: string[] = [];
      for (let i = 0; i < count; i++) {
        const at = e + i * ef.length;
        if (edgeTypes[snap.edges[at + edgeType]!] === 'context') vars.push(snap.strings[snap.edges[at + edgeName]!]!);
      }
      contexts.push(vars);
    }
    e += count * ef.length;
  }
  return contexts;
}

test('once a start and its background work are done, no closure keeps the start\'s own variables (its file lists, the cache\'s answers)', async (t) => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-start-memory-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const home = path.join(base, 'home');
  await generateHome(home, { now: NOW, host: 'test-host', livePid: 4_000_000, livePidStart: null, deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
  // Watching and with a cache: the reader then keeps its periodic tasks and the cache's callbacks.
  const store = createLiveStore([home], { watch: true, cacheDir: path.join(base, 'cache'), now: () => NOW, host: 'test-host' });
  t.after(() => store.stop());
  await store.start();
  await store.background();
  assert.ok(store.getState().sessionFiles.size > 0, 'the demo home was read');
  const contexts = await contextsInHeap();
  // The probe: a context of the start itself is one holding its walk and its answers together.
  assert.ok(contexts.length > 100, `the snapshot was read (${contexts.length} contexts)`);
  const kept = contexts.filter((vars) => vars.includes('answered') && vars.includes('walk'));
  assert.deepEqual(kept, [], 'a context of startReads is still reachable after the start');
});
