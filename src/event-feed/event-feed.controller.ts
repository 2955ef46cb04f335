import { Controller, Get, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { Response } from 'express';
import { CurrentPrincipal, KeyAction } from '../identity/auth.decorators';
import { Principal } from '../identity/principal';
import { whenResponseCloses } from '../common/response-close';
import { DomainError, ForbiddenError, NotFoundError, RateLimitedError, ValidationError } from '../common/errors';
import { FeedRefusal } from './event-feed.errors';
import { EventFeedService, FEED_PERMISSION, PollResult } from './event-feed.service';

/** The query parameters that are filters or payload options (the `arguments` of events/poll). */
const ARGUMENT_PARAMETERS = ['line', 'thread', 'direction', 'label', 'mode'] as const;
/**
 * Every query parameter the feed takes (docs/events-feed.md): any other is refused, naming it, as
 * the API's DTO-validated routes refuse one (forbidNonWhitelisted), so a misspelt filter
 * (`lines=`, `type[]=`) is an error rather than an answer with every event unfiltered.
 */
const KNOWN_PARAMETERS: ReadonlySet<string> = new Set([...ARGUMENT_PARAMETERS, 'messageHistoryCount', 'type', 'cursor', 'limit', 'maxAgeMs', 'wait']);

/**
 * The event feed for clients that do not speak MCP (docs/events-feed.md): `GET /api/events`, the
 * same reads as events/poll (EventFeedService), the same credentials as the API (Bearer key or
 * OAuth token), the `webhooks` permission, the key's rate and running-call limits (@KeyAction).
 * Refusals are the API's JSON errors naming the query parameter.
 */
@ApiTags('events')
@ApiBearerAuth()
@Controller('api/events')
export class EventFeedController {
  constructor(private readonly feed: EventFeedService) {}

  @Get()
  @KeyAction(FEED_PERMISSION)
  async list(@Query() query: Record<string, unknown>, @Res({ passthrough: true }) res: Response, @CurrentPrincipal() caller: Principal): Promise<PollResult> {
    const unknown = Object.keys(query).find((name) => !KNOWN_PARAMETERS.has(name));
    if (unknown !== undefined) {
      throw new ValidationError(`${unknown.slice(0, 80)} is not a parameter of this feed; it takes ${[...KNOWN_PARAMETERS].join(', ')}`, unknown.slice(0, 80));
    }
    const args: Record<string, unknown> = {};
    for (const name of ARGUMENT_PARAMETERS) if (query[name] !== undefined) args[name] = single(query[name], name);
    if (query.messageHistoryCount !== undefined) args.messageHistoryCount = integerParameter(query.messageHistoryCount, 'messageHistoryCount');
    const wait = query.wait === undefined ? 0 : integerParameter(query.wait, 'wait');
    const aborted = new AbortController();
    whenResponseCloses(res, () => aborted.abort()); // the client hung up: a waiting read ends
    try {
      return await this.feed.poll(
        caller,
        {
          name: query.type === undefined ? undefined : single(query.type, 'type'),
          arguments: args,
          cursor: query.cursor === undefined ? null : single(query.cursor, 'cursor'),
          maxEvents: query.limit === undefined ? undefined : integerParameter(query.limit, 'limit'),
          maxAgeMs: query.maxAgeMs === undefined ? undefined : integerParameter(query.maxAgeMs, 'maxAgeMs'),
          timeoutMs: wait <= Math.floor(this.feed.maxWaitMs / 1000) ? wait * 1000 : invalidWait(Math.floor(this.feed.maxWaitMs / 1000)),
        },
        { signal: aborted.signal, allKinds: true },
      );
    } catch (error) {
      throw error instanceof FeedRefusal ? httpErrorOf(error) : error;
    }
  }
}

/** The name of a parameter as this route takes it, for one the service named by its events/poll name. */
const PARAMETER_NAMES: Record<string, string> = { name: 'type', maxEvents: 'limit', timeoutMs: 'wait' };

/**
 * `message` with the parameter `from` called `to`: whole words only, and never inside a quoted
 * value (the caller's own input, echoed as JSON, stays as it was given).
 */
function renamed(message: string, from: string, to: string): string {
  const word = new RegExp(`\\b${from}\\b`, 'g');
  return message
    .split(/("(?:[^"\\]|\\.)*")/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(word, to)))
    .join('');
}

function httpErrorOf(refusal: FeedRefusal): DomainError {
  const named = typeof refusal.data.field === 'string' ? refusal.data.field.replace(/^arguments\./, '') : undefined;
  const field = named === undefined ? undefined : (PARAMETER_NAMES[named] ?? named);
  const message = field && named && field !== named ? renamed(refusal.message, named, field) : refusal.message;
  switch (refusal.kind) {
    case 'not_found':
      return new NotFoundError(message, field);
    case 'forbidden':
      return new ForbiddenError(message);
    case 'exhausted':
      return new RateLimitedError(message, 1);
    default:
      return new ValidationError(message, field);
  }
}

function single(value: unknown, name: string): string {
  if (typeof value !== 'string') throw new ValidationError(`${name} must be given once, as a single value`, name);
  return value;
}

function integerParameter(value: unknown, name: string): number {
  const text = single(value, name);
  if (!/^[0-9]{1,15}$/.test(text)) throw new ValidationError(`${name} must be a whole number`, name);
  return Number(text);
}

function invalidWait(maxSeconds: number): never {
  throw new ValidationError(`wait must be a whole number of seconds from 0 to ${maxSeconds}`, 'wait');
}
