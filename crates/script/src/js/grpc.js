// k6/net/grpc: a Client whose .proto files are compiled once (init context), and
// whose unary calls go out on pado's HTTP/2 client from the VU's task, counted
// as pado's gRPC requests under the method's series.
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
    });
    // A call that reached no server is Unavailable, as grpc-go reports it.
    const status = r.code === null ? StatusUnavailable : r.code;
    return {
      status,
      message: JSON.parse(r.message),
      headers: {},
      trailers: {},
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

export default {
  Client,
  StatusOK, StatusCanceled, StatusUnknown, StatusInvalidArgument, StatusDeadlineExceeded,
  StatusNotFound, StatusAlreadyExists, StatusPermissionDenied, StatusResourceExhausted,
  StatusFailedPrecondition, StatusAborted, StatusOutOfRange, StatusUnimplemented,
  StatusInternal, StatusUnavailable, StatusDataLoss, StatusUnauthenticated,
};
