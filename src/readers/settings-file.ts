/**
 * pi home settings (SPEC §3.6): `settings.json` and `models.json`, raw; the model applies the
 * fallbacks. `auth.json` sits beside them and is never opened.
 */
import { homePaths } from '../contract/paths.js';
import type { HomeSettings, Warning } from '../model/types.js';
import { readJsonObjectFile } from './json-file.js';

/** Read both files; an absent or bad one is null (bad → a warning naming file and line). */
export async function readHomeSettings(home: string): Promise<{ settings: HomeSettings; warnings: Warning[] }> {
  const paths = homePaths(home);
  const [settings, models] = await Promise.all([readJsonObjectFile(paths.settings), readJsonObjectFile(paths.models)]);
  return {
    settings: { home, settings: settings.object, models: models.object },
    warnings: [...settings.read.warnings, ...models.read.warnings],
  };
}
