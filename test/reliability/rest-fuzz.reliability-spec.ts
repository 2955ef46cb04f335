import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { ADMIN_TOKEN, INGEST_TOKEN } from '../support/test-env';
import { admin, createTenant, email, json, phone, send, Tenant } from './support/clients';
import { startStack, Stack } from './support/fixture';
import { deepJson, deepNestingFigure, DEPTHS, errorLinesOf, forgedCursors, holdsIllFormed, hostileString, isIllFormed } from './support/hostile-input';
import { fmt, ResultBuilder, tally } from './support/results';
import { Hints, JsonSchema, objectFor } from './support/schema-arbitrary';

/**
 * Issue 10, §4: "Extend the fuzz test to all of /ingest/* and /admin/* with NUL, surrogates, deep
 * nesting and forged cursors in its corpus: 0 5xx."
 *
 * Every route of the OpenAPI document (/admin/*, /ingest/*, the agents' /api/* routes, signed
 * downloads) plus the tracking pixel, against a running `api` process: bodies generated from each
 * route's own request schema (mostly right, often a little wrong), route params that are real ids,
 * random text or U+0000 and lone surrogates (percent-encoded; a lone surrogate can only be sent as
 * bytes that are not UTF-8), query strings and property names holding them, JSON nested up to
 * 400,000 deep, forged cursors, and inbound emails carrying U+0000 and lone surrogates in every
 * place a message can (raw bytes, quoted-printable =00, base64, encoded-words, RFC 2231 filenames,
 * UTF-16 parts). The right token most of the time.
 *
 * Checked on every answer: an HTTP answer came, it is not a 5xx, an error is JSON with statusCode
 * and message; with valid credentials, any U+0000 or lone surrogate in a param, the query or a JSON
 * body is a 400 (naming the field unless the param could not even be decoded); an inbound email
 * to our line is accepted (201, or 200 for a repeat) whatever text it holds; the pixel is always
 * the GIF. At the end the process is alive and its log has no error line. JSON nested deeper
 * than the limit is refused with a 4xx like any other bad body.
 */
const RUNS = Number(process.env.RELIABILITY_REST_FUZZ_RUNS ?? 3_000);
const SEED = Number(process.env.RELIABILITY_FUZZ_SEED ?? Date.now() % 2 ** 31);
const JSON_LIMIT = 1024 * 1024;

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
/** `signed`: Twilio's callbacks (/ingest/twilio/*), authenticated by a signature over the form, which the fuzz never has. */
type Auth = 'admin' | 'ingest' | 'api-key' | 'public' | 'signed';

interface Route {
  method: Method;
  /** OpenAPI path template, e.g. `/admin/orgs/{orgId}/users`. */
  template: string;
  params: string[];
  body: 'json' | 'email' | 'none';
  schema?: JsonSchema;
  auth: Auth;
}

interface Case {
  route: Route;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** The credentials the route wants (or none needed), and no body the service refuses or ignores first: the text rule decides. */
  textRuleApplies: boolean;
  /** U+0000 or a lone surrogate in a decodable param, the query, or a JSON body the service parses. */
  illFormed: boolean;
  /** A param made of bytes that are not UTF-8 (how a lone surrogate travels in a URL). */
  undecodableParam: boolean;
  deep: boolean;
  /** An inbound email to our line, well-formed enough to store: must be 201 or 200. */
  storableEmail: boolean;
  label: string;
}

/** Percent-encodes a path or query part; a lone surrogate becomes the bytes ED A0 80, which are not UTF-8. */
function pct(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return encodeURIComponent(text.toWellFormed()).replace(/%EF%BF%BD/g, '%ED%A0%80');
  }
}

/** An OpenAPI schema with every $ref and allOf resolved, in the shape schema-arbitrary reads. */
function resolveSchema(schema: any, components: Record<string, any>, depth = 0): JsonSchema {
  if (!schema || depth > 8) return {};
  if (schema.$ref) return resolveSchema(components[String(schema.$ref).split('/').pop()!], components, depth + 1);
  if (schema.allOf) {
    return schema.allOf
      .map((s: any) => resolveSchema(s, components, depth + 1))
      .reduce(
        (a: JsonSchema, b: JsonSchema) => ({
          ...a,
          ...b,
          properties: { ...a.properties, ...b.properties },
          required: [...(a.required ?? []), ...(b.required ?? [])],
        }),
        {},
      );
  }
  const out: JsonSchema = { ...schema };
  if (schema.properties) {
    out.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, resolveSchema(v, components, depth + 1)]));
  }
  if (schema.items) out.items = resolveSchema(schema.items, components, depth + 1);
  return out;
}

function routesOf(doc: any): Route[] {
  const routes: Route[] = [];
  for (const [template, operations] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(operations)) {
      const content = op.requestBody?.content ?? {};
      const auth: Auth = template.startsWith('/admin/')
        ? 'admin'
        : template.startsWith('/ingest/twilio/')
          ? 'signed'
          : template.startsWith('/ingest/')
            ? 'ingest'
            : template.startsWith('/api/')
              ? 'api-key'
              : 'public';
      routes.push({
        method: method.toUpperCase() as Method,
        template,
        params: (op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => p.name),
        body: template === '/ingest/email/inbound' ? 'email' : content['application/json'] ? 'json' : 'none',
        schema: content['application/json'] ? resolveSchema(content['application/json'].schema, doc.components?.schemas ?? {}) : undefined,
        auth,
      });
    }
  }
  // Left out of the OpenAPI document (a mail client's URL, not an API), but a route all the same.
  routes.push({ method: 'GET', template: '/t/o/{token}', params: ['token'], body: 'none', auth: 'public' });
  return routes;
}

// ---------------------------------------------------------------------------------------------
// Inbound emails with U+0000 and lone surrogates wherever a message can hold them

type TextKind = 'plain' | 'raw NUL' | 'Q =00' | 'B NUL' | 'UTF-16 half pair';

const qWord = (text: string) => `=?UTF-8?Q?${[...Buffer.from(text)].map((b) => `=${b.toString(16).padStart(2, '0').toUpperCase()}`).join('')}?=`;
const bWord = (text: string) => `=?UTF-8?B?${Buffer.from(text).toString('base64')}?=`;
const halfPairWord = (text: string) => `=?UTF-16LE?B?${Buffer.concat([Buffer.from(text, 'utf16le'), Buffer.from([0x00, 0xd8])]).toString('base64')}?=`;

/** A header value of the kind asked for, as bytes (a raw NUL is a byte, not text). */
function headerText(kind: TextKind, text: string): Buffer {
  switch (kind) {
    case 'plain':
      return Buffer.from(text);
    case 'raw NUL':
      return Buffer.concat([Buffer.from(text), Buffer.from([0]), Buffer.from('x')]);
    case 'Q =00':
      return Buffer.from(qWord(`${text}\u0000x`));
    case 'B NUL':
      return Buffer.from(bWord(`${text}\u0000x`));
    case 'UTF-16 half pair':
      return Buffer.from(halfPairWord(text));
  }
}

type BodyKind = 'plain' | 'raw NUL' | 'QP =00' | 'base64 NUL' | 'UTF-16 half pair';

function bodyPart(kind: BodyKind, text: string): Buffer {
  switch (kind) {
    case 'plain':
      return Buffer.from(`Content-Type: text/plain; charset=utf-8\r\n\r\n${text}\r\n`);
    case 'raw NUL':
      return Buffer.concat([Buffer.from(`Content-Type: text/plain; charset=utf-8\r\n\r\n${text}`), Buffer.from([0]), Buffer.from('end\r\n')]);
    case 'QP =00':
      return Buffer.from(`Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n${text}=00end\r\n`);
    case 'base64 NUL':
      return Buffer.from(
        `Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n${Buffer.from(`<p>${text}\u0000</p>`).toString('base64')}\r\n`,
      );
    case 'UTF-16 half pair': {
      const bytes = Buffer.concat([Buffer.from(text, 'utf16le'), Buffer.from([0x00, 0xd8]), Buffer.from('end', 'utf16le')]);
      return Buffer.from(`Content-Type: text/plain; charset=utf-16le\r\nContent-Transfer-Encoding: base64\r\n\r\n${bytes.toString('base64')}\r\n`);
    }
  }
}

type FilenameKind = 'none' | 'plain' | 'RFC 2231 %00' | 'Q =00' | 'UTF-16 half pair' | 'only NUL';

function attachmentPart(kind: FilenameKind): Buffer {
  const disposition: Record<Exclude<FilenameKind, 'none'>, string> = {
    plain: 'attachment; filename="notes.txt"',
    'RFC 2231 %00': "attachment; filename*=UTF-8''no%00tes.txt",
    'Q =00': `attachment; filename="${qWord('no\u0000tes.txt')}"`,
    'UTF-16 half pair': `attachment; filename="${halfPairWord('notes')}"`,
    'only NUL': `attachment; filename="${bWord('\u0000')}"`,
  };
  return Buffer.from(`Content-Type: text/plain\r\nContent-Disposition: ${disposition[kind as Exclude<FilenameKind, 'none'>]}\r\n\r\nline one\r\n`);
}

/** Letters, digits and spaces: text that is no header syntax of its own (a colon in a display name makes it a group). */
const safeText = fc.string({ maxLength: 30 }).map((s) => s.replace(/[^A-Za-z0-9 ]/g, '').trim() || 'text');
const textKind = fc.constantFrom<TextKind>('plain', 'raw NUL', 'Q =00', 'B NUL', 'UTF-16 half pair');

function emailArbitrary(to: string): fc.Arbitrary<{ raw: Buffer; storable: boolean; label: string }> {
  const message = fc
    .record({
      subject: fc.tuple(textKind, safeText),
      fromName: fc.tuple(textKind, safeText),
      body: fc.tuple(fc.constantFrom<BodyKind>('plain', 'raw NUL', 'QP =00', 'base64 NUL', 'UTF-16 half pair'), safeText),
      attachment: fc.constantFrom<FilenameKind>('none', 'plain', 'RFC 2231 %00', 'Q =00', 'UTF-16 half pair', 'only NUL'),
      repeatId: fc.integer({ min: 0, max: 9 }),
    })
    .map(({ subject, fromName, body, attachment, repeatId }) => {
      const boundary = `b${randomBytes(4).toString('hex')}`;
      const parts = [bodyPart(body[0], body[1]), ...(attachment === 'none' ? [] : [attachmentPart(attachment)])];
      const raw = Buffer.concat([
        Buffer.from('From: '),
        headerText(fromName[0], fromName[1]),
        Buffer.from(` <sender.${randomBytes(3).toString('hex')}@fuzz.example>\r\n`),
        Buffer.from(`To: ${to}\r\nSubject: `),
        headerText(subject[0], subject[1]),
        // One in ten reuses a Message-ID: a repeat answers 200 with what the first stored.
        Buffer.from(`\r\nMessage-ID: <${repeatId === 0 ? 'repeat' : randomBytes(8).toString('hex')}@fuzz.example>\r\nMIME-Version: 1.0\r\n`),
        Buffer.from(`Content-Type: multipart/mixed; boundary=${boundary}\r\n\r\n`),
        ...parts.flatMap((p) => [Buffer.from(`--${boundary}\r\n`), p]),
        Buffer.from(`--${boundary}--\r\n`),
      ]);
      return { raw, storable: true, label: `email (subject ${subject[0]}, body ${body[0]}, file ${attachment})` };
    });
  return fc.oneof(
    { arbitrary: message, weight: 12 },
    { arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => ({ raw: Buffer.from(b), storable: false, label: 'email: random bytes' })), weight: 1 },
    {
      arbitrary: fc.constant({
        raw: Buffer.from(`From: a@fuzz.example\r\nTo: nobody.${randomBytes(3).toString('hex')}@elsewhere.example\r\n\r\nhi\u0000\r\n`),
        storable: false,
        label: 'email: not our line',
      }),
      weight: 1,
    },
  );
}

// ---------------------------------------------------------------------------------------------

describe('reliability: fuzzing the REST routes (/admin/*, /ingest/*, /api/*)', () => {
  let stack: Stack;
  let base: string;
  let routes: Route[];
  let hints: Hints;
  let apiKey: string;
  /** Lines whose ids the fuzz never sees (so no generated DELETE removes them): SMS and email ingest keep reaching the handlers. */
  let smsLine: string;
  let emailLine: string;
  const result = new ResultBuilder('rest-fuzz', `Fuzzing the REST routes: /admin/*, /ingest/*, /api/* (${fmt(RUNS)} requests)`);

  beforeAll(async () => {
    stack = await startStack({ tag: 'restfuzz', workers: 0 });
    base = stack.apis[0].baseUrl;
    const owner: Tenant = await createTenant(base, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    const other = await createTenant(base, { lines: ['PHONE_NUMBER'] });
    const keep = await createTenant(base, { orgId: owner.orgId, lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    apiKey = keep.apiKey;
    emailLine = keep.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!.address;
    smsLine = keep.lines.find((l) => l.type === 'PHONE_NUMBER')!.address;
    const ownerPhone = owner.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    const inboundSms = async (to: string, from: string, providerMessageId: string): Promise<{ threadId: string }> =>
      json(
        await send('POST', `${base}/ingest/sms/inbound`, {
          headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ to, from, body: 'fuzz seed', providerMessageId }),
        }),
      );
    const { threadId } = await inboundSms(ownerPhone.address, '+16665550100', 'rest-fuzz-seed');
    const kept = await inboundSms(smsLine, '+16665550101', 'rest-fuzz-kept');
    // An agent with a draft turn on that thread, so the agents' routes reach their handlers. The /api
    // routes use the key of a user whose key and membership ids the fuzz never sees (never revoked).
    const agent = await admin(base, 'POST', `/admin/lines/${ownerPhone.id}/agents`, { name: 'Fuzz desk', mode: 'DRAFT' });
    await admin(base, 'PUT', `/admin/lines/${ownerPhone.id}/members/${keep.userId}`);
    const { turn } = json(
      await send('POST', `${base}/api/agents/${agent.id}/turns`, {
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ threadId, body: 'draft reply' }),
      }),
    );
    const doc = json(await send('GET', `${base}/admin/docs-json`));
    routes = routesOf(doc);
    hints = {
      ids: [
        owner.orgId,
        owner.userId,
        owner.apiKeyId,
        ...owner.lines.map((l) => l.id),
        other.orgId,
        other.userId,
        other.lines[0].id,
        agent.id,
        turn.id,
        threadId,
      ],
      byName: {
        to: [smsLine, ownerPhone.address, emailLine, other.lines[0].address],
        from: ['+16665550100', '+16665550102', 'not-a-number'],
        address: [phone(), email('line'), 'not-an-address'],
        email: [email(), 'not-an-email'],
        lines: [ownerPhone.address, emailLine],
        line: [ownerPhone.address, emailLine],
        threadId: [threadId, kept.threadId],
        providerMessageId: ['rest-fuzz-seed', `p-${randomBytes(3).toString('hex')}`],
        contentBase64: [Buffer.from('hello').toString('base64'), 'not base64!'],
        mimeType: ['image/png', 'text/plain', 'text/calendar', 'no-slash'],
        status: ['DELIVERED', 'FAILED'],
        errorKind: ['AUTH', 'NETWORK', 'lower'],
        expiresAt: [new Date(Date.now() + 86_400_000).toISOString(), '2026-02-30T00:00:00.000Z', '0000-01-01T00:00:00.000Z'],
        mode: ['ALL', 'LINES', 'DRAFT', 'AUTO'],
        cursor: [...forgedCursors('list_threads'), ...forgedCursors('list_webhook_deliveries')],
      },
    };
  });
  afterAll(async () => {
    result.record();
    await stack?.stop();
  });

  it(`answers ${fmt(RUNS)} requests to every REST route without a 5xx`, async () => {
    const anyJson = fc.jsonValue({ maxDepth: 3 });
    const paramValue = (name: string): fc.Arbitrary<{ text: string; ill: boolean; undecodable: boolean }> =>
      fc
        .oneof(
          { arbitrary: fc.constantFrom(...hints.ids), weight: 6 },
          { arbitrary: fc.uuid(), weight: 1 },
          { arbitrary: hostileString, weight: 3 },
          { arbitrary: fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !/^\.+$/.test(s)), weight: 1 },
          ...(name === 'token' ? [{ arbitrary: fc.uint8Array({ minLength: 10, maxLength: 20 }).map((b) => Buffer.from(b).toString('hex')), weight: 2 }] : []),
        )
        .map((text: string) => ({ text, ill: isIllFormed(text), undecodable: !text.isWellFormed() }));
    // A query string on one request in four: forged cursors, U+0000 and lone surrogates in names and values.
    const query = fc.oneof(
      { arbitrary: fc.constant(null), weight: 3 },
      {
        arbitrary: fc.dictionary(
          fc.oneof(fc.constantFrom('cursor', 'x', 'q', 'expires', 'sig'), hostileString),
          fc.oneof(hostileString, fc.constantFrom(...(hints.byName.cursor as string[])), fc.string({ maxLength: 10 })),
          { minKeys: 1, maxKeys: 2 },
        ),
        weight: 1,
      },
    );
    const authFor = (route: Route) =>
      fc.oneof(
        { arbitrary: fc.constant<'right' | 'wrong' | 'none'>('right'), weight: 17 },
        { arbitrary: fc.constant<'right' | 'wrong' | 'none'>('wrong'), weight: 2 },
        { arbitrary: fc.constant<'right' | 'wrong' | 'none'>('none'), weight: route.auth === 'public' ? 0 : 1 },
      );
    const token = (route: Route) => ({ admin: ADMIN_TOKEN, ingest: INGEST_TOKEN, 'api-key': apiKey, public: '', signed: INGEST_TOKEN })[route.auth];
    const wrongToken = (route: Route) => (route.auth === 'admin' ? INGEST_TOKEN : route.auth === 'ingest' ? apiKey : ADMIN_TOKEN);

    type JsonBody = { text?: string; value?: unknown; deep: boolean; label: string };
    const jsonBody = (route: Route): fc.Arbitrary<JsonBody> => {
      const schema = route.schema ?? { type: 'object', properties: {} };
      const obj = objectFor(schema, hints);
      const firstField = Object.keys(schema.properties ?? {})[0] ?? 'x';
      return fc.oneof(
        { arbitrary: obj.map((value) => ({ value, deep: false, label: 'schema body' })), weight: route.body === 'json' ? 10 : 0 },
        {
          // A schema body with U+0000 or a lone surrogate put in one field, or in a property name.
          arbitrary: fc.tuple(obj, hostileString, fc.boolean()).map(([value, bad, inKey]) => ({
            value: inKey ? { ...value, [bad]: 1 } : { ...value, [firstField]: bad },
            deep: false,
            label: 'schema body + U+0000 / surrogate',
          })),
          weight: route.body === 'json' ? 4 : 1,
        },
        {
          arbitrary: fc
            .tuple(fc.constantFrom(...DEPTHS), fc.constantFrom('array' as const, 'object' as const), fc.boolean())
            .map(([depth, shape, inField]) => ({
              text: inField ? `{${JSON.stringify(firstField)}:${deepJson(depth, shape)}}` : deepJson(depth, shape),
              deep: true,
              label: 'deep nesting',
            })),
          weight: 1,
        },
        { arbitrary: anyJson.map((value) => ({ value, deep: false, label: 'any JSON' })), weight: 1 },
        { arbitrary: fc.constantFrom('{"name":', 'nul\u0000', '{"a":"\\ud800"', '').map((text) => ({ text, deep: false, label: 'not JSON' })), weight: 1 },
        { arbitrary: fc.constant<JsonBody>({ deep: false, label: 'no body' }), weight: route.body === 'json' ? 1 : 8 },
      );
    };

    const caseFor = (route: Route): fc.Arbitrary<Case> =>
      fc
        .record({
          params: fc.tuple(...route.params.map((p) => paramValue(p))) as fc.Arbitrary<Array<{ text: string; ill: boolean; undecodable: boolean }>>,
          query,
          auth: authFor(route),
          json: jsonBody(route),
          mail: route.body === 'email' ? emailArbitrary(emailLine) : fc.constant(undefined),
          oddType: fc.integer({ min: 0, max: 29 }),
        })
        .map(({ params, query: q, auth, json: jb, mail, oddType }) => {
          let i = 0;
          const path = route.template.replace(/\{[^}]+\}/g, () => pct(params[i++].text));
          const qs = q
            ? `?${Object.entries(q)
                .map(([k, v]) => `${pct(k)}=${pct(v)}`)
                .join('&')}`
            : '';
          const headers: Record<string, string> = {};
          // A signed route has no right bearer token: without Twilio's signature it is refused (403) whatever it holds.
          const authOk = route.auth === 'public' || (auth === 'right' && route.auth !== 'signed');
          if (route.auth !== 'public' && auth !== 'none') headers.authorization = `Bearer ${auth === 'right' ? token(route) : wrongToken(route)}`;
          let body: Buffer | undefined;
          /** The service reads this body as JSON (strict: an object or array, within the limit). */
          let jsonParsed = false;
          /** What the service answers does not depend on a body it refuses or ignores first. */
          let bodyNeutral = true;
          let label: string;
          let storableEmail = false;
          if (route.body === 'email') {
            body = mail!.raw;
            headers['content-type'] = oddType === 0 ? 'text/plain' : 'message/rfc822';
            storableEmail = mail!.storable && oddType !== 0;
            label = mail!.label.startsWith('email (') ? 'email with U+0000 / surrogates' : mail!.label;
          } else {
            label = jb.label;
            const text = jb.text ?? (jb.value === undefined ? undefined : JSON.stringify(jb.value));
            if (text !== undefined) {
              body = Buffer.from(text);
              headers['content-type'] = oddType === 0 ? 'text/plain' : 'application/json';
              const strict = jb.value !== undefined ? typeof jb.value === 'object' && jb.value !== null : jb.deep;
              // A public route never reads a body (docs/security.md): whatever it holds is ignored.
              if (route.auth !== 'public' && route.auth !== 'signed') {
                jsonParsed = headers['content-type'] === 'application/json' && strict && body.length <= JSON_LIMIT;
                bodyNeutral = jsonParsed;
              }
            }
          }
          const decodable = params.filter((p) => !p.undecodable);
          const illFormed =
            decodable.some((p) => p.ill) ||
            // In a query a lone surrogate can only travel as bytes that are not UTF-8, which the query parser reads as U+FFFD: only U+0000 stays.
            (q !== null && Object.entries(q).some(([k, v]) => k.includes('\u0000') || v.includes('\u0000'))) ||
            (jsonParsed && holdsIllFormed(jb.value));
          return {
            route,
            path: `${path}${qs}`,
            headers,
            body,
            textRuleApplies: authOk && bodyNeutral,
            illFormed,
            undecodableParam: params.some((p) => p.undecodable),
            deep: route.auth !== 'public' && route.body !== 'email' && jb.deep && body !== undefined,
            storableEmail: storableEmail && authOk,
            label,
          };
        });

    const cases = fc.integer({ min: 0, max: routes.length - 1 }).chain((n) => caseFor(routes[n]));

    const statuses = new Map<number, number>();
    const labels = new Map<string, number>();
    const byRoute = new Map<string, number>();
    let illFormedRequests = 0;
    let illFormedRefused = 0;
    let emails = 0;
    let emailsStored = 0;
    let deepRequests = 0;
    let deepRefused = 0;
    let fiveXx = 0;
    const started = Date.now();

    result.load = `${fmt(RUNS)} random requests to one api process over ${routes.length} routes, one at a time`;
    result.faults = '—';
    result.badInputs = `${fmt(RUNS)} random requests: U+0000 and lone surrogates in params, queries, bodies, property names and emails; JSON up to 400,000 deep; forged cursors (seed ${SEED})`;
    result.figure('seed (RELIABILITY_FUZZ_SEED to replay)', SEED);
    result.figure('routes (from /admin/docs-json, plus the pixel)', routes.map((r) => `${r.method} ${r.template}`).join(', '));

    try {
      await fc.assert(
        fc.asyncProperty(cases, async (c) => {
          labels.set(c.label, (labels.get(c.label) ?? 0) + 1);
          const routeKey = `${c.route.method} ${c.route.template}`;
          byRoute.set(routeKey, (byRoute.get(routeKey) ?? 0) + 1);
          const answer = await send(c.route.method, `${base}${c.path}`, { headers: c.headers, body: c.body });
          if (answer.status === 0) throw new Error(`${routeKey}: no HTTP answer (${answer.error}): the process is ${stack.apis[0].alive ? 'alive' : 'DEAD'}`);
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          const what = `${c.label} → ${c.route.method} ${c.path.slice(0, 120)} answered ${answer.status} ${answer.text.slice(0, 300)}`;
          if (c.deep) deepRequests += 1;
          if (c.deep && answer.status >= 400 && answer.status < 500) deepRefused += 1;
          if (answer.status >= 500) {
            fiveXx += 1;
            throw new Error(what);
          }
          if (c.route.template === '/t/o/{token}' && ((c.body === undefined && !c.undecodableParam) || answer.status === 200)) {
            // What a mail client fetches (no body) is always the GIF. A body the parser refuses, and a path that is not
            // UTF-8 (the router answers 400 before any route runs; no URL we hand out is like that), are JSON 4xx below.
            if (answer.status !== 200 || answer.headers['content-type'] !== 'image/gif') throw new Error(`the pixel must always be the GIF: ${what}`);
            return;
          }
          const type = String(answer.headers['content-type'] ?? '');
          let body: any;
          if (answer.text !== '') {
            if (!/^application\/json/.test(type)) throw new Error(`not JSON: ${type}: ${what}`);
            body = JSON.parse(answer.text);
          }
          if (answer.status >= 400 && !(typeof body?.statusCode === 'number' && typeof body.message === 'string'))
            throw new Error(`an error without statusCode and message: ${what}`);
          if (c.route.body === 'email') {
            if (c.storableEmail) {
              emails += 1;
              if (answer.status !== 201 && answer.status !== 200) throw new Error(`an inbound email was refused: ${what}`);
              emailsStored += 1;
            }
            return;
          }
          if (c.textRuleApplies && (c.illFormed || c.undecodableParam)) {
            illFormedRequests += 1;
            if (answer.status !== 400) throw new Error(`U+0000 or a lone surrogate was not a 400: ${what}`);
            if (!c.undecodableParam && typeof body.field !== 'string') throw new Error(`the 400 does not name the field: ${what}`);
            illFormedRefused += 1;
          }
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true, interruptAfterTimeLimit: 240_000 },
      );
    } finally {
      const seconds = (Date.now() - started) / 1000;
      result.figure('requests / time', `${fmt([...statuses.values()].reduce((a, b) => a + b, 0))} in ${seconds.toFixed(1)} s`);
      result.figure('requests by route', tally(byRoute));
      result.figure('request kinds', tally(labels));
      result.figure('HTTP statuses', tally(statuses));
      result.figure(
        'requests with U+0000 or a lone surrogate (valid credentials) / answered 400 naming the field',
        `${fmt(illFormedRequests)} / ${fmt(illFormedRefused)}`,
      );
      result.figure('inbound emails to our line carrying U+0000 or lone surrogates / stored (201 or 200)', `${fmt(emails)} / ${fmt(emailsStored)}`);
      result.figure('5xx answers', fmt(fiveXx));
      deepNestingFigure(result, deepRequests, deepRefused);
      errorLinesOf(result, stack.apis[0]);
    }
    expect((await send('GET', `${base}/health`)).status).toBe(200);
    expect(errorLinesOf(result, stack.apis[0])).toEqual([]);
    expect(illFormedRefused).toBe(illFormedRequests);
    expect(emailsStored).toBe(emails);
    result.passed = true;
  });
});
