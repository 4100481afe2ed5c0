// k6/http on pado's own HTTP client: every request is a call the VU's task makes.
const P = globalThis.__pado;
import { cookieJar, CookieJar, jarOf, VU_JAR } from "pado:http-body";

// Files, forms and cookies by name (js/forms.js), loaded in this VU by the
// first request that needs them: most never do.
let formsLoaded = null;
const forms = () => formsLoaded || (formsLoaded = P.require("pado:http-forms"));

let defaultExpected = null;

function select(value, path) {
  let v = value;
  for (const part of String(path).split(".")) {
    if (v === undefined || v === null) return undefined;
    if (part === "#" && Array.isArray(v)) return v.length;
    v = v[part];
  }
  return v;
}

// A response is made by the native request (natives.rs, `response_obj.rs`):
// status, body, url, error, error_code, proto, timings, request, status_text,
// headers and cookies, own properties in that order, on this prototype. Its
// body (as text), timings, request, headers and cookies are made when first
// read (`response_lazy.rs`): until then each is an accessor that leaves a
// plain property in its place (as does assigning to it), still own and
// enumerable, so `Object.keys` and `JSON.stringify` see a response as k6's.
export class Response {
  json(selector) {
    if (selector === undefined) return JSON.parse(this.body);
    // k6 reads a selector with gjson: a body that is not JSON selects nothing.
    let v;
    try {
      v = JSON.parse(this.body);
    } catch (e) {
      return undefined;
    }
    return select(v, selector);
  }
  html(selector) {
    // k6/html is loaded (in this VU) on the first call only.
    const doc = P.require("k6/html").parseHTML(this.body);
    return selector === undefined ? doc : doc.find(selector);
  }
}

// What the native request makes a response with (response_obj.rs `part`; the
// natives append the getters and setters of the parts made when read).
// `Set-Cookie` headers read by js/forms.js, loaded by the first response whose
// cookies are read.
const readCookies = (pairs, at) => forms().responseCookies(pairs, at);
const SHAPE = [Response.prototype, readCookies, VU_JAR];

function encodeBody(body, headers) {
  if (body === undefined || body === null) return "";
  if (typeof body === "string") return body;
  if (body instanceof ArrayBuffer) return body;
  if (ArrayBuffer.isView(body)) return body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength);
  if (typeof body === "object") {
    const f = forms();
    const hasType = Object.keys(headers).some((h) => h.toLowerCase() === "content-type");
    if (Object.values(body).some((v) => v instanceof f.FileData)) {
      const [bytes, boundary] = P.multipart(f.multipartParts(body));
      if (!hasType) headers["Content-Type"] = "multipart/form-data; boundary=" + boundary;
      return bytes;
    }
    if (!hasType) headers["Content-Type"] = "application/x-www-form-urlencoded";
    return f.formEncode(body);
  }
  return String(body);
}

function duration(v) {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "number") return v;
  const m = String(v).match(/^([\d.]+)(ms|s|m|h)?$/);
  if (!m) throw new Error("invalid timeout: " + v);
  const n = Number(m[1]);
  return n * ({ ms: 1, s: 1000, m: 60000, h: 3600000 }[m[2] || "ms"]);
}

// A request as `__pado.request` and `__pado.batch` take it: [method, url,
// body, options (an array)] (the Response shows these as its `request`).
// Each request pays for what it uses: no regular expression unless the URL
// has credentials in it, no cookie or tag walk unless it has some.
// `t` and `o` are the arrays it fills (the request, its options): for
// `request` the VU's own two, reused (filled in place: no array made or grown
// per request; read by the native before the next request can be prepared),
// for `batch` new ones per request.
const NO_PARAMS = Object.freeze({});
function prepare(method, url, body, params, t, o) {
  params = params || NO_PARAMS;
  url = String(url);
  const headers = Object.assign({}, params.headers);
  if ((params.auth === "basic" || params.auth === undefined) && url.indexOf("@") !== -1) {
    const m = url.match(/^(https?:\/\/)([^/@]+)@(.*)$/);
    if (m) {
      headers["Authorization"] = "Basic " + P.b64encode(decodeURIComponent(m[2]));
      url = m[1] + m[3];
    }
  }
  const cookies = params.cookies ? forms().requestCookies(params) : undefined;
  const sent = encodeBody(body, headers);
  const tags = params.tags;
  // The series' tags: the test's (options, scenario, --tag), then the request's
  // own but `name` (the series' name) and `group` (the group's path).
  let seriesTags;
  const test = P.tags;
  if (test) for (const k in test) (seriesTags = seriesTags || {})[k] = test[k];
  if (tags) {
    for (const k in tags) {
      if (k === "name" || k === "group") continue;
      (seriesTags = seriesTags || {})[k] = String(tags[k]);
    }
  }
  const expected = params.responseCallback !== undefined ? params.responseCallback : defaultExpected;
  const m = String(method).toUpperCase();
  // In the order natives.rs `opt` reads them (by index, no names to look up).
  o[0] = headers;
  o[1] = duration(params.timeout);
  o[2] = tags && tags.name !== undefined ? String(tags.name) : undefined;
  o[3] = globalThis.__pado_group || undefined;
  o[4] = seriesTags;
  o[5] = params.redirects;
  o[6] = params.responseType || "text";
  o[7] = expected ? expected.ranges : undefined;
  o[8] = cookies;
  o[9] = jarOf(params);
  t[0] = m;
  t[1] = url;
  t[2] = sent;
  t[3] = o;
  return t;
}

// The arrays a request is handed over in, one each per VU, filled in place per
// request. Its body slot is emptied once sent, so that it holds no body.
const REQUEST = [];
const OPTIONS = [];

export function request(method, url, body, params) {
  // Most requests (a text URL without credentials, a text body or none,
  // parameters with headers at most, no expected statuses set) are made whole
  // by the native (natives: `request_plain.rs`); it answers undefined for the
  // rest, which are prepared here.
  if (!defaultExpected) {
    const res = P.requestPlain(method, url, body, params, globalThis.__pado_group, SHAPE);
    if (res !== undefined) return res;
  }
  const p = prepare(method, url, body, params, REQUEST, OPTIONS);
  const res = P.request(p[0], p[1], p[2], p[3], SHAPE);
  p[2] = "";
  return res;
}

export const get = (url, params) => request("GET", url, null, params);
export const head = (url, params) => request("HEAD", url, null, params);
export const post = (url, body, params) => request("POST", url, body, params);
export const put = (url, body, params) => request("PUT", url, body, params);
export const patch = (url, body, params) => request("PATCH", url, body, params);
export const del = (url, body, params) => request("DELETE", url, body, params);
export const options = (url, body, params) => request("OPTIONS", url, body, params);

// k6's `batch` and `batchPerHost` options (defaults 10 and 6): how many of a
// batch's requests are in flight at once, and to one host.
function batchLimits() {
  const o = globalThis.__pado_options || {};
  return [o.batch === undefined ? 10 : Number(o.batch), o.batchPerHost === undefined ? 6 : Number(o.batchPerHost)];
}

// k6's http.batch: every request sent at once (each on its own connection),
// the VU waiting for all; the responses in the order (or under the keys) given.
export function batch(requests) {
  const one = (r) => {
    if (typeof r === "string") return prepare("GET", r, null, undefined, [], []);
    if (Array.isArray(r)) return prepare(r[0], r[1], r[2], r[3], [], []);
    return prepare(r.method || "GET", r.url, r.body, r.params, [], []);
  };
  const keys = Array.isArray(requests) ? null : Object.keys(requests);
  const prepared = keys ? keys.map((k) => one(requests[k])) : requests.map(one);
  const [parallel, perHost] = batchLimits();
  const responses = P.batch(prepared, parallel, perHost, SHAPE);
  if (!keys) return responses;
  const out = {};
  keys.forEach((k, i) => (out[k] = responses[i]));
  return out;
}

export function expectedStatuses(...codes) {
  const ranges = codes.map((c) =>
    typeof c === "number" ? [c, c] : [Number(c.min), Number(c.max)]
  );
  return { ranges };
}

export function setResponseCallback(cb) {
  defaultExpected = cb;
}

export function url(strings, ...values) {
  return strings.reduce((a, s, i) => a + s + (i < values.length ? values[i] : ""), "");
}

export const file = (data, filename, contentType) => forms().file(data, filename, contentType);

export { cookieJar, CookieJar };

export default {
  file,
  cookieJar,
  CookieJar,
  request, get, head, post, put, patch, del, options, batch,
  expectedStatuses, setResponseCallback, url, Response,
};
