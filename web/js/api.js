// api.js -- the only module that talks to the server: REST (fetch) and the
// WebSocket, which carries both the server's pushes and our window queries
// (wsq.js).  Every URL is derived from `location`, so any ssh -L port works.

import { QueryChannel } from './wsq.js';

export class ApiError extends Error {
  constructor(status, code, detail, url) {
    super(status ? `${code}: ${detail}` : detail);
    this.status = status; // 0 = the server did not answer
    this.code = code;
    this.detail = detail;
    this.url = url;
  }
}

const errorListeners = new Set();
/** fn(ApiError) is called for every failed request (not for aborted ones). */
export function onApiError(fn) { errorListeners.add(fn); }

// The store generation the page's ids (tracks, events) belong to, from the
// last /profile or /tracks answer; sent as `gen` with every GET and every
// window request over the WebSocket, so a request made with the ids of a
// replaced store gets 409 stale, never another track's data (doc/api.md,
// "Store generation").
let generation = null;
const staleListeners = new Set();
/** fn() is called when the server says the page's ids are stale: reload. */
export function onStale(fn) { staleListeners.add(fn); }

function apiUrl(path, params) {
  const u = new URL(`/api/v1/${path}`, location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, String(v));
  }
  return u.pathname + u.search;
}

/**
 * GET /api/v1/<path>?params, resolving to the parsed JSON body.  Rejects with
 * an ApiError (status, code, detail) or, when `signal` aborts, an AbortError.
 * `quiet` suppresses the error listeners (the caller shows the error itself).
 */
export function get(path, params, { signal, quiet } = {}) {
  const p = generation && path !== 'profile' ? { ...params, gen: generation } : params;
  return request(apiUrl(path, p), { signal, headers: { Accept: 'application/json' } }, quiet);
}

/** POST /api/v1/<path> with the JSON `body`; resolves and rejects like get(). */
export function post(path, body, opts) { return send('POST', path, body, opts); }

/** `method` (POST, PATCH, DELETE) /api/v1/<path> with the JSON `body` (DELETE: none); resolves and rejects like get(). */
export function send(method, path, body, { signal, quiet } = {}) {
  return request(apiUrl(path), {
    method, signal, body: body === undefined ? undefined : JSON.stringify(body),
    headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
  }, quiet);
}

/** The URL of GET /api/v1/<path>?params (links, downloads). */
export function apiHref(path, params) { return apiUrl(path, params); }

async function request(url, init, quiet) {
  let res;
  try {
    res = await fetch(url, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw report(new ApiError(0, 'unreachable', 'The server does not answer.', url), quiet);
  }
  let body = null;
  try { body = await res.json(); } catch (e) {
    if (e.name === 'AbortError') throw e;
  }
  if (!res.ok) {
    const err = new ApiError(res.status, body?.error || `HTTP ${res.status}`,
      body?.detail || res.statusText || 'request failed', url);
    err.body = body;
    const stale = noteStale(res.status, body, new URL(url, location.origin).searchParams.get('gen'));
    throw report(err, quiet || res.status === 503 || stale);
  }
  if (body === null) throw report(new ApiError(res.status, 'bad_response', 'The answer is not JSON.', url), quiet);
  if (typeof body.generation === 'string') generation = body.generation;
  return body;
}

/**
 * True if an answer is 409 stale; when it names the generation the page
 * holds (`sentGen`, the one the request carried), the stale listeners are
 * told once per replaced store.
 */
function noteStale(status, body, sentGen) {
  const stale = status === 409 && body?.error === 'stale';
  if (stale && generation !== null && sentGen === generation) {
    generation = null; // once per replaced store
    for (const fn of staleListeners) fn();
  }
  return stale;
}

function report(err, quiet) {
  if (!quiet) for (const fn of errorListeners) fn(err);
  return err;
}

const channel = new QueryChannel();
let liveState = 'closed'; // 'connecting' | 'open' | 'closed'

/**
 * A window of /slices or /counters (params: tracks "id,id", start, end,
 * px), like get(kind, params).  Goes over the live WebSocket when it is
 * open (waiting while it opens), where onCoarse(answer) first gets a
 * coarser answer of the same window; else, or if the socket drops
 * meanwhile, over REST.
 */
export async function windowQuery(kind, params, { signal, onCoarse } = {}) {
  const rest = () => get(kind, params, { signal });
  if (!(await channel.ready(liveState === 'connecting'))) {
    channel.counts.rest++;
    return rest();
  }
  const gen = generation;
  const { status, data } = await channel.request(kind, {
    tracks: String(params.tracks).split(','), start: String(params.start),
    end: String(params.end), px: params.px, ...(gen ? { gen } : {}),
  }, { signal, onCoarse, rest });
  if (status === 200) return data;
  const url = `ws:${kind}`;
  const err = new ApiError(status, data?.error || `status ${status}`, data?.detail || 'request failed', url);
  err.body = data;
  const stale = noteStale(status, data, gen);
  throw report(err, status === 503 || stale);
}

/** How window queries went: { ws, rest, coarse, cancelled } counts. */
export function windowStats() { return { ...channel.counts }; }

/**
 * Keeps a WebSocket to /ws open, reconnecting with a growing delay; while
 * it is open, windowQuery() uses it too.
 * handlers: onMessage(msg) for the server's pushes, onOpen(),
 * onClose(retryInMs).  Returns { retryNow() }.
 */
export function connectLive(handlers) {
  let delay = 500;
  let timer = null;
  let ws = null;
  const closed = () => {
    ws = null;
    liveState = 'closed';
    channel.detach();
    handlers.onClose?.(delay);
    timer = setTimeout(open, delay);
    delay = Math.min(delay * 2, 8000);
  };
  const open = () => {
    clearTimeout(timer);
    timer = null;
    liveState = 'connecting';
    try {
      ws = new WebSocket((location.protocol === 'https:' ? 'wss' : 'ws') + '://' + location.host + '/ws', ['nex.v1']);
    } catch {
      closed();
      return;
    }
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => { delay = 500; liveState = 'open'; channel.attach(ws); handlers.onOpen?.(); };
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') { channel.onBinary(ev.data); return; }
      let msg;
      try { msg = JSON.parse(ev.data); } catch { return; }
      if (msg.type === 'result') channel.onResult(msg);
      else handlers.onMessage?.(msg);
    };
    ws.onclose = closed;
  };
  open();
  return {
    retryNow() { if (!ws) { delay = 500; open(); } },
  };
}
