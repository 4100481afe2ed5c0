// Source: https://github.com/danxsouza/K6_Perfomance_Testing (tests/abort.js)
// Adapted: only the target URL (__ENV.BASE_URL instead of https://test.k6.local).
import http from 'k6/http';
import {sleep} from 'k6';
import exec from 'k6/execution';

export const options = {
    vus: 10,
    duration: '20s',
}

export function setup() {
    let res = http.get(`${__ENV.BASE_URL}/status`);
    if (res.error) {
        exec.test.abort('No status endpoint found');
    }
}

export default function () {
    http.get(`${__ENV.BASE_URL}/some-page`);
    sleep(1);
}
