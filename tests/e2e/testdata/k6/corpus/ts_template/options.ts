// Source: https://github.com/grafana/k6-template-typescript/blob/main/src/options.ts
import { AllOptions as Options } from 'k6/options';

export let options: Partial<Options> = {
  vus: 10,
  duration: '10s',
};
