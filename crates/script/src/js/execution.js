// k6/execution: what the VU, its scenario, this instance and the test are.
// Iteration numbers come with each iteration's start; the live figures
// (`instance`, the scenario's progress) are asked of the VU's task when read.
const P = globalThis.__pado;

const live = () => P.exec();

// The VU's own tags (k6: `vu.tags` and `vu.metrics.tags` are the same map).
const tags = {};

export const vu = {
  get idInTest() { return globalThis.__VU; },
  get idInInstance() { return globalThis.__VU; },
  get iterationInInstance() { return globalThis.__ITER; },
  get iterationInScenario() { return globalThis.__ITER; },
  tags,
  metrics: { tags, metadata: {} },
};

export const scenario = {
  get name() { return P.scenario; },
  get executor() { return live().executor; },
  get startTime() { return live().startTime; },
  get progress() { return live().progress; },
  get iterationInInstance() { return globalThis.__pado_iter_instance; },
  get iterationInTest() { return globalThis.__pado_iter_test; },
};

export const instance = {
  get iterationsCompleted() { return live().iterationsCompleted; },
  get iterationsInterrupted() { return live().iterationsInterrupted; },
  get vusActive() { return live().vusActive; },
  get vusInitialized() { return live().vusInitialized; },
  get currentTestRunDuration() { return live().currentTestRunDuration; },
};

export const test = {
  abort(reason) {
    P.abort(reason === undefined ? "" : String(reason));
  },
  get options() { return globalThis.__pado_options; },
};

export default { vu, scenario, instance, test };
