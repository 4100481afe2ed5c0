// The page of a test split over two `pado agent`s (`pado run --generators a,b
// --dashboard`), opened in headless Chromium while it runs; started by
// tests/e2e/agents.rs, which holds the truth (the agents' addresses, the counting
// test server). It asserts on the page: the run is shown as distributed, the
// Generators tab lists every agent (by its address, in segment order, each with
// its segment and a share of the requests), and the req/s chart grows.
//
// Environment: PADO_DASHBOARD_URL (the address pado printed, with #token=…),
// AGENTS (the agents' addresses, comma-separated, in the order of --generators).
// Exits 1 with the reason on stderr on the first failed assertion.
import assert from 'node:assert/strict';
import { launch, until } from './browser.mjs';

const url = process.env.PADO_DASHBOARD_URL;
const agents = (process.env.AGENTS || '').split(',').filter(Boolean);
if (!url || agents.length < 2) {
  console.error(`PADO_DASHBOARD_URL and AGENTS (two or more) are needed, got ${url} and ${agents}`);
  process.exit(2);
}

const browser = await launch();
try {
  const page = await browser.context.newPage();
  await page.goto(url);
  await until(() => page.evaluate(() => !!(window.pado && window.pado.run && window.pado.renders > 0)), 15000, 'the page loaded the run');
  assert.equal(await page.evaluate(() => window.pado.run.distributed), true, '/api/run says distributed');
  await until(() => page.evaluate(() => window.pado.seconds.length >= 2), 15000, 'two seconds closed');
  await until(() => page.isVisible('#tab-generators'), 5000, 'the Generators tab shown');
  await page.click('#tab-generators');
  // Every agent listed, with a share of the load once its seconds arrived.
  await until(async () => {
    const rows = await page.locator('#table-generators tbody tr').count();
    const counts = await page.locator('#table-generators tbody tr td:nth-child(3)').allTextContents();
    return rows === agents.length && counts.every((c) => c !== '0');
  }, 8000, `${agents.length} generators listed, each with requests`);
  const names = await page.locator('#table-generators tbody td.name').allTextContents();
  agents.forEach((a, i) => assert.ok(names[i].includes(a), `row ${i} is ${names[i]}, not agent ${a}`));
  const segments = await page.locator('#table-generators tbody tr td:nth-child(2)').allTextContents();
  assert.deepEqual(segments, agents.map((_, i) => `${i}/${agents.length}`), 'segments in order');
  const n1 = await page.evaluate(() => window.pado.charts['chart-rps'].points);
  await until(async () => (await page.evaluate(() => window.pado.charts['chart-rps'].points)) >= n1 + 1, 5000, 'the req/s chart grew');
  assert.deepEqual(browser.errors, [], 'no console or page errors');
  console.log(`ok: ${names.length} generators listed: ${names.join(' | ')}`);
} catch (e) {
  console.error(`distributed page: ${e.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
