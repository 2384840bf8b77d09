/**
 * Counted positional reads. Every byte the readers take from disk goes through `readAt`, so tests
 * can assert exactly how much was read (e.g. "an append of N bytes costs N bytes").
 */
import { closeSync, constants, openSync, read as readCallback, readSync } from 'node:fs';
import { promisify } from 'node:util';
import { type FileHandle } from 'node:fs/promises';

/**
 * A file to read: a path (opened and closed within the call), an open `FileHandle`, or a file
 * descriptor number, read with synchronous calls. Small reads of a file in the page cache cost a
 * few µs synchronously and ~0.1 ms through the thread pool, which is most of a start-up that opens
 * a thousand files; callers reading many megabytes yield to the event loop between chunks.
 */
export type ReadTarget = string | FileHandle | number | AsyncFd;

/** A file descriptor to read through the thread pool (a large read that must not block the loop). */
export interface AsyncFd {
  asyncFd: number;
}

const readAsync = promisify(readCallback);

/**
 * The last `n` bytes of what was read so far, given those kept before (null: none) and the chunk
 * just read: the bytes a follower checks before its offset at its next read, to see a rewrite in
 * place. Always a copy — read buffers are reused (a shared pool, a chunk buffer).
 */
export function keepLastBytes(kept: Buffer | null, chunk: Buffer, n: number): Buffer {
  if (chunk.length >= n || kept === null) return Buffer.from(chunk.subarray(Math.max(0, chunk.length - n)));
  return Buffer.concat([kept, chunk]).subarray(-n);
}

/** Read-only, and O_NONBLOCK so a FIFO planted where a file should be cannot hang the open. */
export const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

/**
 * Injectable read statistics. `bytesRead` counts file content handed to a parser; `probeBytes`
 * counts identity probes (the head fingerprint) that are read only to detect a rewrite.
 */
export interface ReadCounter {
  bytesRead: number;
  reads: number;
  probeBytes?: number;
}

/** What a read is for: content, or a fingerprint probe (counted apart). */
export type ReadKind = 'data' | 'probe';

/** A fresh counter with every figure at zero. */
export function createReadCounter(): ReadCounter {
  return { bytesRead: 0, reads: 0, probeBytes: 0 };
}

/**
 * Reads up to `length` bytes at `position`; shorter only at end of file. A path is opened and
 * closed within the call (no fd is held); an open handle or descriptor is left open for its owner.
 */
export async function readAt(target: ReadTarget, position: number, length: number, counter?: ReadCounter, kind: ReadKind = 'data'): Promise<Buffer> {
  if (typeof target === 'string') {
    const fd = openSync(target, READ_FLAGS);
    try {
      return await readAt(fd, position, length, counter, kind);
    } finally {
      closeSync(fd);
    }
  }
  return readInto(target, Buffer.allocUnsafe(Math.max(0, length)), position, counter, kind);
}

/**
 * Like {@link readAt} into a caller's buffer (up to its length): a reader that consumes each
 * chunk before the next read reuses one buffer instead of leaving one per read to the GC.
 */
export async function readInto(handle: FileHandle | number | AsyncFd, buf: Buffer, position: number, counter?: ReadCounter, kind: ReadKind = 'data'): Promise<Buffer> {
  const length = buf.length;
  let filled = 0;
  while (filled < length) {
    const bytesRead =
      typeof handle === 'number'
        ? readSync(handle, buf, filled, length - filled, position + filled)
        : 'asyncFd' in handle
          ? (await readAsync(handle.asyncFd, buf, filled, length - filled, position + filled)).bytesRead
          : (await handle.read(buf, filled, length - filled, position + filled)).bytesRead;
    if (counter) {
      counter.reads += 1;
      if (kind === 'probe') counter.probeBytes = (counter.probeBytes ?? 0) + bytesRead;
      else counter.bytesRead += bytesRead;
    }
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled === length ? buf : buf.subarray(0, filled);
}
