// ui.js - small DOM helpers: elements, marked words, SVG charts, dates.

export function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  return fill(e, ...kids);
}

// Replaces the children of E with KIDS (nested arrays flattened; null,
// undefined and false left out). Returns E.
export function fill(e, ...kids) {
  const nodes = kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false)
    .map((k) => (k instanceof Node ? k : String(k)));
  if (e.childNodes.length) e.replaceChildren(...nodes); else e.append(...nodes);
  return e;
}

const SVG = 'http://www.w3.org/2000/svg';
export function s(tag, attrs, ...kids) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined) e.setAttribute(k, v);
  for (const k of kids.flat(Infinity)) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}

// The words of a query worth marking: letters and digits, 2+ long, without
// the query language's operators.
export function queryWords(q) {
  return [...new Set((q.toLowerCase().match(/[\p{L}\p{N}_]{2,}/gu) || [])
    .filter((w) => !['and', 'or', 'not', 'the'].includes(w)))];
}

function escapeRe(w) { return w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }

// TEXT with the words of WORDS marked (<mark>): a word in the text marks when
// it starts with a query word's stem (its first letters, as stemming would
// match "databases" for "database").
export function marked(text, words) {
  const f = document.createDocumentFragment();
  if (!words.length) { f.append(text); return f; }
  const stems = words.map((w) => escapeRe(w.length > 4 ? w.slice(0, w.length - 2) : w));
  const re = new RegExp('(?<![\\p{L}\\p{N}_])(?:' + stems.join('|') + ')[\\p{L}\\p{N}_]*', 'giu');
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) f.append(text.slice(last, m.index));
    f.append(h('mark', {}, m[0]));
    last = m.index + m[0].length;
  }
  if (last < text.length) f.append(text.slice(last));
  return f;
}

// Horizontal bars: ROWS [{label, value (0..1 or null), note}].
export function barChart(rows, title) {
  const W = 280, rowH = 20, labelW = 88, barW = W - labelW - 44;
  const svg = s('svg', { viewBox: `0 0 ${W} ${rows.length * rowH + 4}`, class: 'bars', role: 'img',
    'aria-label': title + ': ' + rows.map((r) => r.label + ' ' + (r.value === null ? 'none' : r.value.toFixed(2))).join(', ') });
  rows.forEach((r, i) => {
    const y = i * rowH + 2;
    svg.append(s('text', { x: 0, y: y + 13, class: 'bl' }, r.label));
    svg.append(s('rect', { x: labelW, y: y + 3, width: barW, height: 12, rx: 2, class: 'bt' }));
    if (r.value !== null && r.value !== undefined)
      svg.append(s('rect', { x: labelW, y: y + 3, width: Math.max(1, Math.min(1, r.value) * barW), height: 12, rx: 2, class: 'bv' }));
    svg.append(s('text', { x: labelW + barW + 6, y: y + 13, class: 'bn' },
      r.value === null || r.value === undefined ? '–' : r.value.toFixed(2)));
  });
  return svg;
}

const PALETTE = ['#3558c9', '#7fa3ff', '#a9b8d6', '#d9822b', '#2e9e6b', '#b34aa6', '#c23b3b', '#6b7a8f',
  '#8a6d1f', '#1f8a8a', '#7a4bd1', '#e0b400', '#5a3d2b', '#999'];

// The weeks from the first to the last of WEEKS (Mondays, "YYYY-MM-DD"),
// the ones without notes or facts filled in empty, the last LAST of them.
export function allWeeks(weeks, last) {
  if (!weeks.length) return [];
  const byWeek = new Map(weeks.map((w) => [w.week, w]));
  const end = Date.parse(weeks[weeks.length - 1].week + 'T00:00:00Z');
  const start = Math.max(Date.parse(weeks[0].week + 'T00:00:00Z'), end - (last - 1) * 7 * 86400e3);
  const out = [];
  for (let t = start; t <= end; t += 7 * 86400e3) {
    const k = new Date(t).toISOString().slice(0, 10);
    out.push(byWeek.get(k) || { week: k, notes: {}, facts: {} });
  }
  return out;
}

// Stacked columns per week: WEEKS [{week, notes:{}, facts:{}}].
export function weekPlot(weeks) {
  const series = [];
  for (const w of weeks) for (const k of Object.keys(w.notes)) if (!series.includes('notes: ' + k)) series.push('notes: ' + k);
  series.sort();
  const facts = [];
  for (const w of weeks) for (const k of Object.keys(w.facts)) if (!facts.includes('facts: ' + k)) facts.push('facts: ' + k);
  series.push(...facts.sort());
  const totals = weeks.map((w) => Object.values(w.notes).reduce((a, b) => a + b, 0) + Object.values(w.facts).reduce((a, b) => a + b, 0));
  const max = Math.max(1, ...totals);
  const W = 960, H = 220, left = 36, bottom = 22, top = 8;
  const n = Math.max(1, weeks.length);
  const colW = (W - left - 4) / n;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'plot', role: 'img',
    'aria-label': 'Notes and facts per week: ' + weeks.map((w, i) => w.week + ' ' + totals[i]).join(', ') });
  for (const f of [0, 0.5, 1]) {
    const y = top + (H - top - bottom) * (1 - f);
    svg.append(s('line', { x1: left, x2: W, y1: y, y2: y, class: 'grid' }));
    svg.append(s('text', { x: left - 4, y: y + 4, class: 'ax', 'text-anchor': 'end' }, String(Math.round(max * f))));
  }
  weeks.forEach((w, i) => {
    let y = H - bottom;
    const x = left + i * colW + colW * 0.12;
    const parts = [...Object.entries(w.notes).map(([k, v]) => ['notes: ' + k, v]), ...Object.entries(w.facts).map(([k, v]) => ['facts: ' + k, v])];
    for (const [name, v] of parts) {
      const hgt = (H - top - bottom) * v / max;
      y -= hgt;
      const r = s('rect', { x, y, width: Math.max(1, colW * 0.76), height: hgt, fill: PALETTE[series.indexOf(name) % PALETTE.length] });
      r.append(s('title', {}, `${w.week}: ${v} ${name}`));
      svg.append(r);
    }
  });
  const step = Math.max(1, Math.ceil(n / 5));
  weeks.forEach((w, i) => {
    if (i % step === 0) svg.append(s('text', { x: left + i * colW + colW / 2, y: H - 6, class: 'ax', 'text-anchor': 'middle' }, w.week));
  });
  const legend = h('ul', { class: 'legend' }, series.map((name, i) =>
    h('li', {}, h('span', { class: 'swatch', 'data-color': String(i % PALETTE.length) }), name)));
  return h('figure', { class: 'plotbox' }, svg, legend);
}

export function fmtDate(v) {
  if (v === null || v === undefined || v === '') return '';
  const d = typeof v === 'number' ? new Date(v * 1000) : new Date(v);
  if (isNaN(d)) return String(v);
  return d.toISOString().slice(0, 10);
}

export function fmtTime(v) {
  if (!v) return '';
  const d = typeof v === 'number' ? new Date(v * 1000) : new Date(v);
  if (isNaN(d)) return String(v);
  return d.toISOString().slice(0, 16).replace('T', ' ');
}

export function errorBox(e, what) {
  return h('div', { class: 'errbox', role: 'alert' },
    h('strong', {}, what + ' failed'), ' ', h('span', { class: 'code' }, e.code || 'error'), ': ', e.message);
}
