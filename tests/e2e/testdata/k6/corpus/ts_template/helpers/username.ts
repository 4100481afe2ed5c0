// Source: https://github.com/grafana/k6-template-typescript/blob/main/src/helpers/username.ts
export const generateUsername = () => {
  const timestamp = new Date().getTime();
  return `bert_${timestamp}_${__VU}`;
};
