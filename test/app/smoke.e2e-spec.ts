import { createTestApp, TestApp } from '../support/app';
import { createSession } from '../support/session';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('boots, seeds a session, and the guard resolves the key', async () => {
    const s = await createSession(t.admin);
    expect(s.apiKey).toMatch(/^csk_[0-9a-f]{48}$/);
    const res = await t.http().get('/health');
    expect(res.status).toBe(200);
    const ready = await t.http().get('/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.info).toEqual({ queue: { status: 'up' }, postgres: { status: 'up' }, outbox: { status: 'up' }, delivery_log: { status: 'up' } });
  });
});
