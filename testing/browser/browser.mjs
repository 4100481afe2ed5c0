// Launching Debian's Chromium for the browser tests: playwright-core drives the
// system browser (Playwright's own browser downloads are not reachable from CI),
// headless, with a fresh profile each time and nothing phoning home.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const CHROMIUM = process.env.PADO_CHROMIUM || '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * A browser context on a fresh profile directory; `close()` also removes the
 * profile. Console errors and page errors are collected in `errors`.
 */
export async function launch() {
  const profile = mkdtempSync(path.join(tmpdir(), 'pado-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1400, height: 1000 },
  });
  const errors = [];
  const watch = (page) => {
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  };
  context.on('page', watch);
  for (const p of context.pages()) watch(p);
  return {
    context,
    errors,
    async page() {
      const p = context.pages().find((q) => q.url() === 'about:blank') || (await context.newPage());
      return p;
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Waits until `fn()` (async) is truthy, polling every 100 ms; throws `what` after `ms`. */
export async function until(fn, ms, what) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
