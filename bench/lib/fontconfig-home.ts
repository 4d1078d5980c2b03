/**
 * A home directory whose fontconfig file narrows the fonts LibreOffice sees, for a daemon started
 * with HOME pointing at it. LibreOffice runs with convd's own fontconfig file (or the one the
 * daemon's FONTCONFIG_FILE names, which would replace convd's settings), and that file, like the
 * system's, reads the user's `$HOME/.config/fontconfig/fonts.conf` after the system's: a
 * `<selectfont>` there takes fonts away and leaves the rest of convd's settings as they are. The
 * daemon hands HOME on to its engines.
 */
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Makes `<dir>/home` with `file` as its fontconfig file; returns the home's path. */
export async function fontconfigHome(dir: string, file: string): Promise<string> {
  const home = join(dir, 'home');
  const config = join(home, '.config', 'fontconfig');
  await mkdir(config, { recursive: true });
  await copyFile(file, join(config, 'fonts.conf'));
  return home;
}
