// k6/websockets: the browser-like WebSocket on pado's WebSocket client. A socket
// connects when the VU's event loop next runs (after the code that made it, as
// k6), its events are dispatched by that loop, and the iteration ends when no
// socket is open and no timer is left (`__pado_drain` in the prelude).
const P = globalThis.__pado;
const registry = globalThis.__pado_ws || (globalThis.__pado_ws = new Map());
const pending = [];
// k6's `ws_ping`: a time trend, the time from a ping to its pong.
const WS_PING = P.metricId("ws_ping", "trend", true);

export const CONNECTING = 0;
export const OPEN = 1;
export const CLOSING = 2;
export const CLOSED = 3;

// A binary message as a Blob (k6's default binaryType).
export class Blob {
  constructor(parts, options) {
    const chunks = (parts || []).map((p) =>
      typeof p === "string" ? new TextEncoderLite().encode(p) : new Uint8Array(p instanceof ArrayBuffer ? p : p.buffer || p)
    );
    const size = chunks.reduce((a, c) => a + c.length, 0);
    const all = new Uint8Array(size);
    let at = 0;
    for (const c of chunks) {
      all.set(c, at);
      at += c.length;
    }
    this._bytes = all;
    this.size = size;
    this.type = (options && options.type) || "";
  }
  arrayBuffer() {
    return Promise.resolve(this._bytes.slice().buffer);
  }
  text() {
    return Promise.resolve(utf8(this._bytes));
  }
}

class TextEncoderLite {
  encode(s) {
    const bytes = unescape(encodeURIComponent(s));
    const out = new Uint8Array(bytes.length);
    for (let i = 0; i < bytes.length; i++) out[i] = bytes.charCodeAt(i);
    return out;
  }
}

function utf8(u8) {
  let s = "";
  for (let i = 0; i < u8.length; i++) s += String.fromCharCode(u8[i]);
  return decodeURIComponent(escape(s));
}

export class WebSocket {
  constructor(url, protocols, params) {
    if (!globalThis.__pado_init_done) {
      throw new Error("using websockets in the init context is not supported");
    }
    this.url = String(url);
    this.protocol = "";
    this.extensions = "";
    this.bufferedAmount = 0;
    this.readyState = CONNECTING;
    this.binaryType = "blob";
    this.onopen = null;
    this.onmessage = null;
    this.onerror = null;
    this.onclose = null;
    this.onping = null;
    this.onpong = null;
    this._listeners = {};
    this._params = params || {};
    this._id = -1;
    pending.push(this);
  }
  addEventListener(type, fn) {
    (this._listeners[type] = this._listeners[type] || []).push(fn);
  }
  removeEventListener(type, fn) {
    const l = this._listeners[type] || [];
    const i = l.indexOf(fn);
    if (i >= 0) l.splice(i, 1);
  }
  _emit(type, fields) {
    const event = Object.assign({ type, target: this }, fields || {});
    const own = this["on" + type];
    if (typeof own === "function") own.call(this, event);
    for (const f of (this._listeners[type] || []).slice()) f.call(this, event);
  }
  _open() {
    const tags = this._params.tags || {};
    const r = P.wsOpen(
      this.url,
      this._params.headers || {},
      tags.name === undefined ? undefined : String(tags.name),
      globalThis.__pado_group || undefined
    );
    if (r.error) {
      this.readyState = CLOSED;
      this._emit("error", { error: r.error, message: r.error });
      this._emit("close", { code: 1006, reason: "" });
      return;
    }
    this._id = r.id;
    // `ws_ping`'s tags, as k6's: the URL, the group, the socket's and the test's.
    const pt = { url: this.url };
    if (globalThis.__pado_group) pt.group = globalThis.__pado_group;
    for (const k in tags) pt[k] = String(tags[k]);
    const test = P.tags;
    if (test) for (const k in test) if (!(k in pt)) pt[k] = test[k];
    this._pingTags = pt;
    registry.set(r.id, this);
    this.readyState = OPEN;
    this._emit("open");
  }
  send(data) {
    if (this.readyState !== OPEN) throw new Error("InvalidStateError");
    let msg = data;
    if (data instanceof Blob) msg = data._bytes.slice().buffer;
    else if (ArrayBuffer.isView(data)) msg = data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
    else if (!(data instanceof ArrayBuffer)) msg = String(data);
    const e = P.wsSend(this._id, msg);
    if (e) this._emit("error", { error: e, message: e });
  }
  ping() {
    if (this.readyState !== OPEN) throw new Error("InvalidStateError");
    P.wsPing(this._id);
  }
  close(code, reason) {
    if (this.readyState === CLOSED || this.readyState === CLOSING) return;
    const i = pending.indexOf(this);
    if (i >= 0) pending.splice(i, 1);
    const c = code === undefined ? 1000 : Number(code);
    if (this._id >= 0) {
      this.readyState = CLOSING;
      P.wsClose(this._id, c);
      registry.delete(this._id);
    }
    this.readyState = CLOSED;
    this._emit("close", { code: c, reason: reason === undefined ? "" : String(reason) });
  }
  _dispatch(ev) {
    switch (ev.kind) {
      case "text":
        this._emit("message", { data: ev.data });
        break;
      case "binary":
        this._emit("message", {
          data: this.binaryType === "arraybuffer" ? ev.data : new Blob([ev.data]),
        });
        break;
      case "ping":
        this._emit("ping");
        break;
      case "pong":
        if (ev.ping > 0) P.metric(WS_PING, ev.ping, this._pingTags);
        this._emit("pong");
        break;
      case "error":
        registry.delete(this._id);
        this.readyState = CLOSED;
        this._emit("error", { error: ev.data, message: ev.data });
        this._emit("close", { code: ev.code, reason: "" });
        break;
      case "close":
        registry.delete(this._id);
        this.readyState = CLOSED;
        this._emit("close", { code: ev.code, reason: ev.data });
        break;
    }
  }
}

// The event loop's share of sockets (see `__pado_drain`): whether any is
// connecting or open, and one step: connect the pending ones, or wait up to
// `ms` (-1: no limit) for the next event of any socket and dispatch it.
globalThis.__pado_loops.push({
  busy() {
    if (pending.length) return true;
    for (const s of registry.values()) if (s instanceof WebSocket) return true;
    return false;
  },
  step(ms) {
    if (pending.length) {
      const now = pending.splice(0, pending.length);
      for (const s of now) s._open();
      return;
    }
    const ev = P.wsWait(ms);
    if (ev === null || ev.timeout) return;
    const target = registry.get(ev.id);
    if (target) target._dispatch(ev);
  },
});

export default { WebSocket, Blob, CONNECTING, OPEN, CLOSING, CLOSED };
