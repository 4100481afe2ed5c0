// A real `pado run --dashboard` driven from its page in headless Chromium; started
// by tests/e2e/dashboard_browser.rs, which holds the truth (the counting test
// server) and judges the load against it. This script works the page as a person
// would and prints a line `MARK <what>` on stdout just before each click that
// changes the load, so the Rust side can place the click on the server's clock.
//
// Environment: PADO_DASHBOARD_URL (the address pado printed, with #token=…),
// RATE_TO (the rate to set from the page), LATE_AFTER_S (open a second page once
// at least this many seconds are closed).
// It asserts on the page: the charts grow during the run; the rate change, the
// pause and the resume are answered 200 and appear as events; a control call
// without the token (or with a wrong one) gets 401; a page opened late holds
// every second from 0; after Stop the summary and the files show and report.html
// downloads. Exits 1 with the reason on stderr on the first failed assertion.
import assert from 'node:assert/strict';
import { launch, until } from './browser.mjs';

const url = process.env.PADO_DASHBOARD_URL;
const rateTo = Number(process.env.RATE_TO || 60);
const lateAfter = Number(process.env.LATE_AFTER_S || 12);
if (!url || !url.includes('#token=')) {
  console.error(`PADO_DASHBOARD_URL must be the dashboard's address with #token=…, got ${url}`);
  process.exit(2);
}
const base = new URL(url).origin;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Prints the mark and gives its moment (ms since the epoch, as resource timing's).
const mark = (what) => {
  console.log(`MARK ${what}`);
  return Date.now();
};
const say = (what) => console.error(`[live-run ${new Date().toISOString().slice(11, 23)}] ${what}`);

// When the page's last `POST /api/control` started and how long its answer took,
// from the browser's own resource timing: printed as `TIMING <what> <ms from the
// mark to the call> <ms the call took>` so that a late change can be told apart
// (a click the browser carried out late, or an answer pado gave late).
async function controlTiming(page) {
  return page.evaluate(() => {
    const calls = performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname === '/api/control');
    const c = calls[calls.length - 1];
    return c ? { start: performance.timeOrigin + c.startTime, took: c.responseEnd - c.startTime } : null;
  });
}

async function answered(page, what, markedAt) {
  const c = await until(() => page.evaluate(() => window.pado.lastControl && window.pado.lastControl.status !== undefined && window.pado.lastControl), 5000, `${what} answered`);
  const t = await controlTiming(page);
  if (t && markedAt !== undefined) console.log(`TIMING ${what} ${Math.round(t.start - markedAt)} ${Math.round(t.took)}`);
  assert.equal(c.status, 200, `${what}: ${c.message}`);
  await page.evaluate(() => { window.pado.lastControl = null; });
  // When the answer came (pado applied the change before it answered): a starved
  // browser may carry out a click seconds after its mark, so waits that must
  // follow the change count from here, not from the mark.
  return t ? t.start + t.took : Date.now();
}

async function eventShown(page, pattern) {
  await until(async () => (await page.locator('#table-events td.what').allTextContents()).some((t) => pattern.test(t)), 5000, `event ${pattern} listed`);
}

const browser = await launch();
try {
  const page = await browser.context.newPage();
  await page.goto(url);
  await until(() => page.evaluate(() => !!(window.pado && window.pado.run && window.pado.renders > 0)), 15000, 'the page loaded the run');
  assert.equal(await page.isVisible('#control-panel'), true, 'control panel shown with the token');
  assert.equal(await page.isVisible('#form-rate'), true, 'an open-model run offers the rate');

  // Charts update during the run.
  await until(() => page.evaluate(() => window.pado.seconds.length >= 3), 15000, 'three seconds closed');
  const n1 = await page.evaluate(() => window.pado.charts['chart-rps'].points);
  await until(async () => (await page.evaluate(() => window.pado.charts['chart-rps'].points)) >= n1 + 2, 5000, 'the req/s chart grew by two seconds');
  say(`chart grew from ${n1} points`);

  // A rate change made in the page.
  await page.click('.tabs button[data-tab="events"]');
  await page.fill('#in-rate', String(rateTo));
  await page.evaluate(() => performance.clearResourceTimings()); // the buffer holds 250 entries
  const rateAt = mark('rate');
  await page.click('#btn-set-rate');
  const rateApplied = await answered(page, 'rate', rateAt);
  await eventShown(page, new RegExp(`→ ${rateTo}(\\.0)?/s`));
  // The page's own figures show the new rate too (a closed second at it).
  await until(() => page.evaluate((r) => window.pado.seconds.slice(-1)[0].rps >= 0.8 * r, rateTo), 6000, 'a second at the new rate on the page');
  assert.ok(await page.locator('#chart-rps line.mark.event').count() >= 1, 'the change is a mark on the chart');
  // The Rust side counts the server's requests 2–4 s after pado applied the
  // change (its event): no pause before 5 s after the answer.
  await sleep(Math.max(0, rateApplied + 5000 - Date.now()));

  // Pause: no new requests; resume: requests again.
  await page.evaluate(() => performance.clearResourceTimings()); // the buffer holds 250 entries
  const pauseAt = mark('pause');
  await page.click('#btn-pause');
  await answered(page, 'pause', pauseAt);
  await until(async () => (await page.textContent('#run-status')) === 'paused', 3000, 'status paused');
  await sleep(3500);
  await page.evaluate(() => performance.clearResourceTimings()); // the buffer holds 250 entries
  const resumeAt = mark('resume');
  await page.click('#btn-resume');
  await answered(page, 'resume', resumeAt);
  await until(async () => (await page.textContent('#run-status')) === 'running', 3000, 'status running');
  await eventShown(page, /^paused$/);
  await eventShown(page, /^resumed$/);
  await sleep(3500);

  // A control call without the token, or with a wrong one, gets 401: from the
  // page itself (same origin) and from a script.
  const fromPage = await page.evaluate(async () => {
    const body = JSON.stringify({ action: 'pause' });
    const none = await fetch('/api/control', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    const wrong = await fetch('/api/control', { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer not-the-token' }, body });
    return [none.status, wrong.status];
  });
  assert.deepEqual(fromPage, [401, 401], 'control without the right token from the page');
  const fromScript = await fetch(`${base}/api/control`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"action":"stop"}' });
  assert.equal(fromScript.status, 401, 'control without a token from a script');
  assert.equal(await page.textContent('#run-status'), 'running', 'the refused calls changed nothing');

  // A page opened late shows the whole run from second 0.
  await until(async () => (await (await fetch(`${base}/api/state`)).json()).seconds_closed >= lateAfter, 30000, `${lateAfter} seconds closed`);
  const closed = (await (await fetch(`${base}/api/state`)).json()).seconds_closed;
  const late = await browser.context.newPage();
  await late.goto(`${base}/`);
  await until(() => late.evaluate((n) => !!(window.pado && window.pado.seconds.length >= n), closed), 10000, 'the late page loaded the run so far');
  const ts = await late.evaluate(() => window.pado.seconds.map((s) => s.t));
  assert.equal(ts[0], 0, 'the late page starts at second 0');
  ts.forEach((t, i) => assert.equal(t, i, 'the late page holds every second once, in order'));
  assert.ok((await late.evaluate(() => window.pado.charts['chart-rps'].points)) >= closed, 'the late page draws every second');
  assert.equal(await late.isHidden('#control-panel'), true, 'a page without the token is read-only');
  assert.match(await late.textContent('#control-readonly'), /#token=/);
  console.log(`LATE ${closed} ${ts.length}`);
  await late.close();

  const errors = browser.errors.filter((e) => !/status of 401/.test(e));
  assert.deepEqual(errors, [], 'no errors in the page');

  // Stop (confirmed), then the final summary and the files.
  page.once('dialog', (d) => d.accept());
  await page.evaluate(() => performance.clearResourceTimings()); // the buffer holds 250 entries
  const stopAt = mark('stop');
  await page.click('#btn-stop');
  await answered(page, 'stop', stopAt);
  await until(() => page.isVisible('#ended'), 30000, 'the end shown');
  await until(async () => (await page.locator('#files a').allTextContents()).includes('report.html'), 30000, 'report.html listed');
  assert.ok((await page.locator('#summary dd').count()) >= 3, 'the final summary shown');
  const href = await page.locator('#files a', { hasText: 'report.html' }).first().getAttribute('href');
  const report = await page.evaluate(async (h) => {
    const r = await fetch(h);
    return [r.status, (await r.text()).slice(0, 2000)];
  }, href);
  assert.equal(report[0], 200, 'report.html downloads');
  assert.match(report[1], /<html/i);
  console.log('OK');
} catch (e) {
  console.error(e && e.stack ? e.stack : String(e));
  process.exitCode = 1;
} finally {
  await browser.close();
}
