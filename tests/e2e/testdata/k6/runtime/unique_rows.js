// 30 shared iterations over 10 VUs: each sends its scenario.iterationInTest,
// which must be unique across VUs (and across the segments of a split test),
// with the other k6/execution figures it can see.
import http from 'k6/http';
import exec from 'k6/execution';

export const options = {
  scenarios: {
    rows: { executor: 'shared-iterations', vus: 10, iterations: 30, maxDuration: '30s' },
  },
};

export default function () {
  const s = exec.scenario;
  const q = [
    `i=${s.iterationInTest}`,
    `inst=${s.iterationInInstance}`,
    `name=${s.name}`,
    `executor=${s.executor}`,
    `vu=${exec.vu.idInTest}`,
    `vuiter=${exec.vu.iterationInScenario}`,
    `active=${exec.instance.vusActive}`,
    `init=${exec.instance.vusInitialized}`,
    `progress=${s.progress >= 0 && s.progress <= 1}`,
    `start=${s.startTime > 1600000000000}`,
    `dur=${exec.instance.currentTestRunDuration >= 0}`,
    `vus=${exec.test.options.scenarios.rows.vus}`,
  ].join('&');
  http.get(`${__ENV.BASE}/row?${q}`);
}
