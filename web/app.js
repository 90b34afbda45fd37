// app.js - the memory browser: hash routes #/search, #/notes, #/note/PATH?L=a-b,
// #/facts, #/overview over the daemon's /v1 API (api.js).
import { api, on, setToken, streamEvents } from './api.js';
import { h, fill, marked, queryWords, barChart, weekPlot, allWeeks, fmtDate, fmtTime, errorBox } from './ui.js';

const main = document.getElementById('main');
const banner = document.getElementById('banner');
const live = document.getElementById('live');
const toast = document.getElementById('toast');
let current = null; // {view, params, refresh()}
let renderSeq = 0;

const CATEGORIES = ['identity', 'configuration', 'rule', 'preference', 'decision', 'technical',
  'relationship', 'project', 'operational'];

// ---------------------------------------------------------------- routing

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  const [view, ...rest] = path.split('/');
  return { view: view || 'search', rest: rest.map(decodeURIComponent).join('/'), params };
}

function setHash(view, params, rest) {
  const qs = params && [...params].length ? '?' + params.toString() : '';
  const h2 = '#/' + view + (rest ? '/' + rest.split('/').map(encodeURIComponent).join('/') : '') + qs;
  if (location.hash !== h2) history.pushState(null, '', h2);
}

const views = { search: viewSearch, notes: viewNotes, note: viewNotes, facts: viewFacts, overview: viewOverview };

async function route() {
  const r = parseHash();
  const fn = views[r.view] || viewSearch;
  for (const a of document.querySelectorAll('nav a')) {
    const on2 = a.dataset.view === (r.view === 'note' ? 'notes' : r.view);
    if (on2) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  const seq = ++renderSeq;
  current = { view: r.view, params: r.params, rest: r.rest, seq };
  await fn(r, seq);
}

function stale(seq) { return seq !== renderSeq; }

function setView(title, ...kids) {
  document.title = title + ' · mnemo';
  fill(main, h('h1', { class: 'vh' }, title), ...kids);
}

// ---------------------------------------------------------------- search

function searchForm(p) {
  const kinds = (p.get('kinds') || 'note,fact').split(',');
  const form = h('form', { class: 'search', role: 'search', 'aria-label': 'Search the memory' },
    h('div', { class: 'qrow' },
      h('label', { for: 'q', class: 'sr' }, 'Search query'),
      h('input', { id: 'q', name: 'q', type: 'search', value: p.get('q') || '', placeholder: 'Search notes and facts…', autocomplete: 'off', autofocus: true }),
      h('button', { type: 'submit', class: 'primary' }, 'Search')),
    h('details', { class: 'opts', open: p.get('opts') ? true : null },
      h('summary', {}, 'Options'),
      h('div', { class: 'optgrid' },
        h('fieldset', {}, h('legend', {}, 'Kinds'),
          h('label', {}, h('input', { type: 'checkbox', name: 'note', checked: kinds.includes('note') }), ' notes'),
          h('label', {}, h('input', { type: 'checkbox', name: 'fact', checked: kinds.includes('fact') }), ' facts')),
        h('label', {}, 'Corpus ', h('select', { name: 'corpus' },
          ['memory', 'sessions', 'all'].map((c) => h('option', { value: c, selected: (p.get('corpus') || 'memory') === c }, c)))),
        h('label', {}, h('input', { type: 'checkbox', name: 'strict', checked: p.get('strict') === '1' }), ' strict'),
        h('label', {}, 'User ', h('input', { name: 'user', value: p.get('user') || '', size: 10, placeholder: 'default' })),
        h('label', {}, 'Agent ', h('input', { name: 'agent', value: p.get('agent') || '', size: 10, placeholder: 'any' })))));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const np = new URLSearchParams();
    np.set('q', f.get('q').trim());
    const k = ['note', 'fact'].filter((x) => f.get(x));
    if (k.length && k.length < 2) np.set('kinds', k.join(','));
    if (f.get('corpus') !== 'memory') np.set('corpus', f.get('corpus'));
    if (f.get('strict')) np.set('strict', '1');
    if (f.get('user')) np.set('user', f.get('user'));
    if (f.get('agent')) np.set('agent', f.get('agent'));
    if (form.querySelector('details').open) np.set('opts', '1');
    setHash('search', np);
    route();
  });
  return form;
}

function noteLink(path, from, to) {
  return '#/note/' + path.split('/').map(encodeURIComponent).join('/') + (from ? `?L=${from}-${to || from}` : '');
}

function dateOf(r) {
  if (r.kind === 'fact') return fmtDate(r.updated_at);
  const m = /(\d{4}-\d{2}-\d{2})/.exec(r.path);
  return m ? m[1] : '';
}

function explainRows(r) {
  const e = r.explain || {};
  const rows = [{ label: 'score', value: r.score }];
  if ('textScore' in e || 'textScore' in r) rows.push({ label: 'keyword', value: e.textScore ?? r.textScore ?? null });
  if ('vectorScore' in e || 'vectorScore' in r) rows.push({ label: 'vector', value: e.vectorScore ?? r.vectorScore ?? null });
  if ('recency' in e) rows.push({ label: 'recency', value: e.recency });
  if ('importance' in e || r.importance !== undefined) rows.push({ label: 'importance', value: e.importance ?? r.importance });
  if ('relevance' in r) rows.push({ label: 'relevance', value: r.relevance });
  return rows;
}

function resultItem(r, words, i) {
  const isFact = r.kind === 'fact';
  const link = isFact ? '#/facts?id=' + encodeURIComponent(r.id) : noteLink(r.path, r.startLine, r.endLine);
  const where = isFact ? (r.category || 'fact') : `${r.path} · lines ${r.startLine}–${r.endLine}`;
  const panelId = 'explain-' + i;
  const e = r.explain || {};
  const panel = h('div', { id: panelId, class: 'explain', hidden: true },
    barChart(explainRows(r), 'Score breakdown'),
    'rankBefore' in e ? h('p', { class: 'muted' }, `rank ${e.rankBefore} before diversity, ${e.rankAfter} after` + (e.tier ? ` · matched in ${e.tier}` : '')) : null);
  const btn = h('button', { type: 'button', class: 'link', 'aria-expanded': 'false', 'aria-controls': panelId,
    onclick: () => { const o = panel.hidden; panel.hidden = !o; btn.setAttribute('aria-expanded', String(o)); } }, 'explain');
  return h('li', { class: 'result ' + r.kind },
    h('div', { class: 'rhead' },
      h('span', { class: 'badge ' + r.kind }, isFact ? 'fact' : (r.source === 'sessions' ? 'transcript' : 'note')),
      h('a', { href: link, class: 'rpath' }, where),
      h('span', { class: 'rdate' }, dateOf(r)),
      h('span', { class: 'rscore', title: 'score' }, r.score.toFixed(2))),
    h('p', { class: 'snippet' }, marked(r.snippet || '', words)),
    h('div', { class: 'rfoot' }, h('code', { class: 'cite' }, r.citation), btn),
    panel);
}

async function viewSearch(r, seq) {
  const p = r.params;
  const out = h('section', { class: 'results', 'aria-live': 'polite', 'aria-busy': 'false' });
  setView('Search', searchForm(p), out);
  const q = (p.get('q') || '').trim();
  if (!q) {
    out.append(h('p', { class: 'muted' }, 'Type a few signal words: names, topics, identifiers, dates.'));
    return;
  }
  out.setAttribute('aria-busy', 'true');
  out.append(h('p', { class: 'muted' }, 'Searching…'));
  const args = { query: q, explain: true, maxResults: 20 };
  if (p.get('kinds')) args.kinds = p.get('kinds');
  if (p.get('corpus')) args.corpus = p.get('corpus');
  if (p.get('strict')) args.strict = true;
  if (p.get('user')) args.user_id = p.get('user');
  if (p.get('agent')) args.agent_id = p.get('agent');
  performance.mark('mnemo-search-start');
  let res;
  try {
    res = await api.search(args);
  } catch (e) {
    if (stale(seq)) return;
    out.setAttribute('aria-busy', 'false');
    fill(out, errorBox(e, 'Search'));
    return;
  }
  if (stale(seq)) return;
  const words = queryWords(q);
  const list = res.results || [];
  out.setAttribute('aria-busy', 'false');
  fill(out,
    h('p', { class: 'meta' }, `${list.length} result${list.length === 1 ? '' : 's'} · ${res.mode || ''}` +
      (res.timing ? ` · ${res.timing.totalMs.toFixed(1)} ms` : '')),
    res.warning || (res.warnings && res.warnings.length) ? h('p', { class: 'warn', role: 'note' }, res.warning || res.warnings.join('; ')) : null,
    list.length ? h('ol', { class: 'rlist' }, list.map((x, i) => resultItem(x, words, i)))
      : h('p', { class: 'empty' }, 'Nothing found for “' + q + '”.' + (args.strict ? ' Strict mode drops weak matches.' : '')));
  performance.mark('mnemo-search-done');
  performance.measure('mnemo-search', 'mnemo-search-start', 'mnemo-search-done');
}

// ---------------------------------------------------------------- notes

function tree(files, active) {
  // the groups of the index's files: by kind, then the memory files by folder
  const roots = [], daily = new Map(), other = [], extra = [], sessions = [], media = [];
  for (const f of files) {
    const kind = f.kind || 'memory';
    if (kind === 'session') sessions.push(f);
    else if (kind === 'media') media.push(f);
    else if (kind === 'extra') extra.push(f);
    else if (!f.path.includes('/')) roots.push(f);
    else if (f.date) {
      const month = fmtDate(f.date).slice(0, 7);
      if (!daily.has(month)) daily.set(month, []);
      daily.get(month).push(f);
    } else other.push(f);
  }
  const item = (f, label) => h('li', {}, h('a', { href: noteLink(f.path), 'aria-current': f.path === active ? 'page' : null, title: f.path }, label || f.path));
  const months = [...daily.keys()].sort().reverse();
  // a long group (transcripts, media) folded, open when it holds the open file
  const folded = (title, list, label) => list.length ? [h('h2', {}, title),
    h('details', { open: list.length <= 20 || list.some((f) => f.path === active) ? true : null },
      h('summary', {}, `${list.length} file${list.length === 1 ? '' : 's'}`),
      h('ul', {}, list.map((f) => item(f, label(f)))))] : [];
  return h('nav', { class: 'tree', 'aria-label': 'Memory files' },
    h('h2', {}, 'Workspace'), h('ul', {}, roots.map((f) => item(f))),
    months.length ? h('h2', {}, 'Daily notes') : null,
    months.map((m) => h('details', { open: months[0] === m || daily.get(m).some((f) => f.path === active) ? true : null },
      h('summary', {}, `${m} (${daily.get(m).length})`),
      h('ul', {}, daily.get(m).sort((a, b) => b.path.localeCompare(a.path)).map((f) => item(f, f.path.split('/').pop()))))),
    other.length ? h('h2', {}, 'Other notes') : null,
    other.length ? h('ul', {}, other.map((f) => item(f, f.path.replace(/^memory\//, '')))) : null,
    extra.length ? h('h2', {}, 'Extra paths') : null,
    extra.length ? h('ul', { 'aria-label': 'Notes under extra paths' }, extra.map((f) => item(f))) : null,
    ...folded('Sessions', sessions, (f) => f.path.split('/').slice(-2).join('/')),
    ...folded('Media', media, (f) => f.path));
}

async function viewNotes(r, seq) {
  const path = r.view === 'note' ? r.rest : '';
  const L = /^(\d+)(?:-(\d+))?$/.exec(r.params.get('L') || '');
  const from = L ? +L[1] : 0, to = L ? +(L[2] || L[1]) : 0;
  const side = h('div', { class: 'side' }, h('p', { class: 'muted' }, 'Loading files…'));
  const body = h('article', { class: 'viewer', 'aria-live': 'polite' });
  setView(path ? path : 'Notes', h('div', { class: 'notes' }, side, body));
  const filesP = api.files().catch((e) => e);
  if (path) {
    body.append(h('p', { class: 'muted' }, 'Loading ' + path + '…'));
    try {
      const ex = await api.get(path, 1, 1048576);
      if (stale(seq)) return;
      const lines = ex.text.split('\n');
      if (lines.length && lines[lines.length - 1] === '') lines.pop();
      const ol = h('ol', { class: 'lines', start: String(ex.from) },
        lines.map((t, i) => {
          const n = ex.from + i;
          return h('li', { id: 'L' + n, class: n >= from && n <= to ? 'cited' : null }, t || '\u200b');
        }));
      fill(body,
        h('header', { class: 'vhead' }, h('h2', {}, path),
          h('span', { class: 'muted' }, `${ex.totalLines} lines` + (from ? ` · cited ${from}–${to}` : ''))),
        ex.truncated ? h('p', { class: 'warn' }, ex.hint || 'truncated') : null, ol);
      const first = document.getElementById('L' + from);
      if (first) first.scrollIntoView({ block: 'center' });
    } catch (e) {
      if (stale(seq)) return;
      fill(body, errorBox(e, 'Reading ' + path));
    }
  } else {
    body.append(h('p', { class: 'muted' }, 'Pick a file. Search results link here at the lines they cite.'));
  }
  const files = await filesP;
  if (stale(seq)) return;
  if (files instanceof Error) fill(side, errorBox(files, 'Listing the files'));
  else if (files.indexed === false) fill(side, h('p', { class: 'empty', role: 'note' }, 'No index yet; run: mnemo index'));
  else fill(side, tree(files.files, path),
    h('p', { class: 'muted small' }, `${files.count} indexed files in ${files.workspace}` +
      (files.truncated ? ' (the list stops there)' : '')));
}

// ---------------------------------------------------------------- facts

const PAGE = 50;

function factFilters(p) {
  const f = h('form', { class: 'filters', 'aria-label': 'Filter facts' },
    h('label', {}, 'Category ', h('select', { name: 'category' }, h('option', { value: '' }, 'any'),
      CATEGORIES.map((c) => h('option', { value: c, selected: p.get('category') === c }, c)))),
    h('label', {}, 'User ', h('input', { name: 'user', value: p.get('user') || '', size: 8, placeholder: 'default' })),
    h('label', {}, 'Agent ', h('input', { name: 'agent', value: p.get('agent') || '', size: 8, placeholder: 'any' })),
    h('label', {}, 'Scope ', h('select', { name: 'scope' }, ['all', 'long-term', 'session'].map((c) =>
      h('option', { value: c, selected: (p.get('scope') || 'all') === c }, c)))),
    h('label', {}, 'Importance ≥ ', h('input', { name: 'imp', type: 'number', min: 0, max: 1, step: 0.05, value: p.get('imp') || '', size: 4 })),
    h('label', {}, 'From ', h('input', { name: 'from', type: 'date', value: p.get('from') || '' })),
    h('label', {}, 'To ', h('input', { name: 'to', type: 'date', value: p.get('to') || '' })),
    h('label', {}, h('input', { type: 'checkbox', name: 'deleted', checked: p.get('deleted') === '1' }), ' deleted'),
    h('button', { type: 'submit' }, 'Filter'));
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const d = new FormData(f), np = new URLSearchParams();
    for (const k of ['category', 'user', 'agent', 'imp', 'from', 'to']) if (d.get(k)) np.set(k, d.get(k));
    if (d.get('scope') !== 'all') np.set('scope', d.get('scope'));
    if (d.get('deleted')) np.set('deleted', '1');
    setHash('facts', np);
    route();
  });
  return f;
}

function listArgs(p) {
  const a = { limit: PAGE, offset: +(p.get('offset') || 0), scope: p.get('scope') || 'all' };
  if (p.get('category')) a.categories = [p.get('category')];
  if (p.get('user')) a.user_id = p.get('user');
  if (p.get('agent')) a.agent_id = p.get('agent');
  if (p.get('deleted')) a.deleted = true;
  const and = [];
  if (p.get('imp')) and.push({ importance: { gte: +p.get('imp') } });
  if (p.get('from')) and.push({ created_at: { gte: p.get('from') } });
  if (p.get('to')) and.push({ created_at: { lte: p.get('to') + 'T23:59:59Z' } });
  if (and.length) a.filters = and.length === 1 ? and[0] : { AND: and };
  return a;
}

function addForm(onDone) {
  const msg = h('p', { class: 'formmsg', role: 'alert' });
  const f = h('form', { class: 'addfact', 'aria-label': 'Add a fact' },
    h('label', { for: 'new-text' }, 'Text'),
    h('textarea', { id: 'new-text', name: 'text', rows: 2, required: true, placeholder: 'One self-contained statement, e.g. “User prefers tea over coffee”' }),
    h('div', { class: 'row' },
      h('label', {}, 'Category ', h('select', { name: 'category' }, h('option', { value: '' }, 'auto'),
        CATEGORIES.map((c) => h('option', { value: c }, c)))),
      h('label', {}, 'Importance ', h('input', { name: 'importance', type: 'number', min: 0, max: 1, step: 0.05, size: 4 })),
      h('button', { type: 'submit', class: 'primary' }, 'Add')),
    msg);
  f.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const d = new FormData(f), rec = { text: d.get('text').trim() };
    if (d.get('category')) rec.category = d.get('category');
    if (d.get('importance')) rec.importance = +d.get('importance');
    msg.textContent = '';
    msg.className = 'formmsg';
    try {
      const m = await api.add(rec);
      msg.textContent = m.duplicate ? 'Already stored.' : 'Stored.';
      f.reset();
      onDone();
    } catch (e) {
      msg.className = 'formmsg error';
      msg.textContent = e.message;
    }
  });
  return h('details', { class: 'addbox' }, h('summary', {}, 'Add a fact'), f);
}

// What an update changed besides the text (shown already): "category: decision".
function detailText(d) {
  if (!d) return '';
  if (typeof d === 'string') return d;
  return Object.entries(d).filter(([k]) => k !== 'text')
    .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ');
}

function factRow(m, reload) {
  const tr = h('tr', { id: 'fact-' + m.id, class: m.deleted_at ? 'deleted' : null });
  const hist = h('tr', { class: 'history', hidden: true }, h('td', { colspan: 6 }));
  const act = async (fn, label) => {
    try { await fn(); reload(); } catch (e) { tr.after(h('tr', { class: 'rowerr' }, h('td', { colspan: 6 }, errorBox(e, label)))); }
  };
  const showHistory = async (btn) => {
    const open = !hist.hidden;
    hist.hidden = open;
    btn.setAttribute('aria-expanded', String(!open));
    if (open) return;
    const td = hist.firstChild;
    fill(td, h('p', { class: 'muted' }, 'Loading history…'));
    try {
      const r = await api.history(m.id);
      fill(td, h('ol', { class: 'timeline', 'aria-label': 'History' }, r.history.map((e) =>
        h('li', { class: 'ev ' + e.event.toLowerCase() },
          h('time', { datetime: e.at }, fmtTime(e.at)), ' ', h('strong', {}, e.event), ' ',
          e.old_text && e.new_text && e.old_text !== e.new_text ? h('span', {}, h('del', {}, e.old_text), ' → ', h('ins', {}, e.new_text))
            : h('span', {}, e.new_text || e.old_text || ''),
          detailText(e.detail) ? h('span', { class: 'muted' }, ' · ' + detailText(e.detail)) : null))));
    } catch (e) { fill(td, errorBox(e, 'History')); }
  };
  const edit = () => {
    const ta = h('textarea', { rows: 2, 'aria-label': 'Text' }, m.text);
    const cat = h('select', { 'aria-label': 'Category' }, CATEGORIES.concat(CATEGORIES.includes(m.category) ? [] : [m.category]).map((c) =>
      h('option', { value: c, selected: c === m.category }, c)));
    const imp = h('input', { type: 'number', min: 0, max: 1, step: 0.05, value: m.importance, 'aria-label': 'Importance', size: 4 });
    const msg = h('p', { class: 'formmsg error', role: 'alert' });
    const save = h('button', { type: 'button', class: 'primary', onclick: async () => {
      const ch = {};
      if (ta.value.trim() !== m.text) ch.text = ta.value.trim();
      if (cat.value !== m.category) ch.category = cat.value;
      if (+imp.value !== m.importance) ch.importance = +imp.value;
      if (!Object.keys(ch).length) { reload(); return; }
      try { await api.update(m.id, ch); reload(); } catch (e) { msg.textContent = e.message; }
    } }, 'Save');
    fill(tr, h('td', { colspan: 6, class: 'editing' }, ta,
      h('div', { class: 'row' }, cat, imp, save, h('button', { type: 'button', onclick: reload }, 'Cancel')), msg));
    ta.focus();
  };
  const hb = h('button', { type: 'button', class: 'link', 'aria-expanded': 'false', onclick: (ev) => showHistory(ev.currentTarget) }, 'history');
  tr.append(
    h('td', { class: 'ftext' }, m.text),
    h('td', {}, h('span', { class: 'badge cat' }, m.category)),
    h('td', { class: 'num' }, (+m.importance).toFixed(2)),
    h('td', { class: 'small' }, [m.user_id, m.agent_id, m.run_id].filter(Boolean).join(' · ')),
    h('td', { class: 'small nowrap' }, fmtDate(m.updated_at || m.created_at)),
    h('td', { class: 'acts' },
      m.deleted_at ? h('button', { type: 'button', onclick: () => act(() => api.restore(m.id), 'Restore') }, 'Restore')
        : [h('button', { type: 'button', onclick: edit }, 'Edit'),
          h('button', { type: 'button', onclick: () => act(() => api.confirm(m.id), 'Confirm'), title: 'The user confirmed it' }, 'Confirm'),
          h('button', { type: 'button', class: 'danger', onclick: () => act(() => api.remove(m.id), 'Delete') }, 'Delete')],
      hb));
  return [tr, hist];
}

async function viewFacts(r, seq) {
  const p = r.params;
  const out = h('section', { class: 'facts', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading facts…'));
  const reload = () => { if (current && current.view === 'facts') route(); };
  setView('Facts', addForm(reload), factFilters(p), out);
  const args = listArgs(p);
  let res;
  try {
    if (p.get('id')) {
      const m = await api.memory(p.get('id'));
      res = { memories: [m], total: 1 };
    } else res = await api.list(args);
  } catch (e) {
    if (stale(seq)) return;
    fill(out, errorBox(e, 'Listing facts'));
    return;
  }
  if (stale(seq)) return;
  const ms = res.memories || [];
  const off = args.offset;
  const pager = h('div', { class: 'pager' },
    h('span', {}, ms.length ? `${off + 1}–${off + ms.length} of ${res.total}${res.totalCapped ? '+' : ''}` : ''),
    off > 0 ? h('a', { href: pageHref(p, Math.max(0, off - PAGE)) }, '← newer') : null,
    off + ms.length < res.total ? h('a', { href: pageHref(p, off + PAGE) }, 'older →') : null,
    p.get('id') ? h('a', { href: '#/facts' }, 'all facts') : null);
  fill(out,
    res.warnings && res.warnings.length ? h('p', { class: 'warn' }, res.warnings.join('; ')) : null,
    ms.length ? h('div', { class: 'tablewrap' }, h('table', { class: 'ftable' },
      h('caption', { class: 'sr' }, 'Stored facts'),
      h('thead', {}, h('tr', {}, ['Fact', 'Category', 'Importance', 'Who', 'Updated', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ms.map((m) => factRow(m, reload))))) : h('p', { class: 'empty' }, p.get('deleted') ? 'No deleted facts match.' : 'No facts match these filters.'),
    pager);
  if (p.get('id')) {
    const row = document.getElementById('fact-' + p.get('id'));
    if (row) { row.classList.add('focus'); row.scrollIntoView({ block: 'center' }); }
  }
}

function pageHref(p, off) {
  const np = new URLSearchParams(p);
  np.delete('id');
  if (off) np.set('offset', off); else np.delete('offset');
  return '#/facts' + ([...np].length ? '?' + np : '');
}

// ---------------------------------------------------------------- overview

function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '').map(([k, v]) => [h('dt', {}, k), h('dd', {}, String(v))]));
}

async function viewOverview(r, seq) {
  const stat = h('section', { class: 'card' }, h('h2', {}, 'Index'), h('p', { class: 'muted' }, 'Loading…'));
  const plot = h('section', { class: 'card wide' }, h('h2', {}, 'Notes and facts per week'), h('p', { class: 'muted' }, 'Loading…'));
  const rec = h('section', { class: 'card' }, h('h2', {}, 'Recalled memories'));
  const recOut = h('pre', { class: 'recall', 'aria-live': 'polite' });
  const recForm = h('form', { class: 'recallform' },
    h('label', { for: 'recall-msg' }, 'A message as the agent would receive it'),
    h('div', { class: 'qrow' }, h('input', { id: 'recall-msg', name: 'message', placeholder: 'e.g. when do the database backups run?', autocomplete: 'off' }),
      h('button', { type: 'submit', class: 'primary' }, 'Recall')));
  recForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const msg = new FormData(recForm).get('message').trim();
    if (!msg) return;
    recOut.textContent = 'Recalling…';
    try {
      const x = await api.recall({ message: msg, strategy: 'always', triggers: true });
      recOut.textContent = [x.triggers, x.recalled].filter(Boolean).join('\n') || '(nothing recalled for this message)';
    } catch (e) { fill(recOut, errorBox(e, 'Recall')); }
  });
  rec.append(recForm, recOut);
  setView('Overview', h('div', { class: 'grid' }, stat, rec, plot));
  api.status().then((st) => {
    if (stale(seq)) return;
    const em = st.embedding || {};
    const warnings = [...(st.warnings || []), ...(em.reason && !em.vectors ? [em.reason] : [])];
    fill(stat, h('h2', {}, 'Index'), kv([
      ['Workspace', st.workspace], ['Files', st.files], ['Chunks', st.chunks], ['Vectors', em.vectors],
      ['Search', st.mode], ['Provider', em.provider + (em.configured && em.configured !== em.provider ? ` (configured: ${em.configured})` : '')],
      ['Model', em.model || (em.identity && em.identity.model)], ['Last sync', st.lastSync ? fmtTime(st.lastSync.at) + ` (${st.lastSync.durationMs} ms)` : 'never'],
      ['Stored facts', st.memories && st.memories.count], ['Database', st.db && st.db.path]]),
    warnings.length ? h('ul', { class: 'warnings', 'aria-label': 'Warnings' }, warnings.map((w) => h('li', {}, typeof w === 'string' ? w : JSON.stringify(w)))) : h('p', { class: 'ok' }, 'No warnings.'),
    st.skipped && st.skipped.length ? h('details', {}, h('summary', {}, `${st.skipped.length} files skipped`),
      h('ul', {}, st.skipped.map((s2) => h('li', {}, `${s2.path}: ${s2.reason}`)))) : null);
  }).catch((e) => { if (!stale(seq)) fill(stat, h('h2', {}, 'Index'), errorBox(e, 'Status')); });
  api.timeline().then((t) => {
    if (stale(seq)) return;
    const shown = allWeeks(t.weeks, 26);
    fill(plot, h('h2', {}, 'Notes and facts per week'),
      shown.length ? weekPlot(shown) : h('p', { class: 'empty' }, 'No notes or facts yet.'),
      shown.length ? h('p', { class: 'muted small' }, `${shown[0].week} to ${shown[shown.length - 1].week}` +
        (shown.length < allWeeks(t.weeks, 1e6).length ? ' (the last 26 weeks)' : '') + ` · ${t.facts} facts`) : null);
  }).catch((e) => { if (!stale(seq)) fill(plot, h('h2', {}, 'Notes and facts per week'), errorBox(e, 'Timeline')); });
}

// ---------------------------------------------------------------- live state

function showBanner(text) {
  banner.textContent = text;
  banner.hidden = !text;
}

let toastTimer = null;
function showToast(text) {
  toast.textContent = text;
  toast.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { toast.hidden = true; }, 4000);
}

function setLive(state) {
  live.dataset.state = state;
  live.textContent = state === 'live' ? 'live' : state === 'connecting' ? 'connecting' : 'offline';
}

on('offline', (why) => {
  showBanner('The mnemo daemon is unavailable' + (why ? ' (' + why + ')' : '') + '. Retrying…');
  setLive('off');
});
on('backend', (why) => {
  showBanner('The daemon answers, but its memory backend is unavailable (' + why + '). Retrying…');
});
on('online', () => {
  showBanner('');
  streamEvents(setLive);
  route();
});
// Whether the person is in the middle of something a reload would lose: a
// field changed and not submitted, an edit, an open history.
function busyEditing() {
  if (main.querySelector('.editing, .history:not([hidden])')) return true;
  for (const e of main.querySelectorAll('input, textarea, select')) {
    if (e.type === 'checkbox' ? e.checked !== e.defaultChecked
      : e.tagName === 'SELECT' ? [...e.options].some((o) => o.selected !== o.defaultSelected)
        : e.value !== e.defaultValue) return true;
  }
  return false;
}

// Reloads the current view when it shows what changed (VIEWS), unless that
// would lose the person's input: then a notice says so.
function refresh(views, what) {
  if (!current || !views.includes(current.view)) return;
  if (busyEditing()) showToast(what + ' changed; this view refreshes on your next action.');
  else route();
}

on('event', (ev) => {
  if (ev.name === 'sync') {
    if (ev.data && ev.data.ok === false) showToast('Re-indexing failed: ' + ev.data.error);
    else {
      showToast(`Index updated: ${ev.data.added} added, ${ev.data.changed} changed, ${ev.data.removed} removed`);
      refresh(['search', 'notes', 'note', 'overview'], 'The index');
    }
  } else if (ev.name === 'memory') {
    refresh(['search', 'overview', 'facts'], 'Stored facts');
  }
});

const dialog = document.getElementById('token-dialog');
const tokenErr = document.getElementById('token-error');
let asking = false;
on('token', (why) => {
  if (asking) return;
  asking = true;
  setToken('');
  tokenErr.hidden = why !== 'wrong';
  tokenErr.textContent = why === 'wrong' ? 'That token was refused.' : '';
  showBanner('');
  document.getElementById('token-input').value = '';
  dialog.showModal();
});
document.getElementById('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  setToken(document.getElementById('token-input').value.trim());
  asking = false;
  dialog.close();
  streamEvents(setLive);
  route();
});
dialog.addEventListener('cancel', (ev) => ev.preventDefault());

document.addEventListener('keydown', (ev) => {
  if (ev.key === '/' && !/^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName)) {
    const q = document.getElementById('q');
    if (q) { ev.preventDefault(); q.focus(); }
  }
});

window.addEventListener('hashchange', route);
if (!location.hash) history.replaceState(null, '', '#/search');
route();
streamEvents(setLive);
