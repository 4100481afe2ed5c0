// k6: check, group, sleep, fail, randomSeed, on pado's natives (globalThis.__pado).
const P = globalThis.__pado;

// k6's `checks` with tags: each check also goes, tagged (the test's tags, the
// group, the call's own, `check`), to a rate that thresholds such as
// `checks{mytag:x}` read. Only when it has a tag beyond its name: a plain check
// is counted once.
const CHECKS = P.metricId("checks", "rate", false);

function checkTags(name, own) {
  let out;
  const test = P.tags;
  const group = globalThis.__pado_group;
  if (test) for (const k in test) (out = out || {})[k] = test[k];
  if (group) (out = out || {}).group = group;
  if (own) for (const k in own) (out = out || {})[k] = String(own[k]);
  if (out) out.check = name;
  return out;
}

// A check is counted under its k6 path (`::outer::inner::name`) when made
// inside a group, so that the same name in two groups stays two checks, each in
// its group of k6's summary (`root_group`); outside any group, under its name.
export function check(val, sets, tags) {
  const group = globalThis.__pado_group;
  // The usual check (no tags of its own or of the test, outside any group):
  // the whole loop in one native call (natives.rs `check_plain`).
  if (!group && !tags && !P.tags && typeof sets === "object" && sets !== null) {
    return P.checkPlain(val, sets);
  }
  let all = true;
  const names = Object.keys(sets || {});
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const f = sets[name];
    const ok = typeof f === "function" ? !!f(val) : !!f;
    P.check(group ? group + "::" + name : name, ok);
    const t = checkTags(name, tags);
    if (t) P.metric(CHECKS, ok ? 1 : 0, t);
    if (!ok) all = false;
  }
  return all;
}

// k6's group path: `::outer::inner`, the `group` tag of every request inside.
globalThis.__pado_group = "";

// k6's `group_duration`: a time trend, one value per group run, tagged with the
// group's path.
const GROUP_DURATION = P.metricId("group_duration", "trend", true);

export function group(name, fn) {
  const outer = globalThis.__pado_group;
  const path = outer + "::" + String(name);
  globalThis.__pado_group = path;
  const t0 = P.now();
  let out;
  try {
    out = fn();
  } finally {
    globalThis.__pado_group = outer;
  }
  // As k6: measured when the group's function returned (an exception ends the
  // iteration before a duration is added).
  const tags = { group: path };
  const test = P.tags;
  if (test) for (const k in test) if (!(k in tags)) tags[k] = test[k];
  P.metric(GROUP_DURATION, P.now() - t0, tags);
  return out;
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
