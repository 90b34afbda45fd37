// ui.mjs - drives the page of a running `mnemo serve` in Debian's chromium
// through playwright-core (no browser download). Run by tests/test_ui.c:
//
//   node ui.mjs SCENARIO URL
//
// Environment: MNEMO_UI_WS (the workspace), MNEMO_UI_SYNC (a folder for
// handshakes with the test: the script writes NAME.ready, waits for
// NAME.go), MNEMO_UI_TOKEN (the daemon's token), MNEMO_UI_SHOTS (write
// screenshots there), MNEMO_UI_CHROMIUM (default /usr/bin/chromium).
// Prints "ok: ..." for each check and "ui <scenario>: ok" at the end; a
// failed check prints "FAIL: ..." and exits 1.
import { chromium } from 'playwright-core';
import { appendFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [scenario, base] = process.argv.slice(2);
const env = process.env;
const consoleErrors = [];
let browser, profile;

function ok(msg) { console.log('ok: ' + msg); }
function fail(msg) { throw new Error(msg); }
function check(cond, msg) { if (!cond) fail(msg); ok(msg); }

async function handshake(name, seconds = 30) {
  writeFileSync(join(env.MNEMO_UI_SYNC, name + '.ready'), '');
  const go = join(env.MNEMO_UI_SYNC, name + '.go');
  const t0 = Date.now();
  while (!existsSync(go)) {
    if (Date.now() - t0 > seconds * 1000) fail('no go for ' + name + ' from the test');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function open(width = 1280) {
  profile = mkdtempSync(join(tmpdir(), 'mnemo-ui-'));
  // a fresh profile (--user-data-dir) for each run
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: env.MNEMO_UI_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = browser.pages()[0] || await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push('page error: ' + e.message));
  page.setDefaultTimeout(15000);
  if (env.MNEMO_UI_DEBUG) page.on('console', (m) => console.log('console: ' + m.text()));
  return page;
}

// Console errors other than the ones a scenario expects (a refused
// request while the daemon is down, a 401 before the token).
function checkConsole(allowed = []) {
  const bad = consoleErrors.filter((e) => !allowed.some((re) => re.test(e)));
  check(bad.length === 0, 'no console errors' + (bad.length ? ': ' + bad.join(' | ') : ''));
}

async function search(page, q) {
  await page.goto(base + '/#/search');
  await page.fill('#q', q);
  await page.press('#q', 'Enter');
  await page.waitForSelector('.results[aria-busy="false"] .meta, .results .errbox');
}

const scenarios = {
  async load() {
    const page = await open();
    const resp = await page.goto(base + '/');
    check(resp.status() === 200, 'GET / answers 200');
    await page.waitForSelector('nav a[aria-current="page"]');
    check(await page.title() === 'Search · mnemo', 'the search view opens first: ' + await page.title());
    check(await page.locator('nav a').count() === 4, 'four views in the navigation');
    await page.waitForSelector('#live[data-state="live"]');
    ok('the event stream is live');
    for (const v of ['notes', 'facts', 'overview']) {
      await page.click(`nav a[data-view="${v}"]`);
      await page.waitForFunction((x) => location.hash.startsWith('#/' + x), v);
      await page.waitForSelector('main h1');
      await page.waitForFunction(() => !document.querySelector('main .muted') || !/Loading/.test(document.querySelector('main').textContent));
    }
    await page.waitForSelector('.kv dd');
    const files = await page.locator('.kv dt:text-is("Files") + dd').textContent();
    check(+files > 0, 'the overview shows the indexed files: ' + files);
    await page.waitForSelector('svg.plot');
    ok('the overview plots notes per week');
    checkConsole();
  },

  async search() {
    const page = await open();
    await search(page, 'orders database');
    const n = await page.locator('.result').count();
    check(n > 0, 'results for "orders database": ' + n);
    const marks = await page.locator('.result').first().locator('mark').allTextContents();
    check(marks.some((m) => /^database/i.test(m)), 'matched words marked: ' + marks.join(','));
    await page.locator('.result').first().getByRole('button', { name: 'explain' }).click();
    const bars = await page.locator('.result').first().locator('.explain svg.bars rect.bv').count();
    check(bars >= 2, 'the explain panel draws the score breakdown: ' + bars + ' bars');
    const label = await page.locator('.result').first().locator('.explain svg').getAttribute('aria-label');
    check(/keyword/.test(label), 'the chart has a text label: ' + label);
    await search(page, 'zzyzxnothing');
    const empty = await page.locator('.results .empty').count();
    check(empty === 1, 'a search without results says so');
    checkConsole();
  },

  async open() {
    const page = await open();
    await search(page, 'orders database');
    const link = page.locator('.result.note a.rpath').first();
    const href = await link.getAttribute('href');
    await link.click();
    await page.waitForSelector('.lines li.cited');
    const hash = await page.evaluate(() => location.hash);
    check(hash === href && /^#\/note\/.+\?L=\d+-\d+$/.test(hash), 'the result opens its note at its lines: ' + hash);
    const [, from, to] = /L=(\d+)-(\d+)/.exec(hash);
    const cited = await page.locator('.lines li.cited').evaluateAll((els) => els.map((e) => e.id));
    const want = [];
    for (let i = +from; i <= +to; i++) want.push('L' + i);
    check(JSON.stringify(cited) === JSON.stringify(want), 'the cited lines are highlighted: ' + cited.join(','));
    const text = await page.locator('#L' + from).textContent();
    check(/database/i.test(text), 'the cited line holds the match: ' + text.trim());
    // a deep link typed in
    await page.goto(base + '/#/note/memory/2026-11-02.md?L=2-3');
    await page.waitForSelector('.lines li.cited');
    check(await page.locator('.lines li.cited').count() === 2, 'a deep link highlights its lines');
    check(await page.locator('.tree a[aria-current="page"]').textContent() === '2026-11-02.md', 'the tree shows the open note');
    checkConsole();
  },

  async tree() {
    const page = await open();
    await page.goto(base + '/#/notes');
    await page.waitForSelector('.tree');
    const heads = await page.locator('.tree h2').allTextContents();
    check(heads.includes('Workspace') && heads.includes('Daily notes') && heads.includes('Extra paths'),
      'the tree groups the files: ' + heads.join(','));
    check(await page.locator('.tree a', { hasText: 'MEMORY.md' }).count() === 1, 'the tree lists MEMORY.md');
    const link = page.getByRole('link', { name: 'projects/roadmap.md' });
    check(await link.count() === 1, 'the tree lists the note under the extra path');
    const daily = await page.locator('.tree details summary').first().textContent();
    check(/^2026-11 \(\d+\)$/.test(daily), 'daily notes by month: ' + daily);
    await link.focus();
    await page.keyboard.press('Enter');
    await page.waitForSelector('.lines li');
    const text = await page.locator('.lines').textContent();
    check(/zebra launch/.test(text), 'the extra note opens with its text');
    check(await page.locator('.tree a[aria-current="page"]').textContent() === 'projects/roadmap.md',
      'the tree marks the open extra note');
    const foot = await page.locator('.side .muted.small').textContent();
    check(/^\d+ indexed files in /.test(foot), 'the tree says how many files the index holds: ' + foot);
    checkConsole();
  },

  async facts() {
    const page = await open();
    await page.goto(base + '/#/facts');
    const row = page.locator('tr', { hasText: 'prefers green tea' });
    await row.waitFor();
    check(true, 'the stored fact is listed');
    await row.getByRole('button', { name: 'Edit' }).click();
    await page.fill('td.editing textarea', 'User prefers jasmine tea in the morning');
    await page.click('td.editing button.primary');
    const edited = page.locator('tr', { hasText: 'jasmine tea' });
    await edited.waitFor();
    ok('the edit is saved and shown');
    await edited.getByRole('button', { name: 'Delete' }).click();
    await edited.waitFor({ state: 'detached' });
    ok('the deleted fact leaves the list');
    await page.check('input[name="deleted"]');
    await page.click('form.filters button[type="submit"]');
    const gone = page.locator('tr.deleted', { hasText: 'jasmine tea' });
    await gone.waitFor();
    ok('the deleted fact is listed with "deleted"');
    await gone.getByRole('button', { name: 'Restore' }).click();
    await gone.waitFor({ state: 'detached' });
    await page.uncheck('input[name="deleted"]');
    await page.click('form.filters button[type="submit"]');
    const back = page.locator('tr', { hasText: 'jasmine tea' }).first();
    await back.waitFor();
    ok('the restored fact is back in the list');
    await back.getByRole('button', { name: 'history' }).click();
    const tl = page.locator('.timeline li');
    await tl.nth(3).waitFor();
    const events = await tl.locator('strong').allTextContents();
    check(JSON.stringify(events) === '["ADD","UPDATE","DELETE","RESTORE"]', 'the history: ' + events.join(','));
    const upd = await tl.nth(1).textContent();
    check(/green tea/.test(upd) && /jasmine tea/.test(upd), 'the update shows the old and new text');
    // a secret is refused with the library's message
    await page.click('details.addbox > summary');
    await page.fill('#new-text', 'the deploy key is ghp_0123456789abcdefghijklmnopqrstuvwxyzAB');
    await page.click('form.addfact button[type="submit"]');
    await page.waitForFunction(() => document.querySelector('form.addfact .formmsg').textContent.length > 0);
    console.log('refused: ' + await page.locator('form.addfact .formmsg').textContent());
    checkConsole([/status of 400/]);
  },

  async live() {
    const page = await open();
    await page.goto(base + '/#/note/memory/2026-11-02.md');
    await page.waitForSelector('.lines li');
    await page.waitForSelector('#live[data-state="live"]');
    const before = await page.locator('.lines li').count();
    appendFileSync(join(env.MNEMO_UI_WS, 'memory/2026-11-02.md'), '- The quokka census is due on Friday.\n');
    await page.waitForFunction((n) => document.querySelectorAll('.lines li').length > n, before, { timeout: 20000 });
    const last = await page.locator('.lines li').last().textContent();
    check(/quokka/.test(last), 'the note changed on disk shows up without a reload: ' + last.trim());
    await page.waitForSelector('#toast:not([hidden])');
    ok('a notice says the index was updated: ' + await page.locator('#toast').textContent());
    await search(page, 'quokka census');
    check(await page.locator('.result').count() > 0, 'the new line is found');
    // a query being typed is not lost to a refresh
    await page.fill('#q', 'half typed');
    await page.evaluate(() => { document.getElementById('toast').hidden = true; });
    appendFileSync(join(env.MNEMO_UI_WS, 'memory/2026-11-02.md'), '- The wombat count follows.\n');
    await page.waitForSelector('#toast:not([hidden]):has-text("refreshes on your next action")', { timeout: 20000 });
    check(await page.inputValue('#q') === 'half typed', 'a query being typed survives the update');
    checkConsole();
  },

  async token() {
    const page = await open();
    await page.goto(base + '/');
    await page.waitForSelector('#token-dialog[open]');
    ok('the page asks for the token');
    await page.fill('#token-input', 'not-the-right-token-at-all');
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('#token-dialog[open] #token-error:not([hidden])');
    check(/refused/.test(await page.locator('#token-error').textContent()), 'a wrong token is refused');
    await page.fill('#token-input', env.MNEMO_UI_TOKEN);
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('#token-dialog[open]', { state: 'detached' });
    await search(page, 'orders database');
    check(await page.locator('.result').count() > 0, 'with the token the search works');
    const stored = await page.evaluate(() => sessionStorage.getItem('mnemo.token'));
    check(stored === env.MNEMO_UI_TOKEN, 'the token is kept in sessionStorage');
    const url = page.url();
    check(!url.includes(env.MNEMO_UI_TOKEN), 'the token is in no URL');
    await page.waitForSelector('#live[data-state="live"]');
    ok('the event stream carries the token');
    checkConsole([/status of 401/]);
  },

  async dbdown() {
    const page = await open();
    await search(page, 'orders database');
    check(await page.locator('.result').count() > 0, 'results while the database is up');
    await handshake('stop');
    await search(page, 'orders database');
    const err = page.locator('.results .errbox');
    check(await err.count() === 1 && await page.locator('.results .empty').count() === 0,
      'with the database gone the search shows the daemon\'s error: ' + (await err.textContent()).trim());
    await page.waitForSelector('#banner:not([hidden])');
    check(/backend is unavailable/.test(await page.locator('#banner').textContent()), 'the banner says the backend is unavailable');
    await handshake('start');
    await page.waitForSelector('#banner', { state: 'hidden', timeout: 30000 });
    ok('the banner goes once the backend answers again');
    let n = 0;
    for (let i = 0; i < 40 && !n; i++) { // the daemon reconnects on a later request
      await search(page, 'orders database');
      n = await page.locator('.result').count();
      if (!n) await page.waitForTimeout(500);
    }
    check(n > 0, 'the search works again once the database is back');
    checkConsole([/status of 50\d/]);
  },

  async restart() {
    const page = await open();
    await search(page, 'orders database');
    await page.waitForSelector('#live[data-state="live"]');
    await handshake('stop');
    await page.waitForSelector('#banner:not([hidden])', { timeout: 20000 });
    const said = await page.locator('#banner').textContent();
    check(/unavailable/i.test(said), 'the page says the daemon is unavailable: ' + said);
    await page.fill('#q', 'backups');
    await page.press('#q', 'Enter');
    await page.waitForSelector('.results .errbox');
    check(await page.locator('.results .empty').count() === 0, 'a failed search shows the error, not "nothing found"');
    await handshake('start');
    await page.waitForSelector('#banner', { state: 'hidden', timeout: 20000 });
    ok('the banner goes when the daemon is back');
    await page.waitForSelector('.result');
    check(await page.locator('.result').count() > 0, 'the view reloads its results');
    await page.waitForSelector('#live[data-state="live"]', { timeout: 20000 });
    ok('the event stream is live again');
    checkConsole([/ERR_CONNECTION_REFUSED/, /ERR_EMPTY_RESPONSE/, /ERR_INCOMPLETE_CHUNKED_ENCODING/, /network error/i]);
  },
};

try {
  const fn = scenarios[scenario];
  if (!fn) fail('no scenario ' + scenario);
  await fn();
  console.log(`ui ${scenario}: ok`);
} catch (e) {
  console.log('FAIL: ' + e.message.split('\n').slice(0, 3).join(' '));
  process.exitCode = 1;
} finally {
  if (browser) await browser.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
}
