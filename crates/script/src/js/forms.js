// k6/http's bodies and cookies that follow k6's own rules, loaded in a VU the
// first time one of its requests needs them (js/http.js `forms`): most VUs
// never do, and each would otherwise hold this module's functions: http.file
// and multipart forms, URL-encoded forms, the cookies a response sets and the
// ones a request names, in k6's shape.
// What http.file(data, filename, contentType) gives: k6's fields.
export class FileData {
  constructor(data, filename, contentType) {
    this.data = data;
    // k6 names a file without a name by the time it was made.
    this.filename = filename === undefined || filename === null ? String(Date.now() * 1000000) : String(filename);
    this.content_type = contentType ? String(contentType) : "application/octet-stream";
  }
}

export const file = (data, filename, contentType) => new FileData(data, filename, contentType);

// [name, value, filename?, contentType?] for each entry of an object body.
export function multipartParts(body) {
  return Object.keys(body).map((k) => {
    const v = body[k];
    if (v instanceof FileData) return [k, v.data, v.filename, v.content_type];
    return [k, typeof v === "string" || v instanceof ArrayBuffer ? v : String(v)];
  });
}

// Go's url.QueryEscape (what k6 uses): space as "+", only A-Z a-z 0-9 - _ . ~ kept.
function queryEscape(s) {
  return encodeURIComponent(String(s))
    .replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase())
    .replace(/%20/g, "+");
}

// An object as application/x-www-form-urlencoded, keys sorted as k6 sends them.
export function formEncode(body) {
  const out = [];
  for (const k of Object.keys(body).sort()) {
    const v = body[k];
    for (const one of Array.isArray(v) ? v : [v]) out.push(queryEscape(k) + "=" + queryEscape(one));
  }
  return out.join("&");
}

// The cookies a response set, k6's `res.cookies`: name -> [{ name, value,
// domain, path, expires, max_age, secure, http_only }].
// `flat` holds the headers as name, value, name, value... from `at` (names
// canonical).
export function responseCookies(flat, at) {
  const out = {};
  for (let i = at; i < flat.length; i += 2) {
    if (flat[i] !== "Set-Cookie") continue;
    const v = flat[i + 1];
    const attrs = v.split(";");
    const first = attrs.shift();
    const eq = first.indexOf("=");
    if (eq < 0) continue;
    const name = first.slice(0, eq).trim();
    const c = {
      name,
      value: first.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1"),
      domain: "",
      path: "",
      http_only: false,
      secure: false,
      max_age: 0,
      expires: 0,
    };
    for (const a of attrs) {
      const i = a.indexOf("=");
      const key = (i < 0 ? a : a.slice(0, i)).trim().toLowerCase();
      const val = i < 0 ? "" : a.slice(i + 1).trim();
      if (key === "domain") c.domain = val.replace(/^\./, "");
      else if (key === "path") c.path = val;
      else if (key === "httponly") c.http_only = true;
      else if (key === "secure") c.secure = true;
      else if (key === "max-age") c.max_age = parseInt(val, 10) || 0;
      else if (key === "expires") {
        const t = Date.parse(val);
        if (!isNaN(t)) c.expires = t;
      }
    }
    (out[name] = out[name] || []).push(c);
  }
  return out;
}

// k6's `params.cookies` as [name, value, "replace" or ""] for the engine, which sends
// them first in the request's one Cookie header, then the jar's (less any
// replaced).
export function requestCookies(params) {
  const c = params.cookies || {};
  return Object.keys(c).map((name) => {
    const v = c[name];
    return typeof v === "object" && v !== null
      ? [name, String(v.value), v.replace === true ? "replace" : ""]
      : [name, String(v), ""];
  });
}
