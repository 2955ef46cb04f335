import { AuditCall, currentAuditCall, runInAuditCall, targetsOf } from './audit-call';
import { verdictOf } from './audit-verdict';
import { NotFoundError, SendRefusedError, ValidationError } from '../common/errors';

const A = '11111111-1111-4111-8111-111111111111';
const B = '22222222-2222-4222-8222-222222222222';

describe('targetsOf', () => {
  it('names ids by their field, an object field’s id by the field, arrays by their singular; keeps no other text', () => {
    expect(
      targetsOf({
        threadId: A,
        body: 'never kept, even if it looks like 33333333-3333-4333-8333-333333333333',
        message: { id: B, threadId: A, subject: 'hi' },
        contactIds: [A, B],
        messages: [{ id: A }],
        secret: 'whsec_abcdefghijklmnop',
        endpointId: 'not an id',
      }),
    ).toEqual({ threadId: A, messageId: [B, A], contactId: [A, B] });
  });

  it('keeps prefixed tokens such as evt_ ids, and at most 20 names', () => {
    expect(targetsOf({ deliveryId: 'evt_0123456789abcdef' })).toEqual({ deliveryId: 'evt_0123456789abcdef' });
    const many = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`thing${i}Id`, A]));
    expect(Object.keys(targetsOf(many))).toHaveLength(20);
  });
});

describe('verdictOf', () => {
  it('a domain error is refused with its code (a send refusal with its rule, else the field); anything else failed, never the text', () => {
    expect(verdictOf(new SendRefusedError('the body text here', 'opted_out'))).toEqual({
      outcome: 'refused',
      errorCode: 'SEND_REFUSED',
      detail: 'rule: opted_out',
    });
    expect(verdictOf(new ValidationError('to must be E.164: "+1 my text"', 'to'))).toEqual({
      outcome: 'refused',
      errorCode: 'VALIDATION',
      detail: 'field: to',
    });
    expect(verdictOf(NotFoundError.of('thread', A))).toEqual({ outcome: 'refused', errorCode: 'NOT_FOUND', detail: null });
    expect(verdictOf(new Error('secret stuff'))).toEqual({ outcome: 'failed', errorCode: 'INTERNAL', detail: null });
  });
});

describe('the call context', () => {
  it('is the running call until it is closed; concurrent calls never see each other', async () => {
    const call = (action: string) =>
      new AuditCall({ orgId: null, actorKind: 'admin', credentialId: null, userId: null, action, surface: 'admin', targets: {} }, new Date());
    const [a, b] = [call('a'), call('b')];
    const seen = await Promise.all(
      [a, b].map((c) =>
        runInAuditCall(c, async () => {
          await new Promise((resolve) => setImmediate(resolve));
          return currentAuditCall()?.init.action;
        }),
      ),
    );
    expect(seen).toEqual(['a', 'b']);
    expect(currentAuditCall()).toBeUndefined();
    let later: AuditCall | undefined = a;
    await runInAuditCall(a, async () => {
      a.open = false; // the call ended: a timer it left behind sees none
      later = currentAuditCall();
    });
    expect(later).toBeUndefined();
  });
});
