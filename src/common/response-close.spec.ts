import { createServer, request, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { whenResponseCloses } from './response-close';

describe('whenResponseCloses', () => {
  let server: Server;
  let responses: Array<(response: ServerResponse) => void>;

  beforeEach(async () => {
    responses = [];
    server = createServer((_req, res) => responses.shift()?.(res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** A request whose response the server holds; resolves with it. */
  function held(): Promise<{ response: ServerResponse; hangUp: () => void }> {
    return new Promise((resolve) => {
      const req = request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      req.on('error', () => undefined);
      responses.push((response) => resolve({ response, hangUp: () => req.destroy() }));
      req.end();
    });
  }

  it('calls the listener once, when the client goes away later', async () => {
    const { response, hangUp } = await held();
    const calls: string[] = [];
    whenResponseCloses(response, () => calls.push('closed'));
    expect(calls).toEqual([]);
    hangUp();
    await new Promise((resolve) => response.once('close', resolve));
    expect(calls).toEqual(['closed']);
  });

  it('calls the listener at once when the client went away before it was added', async () => {
    const { response, hangUp } = await held();
    hangUp();
    await new Promise((resolve) => response.once('close', resolve));
    const calls: string[] = [];
    whenResponseCloses(response, () => calls.push('closed'));
    expect(calls).toEqual(['closed']);
  });

  it('calls the listener once the answer is sent, or at once after that', async () => {
    const { response } = await held();
    const calls: string[] = [];
    whenResponseCloses(response, () => calls.push('first'));
    response.end('done');
    await new Promise((resolve) => response.once('close', resolve));
    whenResponseCloses(response, () => calls.push('second'));
    expect(calls).toEqual(['first', 'second']);
  });
});
