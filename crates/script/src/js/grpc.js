// k6/net/grpc: a Client whose .proto files are compiled once (init context), and
// whose unary calls and server streams go out on pado's HTTP/2 client from the
// VU's task, counted as pado's gRPC requests (and streams) under the method's
// series.
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

export class Client {
  constructor() {
    this._set = -1;
    this._target = null;
  }
  load(importPaths, ...files) {
    if (globalThis.__pado_init_done) throw new Error("load must be called in the init context");
    this._set = P.grpcLoad((importPaths || []).map(String), files.map(String));
  }
  loadProtoset() {
    throw new Error("pado does not read protosets yet: load the .proto files with client.load()");
  }
  connect(address, params) {
    if (!globalThis.__pado_init_done) {
      throw new Error("connecting to a gRPC server in the init context is not supported");
    }
    params = params || {};
    if (params.reflect) {
      throw new Error(
        "pado does not ask a server's reflection service from a script yet: load the .proto files with client.load()"
      );
    }
    this._target = String(address);
    this._plaintext = !!params.plaintext;
    this._timeout = duration(params.timeout);
    return true;
  }
  invoke(method, request, params) {
    const r = this._call(method, request, params, false);
    return {
      status: r.status,
      message: JSON.parse(r.message),
      headers: {},
      trailers: {},
      error: r.error,
    };
  }
  _call(method, request, params, stream) {
    if (this._target === null) throw new Error("no gRPC connection, you must call connect first");
    if (this._set < 0) throw new Error("no .proto files were loaded: call client.load() in the init context");
    params = params || {};
    const metadata = [];
    for (const k of Object.keys(params.metadata || {})) metadata.push([k, String(params.metadata[k])]);
    const tags = params.tags || {};
    const timeout = duration(params.timeout);
    const r = P.grpcInvoke(this._set, String(method), JSON.stringify(request === undefined ? {} : request), {
      target: this._target,
      plaintext: this._plaintext,
      metadata,
      timeout: timeout === undefined ? this._timeout : timeout,
      name: tags.name === undefined ? undefined : String(tags.name),
      stream,
    });
    // A call that reached no server is Unavailable, as grpc-go reports it.
    const status = r.code === null ? StatusUnavailable : r.code;
    return {
      status,
      message: r.message,
      messages: r.messages,
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

// Server streams opened and ended, waiting for the event loop to make them.
const streams = [];

// A server stream (k6's `grpc.Stream`): its one request is written, `end()`
// sends it, and the event loop (after the iteration's code, as k6) makes the
// call and runs the `data` handlers for each reply, then `error` for a status
// other than OK, then `end`.
export class Stream {
  constructor(client, method, params) {
    if (!(client instanceof Client) || client._target === null) {
      throw new Error("no gRPC connection, you must call connect first");
    }
    this._client = client;
    this._method = String(method);
    this._params = params || {};
    this._handlers = {};
    this._request = undefined;
    this._ended = false;
  }
  on(event, handler) {
    (this._handlers[event] = this._handlers[event] || []).push(handler);
  }
  _emit(event, value) {
    for (const h of this._handlers[event] || []) h(value, { ts: Date.now() });
  }
  write(message) {
    if (this._ended) throw new Error("the stream has ended");
    if (this._request !== undefined) {
      throw new Error("pado gives server streams only: one request message per stream");
    }
    this._request = message;
  }
  end() {
    if (this._ended) return;
    this._ended = true;
    streams.push(this);
  }
  _run() {
    const r = this._client._call(this._method, this._request, this._params, true);
    for (const m of r.messages) this._emit("data", JSON.parse(m));
    if (r.status !== StatusOK) this._emit("error", r.error);
    this._emit("end");
  }
}

globalThis.__pado_loops.push({
  busy() {
    return streams.length > 0;
  },
  step() {
    const s = streams.shift();
    if (s) s._run();
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
