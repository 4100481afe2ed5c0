// k6/ws: ws.connect(url, params, fn(socket)) on pado's WebSocket client. The
// call blocks the VU (its coroutine, not the worker thread) until the socket
// closes; its events, timers and handlers run here, one at a time, as k6's loop.
const P = globalThis.__pado;
const registry = globalThis.__pado_ws || (globalThis.__pado_ws = new Map());
// k6's `ws_ping`: a time trend, the time from a ping to its pong.
const WS_PING = P.metricId("ws_ping", "trend", true);

// The tags of a socket's `ws_ping` values, as k6's: its URL (or `name` tag),
// its group, its own tags and the test's.
function pingTags(url, params) {
  const tags = { url: String(url) };
  const group = globalThis.__pado_group;
  if (group) tags.group = group;
  const own = (params && params.tags) || {};
  for (const k in own) tags[k] = String(own[k]);
  const test = P.tags;
  if (test) for (const k in test) if (!(k in tags)) tags[k] = test[k];
  return tags;
}

// The error a handler receives: k6 scripts call `e.error()`.
class WsError {
  constructor(message) {
    this.message = String(message);
  }
  error() {
    return this.message;
  }
  toString() {
    return this.message;
  }
}

class Socket {
  constructor(id, tags) {
    this._id = id;
    this._tags = tags;
    this._handlers = {};
    this._timers = [];
    this._closed = false;
  }
  on(event, handler) {
    (this._handlers[event] = this._handlers[event] || []).push(handler);
  }
  _emit(event, ...args) {
    for (const h of this._handlers[event] || []) h.apply(this, args);
  }
  _failed(error) {
    if (error) this._emit("error", new WsError(error));
  }
  send(message) {
    if (this._closed) return;
    this._failed(P.wsSend(this._id, String(message)));
  }
  sendBinary(message) {
    if (!(message instanceof ArrayBuffer)) {
      throw new TypeError("expected ArrayBuffer as argument, received: " + typeof message);
    }
    if (this._closed) return;
    this._failed(P.wsSend(this._id, message));
  }
  ping() {
    if (this._closed) return;
    this._failed(P.wsPing(this._id));
  }
  close(code) {
    if (this._closed) return;
    this._closed = true;
    const c = code === undefined ? 1001 : Number(code);
    this._failed(P.wsClose(this._id, c));
    this._emit("close", c);
  }
  setTimeout(fn, ms) {
    const d = Number(ms);
    if (!(d > 0)) throw new Error("setTimeout requires a >0 timeout parameter, received " + ms);
    this._timers.push({ at: P.now() + d, fn, every: 0 });
  }
  setInterval(fn, ms) {
    const d = Number(ms);
    if (!(d > 0)) throw new Error("setInterval requires a >0 timeout parameter, received " + ms);
    this._timers.push({ at: P.now() + d, fn, every: d });
  }
  // Run the timers that are due, earliest first (an interval that fell behind
  // skips the ticks it missed, as k6's ticker does); the wait until the next
  // one (-1: none).
  _due() {
    for (;;) {
      if (this._closed) return -1;
      const now = P.now();
      let first = null;
      for (const t of this._timers) {
        if (t.at <= now && (first === null || t.at < first.at)) first = t;
      }
      if (first === null) break;
      if (first.every) {
        first.at += first.every;
        if (first.at <= now) first.at = now + first.every;
      } else {
        this._timers.splice(this._timers.indexOf(first), 1);
      }
      first.fn.call(this);
    }
    let next = -1;
    for (const t of this._timers) {
      const w = Math.max(0, t.at - P.now());
      if (next < 0 || w < next) next = w;
    }
    return next;
  }
  _dispatch(ev) {
    switch (ev.kind) {
      case "text":
        this._emit("message", ev.data);
        break;
      case "binary":
        this._emit("binaryMessage", ev.data);
        break;
      case "ping":
        this._emit("ping");
        break;
      case "pong":
        if (ev.ping > 0) P.metric(WS_PING, ev.ping, this._tags);
        this._emit("pong");
        break;
      case "error":
        this._closed = true;
        this._emit("error", new WsError(ev.data));
        this._emit("close", ev.code);
        break;
      case "close":
        this._closed = true;
        this._emit("close", ev.code);
        break;
    }
  }
}

function canonicalHeaders(h) {
  return h || {};
}

export function connect(url, params, callback) {
  if (typeof params === "function") {
    callback = params;
    params = {};
  }
  params = params || {};
  if (!globalThis.__pado_init_done) {
    throw new Error("using websockets in the init context is not supported");
  }
  const tags = params.tags || {};
  const r = P.wsOpen(
    String(url),
    canonicalHeaders(params.headers),
    tags.name === undefined ? undefined : String(tags.name),
    globalThis.__pado_group || undefined
  );
  const response = {
    url: String(url),
    status: r.status,
    headers: r.headers,
    // As k6: a refused handshake's body; "" for a 101.
    body: r.body,
    // As k6: a handshake answered with a status is a response without error text.
    error: r.status ? "" : r.error,
  };
  if (r.error) return response;
  const socket = new Socket(r.id, pingTags(url, params));
  registry.set(r.id, socket);
  try {
    if (typeof callback === "function") callback(socket);
    if (!socket._closed) socket._emit("open");
    while (!socket._closed) {
      const wait = socket._due();
      if (socket._closed) break;
      const ev = P.wsWait(wait);
      if (ev === null) break;
      if (ev.timeout) continue;
      const target = registry.get(ev.id);
      if (target) target._dispatch(ev);
    }
  } catch (e) {
    if (!socket._closed) {
      socket._closed = true;
      P.wsClose(socket._id, 1001);
    }
    throw e;
  } finally {
    registry.delete(r.id);
  }
  return response;
}

export default { connect };
