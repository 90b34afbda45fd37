// api.js - the daemon's documented /v1 API (GET /openapi.json), the token,
// whether the daemon answers, and its event stream.

const TOKEN_KEY = 'mnemo.token';
const listeners = { offline: [], online: [], event: [], token: [], backend: [] };
let offline = false;      // the daemon does not answer
let backendDown = false;  // it answers, but its store or provider fails (5xx)
let probing = null;

export class ApiError extends Error {
  constructor(code, message, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

export function on(what, fn) { listeners[what].push(fn); }
function emit(what, arg) { for (const fn of listeners[what]) fn(arg); }

export function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(body) {
  const h = {};
  const t = token();
  if (t) h.Authorization = 'Bearer ' + t;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  return h;
}

function goneOffline(why) {
  if (!offline) {
    offline = true;
    emit('offline', why);
  }
  if (!probing) probing = setTimeout(probe, 1500);
}

// While the daemon is away, /health every 1.5 s until it answers again.
async function probe() {
  probing = null;
  try {
    const r = await fetch('/health', { headers: headers(), cache: 'no-store' });
    if (r.status === 401) { offline = false; emit('online'); emit('token', 'needed'); return; }
    if (!r.ok) throw new Error('HTTP ' + r.status);
    offline = false;
    emit('online');
  } catch (e) {
    probing = setTimeout(probe, 1500);
  }
}

export function isOffline() { return offline; }

// The daemon answers but its backend failed: GET /v1/status every 3 s (it
// reads the store) until it succeeds.
function backendFailed(msg) {
  if (!backendDown) {
    backendDown = true;
    emit('backend', msg);
  }
  if (!probing) probing = setTimeout(probeBackend, 3000);
}

async function probeBackend() {
  probing = null;
  if (!backendDown) return;
  try {
    const r = await fetch('/v1/status', { headers: headers(), cache: 'no-store' });
    if (r.ok) { backendDown = false; emit('online'); return; }
  } catch (e) { goneOffline(e.message); return; }
  probing = setTimeout(probeBackend, 3000);
}

// METHOD PATH with BODY (an object) as JSON; the reply's JSON, or an
// ApiError with the daemon's code and message.
export async function call(method, path, body) {
  let r;
  try {
    r = await fetch(path, {
      method, headers: headers(body), cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    goneOffline(e.message);
    throw new ApiError('unavailable', 'The daemon is not answering (' + e.message + ').', 0);
  }
  let j = null;
  try { j = await r.json(); } catch (e) { j = null; }
  if (offline) { offline = false; emit('online'); }
  if (r.status === 401) {
    emit('token', token() ? 'wrong' : 'needed');
    throw new ApiError('denied', (j && j.error && j.error.message) || 'a token is needed', 401);
  }
  if (!r.ok) {
    const code = (j && j.error && j.error.code) || 'error';
    const msg = (j && j.error && j.error.message) || ('HTTP ' + r.status);
    if (r.status >= 500) backendFailed(msg);
    throw new ApiError(code, msg, r.status);
  }
  if (backendDown && path.startsWith('/v1/')) {
    backendDown = false;
    emit('online');
  }
  return j;
}

export const api = {
  health: () => call('GET', '/health'),
  status: () => call('GET', '/v1/status'),
  memory: (id) => call('GET', '/v1/memories/' + encodeURIComponent(id)),
  search: (args) => call('POST', '/v1/search', args),
  get: (path, from, lines) => call('POST', '/v1/get', { path, from, lines }),
  files: () => call('GET', '/v1/files'),
  timeline: (args) => call('POST', '/v1/timeline', args || {}),
  recall: (args) => call('POST', '/v1/recall', args),
  list: (args) => call('POST', '/v1/memories/list', args),
  add: (rec) => call('POST', '/v1/memories', rec),
  update: (id, ch) => call('PATCH', '/v1/memories/' + encodeURIComponent(id), ch),
  remove: (id) => call('DELETE', '/v1/memories/' + encodeURIComponent(id)),
  restore: (id) => call('POST', '/v1/memories/' + encodeURIComponent(id) + '/restore', {}),
  confirm: (id) => call('POST', '/v1/memories/' + encodeURIComponent(id) + '/confirm', {}),
  history: (id) => call('GET', '/v1/memories/' + encodeURIComponent(id) + '/history'),
};

// GET /v1/events read with fetch (EventSource cannot send the token):
// each event goes to on('event'); the stream is opened again after it ends.
let streaming = false;
export async function streamEvents(onState) {
  if (streaming) return;
  streaming = true;
  onState('connecting');
  try {
    const r = await fetch('/v1/events', { headers: headers(), cache: 'no-store' });
    if (r.status === 401) { streaming = false; onState('off'); emit('token', token() ? 'wrong' : 'needed'); return; }
    if (!r.ok || !r.body) throw new Error('HTTP ' + r.status);
    if (offline) { offline = false; emit('online'); }
    onState('live');
    const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let name = 'message', data = '';
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) name = line.slice(6).trim();
          else if (line.startsWith('data:')) data += line.slice(5).trim();
        }
        if (data) {
          let d = null;
          try { d = JSON.parse(data); } catch (e) { d = null; }
          emit('event', { name, data: d });
        }
      }
    }
    throw new Error('the event stream ended');
  } catch (e) {
    streaming = false;
    onState('off');
    goneOffline(e.message);
  }
}
