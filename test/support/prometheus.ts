/**
 * Finds `prometheus` and `promtool` for the tests. When they are missing and the tests run as root
 * (CI on a clean Debian machine), installs Debian's `prometheus` package (without recommends; the
 * machine's policy-rc.d keeps the packaged service from starting). Otherwise fails with what to do.
 */
import { spawnSync } from 'node:child_process';
import net from 'node:net';

export interface PrometheusBinaries {
  prometheus: string;
  promtool: string;
}

function which(cmd: string): string | null {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

function found(): PrometheusBinaries | null {
  const prometheus = which('prometheus');
  const promtool = which('promtool');
  return prometheus && promtool ? { prometheus, promtool } : null;
}

function apt(args: string[]): { ok: boolean; output: string } {
  const r = spawnSync('apt-get', args, {
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    timeout: 5 * 60_000,
  });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/** The binaries, installing them first when missing and allowed; throws a clear error otherwise. */
export function ensurePrometheus(): PrometheusBinaries {
  const have = found();
  if (have) return have;
  if (process.platform !== 'linux' || process.getuid?.() !== 0) {
    throw new Error(
      'prometheus and promtool are not installed. Install them (Debian/Ubuntu: `sudo apt-get install --no-install-recommends prometheus`) and run the tests again; as root the tests install them themselves.',
    );
  }
  const install = ['install', '-y', '-qq', '--no-install-recommends', 'prometheus'];
  let r = apt(install);
  if (!r.ok) {
    const update = apt(['update', '-qq']);
    if (!update.ok) throw new Error(`apt-get update failed while installing prometheus:\n${update.output.slice(-2000)}`);
    r = apt(install);
  }
  const now = found();
  if (!r.ok || !now) throw new Error(`apt-get install prometheus failed:\n${r.output.slice(-2000)}`);
  return now;
}

/** A free TCP port on loopback (bound and released; the caller binds it right after). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}
