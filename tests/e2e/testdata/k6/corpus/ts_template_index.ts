// Source: https://github.com/grafana/k6-template-typescript/blob/main/src/index.ts
// Adapted: the local imports name their `.ts` file (k6 adds no extension to an
// import; the type-only imports of `../model/*` stay as written: they are
// dropped with the types), and `globals.ts` reads __ENV.BASE_URL. Its modules
// are in `ts_template/`.
import { sleep, check, group } from 'k6';
import { AuthApi } from './ts_template/api/auth.api.ts';
import { UserApi } from './ts_template/api/user.api.ts';
import { generateUsername } from './ts_template/helpers/username.ts';

export { options } from './ts_template/options.ts';

const auth = new AuthApi();
const users = new UserApi();

export default () => {
  const credentials = {
    username: generateUsername(),
    password: 'a-topsecret-password',
  };

  group('register user', () => {
    const registrationResponse = users.register({
      ...credentials,
      email: `${credentials.username}@example.com`,
      first_name: 'Bert',
      last_name: 'Crocson',
    });

    check(registrationResponse, {
      'registration was successful': (r) => r.status === 201,
      'response contain the username': (r) =>
        r.json('username') === credentials.username,
      'response does not contain the password': (r) => !r.json('password'),
    });
  });

  group('login as user', () => {
    const authResponse = auth.login(credentials);
    const token = authResponse.json('access');

    check(token, {
      'login was successful': () => authResponse.status === 200,
      'received a token': () => !!token,
    });
  });

  sleep(1);
};
