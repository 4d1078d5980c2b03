/**
 * Debian's Chromium for the web face's browser tests, driven by playwright-core (never a browser
 * download), with the flags of DESIGN.md ("Web face"): without the background-networking ones
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
