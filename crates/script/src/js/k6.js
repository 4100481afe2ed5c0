// k6: check, group, sleep, fail, randomSeed, on pado's natives (globalThis.__pado).
const P = globalThis.__pado;

export function check(val, sets, tags) {
  let all = true;
  for (const name of Object.keys(sets || {})) {
    const f = sets[name];
    const ok = typeof f === "function" ? !!f(val) : !!f;
    P.check(name, ok);
    if (!ok) all = false;
  }
  return all;
}

// k6's group path: `::outer::inner`, the `group` tag of every request inside.
globalThis.__pado_group = "";

export function group(name, fn) {
  const outer = globalThis.__pado_group;
  globalThis.__pado_group = outer + "::" + String(name);
  try {
    return fn();
  } finally {
    globalThis.__pado_group = outer;
  }
}

export function sleep(seconds) {
  P.sleep(Number(seconds) || 0);
}

export function fail(message) {
  throw new Error(message === undefined ? "fail() was called" : String(message));
}

export function randomSeed(seed) {
  // mulberry32: a small, reproducible generator in place of Math.random.
  let a = Number(seed) >>> 0;
  Math.random = function () {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export default { check, group, sleep, fail, randomSeed };
