import { constant, defineSlice, oneOf, text } from './settings';

export type AppEnv = 'development' | 'production';
export type ProcessRole = 'api' | 'worker' | 'all';

/** Read first: development relaxes some rules and changes some defaults of the other settings. */
export const APP_ENV = oneOf<AppEnv>('APP_ENV', ['development', 'production'], { default: 'production' });

/** The process as a whole: which environment, which role, and the address it is reached at. */
export const serviceConfig = defineSlice({
  appEnv: APP_ENV,
  isDevelopment: constant(({ isDevelopment }) => isDevelopment),
  processRole: oneOf<ProcessRole>('PROCESS_ROLE', ['api', 'worker', 'all'], { default: 'all' }),
  publicBaseUrl: text('PUBLIC_BASE_URL', { pattern: /^https?:\/\/[^\s]+$/, message: 'must be an http(s) URL', default: 'http://127.0.0.1:3000' }).to((url) =>
    url.replace(/\/+$/, ''),
  ),
});
