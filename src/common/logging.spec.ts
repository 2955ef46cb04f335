import { createServer, request } from 'node:http';
import { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pinoHttp, { Options } from 'pino-http';
import { AppConfig } from '../config/app-config';
import { loggerParams } from './logging';

/** What one request writes to the log with the service's pino-http options. */
async function logLinesFor(headers: Record<string, string>): Promise<Array<Record<string, unknown>>> {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => { lines.push(String(chunk)); done(); } });
  const options = (loggerParams({ logLevel: 'info' } as AppConfig).pinoHttp ?? {}) as Options;
  const middleware = pinoHttp(options, sink);
  const server = createServer((req, res) => {
    middleware(req, res);
    req.log.info({ token: 'csk_secret' }, 'inside the handler');
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve, reject) => {
    const req = request({ port: (server.address() as AddressInfo).port, path: '/api/mcp?key=abc', headers }, (res) => {
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
});
