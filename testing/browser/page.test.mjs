// The dashboard page in headless Chromium against a mock of pado's JSON API
// (mock-api.mjs) that plants every figure: the page must show exactly what was
// planted, keep Hangul and markup-like names as text, rebuild the whole run on a
// reload, fall back to polling, and steer through /api/control with the token
// only. `node --test page.test.mjs` (needs /usr/bin/chromium and `npm ci`).
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMock } from './mock-api.mjs';
import { launch, until } from './browser.mjs';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser.close();
});

async function open(url) {
  const page = await browser.context.newPage();
  await page.goto(url);
  await until(() => page.evaluate(() => !!(window.pado && window.pado.run && window.pado.renders > 0)), 10000, 'the page loaded the run');
  return page;
}

const held = (page) => page.evaluate(() => window.pado.seconds.map((s) => s.t));

test('a page opened late shows the run from second 0, and again after a reload', async () => {
  const m = await startMock({ tickMs: 60000, startAt: 25 });
  try {
    const page = await open(m.url);
    assert.deepEqual(await held(page), [...Array(25).keys()]);
    // Every second is drawn: the req/s chart holds one point per second.
    assert.equal(await page.evaluate(() => window.pado.charts['chart-rps'].points), 25);
    await page.reload();
    await until(() => page.evaluate(() => window.pado && window.pado.seconds.length === 25), 10000, 'reload reloaded');
    assert.deepEqual(await held(page), [...Array(25).keys()]);
    await page.close();
  } finally {
    await m.close();
  }
});

test('charts update from the stream, and from polling when the stream is down', async () => {
  for (const noStream of [false, true]) {
    const m = await startMock({ tickMs: 300, startAt: 3, noStream });
    try {
      const page = await open(m.url);
      const n0 = await page.evaluate(() => window.pado.charts['chart-rps'].points);
      await until(async () => (await page.evaluate(() => window.pado.charts['chart-rps'].points)) >= n0 + 3, 8000, 'the chart grew');
      const t = await held(page);
      assert.deepEqual(t, [...Array(t.length).keys()], 'no second lost or doubled');
      assert.equal(await page.evaluate(() => window.pado.stream), noStream ? 'polling' : 'stream');
      await page.close();
    } finally {
      await m.close();
    }
  }
});

test('names stay text: Hangul intact, markup never interpreted', async () => {
  const m = await startMock({ tickMs: 60000, startAt: 6 });
  try {
    browser.errors.length = 0;
    const page = await open(m.url);
    assert.equal(await page.textContent('#run-name'), '부하 시험 <b>x</b>');
    assert.equal(await page.locator('#run-name b').count(), 0);
    const names = await page.locator('#table-steps tbody td.name').allTextContents();
    // In the plan's order.
    assert.deepEqual(names, ['검색 <i>', 'login']);
    assert.equal(await page.locator('#table-steps i').count(), 0);
    assert.equal(await page.textContent('#chart-obs-0 h3'), 'db_connections{pool="메인"}');
    assert.equal(
      await page.textContent('#bottleneck'),
      'Likely limit: DB 연결 풀 (db_connections): 10/10 active, 3 pending; every connection in use with requests waiting for one <b> · confidence medium, over peak load (≥ 9)',
    );
    assert.equal(await page.locator('#bottleneck b').count(), 0);
    assert.equal(await page.textContent('#stage'), 'warm-up');
    const sample = await page.textContent('#table-failures .samples div');
    assert.equal(sample, 's0 · 검색 <i>: GET /검색 → 500 · body <script>alert(1)</script>');
    assert.equal(await page.locator('#table-failures script').count(), 0);
    assert.deepEqual(browser.errors, []);
    await page.close();
  } finally {
    await m.close();
  }
});

test('the step table holds the planted sums and a click opens the step chart', async () => {
  const m = await startMock({ tickMs: 60000, startAt: 6 });
  try {
    const page = await open(m.url);
    // 검색 <i>: 8 requests a second for 6 seconds, failures at t=0 and t=4, p95 21+t.
    const row = page.locator('#table-steps tr[data-step="검색 <i>"] td');
    const cells = await row.allTextContents();
    assert.deepEqual(cells, ['검색 <i>', '48', '8.0', '2', '11.00', '26.00', '31.00', '46.00', '48 / 0']);
    assert.equal(await page.isHidden('#step-detail'), true);
    await page.click('#table-steps tr[data-step="검색 <i>"]');
    await until(() => page.isVisible('#step-detail'), 3000, 'the step chart opened');
    assert.equal(await page.textContent('#step-detail-name'), '검색 <i>');
    assert.equal(await page.evaluate(() => window.pado.charts['chart-step-latency'].points), 18);
    // Thresholds live: pass/fail and the current value as pado writes it.
    const th = await page.locator('#table-thresholds tbody tr').evaluateAll((rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
    assert.deepEqual(th, [
      ['http_req_duration', 'p(95) < 2000', 'pass', '25.00'],
      ['http_req_failed', 'rate < 0.01', 'fail', '0.031'],
    ]);
    await page.close();
  } finally {
    await m.close();
  }
});

test('control: only with the token; every change reaches the API and errors read as words', async () => {
  const m = await startMock({ tickMs: 500, startAt: 4 });
  try {
    // Without the token: read-only, with a note on how to get control.
    const ro = await open(m.base + '/');
    assert.equal(await ro.isHidden('#control-panel'), true);
    assert.match(await ro.textContent('#control-readonly'), /no control token.*#token=/);
    await ro.close();

    const page = await open(m.url);
    // The token left the address bar (a copied address does not carry it) but the tab keeps it.
    assert.equal(await page.evaluate(() => window.location.hash), '');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('pado-dashboard-token')), m.token);
    assert.equal(await page.isVisible('#control-panel'), true);
    // Both load kinds are planted: the rate form and the VU form show.
    assert.equal(await page.isVisible('#form-rate'), true);
    assert.equal(await page.isVisible('#form-vus'), true);

    await page.click('#btn-pause');
    await until(() => page.evaluate(() => window.pado.lastControl && window.pado.lastControl.status === 200), 3000, 'pause answered');
    await until(async () => (await page.textContent('#run-status')) === 'paused', 3000, 'status paused');
    assert.equal(await page.isDisabled('#btn-pause'), true);
    await page.click('#btn-resume');
    await until(async () => (await page.textContent('#run-status')) === 'running', 3000, 'status running');

    await page.fill('#in-rate', '25');
    await page.fill('#in-rate-ramp', '5');
    await page.click('#btn-set-rate');
    await until(() => m.controls.length === 3, 3000, 'the rate reached the API');
    assert.deepEqual(m.controls, [{ action: 'pause' }, { action: 'resume' }, { action: 'set_rate', per_s: 25, ramp_s: 5 }]);
    // The API has it; the page says so once its answer is back (a busy machine may take a moment).
    await until(async () => (await page.textContent('#control-result')) === 'Done: rate set to 25 req/s over 5 s.', 3000, 'the rate change said as done');

    // More VUs than the plan's most: the form itself refuses, nothing is sent.
    await page.fill('#in-vus', '11');
    await page.click('#btn-set-vus');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(m.controls.length, 3);
    // The run refuses: 409 in words.
    await page.click('#btn-next-stage');
    await until(() => page.evaluate(() => window.pado.lastControl.status === 409), 3000, '409 shown');
    assert.equal(await page.textContent('#control-result'), 'The run refused the change: there is no next stage');
    // A hold moves the planned end: the header and the time axis follow it.
    assert.equal(await page.textContent('#planned'), '1m00s');
    await page.fill('#in-hold', '30');
    await page.click('#btn-hold');
    await until(async () => (await page.textContent('#planned')) === '1m30s', 3000, 'the planned end moved by the hold');
    assert.deepEqual(m.controls.slice(-2), [{ action: 'next_stage' }, { action: 'hold', seconds: 30 }]);

    // The events are listed and drawn on the charts as marks.
    await page.click('.tabs button[data-tab="events"]');
    await until(async () => (await page.locator('#table-events tbody tr').count()) === 4, 3000, 'four events');
    assert.deepEqual(await page.locator('#table-events td.what').allTextContents(), ['paused', 'resumed', 'arrival rate 10/s → 25/s', 'held 30 s']);
    assert.equal(await page.locator('#chart-rps line.mark.event').count(), 4);

    // Stop asks first: dismissing keeps the run going, accepting stops it.
    page.once('dialog', (d) => d.dismiss());
    await page.click('#btn-stop');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(m.controls.length, 5);
    page.once('dialog', (d) => d.accept());
    await page.click('#btn-stop');
    await until(() => m.controls.length === 6, 3000, 'stop sent');
    assert.deepEqual(m.controls[5], { action: 'stop' });
    await page.close();
  } finally {
    await m.close();
  }
});

test('a wrong token: read-only, saying so; a token refused later: 401 in words', async () => {
  const m = await startMock({ tickMs: 60000, startAt: 2 });
  try {
    const wrong = await open(`${m.base}/#token=wrong`);
    assert.equal(await wrong.isHidden('#control-panel'), true);
    assert.match(await wrong.textContent('#control-readonly'), /did not accept this page's token/);
    await wrong.close();
    const page = await open(m.url);
    m.rotateToken('another');
    await page.click('#btn-pause');
    await until(() => page.evaluate(() => window.pado.lastControl && window.pado.lastControl.status === 401), 3000, '401');
    assert.match(await page.textContent('#control-result'), /refused the token \(401\)/);
    assert.equal(m.controls.length, 0);
    await page.close();
  } finally {
    await m.close();
  }
});

test('baseline dashed, generators tab for a distributed run only, the self-check light', async () => {
  const m = await startMock({ tickMs: 60000, startAt: 8, baseline: true, distributed: true, hotFrom: 7 });
  try {
    const page = await open(m.url);
    assert.equal(await page.locator('#chart-rps polyline.baseline').count(), 1);
    assert.equal(await page.locator('#chart-rps polyline.run').count(), 1);
    assert.equal(await page.isVisible('th.baseline-col'), true);
    assert.match(await page.textContent('#baseline-note'), /mock-run-0/);
    assert.equal(await page.getAttribute('#self-check', 'class'), 'light red');
    assert.match(await page.textContent('#self-check-note'), /may be the bottleneck/);
    await page.click('#tab-generators');
    const shares = await page.locator('#table-generators tbody tr').evaluateAll((rows) => rows.map((r) => r.cells[3].textContent));
    assert.deepEqual(shares, ['25.00%', '75.00%']);
    // Each generator's requests in every second since second 0, from the seconds
    // themselves (what a reload gets).
    const legend = await page.locator('#chart-generators .legend').textContent();
    assert.match(legend, /gen-a/);
    assert.match(legend, /gen-b/);
    const points = await page.locator('#chart-generators polyline.run').evaluateAll((ls) => ls.map((l) => l.getAttribute('points').trim().split(/\s+/).length));
    assert.deepEqual(points, [8, 8]);
    await page.close();
  } finally {
    await m.close();
  }
  const single = await startMock({ tickMs: 60000, startAt: 3 });
  try {
    const page = await open(single.url);
    assert.equal(await page.isHidden('#tab-generators'), true);
    assert.equal(await page.getAttribute('#self-check', 'class'), 'light green');
    assert.equal(await page.locator('#chart-rps polyline.baseline').count(), 0);
    await page.close();
  } finally {
    await single.close();
  }
});

test('when the run ends: the final summary as pado writes it, and the files', async () => {
  const m = await startMock({ tickMs: 200, startAt: 2, endAfter: 5 });
  try {
    const page = await open(m.url);
    await until(() => page.isVisible('#ended'), 8000, 'the end shown');
    await until(async () => (await page.locator('#files a').count()) === 2, 5000, 'files listed');
    const facts = await page.locator('#summary dd').evaluateAll((d) => Object.fromEntries(d.map((x) => [x.dataset.key, x.textContent])));
    assert.deepEqual(facts, {
      duration: '5.0s', requests: '50', failed: '3', 'req/s': '10.0',
      p50: '12.35 ms', p95: '240.5 ms', p99: '0.412 ms', max: '12034 ms', thresholds: 'FAILED',
    });
    assert.deepEqual(await page.locator('#files a').evaluateAll((a) => a.map((x) => x.getAttribute('href'))), ['/files/report.html', '/files/summary.json']);
    assert.equal(await page.textContent('#run-status'), 'ended');
    assert.equal(await page.isHidden('#control-panel'), true);
    await page.close();
  } finally {
    await m.close();
  }
});

test('LLM streams: their panel draws the planted TTFT, ITL and tokens per second, and stays hidden without', async () => {
  const m = await startMock({ tickMs: 60000, startAt: 12, llm: true });
  try {
    const page = await open(m.url);
    assert.equal(await page.isVisible('#llm'), true);
    const lines = await page.evaluate(() => window.pado.charts['chart-llm-latency'].last.lines.map((l) => [l.name, l.pts[l.pts.length - 1]]));
    assert.deepEqual(lines, [['ttft p50', [11, 211]], ['ttft p95', [11, 261]], ['itl p50', [11, 20]], ['itl p99', [11, 35]]]);
    assert.equal(await page.evaluate(() => window.pado.charts['chart-llm-tokens'].points), 12);
    assert.deepEqual(await page.evaluate(() => window.pado.charts['chart-llm-tokens'].last.lines[0].pts[3]), [3, 33]);
    await page.close();
  } finally {
    await m.close();
  }
  const plain = await startMock({ tickMs: 60000, startAt: 5 });
  try {
    const page = await open(plain.url);
    assert.equal(await page.isVisible('#llm'), false);
    assert.equal(await page.evaluate(() => !!window.pado.charts['chart-llm-latency']), false);
    await page.close();
  } finally {
    await plain.close();
  }
});
