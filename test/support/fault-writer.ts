/** Runs a scripted writer in a real child process (fault-writer-main.ts) and collects its marks. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** One thing the writer process does, in order. */
export type WriterStep =
  | { op: 'append'; file: string; text?: string; hex?: string }
  | { op: 'fill'; file: string; byte: string; count: number }
  | { op: 'burst'; file: string; lines: string[]; overMs: number }
  | { op: 'write'; file: string; text?: string; hex?: string }
  | { op: 'atomic'; file: string; text?: string; hex?: string }
  | { op: 'atomic-loop'; file: string; text: string; count: number; everyMs: number }
  | { op: 'drip'; file: string; text: string; everyMs: number }
  | { op: 'truncate'; file: string; size: number }
  | { op: 'rename'; from: string; to: string }
  | { op: 'unlink'; file: string }
  | { op: 'mkdir'; dir: string }
  | { op: 'close' }
  | { op: 'sleep'; ms: number }
  | { op: 'mark'; name: string }
  | { op: 'hang' };

const MAIN = fileURLToPath(new URL('./fault-writer-main.js', import.meta.url));

/** A running writer. */
export interface Writer {
  readonly child: ChildProcess;
  /** Resolves with the epoch ms at which the writer passed `name` (after the steps before it). */
  mark(name: string): Promise<number>;
  /** Resolves when the process has ended (after `exit` or a kill). */
  done(): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

export function startWriter(steps: WriterStep[]): Writer {
  const child = spawn(process.execPath, [MAIN], { stdio: ['pipe', 'pipe', 'pipe'] });
  const marks = new Map<string, number>();
  const waiting = new Map<string, ((at: number) => void)[]>();
  let out = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => {
    out += d;
    let nl: number;
    while ((nl = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      const m = JSON.parse(line) as { mark: string; at: number };
      marks.set(m.mark, m.at);
      for (const r of waiting.get(m.mark) ?? []) r(m.at);
      waiting.delete(m.mark);
    }
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stderr })),
  );
  child.stdin!.end(JSON.stringify(steps));
  return {
    child,
    mark(name) {
      const at = marks.get(name);
      if (at !== undefined) return Promise.resolve(at);
      return new Promise<number>((resolve, reject) => {
        waiting.set(name, [...(waiting.get(name) ?? []), resolve]);
        void ended.then((r) => {
          if (!marks.has(name)) reject(new Error(`writer ended (${r.code ?? r.signal}) before mark ${name}: ${r.stderr}`));
        });
      });
    },
    done: () => ended,
  };
}

/** Runs `steps` to the end; rejects when the writer fails. */
export async function runWriter(steps: WriterStep[]): Promise<Map<string, number>> {
  const marks = new Map<string, number>();
  const names = steps.flatMap((s) => (s.op === 'mark' ? [s.name] : []));
  const w = startWriter(steps);
  for (const name of names) marks.set(name, await w.mark(name));
  const r = await w.done();
  if (r.code !== 0) throw new Error(`writer failed (${r.code ?? r.signal}): ${r.stderr}`);
  return marks;
}
