// Globals every k6 script has: console (to pado's stderr, marked as the script's)
// and timers, run on the VU's own clock before its iteration ends.
(() => {
  const P = globalThis.__pado;
  const show = (v) => {
    if (typeof v === "string") return v;
    if (v instanceof Error) return String(v);
    try {
      return JSON.stringify(v);
    } catch (e) {
      return String(v);
    }
  };
  const log = (level) => (...args) => P.log(level, args.map(show).join(" "));
  globalThis.console = {
    log: log("log"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
    debug: log("debug"),
  };
  // Made by the first timer: a VU's context makes `Map` on its first use
  // (lazy_builtins.rs), and most scripts set no timer.
  let timers = null;
  let next = 1;
  const add = (id, t) => (timers || (timers = new Map())).set(id, t);
  globalThis.setTimeout = (fn, ms, ...args) => {
    const id = next++;
    add(id, { at: P.now() + (Number(ms) || 0), fn, args, every: 0 });
    return id;
  };
  globalThis.setInterval = (fn, ms, ...args) => {
    const id = next++;
    const every = Math.max(1, Number(ms) || 0);
    add(id, { at: P.now() + every, fn, args, every });
    return id;
  };
  globalThis.clearTimeout = (id) => {
    if (timers) timers.delete(id);
  };
  globalThis.clearInterval = globalThis.clearTimeout;
  globalThis.open = (path, mode) => {
    if (globalThis.__pado_init_done) {
      throw new Error("open() can be called only in the init context (outside any function)");
    }
    return P.open(String(path), mode === undefined ? "" : String(mode));
  };
  // Modules whose events the loop runs (k6/websockets' sockets, k6/net/grpc's
  // streams): each `{ busy(), step(ms) }`, `step` waiting at most `ms` (-1: no
  // limit) for its next event and dispatching it.
  const loops = (globalThis.__pado_loops = []);
  // Run the timers left, in time order, sleeping between them, and the events
  // of those modules while any has work: k6 ends an iteration once its event
  // loop is empty.
  globalThis.__pado_drain = () => {
    for (;;) {
      const net = loops.find((l) => l.busy());
      const busy = net !== undefined;
      if (!(timers && timers.size) && !busy) return;
      let first = null;
      let firstId = 0;
      if (timers) for (const [id, t] of timers) {
        if (first === null || t.at < first.at) {
          first = t;
          firstId = id;
        }
      }
      const wait = first === null ? -1 : Math.max(0, first.at - P.now());
      if (busy && wait !== 0) {
        net.step(wait);
        continue;
      }
      if (wait > 0) P.sleep(wait / 1000);
      if (first.every) first.at += first.every;
      else timers.delete(firstId);
      first.fn(...first.args);
    }
  };
})();
