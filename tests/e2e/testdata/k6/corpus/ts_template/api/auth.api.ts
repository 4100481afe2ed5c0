// Source: https://github.com/grafana/k6-template-typescript/blob/main/src/api/auth.api.ts
// Adapted: `../globals.ts` with its extension (k6 adds none).
import http, { Response } from 'k6/http';
import { baseURL } from '../globals.ts';
import { ICredentials } from '../model/credentials';

export class AuthApi {
  private url = `${baseURL}/auth`;

  login(credentials: ICredentials): Response {
    return http.post(`${this.url}/token/login/`, credentials);
  }
}
