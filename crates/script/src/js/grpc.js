// k6/net/grpc: a Client whose .proto files are compiled once (init context) or
// asked of the server's reflection service, and whose unary calls and streams
// (client, server, bidirectional) go out on pado's HTTP/2 client from the VU's
// task, counted as pado's gRPC requests (and streams) under the method's series.
const P = globalThis.__pado;

export const StatusOK = 0;
export const StatusCanceled = 1;
export const StatusUnknown = 2;
export const StatusInvalidArgument = 3;
export const StatusDeadlineExceeded = 4;
export const StatusNotFound = 5;
export const StatusAlreadyExists = 6;
export const StatusPermissionDenied = 7;
export const StatusResourceExhausted = 8;
export const StatusFailedPrecondition = 9;
export const StatusAborted = 10;
export const StatusOutOfRange = 11;
export const StatusUnimplemented = 12;
export const StatusInternal = 13;
export const StatusUnavailable = 14;
export const StatusDataLoss = 15;
export const StatusUnauthenticated = 16;

const NAMES = [
  "OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
  "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
  "Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss",
  "Unauthenticated",
];

function duration(v) {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "number") return v;
  const m = String(v).match(/^([\d.]+)(ms|s|m|h)?$/);
  if (!m) throw new Error("invalid duration: " + v);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60000, h: 3600000 }[m[2] || "ms"];
}

// A connection's TLS as k6 takes it: `{ cacerts (a PEM string or an array of
// them), cert, key, password }`, checked the way k6 checks it.
function tlsOf(v) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object") {
    throw new Error("invalid tls value, expected (optional) keys: cert, key, password, and cacerts");
  }
  const str = (k) => {
    if (v[k] === undefined) return "";
    if (typeof v[k] !== "string") throw new Error("invalid tls " + k + " value: it needs to be a PEM formatted string");
    return v[k];
  };
  let cacerts = v.cacerts === undefined ? [] : v.cacerts;
  if (typeof cacerts === "string") cacerts = [cacerts];
  if (!Array.isArray(cacerts) || cacerts.some((c) => typeof c !== "string")) {
    throw new Error("invalid tls cacerts value: it needs to be a string or an array of PEM formatted strings");
  }
  return { cacerts, cert: str("cert"), key: str("key"), password: str("password") };
}

// Metadata as [[name, value]], as k6 checks it: a value is a string, and a
// binary one (a name ending in `-bin`) is a Uint8Array (k6's; pado also takes an
// ArrayBuffer or another view of one), sent base64-encoded as gRPC requires.
function metadataOf(md) {
  const out = [];
  if (md === undefined || md === null) return out;
  if (typeof md !== "object") throw new Error("invalid metadata param: must be an object with key-value pairs");
  for (const k of Object.keys(md)) {
    const v = md[k];
    if (k.endsWith("-bin")) {
      if (v instanceof ArrayBuffer) {
        out.push([k, v]);
      } else if (ArrayBuffer.isView(v)) {
        out.push([k, v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength)]);
      } else {
        throw new Error('invalid metadata param: "' + k + '" value must be binary');
      }
      continue;
    }
    if (typeof v !== "string") throw new Error('invalid metadata param: "' + k + '" value must be a string');
    out.push([k, v]);
  }
  return out;
}

const CONNECT_KEYS = ["plaintext", "timeout", "reflect", "reflectMetadata", "maxReceiveSize", "maxSendSize", "tls"];
const CALL_KEYS = ["metadata", "tags", "timeout", "discardResponseMessage"];

export class Client {
  constructor() {
    this._set = -1;
    this._target = null;
  }
  load(importPaths, ...files) {
    if (globalThis.__pado_init_done) throw new Error("load must be called in the init context");
    this._set = P.grpcLoad((importPaths || []).map(String), files.map(String));
  }
  // A binary FileDescriptorSet (`protoc --include_imports --descriptor_set_out`).
  loadProtoset(path) {
    if (globalThis.__pado_init_done) throw new Error("load must be called in the init context");
    this._set = P.grpcLoadProtoset(String(path));
  }
  connect(address, params) {
    if (!globalThis.__pado_init_done) {
      throw new Error("connecting to a gRPC server in the init context is not supported");
    }
    params = params || {};
    for (const k of Object.keys(params)) {
      if (!CONNECT_KEYS.includes(k)) throw new Error('invalid grpc.connect() parameters: unknown connect param: "' + k + '"');
    }
    if (params.plaintext !== undefined && typeof params.plaintext !== "boolean") {
      throw new Error("invalid grpc.connect() parameters: invalid plaintext value, it needs to be boolean");
    }
    const target = String(address);
    const plaintext = !!params.plaintext;
    const timeout = duration(params.timeout);
    const tls = plaintext ? undefined : this._decrypted(tlsOf(params.tls));
    if (params.reflect) {
      this._set = P.grpcReflect({
        target,
        plaintext,
        tls,
        metadata: metadataOf(params.reflectMetadata),
        timeout,
      });
    }
    this._target = target;
    this._plaintext = plaintext;
    this._timeout = timeout;
    this._tls = tls;
    return true;
  }
  // The TLS with its key decrypted when a password came (PKCS#8 or OpenSSL's
  // legacy form), once per key and password: connect() runs every iteration.
  _decrypted(tls) {
    if (tls === undefined) return tls;
    if (tls.password === "") {
      // An encrypted key without its password: said in the field's words.
      if (tls.key.includes("ENCRYPTED")) P.tlsKey(tls.key, "");
      delete tls.password;
      return tls;
    }
    const memo = this._keyMemo;
    if (!memo || memo.key !== tls.key || memo.password !== tls.password) {
      this._keyMemo = { key: tls.key, password: tls.password, plain: P.tlsKey(tls.key, tls.password) };
    }
    return { cacerts: tls.cacerts, cert: tls.cert, key: this._keyMemo.plain };
  }
  invoke(method, request, params) {
    if (request === undefined || request === null) throw new Error("request cannot be nil");
    const r = this._call(method, request, params);
    return {
      status: r.status,
      message: params && params.discardResponseMessage ? null : JSON.parse(r.message),
      headers: r.headers,
      trailers: r.trailers,
      error: r.error,
    };
  }
  _options(params) {
    if (this._target === null) throw new Error("no gRPC connection, you must call connect first");
    if (this._set < 0) {
      throw new Error("no .proto files were loaded: call client.load() in the init context, or connect with { reflect: true }");
    }
    params = params || {};
    for (const k of Object.keys(params)) {
      if (!CALL_KEYS.includes(k)) throw new Error('invalid gRPC call parameters: unknown param: "' + k + '"');
    }
    const tags = params.tags || {};
    return {
      target: this._target,
      plaintext: this._plaintext,
      tls: this._tls,
      metadata: metadataOf(params.metadata),
      timeout: duration(params.timeout),
      name: tags.name === undefined ? undefined : String(tags.name),
    };
  }
  _call(method, request, params) {
    const o = this._options(params);
    const r = P.grpcInvoke(this._set, String(method), JSON.stringify(request), o);
    // A call that reached no server is Unavailable, as grpc-go reports it.
    const status = r.code === null ? StatusUnavailable : r.code;
    return {
      status,
      message: r.message,
      headers: r.headers,
      trailers: r.trailers,
      error:
        status === StatusOK
          ? null
          : { code: status, message: r.error || NAMES[status] || "status " + status, details: [] },
    };
  }
  close() {
    this._target = null;
  }
}

// Streams open, by the engine's id: the event loop runs their handlers.
const streams = new Map();
const EVENTS = ["data", "error", "end", "status"];

// k6's `grpc.Stream`, for client, server and bidirectional streams: opened when
// made, `write()` sends a message now, `end()` ends the writing; the replies,
// the error (a status other than OK) and the end reach the handlers in the VU's
// event loop, which keeps the iteration alive until the stream ends (as k6).
export class Stream {
  constructor(client, method, params) {
    if (!(client instanceof Client) || client._target === null) {
      throw new Error("no gRPC connection, you must call connect first");
    }
    if (!method) throw new Error("method to invoke cannot be empty");
    this._client = client;
    this._set = client._set;
    this._method = String(method);
    this._handlers = {};
    this._ended = false;
    this._id = P.grpcStreamOpen(this._set, this._method, client._options(params));
    streams.set(this._id, this);
  }
  on(event, handler) {
    if (typeof handler !== "function") {
      throw new Error('handler for "' + event + "\" event isn't a callable function");
    }
    if (!EVENTS.includes(event)) {
      console.warn("can't register " + event + " event handler: unknown GRPC stream's event type: " + event);
      return;
    }
    (this._handlers[event] = this._handlers[event] || []).push(handler);
  }
  _emit(event, value) {
    for (const h of this._handlers[event] || []) h(value);
  }
  write(message) {
    if (this._ended || !streams.has(this._id)) return;
    if (message === undefined || message === null) {
      console.warn("can't send empty message");
      return;
    }
    P.grpcStreamWrite(this._id, this._set, this._method, JSON.stringify(message));
  }
  end() {
    if (this._ended) return;
    this._ended = true;
    if (streams.has(this._id)) P.grpcStreamEnd(this._id);
  }
  _event(ev) {
    if (ev.kind === "data") {
      this._emit("data", JSON.parse(P.grpcDecode(this._set, this._method, ev.message)));
      return;
    }
    streams.delete(this._id);
    const code = ev.code === null ? StatusUnavailable : ev.code;
    if (code !== StatusOK) {
      const error = { code, details: [], message: ev.error || NAMES[code] || "status " + code };
      if (!(this._handlers.error || []).length) {
        console.warn("no handlers for error registered, but an error happened: code: " + code + ", message: " + error.message);
      }
      this._emit("error", error);
    }
    this._emit("end", {});
  }
}

globalThis.__pado_loops.push({
  busy() {
    return streams.size > 0;
  },
  step(ms) {
    const ev = P.grpcStreamWait(ms === undefined ? -1 : ms);
    if (ev === null) {
      streams.clear();
      return;
    }
    if (ev.timeout) return;
    const s = streams.get(ev.id);
    if (s) s._event(ev);
  },
});

export default {
  Stream,
  Client,
  StatusOK, StatusCanceled, StatusUnknown, StatusInvalidArgument, StatusDeadlineExceeded,
  StatusNotFound, StatusAlreadyExists, StatusPermissionDenied, StatusResourceExhausted,
  StatusFailedPrecondition, StatusAborted, StatusOutOfRange, StatusUnimplemented,
  StatusInternal, StatusUnavailable, StatusDataLoss, StatusUnauthenticated,
};
