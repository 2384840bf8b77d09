/**
 * A scripted writer process for the reliability suite: reads a JSON list of steps on stdin and
 * performs them with plain synchronous file calls, as a pi process or a careless tool would.
 * Prints `{"mark": name, "at": epochMs}` lines so the test can time what it sees from the end of
 * a write. Run by test/support/fault-writer.ts; not a test file itself.
 */
import fs from 'node:fs';
import type { WriterStep } from './fault-writer.js';

const fds = new Map<string, number>();

function fdFor(file: string): number {
  let fd = fds.get(file);
  if (fd === undefined) {
    fd = fs.openSync(file, 'a');
    fds.set(file, fd);
  }
  return fd;
}

function bytesOf(step: { text?: string; hex?: string }): Buffer {
  if (step.hex !== undefined) return Buffer.from(step.hex, 'hex');
  return Buffer.from(step.text ?? '', 'utf8');
}

function writeAll(fd: number, buf: Buffer): void {
  let off = 0;
  while (off < buf.length) off += fs.writeSync(fd, buf, off, buf.length - off);
}

const cell = new Int32Array(new SharedArrayBuffer(4));

/** Blocks until `t` (performance.now() ms) without spinning: a paced burst leaves the CPU to the reader. */
function sleepUntil(t: number): void {
  const ms = t - performance.now();
  if (ms > 0) Atomics.wait(cell, 0, 0, ms);
}

function mark(name: string): void {
  process.stdout.write(JSON.stringify({ mark: name, at: Date.now() }) + '\n');
}

async function run(steps: WriterStep[]): Promise<void> {
  for (const step of steps) {
    switch (step.op) {
      case 'append':
        writeAll(fdFor(step.file), bytesOf(step));
        break;
      case 'fill': {
        // `count` bytes of `byte`, in 1 MiB writes: a huge line without holding it in memory.
        const chunk = Buffer.alloc(Math.min(step.count, 1 << 20), step.byte);
        const fd = fdFor(step.file);
        for (let left = step.count; left > 0; left -= chunk.length) writeAll(fd, left >= chunk.length ? chunk : chunk.subarray(0, left));
        break;
      }
      case 'burst': {
        const fd = fdFor(step.file);
        const start = performance.now();
        step.lines.forEach((line, i) => {
          sleepUntil(start + (step.overMs * i) / step.lines.length);
          writeAll(fd, Buffer.from(line, 'utf8'));
        });
        break;
      }
      case 'write': {
        // open(O_TRUNC) + write: a non-atomic rewrite.
        const fd = fs.openSync(step.file, 'w');
        writeAll(fd, bytesOf(step));
        fs.closeSync(fd);
        break;
      }
      case 'atomic': {
        // The careful writer: temp name, fsync, rename.
        const tmp = `${step.file}.tmp-${process.pid}`;
        const fd = fs.openSync(tmp, 'w');
        writeAll(fd, bytesOf(step));
        fs.fsyncSync(fd);
        fs.closeSync(fd);
        fs.renameSync(tmp, step.file);
        break;
      }
      case 'atomic-loop': {
        // `count` atomic rewrites, one every `everyMs`; the text's `#N#` becomes the version.
        const start = performance.now();
        for (let i = 1; i <= step.count; i++) {
          sleepUntil(start + (i - 1) * step.everyMs);
          const tmp = `${step.file}.tmp-${process.pid}`;
          fs.writeFileSync(tmp, step.text.replaceAll('#N#', String(i)));
          fs.renameSync(tmp, step.file);
        }
        break;
      }
      case 'drip': {
        // One byte every `everyMs` (a slow writer).
        const buf = bytesOf(step);
        const fd = fs.openSync(step.file, 'w');
        for (let i = 0; i < buf.length; i++) {
          writeAll(fd, buf.subarray(i, i + 1));
          await new Promise((r) => setTimeout(r, step.everyMs));
        }
        fs.closeSync(fd);
        break;
      }
      case 'truncate':
        fs.truncateSync(step.file, step.size);
        break;
      case 'rename':
        fs.renameSync(step.from, step.to);
        break;
      case 'unlink':
        fs.rmSync(step.file, { force: true, recursive: true });
        break;
      case 'mkdir':
        fs.mkdirSync(step.dir, { recursive: true });
        break;
      case 'close':
        for (const fd of fds.values()) fs.closeSync(fd);
        fds.clear();
        break;
      case 'sleep':
        await new Promise((r) => setTimeout(r, step.ms));
        break;
      case 'mark':
        mark(step.name);
        break;
      case 'hang':
        // Wait to be killed (a writer killed mid-line, A6).
        setInterval(() => undefined, 1000);
        await new Promise(() => undefined);
        break;
      default: {
        const never: never = step;
        throw new Error(`unknown step ${JSON.stringify(never)}`);
      }
    }
  }
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d: string) => (input += d));
process.stdin.on('end', () => {
  run(JSON.parse(input) as WriterStep[]).then(
    () => {
      for (const fd of fds.values()) fs.closeSync(fd);
      mark('exit');
    },
    (err: unknown) => {
      process.stderr.write(String((err as Error)?.stack ?? err) + '\n');
      process.exit(1);
    },
  );
});
