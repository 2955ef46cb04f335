import { TestApp } from './app';

/** The origin of PUBLIC_BASE_URL in the test environment (test/support/env.ts): what a browser on the service's pages sends. */
export const PAGE_ORIGIN = 'http://127.0.0.1:3000';

/** A signed-in browser as the page tests drive it: its session cookie and the session's CSRF token. */
export interface PageBrowser {
  cookie: string;
  csrf: string;
}

/** Signs the user in through an admin-made link, as a browser would (Origin set), and reads the CSRF token from a page. */
export async function signInBrowser(t: TestApp, userId: string, origin = PAGE_ORIGIN): Promise<PageBrowser> {
  const link = await t.admin.post(`/admin/users/${userId}/sign-in-links`).expect(201);
  const token = new URL(link.body.url).searchParams.get('token')!;
  const res = await t.http().post('/sign-in/link').set('Origin', origin).type('form').send({ token }).expect(303);
  const cookie = String(res.headers['set-cookie'][0]).split(';')[0];
  const page = await t.http().get('/settings/api-keys').set('Cookie', cookie).expect(200);
  return { cookie, csrf: /name="_csrf" value="([^"]+)"/.exec(page.text)![1] };
}

/** A form POST as the signed-in browser sends it: its session cookie, the page origin and the CSRF token. */
export function postForm(t: TestApp, b: PageBrowser, path: string, fields: Record<string, string> = {}) {
  return t
    .http()
    .post(path)
    .set('Cookie', b.cookie)
    .set('Origin', PAGE_ORIGIN)
    .type('form')
    .send({ _csrf: b.csrf, ...fields });
}
