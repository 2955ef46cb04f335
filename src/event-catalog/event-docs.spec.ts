import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Parser } from '@asyncapi/parser';
import { EVENT_KINDS } from '../events/event-kinds';
import { validatedEnvelope } from '../../test/support/event-schemas';
import { renderEventDocs, SCHEMAS_DIR } from './event-docs';

const ROOT = resolve(__dirname, '../..');

describe('the event catalog in docs/', () => {
  const files = renderEventDocs();

  it.each([...files.keys()])('%s is up to date (npm run docs:events rewrites it)', (path) => {
    const onDisk = existsSync(join(ROOT, path)) ? readFileSync(join(ROOT, path), 'utf8') : '(missing)';
    expect(onDisk).toBe(files.get(path));
  });

  it('docs/events/schemas holds no file the catalog does not write', () => {
    expect(
      readdirSync(join(ROOT, SCHEMAS_DIR))
        .map((name) => `${SCHEMAS_DIR}/${name}`)
        .filter((path) => !files.has(path)),
    ).toEqual([]);
  });

  it('every example on docs/events.md validates against the schema of its kind and mode', () => {
    const page = files.get('docs/events.md')!;
    const examples = [...page.matchAll(/```json\n([\s\S]*?)\n```/g)].map((m) => JSON.parse(m[1]) as { type: string; mode: string });
    expect(examples.map((e) => `${e.type}:${e.mode}`)).toEqual(EVENT_KINDS.flatMap((kind) => [`${kind}:concise`, `${kind}:verbose`]));
    for (const example of examples) expect(() => validatedEnvelope(example)).not.toThrow();
  });

  it('every event example on docs/webhooks.md validates against its schema', () => {
    const page = readFileSync(join(ROOT, 'docs/webhooks.md'), 'utf8');
    const envelopes = [...page.matchAll(/```json\n([\s\S]*?)\n```/g)]
      .map((m) => {
        try {
          return JSON.parse(m[1]) as Record<string, unknown>;
        } catch {
          return null; // a fragment, not a whole body
        }
      })
      .filter((body): body is Record<string, unknown> => !!body && typeof body.type === 'string' && 'data' in body && 'mode' in body);
    expect(envelopes.length).toBeGreaterThanOrEqual(EVENT_KINDS.length * 2);
    for (const envelope of envelopes) expect(() => validatedEnvelope(envelope)).not.toThrow();
  });

  it('the AsyncAPI document is valid for the official AsyncAPI parser, with a channel, an operation and two messages per kind', async () => {
    const { document, diagnostics } = await new Parser().parse(files.get('docs/events/asyncapi.json')!);
    // Spectral severities: 0 error, 1 warning; 2 and 3 are hints (such as "3.1.0 exists").
    expect(diagnostics.filter((d) => d.severity < 2).map((d) => `${d.code}: ${d.message} at ${d.path.join('.')}`)).toEqual([]);
    expect(document).toBeDefined();
    expect(document!.version()).toBe('3.0.0');
    expect(
      document!
        .channels()
        .all()
        .map((c) => c.id()),
    ).toEqual([...EVENT_KINDS]);
    expect(
      document!
        .operations()
        .all()
        .every((o) => o.action() === 'send'),
    ).toBe(true);
    const message = document!
      .messages()
      .all()
      .find((m) => m.name() === 'message.received.verbose')!;
    expect(Object.keys(message.headers()!.properties() ?? {})).toEqual(
      expect.arrayContaining(['X-Service-Signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature']),
    );
    expect(message.payload()!.properties()?.data.properties()?.emailHeaders).toBeDefined();
  });
});
