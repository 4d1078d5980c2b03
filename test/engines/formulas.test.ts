/**
 * Formulas on the LibreOffice route: LaTeX and Org math reached pandoc's docx
 * as Word equations, but the PDF and RTF LibreOffice wrote from it had none: without its Math
 * module (Debian's libreoffice-math-nogui) LibreOffice drops every formula, silently. .ci/run and
 * the README install it; `convd doctor` says whether it is there. Here a formula goes through
 * the real chain (pandoc, then LibreOffice) and its symbols are read back from the PDF's text
 * (PDFium), from the RTF's own math (the OMML Word reads) and from an odt's formula objects; and,
 * where the machine allows it (root, mount namespaces), the control: the same LibreOffice with
 * its Math module hidden writes the PDF without the formula, which the same check catches.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { formatDoctor, type DoctorReport } from '../../daemon/doctor.ts';
import { defaultEngines } from '../../src/engines/catalog.ts';
import { findOffice, officeMath } from '../../src/engines/office/find-office.ts';
import { formulaSupport } from '../../src/engines/office/formulas.ts';
import { createOfficeEngine } from '../../src/engines/office/office-engine.ts';
import { runProcess } from '../../src/engines/subprocess.ts';
import type { Engine, EngineJob } from '../../src/engines/types.ts';
import { validateOptions } from '../../src/formats/options.ts';
import { FormatRegistry } from '../../src/formats/registry.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { documentText } from '../helpers/document-text.ts';
import { openZip } from '../helpers/markup.ts';

const config = defaultServiceConfig();
const registry = await FormatRegistry.create(
  defaultEngines({ maxInputPixels: config.maxInputPixels, engines: { office: { ...config.engines.office, instances: 1 } } })
    .filter((engine) => ['data', 'html', 'office', 'markup'].includes(engine.name)),
  config.creditWeights,
);
const office = await findOffice(process.env);
const required = process.env.CI === 'true';
const ready = office.ready && registry.statuses.find((status) => status.name === 'markup')?.available === true;
const skip = ready || required ? false : `LibreOffice and pandoc are needed here (${office.ready ? 'pandoc is not usable' : office.problem})`;

const LATEX = [
  '\\documentclass{article}',
  '\\begin{document}',
  '\\section{Energy}',
  'Einstein wrote $E = mc^2$ in 1905.',
  '',
  '\\[ \\int_0^1 x^2 \\, dx = \\frac{1}{3} \\]',
  '',
  'The end.',
  '\\end{document}',
  '',
].join('\n');
const ORG = ['* Energy', 'Einstein wrote $E = mc^2$ in 1905.', '', '\\[ \\int_0^1 x^2 \\, dx = \\frac{1}{3} \\]', '', 'The end.', ''].join('\n');
/** md is GitHub's Markdown: `$` is text there, and stays that text in every target. */
const MARKDOWN = '# Pythagoras\n\nThe theorem $a^2+b^2=c^2$ holds.\n';

let dir: string;
let counter = 0;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-formulas-'));
  if (!ready && required) assert.fail(`CI=true: the document suites must not skip, but ${skip}`);
});

after(async () => {
  await registry.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function input(name: string, content: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

/** Converts with `engine` (the registry's pair: one engine or a chain), default options. */
async function convert(source: string, target: string, inputPath: string, engine?: Engine): Promise<string> {
  const pair = registry.pair(source, target);
  assert.ok(pair, `${source} -> ${target} is offered`);
  const checked = validateOptions(pair, {});
  assert.ok(checked.ok);
  const job: EngineJob = {
    inputPath, outputPath: join(dir, `out-${++counter}.${target}`), source, target, variant: pair.variants[0]?.key ?? null,
    options: checked.options, signal: new AbortController().signal, onProgress: () => undefined,
  };
  await (engine ?? registry.engine(pair.engine)!).convert(job);
  return job.outputPath;
}

/**
 * The text without white space: LibreOffice Math lays a formula out in pieces (a superscript, a
 * limit, a fraction's parts), which PDFium returns on lines of their own, in reading order.
 */
const squeezed = (text: string) => text.replace(/\s+/g, '');

/** E = mc² and the integral, as the PDF's text holds them (whatever LibreOffice Math writes as text). */
function assertFormulasInPdfText(text: string, what: string): void {
  const flat = squeezed(text);
  assert.match(flat, /Einsteinwrote/, `${what}: converted`);
  assert.match(flat, /wroteE=mc2in1905/, `${what}: E = mc^2 is in the text where it was written:\n${text}`);
  assert.match(flat, /∫(?:01|10)x2dx=13/, `${what}: the integral, its limits and the fraction are in the text:\n${text}`);
}

describe('LibreOffice Math is there, and convd doctor says so', { skip }, () => {
  it('its files are found beside soffice (libsmlo.so or math.xcd)', async () => {
    assert.ok(office.ready);
    const found = await officeMath(office.soffice);
    assert.ok(found, `LibreOffice Math is installed beside ${office.soffice} (apt-get install libreoffice-math-nogui)`);
    assert.match(found, /libsmlo\.so$|math\.xcd$/);
  });

  it('the formulas line: found, or LOST with the pairs that lose them and the package to install', async () => {
    const formulas = await formulaSupport(registry.statuses, registry.allPairs());
    assert.ok(formulas);
    assert.ok(formulas.math);
    for (const chain of ['latex -> pdf', 'latex -> rtf', 'org -> pdf', 'rst -> rtf']) assert.ok(formulas.chains.includes(chain), `${chain} goes through LibreOffice`);
    // GitHub's Markdown has no math: pandoc writes its RTF itself, no formula to lose.
    assert.ok(!formulas.chains.includes('md -> rtf'), 'md -> rtf is pandoc\'s own RTF');
    const fonts = { fonts: 0, covered: [], missing: [], standIns: [], colourEmoji: false, outlineEmoji: false, hyphenation: [] };
    const report: DoctorReport = { engines: [], pairs: 0, chains: 0, allocator: 'jemalloc', formulas, fonts };
    assert.match(formatDoctor(report), new RegExp(`^formulas: LibreOffice Math found \\(${formulas.math}\\): formulas are kept in the ${formulas.pairs} pairs LibreOffice writes$`, 'm'));
    const missing = formatDoctor({ ...report, formulas: { ...formulas, math: null } });
    assert.match(missing, /^formulas: LOST: LibreOffice Math is not installed: the \d+ pairs LibreOffice writes drop every formula \(a Word, OpenDocument or RTF document's own, and the math pandoc puts in the docx of [^)]*\blatex\b[^)]* -> pdf[^)]*\): install Debian's libreoffice-math-nogui$/m);
    assert.doesNotMatch(formatDoctor({ ...report, formulas: undefined }), /formulas/, 'no line where LibreOffice does not run');
  });
});

describe('a formula survives the LibreOffice route', { skip, concurrency: 2 }, () => {
  it('latex -> pdf (pandoc\'s docx, then LibreOffice): the PDF\'s text holds both formulas', async () => {
    const pair = registry.pair('latex', 'pdf');
    assert.deepEqual(pair?.steps?.map((step) => `${step.source}->${step.target}@${step.engine}`), ['latex->docx@markup', 'docx->pdf@office']);
    assertFormulasInPdfText(await documentText('pdf', await convert('latex', 'pdf', await input('energy.tex', LATEX))), 'latex -> pdf');
  });

  it('org -> pdf: the same', async () => {
    assertFormulasInPdfText(await documentText('pdf', await convert('org', 'pdf', await input('energy.org', ORG))), 'org -> pdf');
  });

  it('latex -> rtf: the RTF holds both as math (OMML, what Word reads), not only a picture', async () => {
    const rtf = await readFile(await convert('latex', 'rtf', await input('energy-rtf.tex', LATEX)), 'latin1');
    const formulas = [...rtf.matchAll(/\{\\mmath\s*\{\\\*\\moMath ((?:(?!\\mmathPict)[\s\S])*)/g)].map((match) => match[1]!);
    assert.equal(formulas.length, 2, 'two formulas');
    const runs = (formula: string) => [...formula.matchAll(/\{\\mr ([^}]*)\}/g)].map((match) => match[1]!.trim()).join('');
    assert.equal(runs(formulas[0]!), 'E=mc2');
    assert.match(formulas[1]!, /\\mchr \\u8747/, 'the integral sign (U+222B)');
    assert.equal(runs(formulas[1]!), '01x2dx=13');
  });

  it('latex -> odt (pandoc\'s formula objects), and that odt -> pdf through LibreOffice', async () => {
    const odt = await convert('latex', 'odt', await input('energy-odt.tex', LATEX));
    const zip = await openZip(odt);
    const objects = zip.entries.filter((entry) => /^Formula-\d+\/content\.xml$/.test(entry));
    assert.equal(objects.length, 2, `two formula objects (${zip.entries.join(', ')})`);
    const mathml = await zip.text(...objects);
    assert.match(mathml, /<mi>E<\/mi><mo>=<\/mo><mi>m<\/mi><msup><mi>c<\/mi><mn>2<\/mn><\/msup>/);
    assert.match(mathml, /<mo>∫<\/mo>/);
    assertFormulasInPdfText(await documentText('pdf', await convert('odt', 'pdf', odt)), 'odt -> pdf');
  });

  it('md: $a^2+b^2=c^2$ is text in GitHub\'s Markdown, and stays that text in pdf, odt and rtf', async () => {
    const path = await input('pythagoras.md', MARKDOWN);
    for (const target of ['pdf', 'odt', 'rtf']) {
      if (!registry.pair('md', target) && !required) continue;
      const text = await documentText(target, await convert('md', target, path));
      assert.ok(squeezed(text).includes('$a^2+b^2=c^2$'), `md -> ${target}: ${text}`);
    }
  });
});

describe('the control: the same LibreOffice with its Math module hidden drops the formulas', { skip }, () => {
  let hidden: Engine | undefined;
  let why: string | false = false;

  before(async () => {
    if (!office.ready) return;
    const program = dirname(await realpath(office.sofficeBin));
    const libraries = ['libsmlo.so', 'libsmdlo.so'].map((name) => join(program, name)).filter((path) => existsSync(path));
    const mounts = libraries.map((path) => `mount --bind /dev/null '${path}'`).join(' && ');
    const check = process.getuid?.() === 0 && libraries.length > 0
      ? await runProcess('unshare', ['-m', 'sh', '-c', `${mounts} && true`], { timeoutMs: 10_000 }).catch(() => null)
      : null;
    if (check?.code !== 0) {
      why = 'needs root and a mount namespace (unshare -m) to hide LibreOffice Math for one process';
      return;
    }
    // The bridge (and the soffice.bin it starts) in a mount namespace of its own where Math's
    // libraries are empty files: made before the bridge confines itself (confine.py), after which
    // no process of its own may change mounts.
    const wrapper = join(dir, 'python-without-math');
    await writeFile(wrapper, `#!/bin/sh\nexec unshare -m sh -c "${mounts} && exec '${office.python}' \\"\\$@\\"" python "$@"\n`);
    await chmod(wrapper, 0o755);
    hidden = createOfficeEngine({ instances: 1, env: { ...process.env, CONVD_OFFICE_PYTHON: wrapper } });
    const status = await hidden.probe();
    assert.ok(status.available, status.detail);
  });

  after(async () => {
    await hidden?.close?.();
  });

  it('latex -> docx -> pdf without Math: the PDF has the words around the formulas, not the formulas', async (t) => {
    if (why) return t.skip(why);
    const docx = await convert('latex', 'docx', await input('control.tex', LATEX));
    const text = await documentText('pdf', await convert('docx', 'pdf', docx, hidden));
    assert.match(squeezed(text), /Einsteinwrotein1905\./, `the formula is gone:\n${text}`);
    assert.throws(() => assertFormulasInPdfText(text, 'without Math'), /E = mc\^2 is in the text/);
  });

  it('docx -> rtf and odt -> pdf without Math: no math in the RTF, no formula in the PDF', async (t) => {
    if (why) return t.skip(why);
    const docx = await convert('latex', 'docx', await input('control-rtf.tex', LATEX));
    const rtf = await readFile(await convert('docx', 'rtf', docx, hidden), 'latin1');
    assert.match(rtf, /Einstein wrote/);
    assert.doesNotMatch(rtf, /\\moMath/);
    const odt = await convert('latex', 'odt', await input('control-odt.tex', LATEX));
    const text = await documentText('pdf', await convert('odt', 'pdf', odt, hidden));
    assert.throws(() => assertFormulasInPdfText(text, 'without Math'), /E = mc\^2 is in the text/);
  });
});
