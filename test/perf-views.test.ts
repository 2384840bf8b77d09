/**
 * The cheap drawing path (docs/PERFORMANCE.md): the terminal frame writer rewrites only changed
 * lines and leaves exactly the frame on a (virtual) terminal; the clock's "next change" never
 * sleeps past a change of the frame.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, utimesSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { generateHome } from '../src/demo/generate.js';
import { initialModelState, reduceEvents } from '../src/model/reducer.js';
import { buildSnapshot } from '../src/model/snapshot.js';
import { loadHomeOnce } from '../src/readers/home-reader.js';
import { plainLine, span, lineText, type Line } from '../src/views/line.js';
import { MAX_SLEEP_MS, nextFrameChange } from '../src/views/next-change.js';
import { buildScreen } from '../src/views/screen.js';
import { encodeLine, TerminalFrame } from '../src/views/terminal-frame.js';
import { initialViewState, visibleRows, type ViewState } from '../src/views/view-state.js';
import { tempHome, writeRootSession } from './support/mini-home.js';

/** A tiny VT100 subset: what TerminalFrame writes (CUU, CUD, CR, LF, EL, ED, SGR, DEC modes). */
class VirtualTerminal {
  rows: string[];
  row = 0;
  col = 0;
  cursorShown = true;
  constructor(
    readonly height: number,
    readonly width: number,
  ) {
    this.rows = Array.from({ length: height }, () => '');
  }
  write(s: string): void {
    for (let i = 0; i < s.length; i++) {
      const ch = s[i]!;
      if (ch === '\u001b') {
        const m = /^\u001b\[(\??)([\d;]*)([A-Za-z])/.exec(s.slice(i));
        assert.ok(m, `unknown escape at ${JSON.stringify(s.slice(i, i + 8))}`);
        i += m[0].length - 1;
        const n = m[2] === '' ? 1 : Number(m[2]!.split(';')[0]);
        if (m[1] === '?') {
          if (m[2] === '25') this.cursorShown = m[3] === 'h';
          continue; // 2026 (synchronized output): no effect on content
        }
        if (m[3] === 'A') this.row = Math.max(0, this.row - n);
        else if (m[3] === 'B') this.row = Math.min(this.height - 1, this.row + n);
        else if (m[3] === 'K') this.rows[this.row] = this.rows[this.row]!.slice(0, this.col);
        else if (m[3] === 'J') {
          this.rows[this.row] = this.rows[this.row]!.slice(0, this.col);
          for (let r = this.row + 1; r < this.height; r++) this.rows[r] = '';
        } else if (m[3] !== 'm') assert.fail(`unexpected CSI ${m[0]}`);
        continue;
      }
      if (ch === '\r') this.col = 0;
      else if (ch === '\n') {
        this.col = 0; // ONLCR, as in a tty
        if (this.row === this.height - 1) this.rows = [...this.rows.slice(1), ''];
        else this.row++;
      } else {
        const line = this.rows[this.row]!.padEnd(this.col, ' ');
        this.rows[this.row] = line.slice(0, this.col) + ch + line.slice(this.col + 1);
        this.col++;
      }
    }
  }
}

const text = (lines: readonly Line[]) => lines.map(lineText);

test('terminal frame: the virtual screen shows exactly the last frame, whatever the sequence of frames', () => {
  const lineArb = fc.array(fc.constantFrom('alpha', 'beta 12:00', 'gamma', '', 'delta — δ', 'x'.repeat(30)), { minLength: 0, maxLength: 8 }); // prompt + frame + cursor line = 10 rows
  fc.assert(
    fc.property(fc.array(lineArb, { minLength: 1, maxLength: 8 }), (frames) => {
      const vt = new VirtualTerminal(10, 40);
      vt.write('$ prompt\n');
      const frame = new TerminalFrame({ write: (s) => vt.write(s) });
      for (const f of frames) frame.draw(f.map((t, i) => (i % 2 ? [span(t, { color: 'red', bold: true })] : plainLine(t))), 40, false);
      const last = frames[frames.length - 1]!;
      // The prompt stays above; the frame follows; the cursor sits on the line below it.
      assert.equal(vt.rows[0], '$ prompt');
      assert.deepEqual(vt.rows.slice(1, 1 + last.length), last);
      assert.ok(vt.rows.slice(1 + last.length).every((r) => r === ''), 'nothing of an older, longer frame is left');
      assert.equal(vt.row, 1 + last.length);
      assert.equal(vt.cursorShown, false);
      frame.done();
      assert.equal(vt.cursorShown, true);
    }),
    { numRuns: 300 },
  );
});

test('terminal frame: an unchanged frame writes nothing; one changed line rewrites that line only', () => {
  const writes: string[] = [];
  const frame = new TerminalFrame({ write: (s) => writes.push(s), isTTY: true });
  const a = ['header 12:00', 'row one   5:00', 'row two   7:00', 'footer'].map((t) => plainLine(t));
  frame.draw(a, 80, false);
  assert.equal(writes.length, 1);
  frame.draw(a.map((l) => [...l]), 80, false);
  assert.equal(writes.length, 1, 'an identical frame writes nothing');
  const b = [...a];
  b[2] = plainLine('row two   6:59');
  frame.draw(b, 80, false);
  assert.equal(writes.length, 2);
  const w = writes[1]!;
  assert.ok(w.includes('row two   6:59'));
  assert.ok(!w.includes('row one') && !w.includes('header') && !w.includes('footer'), 'unchanged lines are not rewritten');
  assert.ok(w.startsWith('\u001b[?2026h') && w.endsWith('\u001b[?2026l'), 'synchronized output on a TTY');
  assert.ok(!w.includes('\u001b[2J') && !w.includes('\u001b[3J'), 'never a full-screen or scrollback clear');
});

test('terminal frame: colours as SGR codes, none under NO_COLOR', () => {
  const line: Line = [span('ok '), span('late', { color: 'red', bold: true }), span(' dim', { dim: true })];
  assert.equal(encodeLine(line, false), 'ok \u001b[1;31mlate\u001b[0m\u001b[2m dim\u001b[0m');
  assert.equal(encodeLine(line, true), 'ok late dim');
});

test('next frame change: the clock never sleeps past a change of the frame (every view of the demo home, each filter)', async () => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'loop-dash-nextchange-'));
  const now0 = Date.UTC(2026, 0, 15, 12, 0, 0);
  await generateHome(path.join(base, 'home'), { now: now0, host: 'testhost', livePid: 4_000_000, livePidStart: null, deadPid: 4_000_001, repoDir: path.join(base, 'repo') });
  const state = reduceEvents(initialModelState(), await loadHomeOnce(path.join(base, 'home'), { now: () => now0, host: 'testhost' }));
  const screenAt = (t: number, view: ViewState) => {
    const snapshot = buildSnapshot(state, t, { host: 'testhost' });
    const rows = visibleRows(view, snapshot.roots);
    return { snapshot, rows, lines: text(buildScreen({ snapshot, model: state, view, rows, width: 160, height: 60, readOnly: false, noColor: true }).lines.map((l) => l.line)) };
  };
  let slept = 0;
  for (const filter of ['', 'ended', 'idle', 'lost', 'waiting', 'stopped', 'requesting', 'docs', 'zzz-nothing']) {
    const view: ViewState = { ...initialViewState(), filter };
    // A few starting instants, including just before a minute boundary (the header clock).
    for (const start of [now0, now0 + 59_000, now0 + 7 * 60_000 + 31_000]) {
      const first = screenAt(start, view);
      const wake = nextFrameChange({ snapshot: first.snapshot, rows: first.rows, view, now: start });
      assert.ok(wake > start && wake <= start + MAX_SLEEP_MS, `wake ${wake - start} ms after start`);
      assert.equal(wake % 1000, 0, 'on a whole second');
      for (let t = start + 1000; t < wake; t += 1000) {
        assert.deepEqual(screenAt(t, view).lines, first.lines, `filter "${filter}": the frame changed at +${t - start} ms, before the wake-up at +${wake - start} ms`);
      }
      if (wake - start > 1000) slept++;
    }
  }
  assert.ok(slept >= 3, 'static views let the clock sleep past the next second');
  // The demo home has running countdowns: with every row shown the clock ticks every second.
  const all = screenAt(now0, initialViewState());
  assert.equal(nextFrameChange({ snapshot: all.snapshot, rows: all.rows, view: initialViewState(), now: now0 }), now0 + 1000);
});

test('a session file whose time is ahead of ours (its age reads ~0s) lets the clock sleep: no wake-up every second until that time has passed', async () => {
  const home = tempHome('loop-dash-ahead-');
  const now0 = Date.UTC(2026, 0, 15, 12, 0, 0);
  const file = writeRootSession(home, { id: 'ahead', cwd: '/work/ahead', at: now0 - 3_600_000 });
  const ahead = now0 + 2 * 3_600_000;
  utimesSync(file, ahead / 1000, ahead / 1000);
  const state = reduceEvents(initialModelState(), await loadHomeOnce(home, { now: () => now0, host: 'testhost' }));
  const view = initialViewState();
  const screenAt = (t: number) => {
    const snapshot = buildSnapshot(state, t, { host: 'testhost' });
    const rows = visibleRows(view, snapshot.roots);
    return { snapshot, rows, lines: text(buildScreen({ snapshot, model: state, view, rows, width: 160, height: 30, readOnly: false, noColor: true }).lines.map((l) => l.line)) };
  };
  const first = screenAt(now0 + 30_000);
  const wake = nextFrameChange({ snapshot: first.snapshot, rows: first.rows, view, now: now0 + 30_000 });
  assert.ok(wake > now0 + 31_000, `woke ${wake - now0 - 30_000} ms after, as for an age that moves every second`);
  for (let t = now0 + 31_000; t < wake; t += 1000) assert.deepEqual(screenAt(t).lines, first.lines, `the frame changed at +${t - now0} ms, before the wake-up`);
});
