// Source: https://grafana.com/docs/k6/latest/examples/distribute-workloads/ ("Split logic across scenarios")
// Adapted: only the target URL (__ENV.BASE_URL instead of https://test.k6.io).
import http from 'k6/http';

export const options = {
  //scenario to view contacts
  scenarios: {
    contacts: {
      executor: 'shared-iterations',
      exec: 'contacts',
      vus: 80,
      iterations: 100,
    },
    //scenario to view news
    news: {
      executor: 'shared-iterations',
      exec: 'news',
      vus: 20,
      iterations: 100,
    },
  },
};

//use the exec property to run different scenarios for different functions

export function contacts() {
  http.get(`${__ENV.BASE_URL}/contacts.php`);
}

export function news() {
  http.get(`${__ENV.BASE_URL}/news.php`);
}
