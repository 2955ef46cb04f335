import { OriginPolicy } from './origin-policy';

describe('OriginPolicy', () => {
  const production = new OriginPolicy({
    publicBaseUrl: 'https://messages.example.com',
    allowedOrigins: ['https://app.example.com', 'http://localhost:5173'],
    allowLoopback: false,
  });
  const development = new OriginPolicy({ publicBaseUrl: 'http://localhost:3000', allowedOrigins: [], allowLoopback: true });

  it.each([
    'https://messages.example.com',
    'https://MESSAGES.example.com',
    'https://messages.example.com:443',
    'https://app.example.com',
    'http://localhost:5173',
  ])('production allows %s (PUBLIC_BASE_URL or MCP_ALLOWED_ORIGINS, compared as URLs)', (origin) => {
    expect(production.allows(origin)).toBe(true);
  });

  it.each([
    'https://evil.example',
    'https://messages.example.com.evil.example',
    'http://messages.example.com',
    'https://messages.example.com:8443',
    'http://localhost:5174',
    'http://localhost:3000',
    'http://127.0.0.1:3000',
    'null',
    '',
    'https://messages.example.com/',
    'https://user@messages.example.com',
    'file://',
  ])('production refuses %p', (origin) => {
    expect(production.allows(origin)).toBe(false);
  });

  it.each(['http://localhost', 'http://localhost:3000', 'http://localhost:61234', 'http://127.0.0.1:8080', 'http://[::1]:9000', 'http://LOCALHOST:1'])(
    'development allows the loopback origin %s on any port',
    (origin) => {
      expect(development.allows(origin)).toBe(true);
    },
  );

  it.each(['https://localhost:3000', 'http://127.0.0.2:3000', 'http://localhost.evil.example', 'http://evil.example.com', 'http://0.0.0.0:3000', 'null'])(
    'development still refuses %p',
    (origin) => {
      expect(development.allows(origin)).toBe(false);
    },
  );
});
