/**
 * `loop-dash install-extension [--home DIR]`: makes every pi session of a home load the loop-dash
 * extension, idempotently.
 *
 * How: a manifest directory `<home>/extensions/loop-dash/package.json` whose `pi.extensions`
 * names this package's compiled entry (`dist/src/extension/index.js`) by absolute path — not an
 * entry in `settings.json`. Why:
 * - Load order decides whose `agent_before_settle` answer wins (pi runs boundary handlers in load
 *   order; the last `continue` wins), and the hold's veto must come after loop-continuation.
 *   pi 1.6 loads `-e` extensions first (loop-pi's launcher loads its root extensions that way),
 *   then settings `extensions` entries, then auto-discovered `<home>/extensions/*`, then
 *   `packages`. Auto-discovery puts us after both `-e` and settings entries.
 * - loop-pi's installer renders `settings.json` from its template and reports or overwrites
 *   drift, but never touches files it does not manage: an entry we added to settings would be
 *   lost on the next `loop-pi-install`; a directory of our own is kept.
 * - The manifest points at the installed package, so its imports (zod, the shared contract)
 *   resolve from loop-dash's own node_modules, and upgrading loop-dash in place needs no
 *   reinstall. `/reload` picks it up.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDir } from '../extension/atomic-file.js';

/** The directory name under `<home>/extensions/`. */
export const EXTENSION_DIR_NAME = 'loop-dash';
/** The manifest's package name; a directory with another name is not ours and is never replaced. */
export const MANIFEST_NAME = 'loop-dash-extension';

/** What `installExtension` did. */
export type InstallResult =
  | {
      ok: true;
      /** `installed` (new), `updated` (the manifest changed), `unchanged` (already as wanted). */
      status: 'installed' | 'updated' | 'unchanged';
      dir: string;
      manifest: string;
      /** The extension entry pi will load. */
      entry: string;
      warnings: string[];
    }
  | {
      ok: false;
      error: string;
      /** The home named is not a pi home (missing, not a directory): the caller's input is wrong. */
      badInput?: true;
    };

/** Options of {@link installExtension} (tests point `entry` elsewhere). */
export interface InstallOptions {
  /** The compiled extension entry; default this package's `dist/src/extension/index.js`. */
  entry?: string;
  /** The loop-dash version recorded in the manifest; default read from package.json. */
  version?: string | null;
}

/** This package's compiled extension entry, next to this module in `dist/src/`. */
export function defaultExtensionEntry(): string {
  return fileURLToPath(new URL('../extension/index.js', import.meta.url));
}

function packageVersion(): string | null {
  try {
    const file = fileURLToPath(new URL('../../../package.json', import.meta.url));
    const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
    return pkg.name === 'loop-dash' && typeof pkg.version === 'string' ? pkg.version : null;
  } catch {
    return null;
  }
}

/** The manifest written for `entry`. */
export function manifestFor(entry: string, version: string | null): Record<string, unknown> {
  return {
    name: MANIFEST_NAME,
    private: true,
    description: 'Written by `loop-dash install-extension`: loads the loop-dash pi extension from the installed loop-dash package. Remove this directory to uninstall.',
    loopDash: { installedBy: 'loop-dash install-extension', version },
    pi: { extensions: [entry] },
  };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Settings entries that would load loop-dash a second time (twice = two checkpoint writers). */
function doubleLoadWarnings(home: string): string[] {
  let settings: unknown;
  try {
    settings = JSON.parse(fs.readFileSync(path.join(home, 'settings.json'), 'utf8'));
  } catch {
    return [];
  }
  if (!isRecord(settings)) return [];
  const out: string[] = [];
  for (const key of ['extensions', 'packages'] as const) {
    const list = settings[key];
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      const text = typeof item === 'string' ? item : isRecord(item) && typeof item.source === 'string' ? item.source : '';
      if (/loop-dash/.test(text)) {
        out.push(`settings.json ${key} also names ${JSON.stringify(text)}: pi would load loop-dash twice; remove one of them`);
      }
    }
  }
  return out;
}

/**
 * Installs (or updates) `<home>/extensions/loop-dash/package.json`. Idempotent: nothing is
 * written when the manifest is already as wanted. Refuses, without writing, when the home does
 * not exist, the entry is missing (not built), or the directory holds something that is not ours.
 */
export function installExtension(home: string, opts: InstallOptions = {}): InstallResult {
  const absHome = path.resolve(home);
  try {
    if (!fs.statSync(absHome).isDirectory()) return { ok: false, badInput: true, error: `${absHome} is not a directory (expected a pi home)` };
  } catch {
    return { ok: false, badInput: true, error: `no pi home at ${absHome} (create it, or pass --home with an existing pi agent directory)` };
  }
  const entry = path.resolve(opts.entry ?? defaultExtensionEntry());
  if (!fs.existsSync(entry)) return { ok: false, error: `the extension entry ${entry} does not exist (run npm run build first)` };

  const dir = path.join(absHome, 'extensions', EXTENSION_DIR_NAME);
  const manifest = path.join(dir, 'package.json');
  const version = opts.version !== undefined ? opts.version : packageVersion();
  const wanted = `${JSON.stringify(manifestFor(entry, version), null, 2)}\n`;
  const warnings = doubleLoadWarnings(absHome);
  if (/[\\/]_npx[\\/]/.test(entry)) {
    warnings.push(`the entry ${entry} is in npx's temporary cache and may vanish; install loop-dash (npm install -g loop-dash) and run install-extension again`);
  }

  let status: 'installed' | 'updated' | 'unchanged' = 'installed';
  let existing: string | null = null;
  try {
    existing = fs.readFileSync(manifest, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') return { ok: false, error: `cannot read ${manifest}: ${code ?? String(err)}` };
  }
  if (existing !== null) {
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(existing);
    } catch {
      // not JSON: not ours
    }
    if (!isRecord(parsed) || parsed.name !== MANIFEST_NAME) {
      return { ok: false, error: `${manifest} exists and was not written by loop-dash; move it away and run install-extension again` };
    }
    if (existing === wanted) return { ok: true, status: 'unchanged', dir, manifest, entry, warnings };
    status = 'updated';
  } else if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) {
    return { ok: false, error: `${dir} exists and holds files not written by loop-dash; move it away and run install-extension again` };
  }

  try {
    ensureDir(dir, 0o777);
    const tmp = path.join(dir, `.package.json.tmp-${process.pid}`);
    fs.writeFileSync(tmp, wanted, { mode: 0o644 });
    fs.renameSync(tmp, manifest);
  } catch (err) {
    return { ok: false, error: `cannot write ${manifest}: ${err instanceof Error ? err.message : String(err)}` };
  }
  return { ok: true, status, dir, manifest, entry, warnings };
}
