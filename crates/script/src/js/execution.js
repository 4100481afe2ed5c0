// k6/execution: what the VU, its scenario and the test are.
const P = globalThis.__pado;

export default {
  vu: {
    get idInTest() { return globalThis.__VU; },
    get idInInstance() { return globalThis.__VU; },
    get iterationInInstance() { return globalThis.__ITER; },
    get iterationInScenario() { return globalThis.__ITER; },
    tags: {},
  },
  scenario: {
    get name() { return P.scenario; },
    get iterationInInstance() { return globalThis.__ITER; },
  },
  instance: {
    get vusActive() { return undefined; },
  },
  test: {
    abort(message) {
      throw new Error("test aborted: " + (message || ""));
    },
    options: {},
  },
};
