import net from 'node:net';

/** Resolves true when a connection to the Unix socket at `file` opens, false when refused or missing. */
export function canConnect(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ path: file });
    s.on('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}
