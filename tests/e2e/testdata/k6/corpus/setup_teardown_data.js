// Source: https://grafana.com/docs/k6/latest/using-k6/test-lifecycle/ ("Use data from setup in default and teardown")
// Unchanged: the script makes no request.
export function setup() {
  return { v: 1 };
}

export default function (data) {
  console.log(JSON.stringify(data));
}

export function teardown(data) {
  if (data.v != 1) {
    throw new Error('incorrect data: ' + JSON.stringify(data));
  }
}
