import { randomBytes, randomInt } from 'node:crypto';
import { AdminClient } from './app';

export interface SessionLine {
  id: string;
  type: 'EMAIL_ACCOUNT' | 'PHONE_NUMBER';
  address: string;
}

export interface Session {
  orgId: string;
  userId: string;
  email: string;
  lines: SessionLine[];
  apiKey: string;
  apiKeyId: string;
}

/** A unique E.164 number and email address per call, so tests never collide. */
export function uniquePhone(): string {
  // 10 random digits: test files run one after another in one database, and a clock-based
  // number repeated across files (a 409 on the line address, seen once in CI).
  return `+1555${randomInt(0, 1e5).toString().padStart(5, '0')}${randomInt(0, 1e5).toString().padStart(5, '0')}`;
}

export function uniqueEmail(local = 'user'): string {
  return `${local}.${randomBytes(5).toString('hex')}@example.com`;
}

async function expectOk<T>(res: { status: number; body: T; text: string }, what: string): Promise<T> {
  if (res.status >= 300) throw new Error(`${what} failed: ${res.status} ${res.text}`);
  return res.body;
}

/**
 * One call for an org, a user, lines the user is a member of, and an API key (Novu's UserSession).
 * Pass `orgId` to add another user to an existing org.
 */
export async function createSession(
  admin: AdminClient,
  options: {
    orgId?: string;
    tier?: 'STARTER' | 'PRO' | 'POWER';
    role?: 'OWNER' | 'ADMIN' | 'MEMBER';
    lines?: Array<'EMAIL_ACCOUNT' | 'PHONE_NUMBER'>;
    channelAccess?: { mode: 'ALL' } | { mode: 'LINES'; lines: string[] };
  } = {},
): Promise<Session> {
  const orgId = options.orgId ?? (await expectOk(await admin.post('/admin/orgs', { name: 'Test Org', tier: options.tier ?? 'PRO' }), 'create org')).id;
  const email = uniqueEmail();
  const user = await expectOk(
    await admin.post(`/admin/orgs/${orgId}/users`, { email, displayName: 'Test User', role: options.role ?? 'OWNER' }),
    'create user',
  );
  const lines: SessionLine[] = [];
  for (const type of options.lines ?? ['EMAIL_ACCOUNT', 'PHONE_NUMBER']) {
    const address = type === 'EMAIL_ACCOUNT' ? uniqueEmail('inbox') : uniquePhone();
    const line = await expectOk(await admin.post(`/admin/orgs/${orgId}/lines`, { type, address }), 'create line');
    await expectOk(await admin.put(`/admin/lines/${line.id}/members/${user.id}`), 'add member');
    lines.push({ id: line.id, type, address });
  }
  const key = await expectOk(
    await admin.post(`/admin/users/${user.id}/api-keys`, { name: 'test key', channelAccess: options.channelAccess ?? { mode: 'ALL' } }),
    'create api key',
  );
  return { orgId, userId: user.id, email, lines, apiKey: key.key, apiKeyId: key.id };
}
