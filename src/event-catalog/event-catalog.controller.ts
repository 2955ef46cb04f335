import { Controller, Get, Param, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { Public } from '../identity/auth.decorators';
import { NotFoundError } from '../common/errors';
import { EVENT_KINDS, EventKind } from '../events/event-kinds';
import { PayloadMode } from '../webhooks/webhook.types';
import { ASYNCAPI_PATH } from './asyncapi-document';
import { EventCatalog } from './event-catalog.service';
import { CATALOG_PATH, PAYLOAD_MODES } from './event-schemas';

/** How long a client may keep a document without asking again; it changes only with a release. */
const CACHE_CONTROL = 'public, max-age=3600';

/**
 * The event catalog, public like the documentation it is (no data of anyone in it) and cacheable
 * (Cache-Control plus the ETag Express adds; If-None-Match answers 304): docs/webhooks.md, "Event catalog".
 */
@ApiExcludeController()
@Public()
@Controller()
export class EventCatalogController {
  constructor(private readonly catalog: EventCatalog) {}

  @Get(CATALOG_PATH)
  index(@Res() res: Response): void {
    send(res, 'application/json', this.catalog.index());
  }

  @Get(`${CATALOG_PATH}/:kind/:mode`)
  payload(@Param('kind') kind: string, @Param('mode') mode: string, @Res() res: Response): void {
    send(res, 'application/schema+json', this.catalog.payloadSchema(...known(kind, mode)));
  }

  @Get(`${CATALOG_PATH}/:kind/:mode/data`)
  data(@Param('kind') kind: string, @Param('mode') mode: string, @Res() res: Response): void {
    send(res, 'application/schema+json', this.catalog.dataSchema(...known(kind, mode)));
  }

  @Get(ASYNCAPI_PATH)
  asyncApi(@Res() res: Response): void {
    send(res, 'application/json', this.catalog.asyncApi());
  }
}

/** The kind and mode of a path, or a 404 naming the segment at fault (the value echoed at most 80 characters long). */
function known(kind: string, mode: string): [EventKind, PayloadMode] {
  if (!(EVENT_KINDS as readonly string[]).includes(kind)) {
    throw new NotFoundError(`no event kind ${JSON.stringify(kind.slice(0, 80))}; one of ${EVENT_KINDS.join(', ')}`, 'kind');
  }
  if (!(PAYLOAD_MODES as readonly string[]).includes(mode)) {
    throw new NotFoundError(`no payload mode ${JSON.stringify(mode.slice(0, 80))}; one of ${PAYLOAD_MODES.join(', ')}`, 'mode');
  }
  return [kind as EventKind, mode as PayloadMode];
}

function send(res: Response, type: string, body: unknown): void {
  res.setHeader('Cache-Control', CACHE_CONTROL);
  res.type(`${type}; charset=utf-8`).send(JSON.stringify(body));
}
