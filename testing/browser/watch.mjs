// Keeps the live dashboard open in headless Chromium while a run goes, as a person
// watching it would (bench/dashboard.sh measures what that costs the generator).
// Usage: node watch.mjs URL [SECONDS]. Leaves when the page says the run ended, or
// after SECONDS (default 600); prints how many seconds the page drew.
import { launch, until } from './browser.mjs';

const [url, limit = '600'] = process.argv.slice(2);
if (!url) {
  console.error('usage: node watch.mjs URL [SECONDS]');
  process.exit(2);
}
const browser = await launch();
try {
  const page = await browser.context.newPage();
  await page.goto(url);
  await until(() => page.evaluate(() => !!(window.pado && window.pado.run)), 15000, 'the page loaded');
  const t0 = Date.now();
  while (Date.now() - t0 < Number(limit) * 1000) {
    const ended = await page.evaluate(() => !!(window.pado.state && window.pado.state.ended)).catch(() => true);
    if (ended) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const n = await page.evaluate(() => window.pado.seconds.length).catch(() => -1);
  console.log(`the page drew ${n} seconds`);
} finally {
  await browser.close();
}
