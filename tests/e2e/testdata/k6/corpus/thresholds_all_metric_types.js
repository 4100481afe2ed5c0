// Source: https://grafana.com/docs/k6/latest/using-k6/thresholds/ ("Aggregation methods by type": the script using every metric type)
// Adapted: only the target URL (__ENV.BASE_URL).
import http from 'k6/http';
import { Trend, Rate, Counter, Gauge } from 'k6/metrics';
import { sleep } from 'k6';

export const TrendRTT = new Trend('RTT');
export const RateContentOK = new Rate('ContentOK');
export const GaugeContentSize = new Gauge('ContentSize');
export const CounterErrors = new Counter('Errors');
export const options = {
  thresholds: {
    // Count: Incorrect content cannot be returned more than 99 times.
    Errors: ['count<100'],
    // Gauge: returned content must be smaller than 4000 bytes
    ContentSize: ['value<4000'],
    // Rate: content must be OK more than 95 times
    ContentOK: ['rate>0.95'],
    // Trend: Percentiles, averages, medians, and minimums
    // must be within specified milliseconds.
    RTT: ['p(99)<300', 'p(70)<250', 'avg<200', 'med<150', 'min<100'],
  },
};

export default function () {
  const res = http.get(`${__ENV.BASE_URL}/api/json?name=Bert`);
  const contentOK = res.json('name') === 'Bert';

  TrendRTT.add(res.timings.duration);
  RateContentOK.add(contentOK);
  GaugeContentSize.add(res.body.length);
  CounterErrors.add(!contentOK);

  sleep(1);
}
