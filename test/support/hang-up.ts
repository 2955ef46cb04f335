import { INestApplication } from '@nestjs/common';
import { Server } from 'node:http';
import { Socket } from 'node:net';
import { DataSource } from 'typeorm';
import { waitUntil } from './wait';

/**
 * A client that hangs up while the server waits on the database (its session or key lookup, say),
 * after which the server goes on with the request: whatever it takes from then on (a slot, a
 * budget, a stream's place) is taken for a response that has already closed, and must be given
 * back all the same. `table` is locked; `send` starts the request on a new connection and answers
 * how to hang it up; `waiting` is a LIKE pattern of the statement that then waits on the lock. Resolves once the
 * server has seen the client go and the lock is released; the test then waits for the request
 * to reach whatever it checks (a spy on the method that takes the thing).
 */
export async function hangUpWhileLocked(app: INestApplication, table: string, waiting: string, send: () => (() => void) | Promise<() => void>): Promise<void> {
  const db = app.get(DataSource);
  const server = app.getHttpServer() as Server;
  // The server's connection of this request: its 'close' listener, added after the server's own,
  // runs once the server has closed the response.
  let closed: boolean | undefined;
  const onConnection = (socket: Socket) => {
    closed = false;
    socket.once('close', () => (closed = true));
  };
  const lock = db.createQueryRunner();
  await lock.connect();
  try {
    await lock.startTransaction();
    await lock.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    server.on('connection', onConnection);
    const hangUp = await send();
    await waitUntil(
      async () =>
        (
          await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`, [
            waiting,
          ])
        )[0].n === 1,
      `the request's statement (${waiting}) waiting on the lock of ${table}`,
    );
    server.off('connection', onConnection);
    hangUp();
    await waitUntil(() => closed, 'the server to see the client gone');
    await lock.commitTransaction();
  } finally {
    server.off('connection', onConnection);
    if (lock.isTransactionActive) await lock.rollbackTransaction();
    await lock.release();
  }
}

/** Waits until `spy` has been called `calls` times and each call's promise has settled. */
export async function settled(spy: jest.SpyInstance, calls: number, what: string): Promise<void> {
  await waitUntil(() => spy.mock.results.length >= calls, what);
  await Promise.all(spy.mock.results.map((result) => Promise.resolve(result.value).catch(() => undefined)));
}
