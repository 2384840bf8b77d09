import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from 'ink';
import { readKeypresses } from '../src/views/keymap.js';

const none = {} as Key;

test('keys that arrive in one input string (jj⏎ from tmux or a fast typist) are each pressed', () => {
  const presses = readKeypresses('jj\r', none, { readOnly: false });
  assert.deepEqual(presses.map((p) => p.action ?? (p.submit ? 'submit' : null)), ['down', 'down', 'detail']);
});

test('a single key and a named key stay one press; text entry still sees every character', () => {
  assert.equal(readKeypresses('x', none, { readOnly: false }).length, 1);
  assert.equal(readKeypresses('', { ...none, upArrow: true }, { readOnly: false })[0]?.action, 'up');
  assert.deepEqual(readKeypresses('ab\x7f', none, { readOnly: false }).map((p) => (p.erase ? '<erase>' : p.text)), ['a', 'b', '<erase>']);
});

test('read-only unbinds owner actions in a batch too', () => {
  assert.deepEqual(readKeypresses('xda', none, { readOnly: true }).map((p) => p.action), [null, null, null]);
});
