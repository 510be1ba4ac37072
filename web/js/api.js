// api.js -- the only module that talks to the server: REST (fetch) and the
// WebSocket.  Every URL is derived from `location`, so any ssh -L port works.

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
export async function get(path, params, { signal, quiet } = {}) {
  const url = apiUrl(path, params);
  let res;
  try {
    res = await fetch(url, { signal, headers: { Accept: 'application/json' } });
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
    throw report(err, quiet || res.status === 503);
  }
  if (body === null) throw report(new ApiError(res.status, 'bad_response', 'The answer is not JSON.', url), quiet);
  return body;
}

function report(err, quiet) {
  if (!quiet) for (const fn of errorListeners) fn(err);
  return err;
}

/**
 * Keeps a WebSocket to /ws open, reconnecting with a growing delay.
 * handlers: onMessage(msg), onOpen(), onClose(retryInMs).
 * Returns { retryNow() }.
 */
export function connectLive(handlers) {
  let delay = 500;
  let timer = null;
  let ws = null;
  const open = () => {
    clearTimeout(timer);
    timer = null;
    ws = new WebSocket((location.protocol === 'https:' ? 'wss' : 'ws') + '://' + location.host + '/ws', ['nex.v1']);
    ws.onopen = () => { delay = 500; handlers.onOpen?.(); };
    ws.onmessage = (ev) => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch { return; }
      handlers.onMessage?.(msg);
    };
    ws.onclose = () => {
      ws = null;
      handlers.onClose?.(delay);
      timer = setTimeout(open, delay);
      delay = Math.min(delay * 2, 8000);
    };
  };
  open();
  return {
    retryNow() { if (!ws) { delay = 500; open(); } },
  };
}
