// ui-shots.mjs - screenshots of each view of the page at URL into OUTDIR
// (bench/ui-shots.sh starts the daemon). PLAYWRIGHT_CORE: the path of
// playwright-core's index.mjs.
const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [base, out] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), 'mnemo-shots-'));
const errors = [];
const views = [
  ['search', '/#/search?q=database+backups', async (p) => {
    await p.waitForSelector('.result');
    await p.locator('.result').first().getByRole('button', { name: 'explain' }).click();
  }],
  ['note', null, async (p) => {
    await p.goto(base + '/#/search?q=database+backups');
    await p.waitForSelector('.result.note a.rpath');
    await p.locator('.result.note a.rpath').first().click();
    await p.waitForSelector('.lines li.cited');
  }],
  ['facts', '/#/facts', async (p) => { await p.waitForSelector('.ftable tbody tr'); }],
  ['history', '/#/facts?category=preference', async (p) => {
    await p.waitForSelector('.ftable tbody tr');
    const first = p.locator('.ftable tbody tr').first();
    const text = await first.locator('td.ftext').textContent();
    if (!/jasmine/.test(text)) { // once per run: an edit and a confirmation for the timeline
      await first.getByRole('button', { name: 'Edit' }).click();
      await p.fill('td.editing textarea', text.replace(/ \(#\d+\)$/, '') + ', with jasmine tea');
      await p.click('td.editing button.primary');
      await p.waitForSelector('tr:has-text("jasmine tea") button:has-text("Confirm")');
      await p.locator('tr', { hasText: 'jasmine tea' }).getByRole('button', { name: 'Confirm' }).click();
      await p.waitForTimeout(300);
    }
    await p.locator('tr', { hasText: 'jasmine tea' }).getByRole('button', { name: 'history' }).click();
    await p.waitForSelector('.timeline li:nth-child(3)');
  }],
  ['overview', '/#/overview', async (p) => {
    await p.waitForSelector('svg.plot');
    await p.waitForSelector('.kv dd');
    await p.fill('#recall-msg', 'when do the database backups run?');
    await p.click('.recallform button');
    await p.waitForFunction(() => !/Recalling/.test(document.querySelector('.recall').textContent));
  }],
];
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.MNEMO_UI_CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  for (const width of [1280, 390]) {
    const page = await ctx.newPage();
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.setViewportSize({ width, height: width > 500 ? 860 : 844 });
    for (const [name, path, ready] of views) {
      if (path) await page.goto(base + path);
      await ready(page);
      await page.waitForTimeout(200);
      await page.screenshot({ path: join(out, `${name}-${width}.png`) });
    }
    await page.close();
  }
} finally {
  await ctx.close();
  rmSync(profile, { recursive: true, force: true });
}
if (errors.length) { console.error('console errors: ' + errors.join(' | ')); process.exit(1); }
