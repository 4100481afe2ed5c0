// Source: https://github.com/grafana/k6-template-typescript/blob/main/src/globals.ts
// Adapted: the target URL (__ENV.BASE_URL).
export const baseURL = __ENV.BASE_URL;
