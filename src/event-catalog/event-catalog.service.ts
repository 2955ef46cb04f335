import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { EventKind } from '../events/event-kinds';
import { PayloadMode } from '../webhooks/webhook.types';
import { ASYNCAPI_PATH, asyncApiDocument } from './asyncapi-document';
import { CatalogEntry, catalogIndex, dataSchema, feedPayloadSchema, JsonSchema, payloadSchema } from './event-schemas';

/** The catalog's documents with `$id`s under this service's PUBLIC_BASE_URL, built once. */
@Injectable()
export class EventCatalog {
  private readonly cache = new Map<string, unknown>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** The schema of a whole webhook body (envelope and data) of `kind` in `mode`. */
  payloadSchema(kind: EventKind, mode: PayloadMode): JsonSchema {
    return this.once(`payload:${kind}:${mode}`, () => payloadSchema(kind, mode, this.config.publicBaseUrl));
  }

  /** The schema of the envelope's `data` alone. */
  dataSchema(kind: EventKind, mode: PayloadMode): JsonSchema {
    return this.once(`data:${kind}:${mode}`, () => dataSchema(kind, mode, this.config.publicBaseUrl));
  }

  /** The schema of an event feed occurrence's `data` (events/list's payloadSchema): either mode, by its `mode`. */
  feedPayloadSchema(kind: EventKind): JsonSchema {
    return this.once(`feed:${kind}`, () => feedPayloadSchema(kind));
  }

  /** Every kind with the URLs of its documents, and the URL of the AsyncAPI document. */
  index(): { kinds: CatalogEntry[]; asyncapi: string } {
    return this.once('index', () => ({ kinds: catalogIndex(this.config.publicBaseUrl), asyncapi: `${this.config.publicBaseUrl}${ASYNCAPI_PATH}` }));
  }

  asyncApi(): JsonSchema {
    return this.once('asyncapi', () => asyncApiDocument(this.config.publicBaseUrl));
  }

  private once<T>(key: string, build: () => T): T {
    if (!this.cache.has(key)) this.cache.set(key, build());
    return this.cache.get(key) as T;
  }
}
