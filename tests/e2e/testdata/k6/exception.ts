// Every second iteration throws after its request: k6 ends that iteration,
// counts it, and the run goes on. TypeScript: the line named is this file's.
import http, { RefinedResponse, ResponseType } from "k6/http";
import { Options } from "k6/options";

interface Planted {
  message: string;
}

export const options: Options = { vus: 1, iterations: 4 };

export default function (): void {
  const r: RefinedResponse<ResponseType> = http.get(`${__ENV.BASE}/ok?iter=${__ITER}`);
  const planted = { message: "planted failure 파도" } as Planted;
  if ((__ITER as number) % 2 === 1) {
    throw new Error(planted!.message);
  }
}
