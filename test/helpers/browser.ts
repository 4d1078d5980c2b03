/**
 * Debian's Chromium for the web face's browser tests, driven by playwright-core (never a browser
 * download), with the flags the web face is tested with: without the background-networking ones
 * Chromium floods the closed network. Playwright gives each launch a fresh profile directory.
 */
import type { Browser } from 'playwright-core';
import { findChromium } from '../../src/engines/html/find-chromium.ts';

const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** One browser; each `newContext()` is a person of their own (cookies apart from every other). */
export async function launchBrowser(): Promise<Browser> {
  const install = await findChromium(process.env);
  if (!install.ready) throw new Error(`the web face's browser tests need Chromium: ${install.problem}`);
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: install.path, args: FLAGS, headless: true });
}

/** What axe-core finds against WCAG 2.1 levels A and AA on the page as it is now; empty when none. */
export async function accessibilityViolations(page: import('playwright-core').Page): Promise<string[]> {
  const { readFile } = await import('node:fs/promises');
  const { createRequire } = await import('node:module');
  const source = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  // Evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern.
  await page.evaluate(source);
  const violations = await page.evaluate(`axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
    .then((result) => result.violations.map((v) => v.id + ' (' + v.impact + '): ' + v.help + ' at ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`);
  return violations as string[];
}
