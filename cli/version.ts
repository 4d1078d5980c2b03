import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/**
 * The package version. The module runs from cli/ (development) or dist/cli/ (installed), so the
 * package.json is found by walking up rather than by a fixed relative path.
 */
export function readVersion(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 5; depth += 1) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'convd' && pkg.version) return (cached = pkg.version);
    } catch {
      // Not here: one level up.
    }
    dir = dirname(dir);
  }
  return (cached = '0.0.0');
}
