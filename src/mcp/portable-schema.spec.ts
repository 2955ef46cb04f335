import { nonPortableKeywords, portableSchema, undescribedProperties } from './portable-schema';

describe('portableSchema', () => {
  it('moves format, default and uniqueItems into the description, at every depth', () => {
    const schema = {
      type: 'object',
      properties: {
        id: { type: 'string', format: 'uuid', description: 'The thread.' },
        when: { type: 'string', format: 'date-time' },
        mode: { type: 'string', enum: ['a', 'b'], default: 'a' },
        tags: { type: 'array', uniqueItems: true, items: { type: 'string', format: 'email' } },
        nested: { type: 'object', properties: { x: { type: 'integer', default: 3 } }, additionalProperties: false },
      },
      required: ['id'],
      additionalProperties: false,
    };
    expect(portableSchema(schema)).toEqual({
      type: 'object',
      properties: {
        id: { type: 'string', description: 'The thread. Format: a UUID.' },
        when: { type: 'string', format: 'date-time' },
        mode: { type: 'string', enum: ['a', 'b'], description: 'Default: "a".' },
        tags: { type: 'array', items: { type: 'string', description: 'Format: an email address.' }, description: 'No item may appear twice.' },
        nested: { type: 'object', properties: { x: { type: 'integer', description: 'Default: 3.' } }, additionalProperties: false },
      },
      required: ['id'],
      additionalProperties: false,
    });
    expect(nonPortableKeywords(schema)).toEqual([
      '/id: format uuid',
      '/mode: default',
      '/tags: uniqueItems',
      '/tags/items: format email',
      '/nested/x: default',
    ]);
    expect(nonPortableKeywords(portableSchema(schema))).toEqual([]);
  });

  it('drops empty properties and turns type arrays into anyOf', () => {
    const schema = { type: 'object', properties: { note: { type: ['string', 'null'], maxLength: 5 } } };
    expect(portableSchema({ type: 'object', properties: {}, additionalProperties: false })).toEqual({ type: 'object', additionalProperties: false });
    expect(portableSchema(schema)).toEqual({ type: 'object', properties: { note: { anyOf: [{ type: 'string' }, { type: 'null' }], maxLength: 5 } } });
    expect(nonPortableKeywords(schema)).toEqual(['/note: type array']);
    expect(nonPortableKeywords({ type: 'object', properties: {} })).toEqual(['/: empty properties']);
  });

  it('leaves the schema it was given unchanged', () => {
    const schema = { type: 'object', properties: { a: { type: 'string', format: 'uuid' } } };
    const copy = structuredClone(schema);
    portableSchema(schema);
    expect(schema).toEqual(copy);
  });
});

describe('undescribedProperties', () => {
  it('names every property without a description of its own, at any depth', () => {
    const schema = {
      type: 'object',
      properties: {
        described: { type: 'string', description: 'Has one.' },
        bare: { type: 'string', format: 'uuid' },
        blank: { type: 'string', description: '  ' },
        list: {
          type: 'array',
          description: 'A list.',
          items: { type: 'object', properties: { kind: { type: 'string' }, value: { type: 'string', description: 'Has one.' } } },
        },
        maybe: { description: 'Nullable.', anyOf: [{ type: 'object', properties: { inner: { type: 'integer' } } }, { type: 'null' }] },
      },
    };
    expect(undescribedProperties(schema)).toEqual(['/bare', '/blank', '/list/items/kind', '/maybe/anyOf/0/inner']);
  });

  it('finds nothing in a schema without properties', () => {
    expect(undescribedProperties({ type: 'object', additionalProperties: false })).toEqual([]);
  });
});
