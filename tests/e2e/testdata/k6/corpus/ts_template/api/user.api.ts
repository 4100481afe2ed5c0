// Source: https://github.com/grafana/k6-template-typescript/blob/main/src/api/user.api.ts
// Adapted: `../globals.ts` with its extension (k6 adds none).
import { baseURL } from '../globals.ts';
import { IUser } from '../model/user';
import http, { Response } from 'k6/http';

export class UserApi {
  private url = `${baseURL}/user`;

  register(user: IUser): Response {
    return http.post(`${this.url}/register/`, user);
  }
}
