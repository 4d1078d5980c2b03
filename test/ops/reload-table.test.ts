/**
 * A reload (SIGHUP) applies exactly the settings marked reloadable in daemon/config-settings.ts,
 * through the reloaders of daemon/reloaders.ts, and `convd serve --help`, convd(8) and the
 * README's settings table say the same.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ALL_SETTINGS, type Setting } from '../../daemon/config-settings.ts';
import { SERVE_HELP } from '../../daemon/program/serve-command.ts';
import { RELOADERS, reloadersFor } from '../../daemon/reloaders.ts';
import { ROOT } from '../helpers/daemon.ts';

const words = (text: string) => text.replace(/\s+/g, ' ').trim();
const marked = (key: string, reloadable: boolean) => ALL_SETTINGS.map((s): Setting => (s.key === key ? { ...s, reloadable } : s));

describe('the settings a reload applies', () => {
  it('every row marked reloadable has a reloader, and every reloader applies rows marked reloadable', () => {
    assert.deepEqual(reloadersFor(ALL_SETTINGS).map((r) => r.what), RELOADERS.map((r) => r.what));
  });

  it('follows the column: a row marked restart is not applied, one marked reloadable without a reloader stops the start', () => {
    assert.ok(!reloadersFor(marked('retention_days', false)).some((r) => r.what === 'retention'));
    assert.throws(() => reloadersFor(marked('sweep_interval', true)), /nothing applies: sweep_interval$/);
    // One reloader applies tls_cert and tls_key together: it cannot apply one of them only.
    assert.throws(() => reloadersFor(marked('tls_key', false)), /tls_cert, tls_key \[restart\]/);
  });

  it('`convd serve --help` lists what each reloader applies, in their order', () => {
    const list = /SIGHUP reloads the config file: ([^.]*)\./.exec(words(SERVE_HELP))?.[1];
    assert.ok(list, 'the help names what SIGHUP reloads');
    assert.deepEqual(list.split(', '), RELOADERS.map((r) => r.what));
  });

  it('convd(8) names what each reloader applies', () => {
    const man = readFileSync(join(ROOT, 'man', 'convd.8'), 'utf8');
    const section = words(man.slice(man.indexOf('.B SIGHUP\n'), man.indexOf('need a restart', man.indexOf('.B SIGHUP\n'))));
    const applied = section.slice(0, section.indexOf('Host, port'));
    for (const reloader of RELOADERS) assert.ok(applied.includes(reloader.what), `convd.8's SIGHUP names ${reloader.what}`);
  });

  it("the README's settings table says SIGHUP for exactly the rows marked reloadable", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n');
    const head = readme.indexOf('| setting | flag / variable | default | reload |');
    assert.ok(head >= 0, 'the README has its settings table');
    const rows = readme.slice(head + 2).filter((line, i, all) => all.slice(0, i + 1).every((l) => l.startsWith('|')));
    const listed = new Set<string>();
    for (const row of rows) {
      const cells = row.split(' | ');
      const reload = cells.at(-1)!.replace(/\s*\|$/, '');
      for (const key of cells[0]!.replace(/^\|\s*/, '').split(', ')) {
        // plans.*PLAN*.*FIELD*: a placeholder stands for one or more parts of the key.
        const pattern = new RegExp(`^${key.replace(/\./g, '\\.').replace(/\*[A-Z]+\*/g, '.+')}$`);
        const settings = ALL_SETTINGS.filter((s) => pattern.test(s.key));
        assert.ok(settings.length > 0, `README row ${key} names no setting`);
        for (const setting of settings) {
          assert.equal(reload.startsWith('SIGHUP'), setting.reloadable, `README says ${reload} for ${setting.key}`);
          listed.add(setting.key);
        }
      }
    }
    const unlisted = ALL_SETTINGS.filter((s) => s.reloadable && !listed.has(s.key)).map((s) => s.key);
    assert.deepEqual(unlisted, [], 'every setting marked reloadable is in the README');
  });
});
