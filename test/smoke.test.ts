import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cwdSlug, stateLogPathFromReport, utcStamp } from '../src/contract/paths.js';
import { isSafeSessionId } from '../src/contract/control.js';
import { readFileSync } from 'node:fs';
import { LIVE_INTERRUPT_BUDGET, START_INTERRUPT_BUDGET } from '../src/app/tiering.js';

test('cwd slug follows pi', () => {
  assert.equal(cwdSlug('/home/u/repo'), '--home-u-repo--');
  assert.equal(cwdSlug('C:\\work\\x'), '--C--work-x--');
});

test('utc stamp and state log path', () => {
  assert.equal(utcStamp(Date.UTC(2026, 10, 30, 12, 0, 1, 5)), '2026-11-30T12-00-01-005Z');
  assert.equal(stateLogPathFromReport('/r/codex/report-api-loop3.md'), '/r/codex/state-api-loop3.jsonl');
});

test('session ids with separators are unsafe', () => {
  assert.equal(isSafeSessionId('0193a-b_c'), true);
  assert.equal(isSafeSessionId('../etc'), false);
  assert.equal(isSafeSessionId('a/b'), false);
  assert.equal(isSafeSessionId('a..b'), false);
});

test('the launcher raises V8\'s interrupt budget for the start to the value tiering.ts names, above the one it restores', () => {
  const bin = readFileSync(new URL('../../bin/loop-dash.js', import.meta.url), 'utf8');
  assert.ok(bin.includes(`'--interrupt-budget=${START_INTERRUPT_BUDGET}'`), 'bin/loop-dash.js sets START_INTERRUPT_BUDGET');
  assert.ok(START_INTERRUPT_BUDGET > LIVE_INTERRUPT_BUDGET);
});
