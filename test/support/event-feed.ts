import request from 'supertest';
import { EventFeedService } from '../../src/event-feed/event-feed.service';
import { TestApp } from './app';
import { validatedFeedAnswer } from './event-schemas';

/**
 * GET /api/events with `query`, as a client of the HTTP feed: a 200 answer is checked against the
 * event catalog (every event's `data` against the payloadSchema events/list advertises, strictly)
 * before the test sees it. Every e2e read of the HTTP feed goes through here.
 */
export function getEvents(t: TestApp, authorization: string | null, query: Record<string, string> = {}): request.Test {
  const test = t.http().get('/api/events').query(query);
  if (authorization !== null) test.set('Authorization', authorization);
  return test.expect((res) => void (res.status === 200 && validatedFeedAnswer(res.body)));
}

/**
 * The position in the event log a cursor of `subscription` names (as the service opens it).
 * Cursors are minted afresh on every answer, so a test that checks "resumed where it stopped"
 * compares positions, not strings.
 */
export function cursorPosition(t: TestApp, cursor: string, subscription: { name?: string; arguments?: object }): bigint {
  const feed = t.app.get(EventFeedService);
  return feed.cursors.decode(cursor, feed.subscriptionOf(subscription, subscription.name === undefined).scope);
}
