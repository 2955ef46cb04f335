import { Client } from 'pg';
import request from 'supertest';
import { adminClient, TestApp } from '../support/app';
import { CarrierStandIn, partnerPhone, startCarrier } from '../support/messaging-hooks';
import { toolOk } from '../support/mcp';
import { ServiceProcess, startServiceProcess } from '../support/service-process';
import { createSession } from '../support/session';
import { privateQueuePrefix } from '../support/test-env';
import { waitUntil } from '../support/wait';

jest.setTimeout(180_000);

/**
 * Issue 45: "a scheduled send goes out after a restart of the service". The service runs as in
 * production (src/main.ts, its own process, every role); a send is scheduled a few seconds ahead,
 * the process is stopped before its time and started again after it: the message goes out once,
 * from the new process (its delayed job waited in Redis; the time is in the database).
 */
describe('a scheduled send survives a restart of the service', () => {
  let carrier: CarrierStandIn;
  let db: Client;
  let service: ServiceProcess | undefined;

  beforeAll(async () => {
    carrier = await startCarrier();
    db = new Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
  });
  afterAll(async () => {
    await service?.stop();
    await db?.end();
    await carrier?.close();
  });

  it('scheduled, the service stopped past its time, started again: it goes out once', async () => {
    const env = {
      APP_ENV: 'development',
      SMS_CARRIER_URL: carrier.url,
      QUEUE_PREFIX: privateQueuePrefix('scheduled-restart'),
    };
    service = await startServiceProcess(env);
    const app = { http: () => request(service!.base) } as unknown as TestApp;
    const s = await createSession(adminClient(app.http), { lines: ['PHONE_NUMBER'] });
    const to = partnerPhone();
    const sendAt = new Date(Date.now() + 4000);
    const { message } = await toolOk(app, s.apiKey, 'send_sms', { to, body: 'after the restart', sendAt: sendAt.toISOString() });
    expect(message.status).toBe('SCHEDULED');
    await service.stop();
    service = undefined;

    // Down past its time: nothing went out, it is still SCHEDULED.
    await waitUntil(() => Date.now() > sendAt.getTime() + 1000, 'the time to pass while the service is down', { timeoutMs: 10_000 });
    const statusOf = async () => (await db.query(`SELECT status FROM messages WHERE id = $1`, [message.id])).rows[0].status as string;
    expect(await statusOf()).toBe('SCHEDULED');
    expect(carrier.carried).toHaveLength(0);

    service = await startServiceProcess(env);
    await waitUntil(
      async () => (await statusOf()) === 'SENT',
      () => `the message to be SENT after the restart:\n${service!.output().slice(-3000)}`,
      {
        timeoutMs: 60_000,
      },
    );
    expect(carrier.carried).toEqual([expect.objectContaining({ to, body: 'after the restart' })]);
  });
});
