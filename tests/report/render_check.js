// Opens an `llmbench report` page in headless Chromium (through playwright-core) and fails on any console
// error or warning, page error, network request, or chart that did not draw; keeps a full-page screenshot.
// Usage: node render_check.js REPORT.html SCREENSHOT.png [--min-charts N] [--expect-missing] [--expect-text S]...
'use strict';
const path = require('path');
const fs = require('fs');

const webDir = process.env.LLMBENCH_WEB_DIR || path.join(__dirname, '..', '..', 'web');
const { chromium } = require(path.join(webDir, 'node_modules', 'playwright-core'));

function parseArgs(argv) {
  const a = { html: argv[0], shot: argv[1], minCharts: 1, expectMissing: false, texts: [] };
  for (let i = 2; i < argv.length; ++i) {
    if (argv[i] === '--min-charts') a.minCharts = Number(argv[++i]);
    else if (argv[i] === '--expect-missing') a.expectMissing = true;
    else if (argv[i] === '--expect-text') a.texts.push(argv[++i]);
    else throw new Error('unknown argument ' + argv[i]);
  }
  if (!a.html || !a.shot) throw new Error('usage: render_check.js REPORT.html SCREENSHOT.png [options]');
  return a;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const problems = [];
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],  // playwright adds a fresh --user-data-dir itself
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    let pageFailed;
    const failure = new Promise((resolve) => { pageFailed = resolve; });
    page.on('pageerror', (e) => { problems.push('page error: ' + e.message); pageFailed(); });
    // The page must be self-contained: anything but the file itself is a failure.
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url === 'file://' + path.resolve(args.html)) return route.continue();
      problems.push('network request: ' + url);
      return route.abort();
    });
    await page.goto('file://' + path.resolve(args.html));
    // A script error can stop the page before it ever reports: stop waiting then too.
    const done = await Promise.race([
      page.waitForFunction(() => window.__chartsDone === true, null, { timeout: 60000 }).then(() => true, () => false),
      failure.then(() => false),
    ]);
    if (!done) problems.push('the page never reported its charts done (window.__chartsDone)');
    const state = await page.evaluate(() => {
      const charts = Array.from(document.querySelectorAll('.vega-chart')).map((el) => {
        const svg = el.querySelector('svg');
        const box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
        // Drawn marks: paths/lines/symbols inside Vega's mark groups.
        const marks = svg ? svg.querySelectorAll('g[class*="mark-"] path, g[class*="mark-"] line').length : 0;
        return { id: el.id, svg: !!svg, width: box.width, height: box.height, marks };
      });
      return {
        total: window.__chartsTotal, rendered: window.__chartsRendered, errors: window.__chartErrors,
        missingNotice: !!document.getElementById('charts-missing'), charts, text: document.body.innerText,
        tables: document.querySelectorAll('table').length,
      };
    });
    for (const e of state.errors) problems.push('chart error: ' + e);
    if (state.tables < 1) problems.push('no tables on the page');
    if (args.expectMissing) {
      if (!state.missingNotice) problems.push('expected the "charts missing" notice');
      if (state.charts.length) problems.push(`expected no charts, found ${state.charts.length}`);
    } else {
      if (state.missingNotice) problems.push('unexpected "charts missing" notice');
      if (state.charts.length < args.minCharts)
        problems.push(`expected at least ${args.minCharts} charts, found ${state.charts.length}`);
      if (state.rendered !== state.charts.length)
        problems.push(`${state.rendered} of ${state.charts.length} charts reported rendered`);
      for (const c of state.charts) {
        if (!c.svg || c.width < 50 || c.height < 50 || c.marks < 1)
          problems.push(`chart ${c.id} did not draw (svg ${c.svg}, ${c.width}x${c.height}, ${c.marks} marks)`);
      }
    }
    for (const t of args.texts) if (!state.text.includes(t)) problems.push('page text lacks: ' + t);
    await page.screenshot({ path: args.shot, fullPage: true });
    console.log(`render_check: ${args.html}: ${state.rendered || 0} of ${state.charts.length} charts rendered, ${state.tables} tables, ` +
                `screenshot ${args.shot}`);
  } finally {
    await browser.close();
  }
  if (problems.length) {
    for (const p of problems) console.error('FAIL: ' + p);
    process.exit(1);
  }
}

main().catch((e) => {
  console.error('FAIL: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
