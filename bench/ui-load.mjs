// ui-load.mjs - measures the page at URL (bench/ui-load.sh starts the daemon):
// the first load's transfer size with a cold profile, a reload's, the time from
// a search to its first result for the first 20 queries of QUERIES, and the
// facts and overview views. Prints a table.
const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [base, queriesFile, notes, facts] = process.argv.slice(2);
const queries = readFileSync(queriesFile, 'utf8').split('\n').filter(Boolean).slice(0, 20);
const profile = mkdtempSync(join(tmpdir(), 'mnemo-load-'));
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.MNEMO_UI_CHROMIUM || '/usr/bin/chromium', headless: true,
  viewport: { width: 1280, height: 900 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = ctx.pages()[0] || await ctx.newPage();

// Bytes over the wire for the document and everything it loaded so far.
const transferred = () => page.evaluate(() => {
  const all = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
  return { bytes: all.reduce((a, e) => a + (e.transferSize || 0), 0), files: all.length };
});
// Runs ACTION and returns the milliseconds until SELECTOR shows, timed in the page.
async function timeTo(action, selector) {
  await page.evaluate(() => { window.__t0 = performance.now(); });
  await action();
  await page.waitForSelector(selector, { timeout: 120000 });
  return page.evaluate(() => performance.now() - window.__t0);
}
const pct = (v, p) => { const s = [...v].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };

const rows = [];
try {
  const t0 = Date.now();
  await page.goto(base + '/#/search', { waitUntil: 'load' });
  await page.waitForSelector('#q');
  const first = await transferred();
  const nav = await page.evaluate(() => performance.getEntriesByType('navigation')[0].loadEventEnd);
  rows.push(['first load, cold profile', `${(first.bytes / 1024).toFixed(1)} KiB in ${first.files} requests`, `${nav.toFixed(0)} ms to load (${Date.now() - t0} ms wall)`]);
  const firstSearch = [], searchApi = [];
  for (const q of queries) {
    await page.fill('#q', q);
    const ms = await timeTo(() => page.press('#q', 'Enter'), '.results[aria-busy="false"] .meta, .results .errbox');
    firstSearch.push(ms);
    const m = await page.evaluate(() => { const e = performance.getEntriesByName('mnemo-search').pop(); return e ? e.duration : null; });
    if (m !== null) searchApi.push(m);
  }
  rows.push(['search to first result', `median ${pct(firstSearch, 0.5).toFixed(1)} ms`, `p95 ${pct(firstSearch, 0.95).toFixed(1)} ms (${queries.length} queries)`]);
  if (searchApi.length) rows.push(['  of which request + render', `median ${pct(searchApi, 0.5).toFixed(1)} ms`, `p95 ${pct(searchApi, 0.95).toFixed(1)} ms`]);
  const factsMs = await timeTo(() => page.goto(base + '/#/facts'), '.ftable tbody tr, .facts .errbox');
  rows.push(['facts view, first page of 50', `${factsMs.toFixed(0)} ms`, `${facts} facts stored`]);
  const overMs = await timeTo(() => page.goto(base + '/#/overview'), 'svg.plot, .card .errbox');
  rows.push(['overview with the weekly plot', `${overMs.toFixed(0)} ms`, `timeline over ${facts} facts, ${notes} notes`]);
  await page.reload({ waitUntil: 'load' });
  await page.waitForSelector('main h1');
  const again = await transferred();
  rows.push(['reload (ETag revalidation)', `${(again.bytes / 1024).toFixed(1)} KiB in ${again.files} requests`, '']);
} finally {
  await ctx.close();
  rmSync(profile, { recursive: true, force: true });
}
const w0 = Math.max(...rows.map((r) => r[0].length)), w1 = Math.max(...rows.map((r) => r[1].length));
console.log(`mnemo ui load: ${notes} notes, ${facts} facts`);
for (const r of rows) console.log(`  ${r[0].padEnd(w0)}  ${r[1].padEnd(w1)}  ${r[2]}`);
