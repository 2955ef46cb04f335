import { createServer, request } from 'node:http';
import { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pinoHttp, { Options } from 'pino-http';
import { AppConfig } from '../config/app-config';
import { prettyFactory } from 'pino-pretty';
import { loggableUrl, loggerParams, PRETTY_OPTIONS } from './logging';

/**
 * What one request writes to the log with the service's pino-http options for `config` (the
 * transport left out: the lines come here as JSON, as pino hands them to pino-pretty).
 */
async function logLinesFor(
  headers: Record<string, string>,
  path = '/api/mcp?key=abc',
  config: Partial<AppConfig> = { logLevel: 'info' },
  statusCode = 200,
): Promise<Array<Record<string, unknown>>> {
  const lines: string[] = [];
  const sink = new Writable({
    write: (chunk, _enc, done) => {
      lines.push(String(chunk));
      done();
    },
  });
  const { transport: _transport, ...options } = (loggerParams(config as AppConfig).pinoHttp ?? {}) as Options;
  const middleware = pinoHttp(options, sink);
  const server = createServer((req, res) => {
    middleware(req, res);
    req.log.info({ token: 'csk_secret' }, 'inside the handler');
    res.setHeader('set-cookie', 'mss_session=cookie-secret');
    res.setHeader('location', '/callback?code=code-secret');
    res.statusCode = statusCode;
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve, reject) => {
    const req = request({ port: (server.address() as AddressInfo).port, path, headers }, (res) => {
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
    req.end();
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  server.close();
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('request logging', () => {
  it('every line names the service and the request id; credentials and query strings never appear', async () => {
    const lines = await logLinesFor({ authorization: 'Bearer csk_0123', 'x-request-id': 'trace-1' });
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).toMatchObject({ service: 'messaging-sync', req: { id: 'trace-1', method: 'GET', url: '/api/mcp' } });
      expect(line.pid).toBe(process.pid);
    }
    const text = JSON.stringify(lines);
    expect(text).not.toContain('csk_');
    expect(text).not.toContain('key=abc');
    expect(lines[0]).toMatchObject({ msg: 'inside the handler', token: '[redacted]' });
  });

  it('an answer of 503 ends with its one line, without the stack of an error nobody threw (json and pretty)', async () => {
    for (const logFormat of ['json', 'pretty'] as const) {
      const lines = await logLinesFor({ 'x-request-id': 'trace-6' }, '/ready', { logLevel: 'info', logFormat }, 503);
      const last = lines[lines.length - 1];
      expect(last.msg).toMatch(/^GET \/ready 503 \d+ms$/);
      expect(JSON.stringify(last)).not.toContain('failed with status code');
      expect(last.err).toBeUndefined();
    }
  });

  it('each request ends with one info line: method, path, status and time; no response headers', async () => {
    const lines = await logLinesFor({ 'x-request-id': 'trace-3' }, '/attachments/a1/download?expires=1&sig=abc');
    const last = lines[lines.length - 1];
    expect(last).toMatchObject({ level: 30, req: { id: 'trace-3', method: 'GET', url: '/attachments/a1/download' }, res: { statusCode: 200 } });
    expect(last.msg).toMatch(/^GET \/attachments\/a1\/download 200 \d+ms$/);
    expect(typeof last.responseTime).toBe('number');
    expect(last.res).toEqual({ statusCode: 200 });
  });

  it('LOG_LEVEL=debug adds the response headers, with cookies and Location redacted', async () => {
    const lines = await logLinesFor({ 'x-request-id': 'trace-4' }, '/oauth/authorize', { logLevel: 'debug' });
    const last = lines[lines.length - 1];
    expect(last).toMatchObject({ res: { statusCode: 200, headers: { 'set-cookie': '[redacted]', location: '[redacted]' } } });
    const text = JSON.stringify(lines);
    expect(text).not.toContain('cookie-secret');
    expect(text).not.toContain('code-secret');
  });

  it('a tracking pixel token in the path never appears', async () => {
    const token = 'Zq3v9XkT2mLp8RwYc4bN7aHs';
    const lines = await logLinesFor({}, `/t/o/${token}`);
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).toMatchObject({ req: { method: 'GET', url: '/t/o/[redacted]' } });
    expect(JSON.stringify(lines)).not.toContain(token);
  });
});

describe('LOG_FORMAT', () => {
  it('json (production default) writes JSON lines from the process; pretty hands them to pino-pretty', () => {
    expect((loggerParams({ logLevel: 'info', logFormat: 'json' } as AppConfig).pinoHttp as Options).transport).toBeUndefined();
    expect((loggerParams({ logLevel: 'info', logFormat: 'pretty' } as AppConfig).pinoHttp as Options).transport).toEqual({
      target: 'pino-pretty',
      options: PRETTY_OPTIONS,
    });
    // Silent starts no transport thread.
    expect((loggerParams({ logLevel: 'silent', logFormat: 'pretty' } as AppConfig).pinoHttp as Options).transport).toBeUndefined();
  });

  it('pretty: a request ends with one short line, `GET /path 200 3ms` and its id', async () => {
    const lines = await logLinesFor({ 'x-request-id': 'trace-5' }, '/api/mcp?key=abc', { logLevel: 'info', logFormat: 'pretty' });
    const text = prettyFactory({ ...PRETTY_OPTIONS, colorize: false })(lines[lines.length - 1]);
    expect(text.trimEnd()).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/api\/mcp 200 \d+ms \{"req":\{"id":"trace-5"\}\}$/);
    // Lines written while the request runs keep the whole request (id, method and path).
    expect(lines[0]).toMatchObject({ msg: 'inside the handler', req: { id: 'trace-5', method: 'GET', url: '/api/mcp' } });
  });

  it('pretty is one readable line per entry with its request id, and still redacted', async () => {
    const [entry] = await logLinesFor({ authorization: 'Bearer csk_0123', 'x-request-id': 'trace-2' });
    const text = prettyFactory({ ...PRETTY_OPTIONS, colorize: false })(entry);
    expect(text.trimEnd().split('\n')).toHaveLength(1);
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: inside the handler /);
    expect(text).toContain('"id":"trace-2"');
    expect(text).not.toContain('csk_');
    expect(text).not.toContain('hostname');
  });
});

describe('loggableUrl', () => {
  it.each([
    ['/t/o/Zq3v9XkT2mLp8RwYc4bN7aHs', '/t/o/[redacted]'],
    ['/T/O/Zq3v9XkT2mLp8RwYc4bN7aHs', '/T/O/[redacted]'],
    ['/t/o/Zq3v9XkT2mLp8RwYc4bN7aHs/', '/t/o/[redacted]/'],
    ['/t/o/Zq3v9XkT2mLp8RwYc4bN7aHs?utm=1', '/t/o/[redacted]'],
    ['/t/o/a%2Fb%3Fc', '/t/o/[redacted]'],
    ['/attachments/4ea640ab-cba4-4b0b-af7d-2e4b097315e0/download?expires=1763900000&sig=0f1e2d', '/attachments/4ea640ab-cba4-4b0b-af7d-2e4b097315e0/download'],
    ['/api/mcp', '/api/mcp'],
    ['/t/o', '/t/o'],
    ['/admin/t/o/x', '/admin/t/o/x'],
  ])('%s is logged as %s', (url, logged) => {
    expect(loggableUrl(url)).toBe(logged);
  });
});
