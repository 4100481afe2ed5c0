// Keeps the live dashboard open in headless Chromium while a run goes, as a person
// watching it would (bench/dashboard.sh measures what that costs the generator).
// Usage: node watch.mjs URL|@FILE [SECONDS]. With @FILE the browser starts first and
// the address is read from FILE (pado's stderr) as soon as pado prints it, so the
// page is open from the run's first second. Prints `ready` once the browser runs.
// Leaves when the page says the run ended, when pado no longer answers, or after
// SECONDS (default 600); prints how many seconds the page drew.
import { readFileSync } from 'node:fs';
import { launch, until } from './browser.mjs';

const [where, limit = '600'] = process.argv.slice(2);
if (!where) {
  console.error('usage: node watch.mjs URL|@FILE [SECONDS]');
  process.exit(2);
}
const found = () => {
  try {
    const m = readFileSync(where.slice(1), 'utf8').match(/http:\/\/127\.0\.0\.1:\d+\/\S*/);
    return m ? m[0] : null;
  } catch (e) {
    return null;
  }
};
const browser = await launch();
try {
  const page = await browser.context.newPage();
  console.log('ready');
  const url = where.startsWith('@') ? await until(found, Number(limit) * 1000, `an address in ${where.slice(1)}`) : where;
  await page.goto(url);
  await until(() => page.evaluate(() => !!(window.pado && window.pado.run)), 15000, 'the page loaded');
  const t0 = Date.now();
  while (Date.now() - t0 < Number(limit) * 1000) {
    const ended = await page.evaluate(() => !!(window.pado.state && window.pado.state.ended)).catch(() => true);
    if (ended) break;
    const gone = await fetch(new URL('/api/run', url)).then(() => false, () => true);
    if (gone) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const n = await page.evaluate(() => window.pado.seconds.length).catch(() => -1);
  console.log(`the page drew ${n} seconds`);
} finally {
  await browser.close();
}
