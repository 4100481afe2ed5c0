// k6/http's cookie jars (kept apart from http.js): the VU's own and the ones a
// script makes, over jars kept in Rust (cookie_jar.rs). Files, forms and the
// cookies a response sets or a request names are in js/forms.js, loaded by a
// VU the first time it needs them.
const P = globalThis.__pado;

// k6's CookieJar over a jar kept in Rust (cookie_jar.rs): the VU's own
// (`http.cookieJar()`, what requests use unless `params.jar` names another) or
// one the script made (`new http.CookieJar()`, not in the init context, as k6).
export class CookieJar {
  constructor() {
    if (!globalThis.__pado_init_done) {
      throw new Error("Making cookie jars in the init context is not supported");
    }
    Object.defineProperty(this, "__h", { value: P.jarNew() });
  }
  cookiesForURL(url) {
    return P.jarFor(this.__h, String(url));
  }
  set(url, name, value, options) {
    P.jarSet(this.__h, String(url), String(name), String(value), options || undefined);
    return true;
  }
  clear(url) {
    P.jarClear(this.__h, String(url));
    return true;
  }
  delete(url, name) {
    P.jarDelete(this.__h, String(url), String(name));
    return true;
  }
}

const vuJar = Object.create(CookieJar.prototype);
Object.defineProperty(vuJar, "__h", { value: P.jarNew() });

// The VU's jar, emptied as each iteration starts unless `noCookiesReset`.
export const cookieJar = () => vuJar;
// Its handle, what a request whose parameters name no jar uses.
export const VU_JAR = vuJar.__h;
globalThis.__pado_jar_reset = () => {
  const o = globalThis.__pado_options;
  if (!(o && o.noCookiesReset)) P.jarReset(vuJar.__h);
};

// The jar a request reads and fills: `params.jar`, else (also for null, as
// k6) the VU's.
export function jarOf(params) {
  return params.jar instanceof CookieJar ? params.jar.__h : vuJar.__h;
}
