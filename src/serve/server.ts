/**
 * The exporter's HTTP side: `GET /metrics` (Prometheus text format), `GET /healthz`,
 * `GET /api/status` (the `status --json` document) and `GET /` (an index). Read-only by design:
 * there is no control endpoint, and any method but GET is answered 405. Bound to loopback unless
 * the owner passes another address; on loopback, a Host header that is not a loopback name is
 * refused, so a web page cannot read the status through DNS rebinding.
 */
import http from 'node:http';
import net from 'node:net';

/** Where the server listens. */
export interface ListenAddress {
  host: string;
  port: number;
}

/** The address used when `--listen` is not given: loopback only. */
export const DEFAULT_LISTEN: ListenAddress = { host: '127.0.0.1', port: 9464 };

/**
 * `HOST:PORT`, `[IPv6]:PORT`, `:PORT` (every interface, as Prometheus writes it) or a bare `PORT`
 * (loopback). Port 0 asks the system for a free port.
 */
export function parseListen(text: string): ListenAddress | { error: string } {
  const t = text.trim();
  const bad = { error: `--listen: "${text}" is not HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464, :9464 for every interface)` };
  let host: string;
  let portText: string;
  if (/^\d+$/.test(t)) {
    host = DEFAULT_LISTEN.host;
    portText = t;
  } else if (t.startsWith('[')) {
    const m = /^\[([0-9a-fA-F:.%\w]+)\]:(\d+)$/.exec(t);
    if (!m) return bad;
    host = m[1]!;
    portText = m[2]!;
  } else {
    const i = t.lastIndexOf(':');
    if (i < 0 || t.indexOf(':') !== i) return bad;
    host = t.slice(0, i) || '0.0.0.0';
    portText = t.slice(i + 1);
    if (!/^[\w.-]+$/.test(host)) return bad;
  }
  if (!/^\d+$/.test(portText)) return bad;
  const port = Number(portText);
  if (port > 65535) return { error: `--listen: port ${port} is out of range (0-65535)` };
  return { host, port };
}

/** Loopback names and addresses: `localhost`, 127.0.0.0/8, ::1 (also IPv4-mapped). */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (net.isIPv4(h)) return h.startsWith('127.');
  if (net.isIPv6(h)) return h === '::1' || /^(0:){7}1$/.test(h) || /^::ffff:127\./.test(h);
  return false;
}

/** The host part of a Host header (`name`, `name:port`, `[v6]:port`). */
function hostOfHeader(value: string): string {
  if (value.startsWith('[')) return value.slice(0, value.indexOf(']') + 1);
  const i = value.lastIndexOf(':');
  return i >= 0 && value.indexOf(':') === i ? value.slice(0, i) : value;
}

/** What the HTTP server serves; each function is called per request. */
export interface ServeRoutes {
  metrics(): Promise<{ contentType: string; body: string }>;
  /** The document's entity tag (quoted, as sent in `ETag`), and the document, made only when sent. */
  status(): { etag: string; doc(): Record<string, unknown> };
  health(): { ready: boolean; body: Record<string, unknown> };
}

export interface RunningServer {
  /** `http://host:port` with the port actually bound. */
  url: string;
  address: ListenAddress;
  loopback: boolean;
  close(): Promise<void>;
}

const INDEX = [
  'loop-dash exporter (read-only)',
  '',
  'GET /metrics     Prometheus metrics (docs/METRICS.md)',
  'GET /api/status  the `loop-dash status --json` document',
  'GET /healthz     exporter health',
  '',
].join('\n');

function send(res: http.ServerResponse, code: number, contentType: string, body: string, extra: Record<string, string> = {}): void {
  res.writeHead(code, {
    'Content-Type': contentType,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...extra,
  });
  res.end(body);
}

/** Whether an `If-None-Match` header names `etag` (a list of tags, or `*`; weak tags compare by their value). */
export function ifNoneMatch(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const tags = (Array.isArray(header) ? header.join(',') : header).split(',').map((t) => t.trim().replace(/^W\//, ''));
  return tags.some((t) => t === etag || t === '*');
}

/** The request handler (exported for tests that want no socket). */
export function handler(routes: ServeRoutes, opts: { loopback: boolean }): http.RequestListener {
  return (req, res) => {
    if (req.method !== 'GET') {
      // Nothing here changes anything: owner actions stay with the dashboard on the machine that owns the root.
      send(res, 405, 'text/plain; charset=utf-8', `405 method not allowed: this exporter is read-only (GET only)\n`, { Allow: 'GET' });
      return;
    }
    if (opts.loopback) {
      const host = hostOfHeader(req.headers.host ?? '');
      if (host && !isLoopbackHost(host)) {
        send(res, 403, 'text/plain; charset=utf-8', `403: this exporter listens on loopback and answers only loopback host names (got "${host}")\n`);
        return;
      }
    }
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    const fail = (err: unknown) => send(res, 500, 'text/plain; charset=utf-8', `500: ${err instanceof Error ? err.message : String(err)}\n`);
    try {
      switch (pathname) {
        case '/metrics':
          routes.metrics().then(({ contentType, body }) => send(res, 200, contentType, body), fail);
          return;
        case '/api/status': {
          const { doc, etag } = routes.status();
          // A client holding this tag has the document but for what it counts from `now`.
          if (ifNoneMatch(req.headers['if-none-match'], etag)) {
            res.writeHead(304, { ETag: etag, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
            res.end();
            return;
          }
          send(res, 200, 'application/json; charset=utf-8', JSON.stringify(doc()) + '\n', { ETag: etag });
          return;
        }
        case '/healthz': {
          const h = routes.health();
          send(res, h.ready ? 200 : 503, 'application/json; charset=utf-8', JSON.stringify(h.body) + '\n');
          return;
        }
        case '/':
          send(res, 200, 'text/plain; charset=utf-8', INDEX);
          return;
        default:
          send(res, 404, 'text/plain; charset=utf-8', `404: no ${pathname} here (try /metrics, /api/status, /healthz)\n`);
      }
    } catch (err) {
      fail(err);
    }
  };
}

/** Starts listening; resolves once bound (rejects with the bind error, e.g. EADDRINUSE). */
export function startHttpServer(routes: ServeRoutes, address: ListenAddress): Promise<RunningServer> {
  const loopback = isLoopbackHost(address.host);
  const server = http.createServer(handler(routes, { loopback }));
  server.keepAliveTimeout = 10_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      const bound = server.address() as net.AddressInfo;
      const host = bound.family === 'IPv6' || net.isIPv6(bound.address) ? `[${bound.address}]` : bound.address;
      resolve({
        url: `http://${host}:${bound.port}`,
        address: { host: bound.address, port: bound.port },
        loopback,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
