// A metric name k6 refuses (a `-`): refused at start, naming the metric.
import { Counter } from "k6/metrics";

const bad = new Counter("bad-name");

export default function () {
  bad.add(1);
}
