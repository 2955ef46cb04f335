import { Body, Controller, Get, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { CurrentPrincipal, SessionAuth } from '../../identity/auth.decorators';
import { Person } from '../../identity/principal';
import { Clock } from '../../common/clock';
import { NotFoundError } from '../../common/errors';
import { ReadsBody } from '../../common/request-body';
import { DeliveriesService } from '../../delivery/deliveries.service';
import { deliveryArguments } from '../../delivery/delivery.schemas';
import { webhookArguments } from '../../webhooks/webhook.schemas';
import { EVENT_KINDS, PREVIOUS_SECRET_VALIDITY_MS } from '../../webhooks/webhook.types';
import { webhookInput, WebhooksService } from '../../webhooks/webhooks.service';
import { FORM_LIMIT, formAction } from '../kit/form-action';
import { NOTICE_KEY, noticeText, withNotice } from '../kit/notices';
import { PathId } from '../kit/path-id';
import { FieldTable } from '../kit/refusal';
import { PageErrorFilter } from '../kit/page-error.filter';
import { seeOther, sendPage } from '../kit/render';
import { UrlPolicy } from '../../outbound-http/url-policy';
import { DeleteEndpointPage } from './endpoint-delete.page';
import { DeliveryPage } from './delivery.page';
import { EditEndpointPage, EMPTY_FORM, EndpointForm, FormField, formOf, NewEndpointPage } from './endpoint-form.page';
import { EndpointPage, LogQuery } from './endpoint-detail.page';
import { NOTICES } from './webhooks.notices';
import { SecretPage } from './endpoint-secret.page';
import { WebhooksPage } from './webhooks-list.page';

type Form = Record<string, string | undefined> | undefined;
const BASE = '/settings/webhooks';
/**
 * The forms' fields by the tool argument a refusal names; a refusal of anything else is shown above
 * the form. The path ids are checked before (PathId), so a refusal never names them.
 */
const FIELDS: FieldTable<FormField> = {
  fields: Object.fromEntries(
    (['url', 'events', 'mode', 'messageHistoryCount', 'channelScope', 'signatureVersion', 'legacySignature', 'since', 'until'] as const).map((f) => [f, f]),
  ),
  unlisted: 'whole',
};
/** A path id checked as the tools check it (a UUID); anything else is a 400 page. */
const EndpointId = () => PathId('id', (id) => webhookArguments.endpointId({ endpointId: id }).endpointId);
const DeliveryId = () => PathId('deliveryId', (id) => deliveryArguments.detail({ deliveryId: id }).deliveryId);

/**
 * Settings → Webhooks (docs/web.md): the person's endpoints and their delivery logs. Every action
 * goes through the services the MCP tools call (WebhooksService, DeliveriesService), with the
 * person as their principal and the form checked by the features' argument checks, the
 * tools' own input schemas (webhookArguments, deliveryArguments): no rule is written here. A
 * refusal is shown next to its field.
 */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@SessionAuth()
@Controller('settings/webhooks')
export class WebhooksController {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly deliveries: DeliveriesService,
    private readonly clock: Clock,
    private readonly urlPolicy: UrlPolicy,
  ) {}

  @Get()
  async list(@CurrentPrincipal() person: Person, @Query(NOTICE_KEY) done: unknown, @Res() response: Response): Promise<void> {
    const caller = person;
    const endpoints = await this.webhooks.list(caller);
    const rows = await Promise.all(
      endpoints.map(async (endpoint) => ({ endpoint, last: (await this.deliveries.list(caller, endpoint.id)).deliveries[0] ?? null })),
    );
    sendPage(response, 200, <WebhooksPage person={person} endpoints={rows} notice={noticeText(NOTICES, done)} />);
  }

  @Get('new')
  newForm(@CurrentPrincipal() person: Person, @Res() response: Response): void {
    sendPage(response, 200, <NewEndpointPage person={person} form={EMPTY_FORM} errors={{}} urlRule={this.urlPolicy.rule()} />);
  }

  /** Register: the secret is shown once, on the answer itself (never in a URL or a later page). */
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post()
  async register(@CurrentPrincipal() person: Person, @Body() body: Form, @Res() response: Response): Promise<void> {
    await formAction(response, {
      read: () => readEndpointForm(body, person),
      run: async (form) => {
        const { endpoint, secret, signingSecret } = await this.webhooks.register(person, webhookInput(webhookArguments.register(endpointArgs(form, person))));
        return { status: 201, page: <SecretPage person={person} endpoint={endpoint} secret={secret} signingSecret={signingSecret} /> };
      },
      fields: FIELDS,
      again: (form, refusal) => (
        <NewEndpointPage person={person} form={form} errors={{ [refusal.field ?? 'form']: refusal.message }} urlRule={this.urlPolicy.rule()} />
      ),
    });
  }

  @Get(':id')
  async endpoint(
    @CurrentPrincipal() person: Person,
    @EndpointId() id: string,
    @Query() query: Record<string, unknown>,
    @Res() response: Response,
  ): Promise<void> {
    const caller = person;
    const endpoint = await this.webhooks.get(caller, id);
    const log = logQuery(query);
    const args = deliveryArguments.list({ endpointId: id, ...log });
    const [page, failing] = await Promise.all([
      this.deliveries.list(caller, args.endpointId, args.cursor, args.status),
      this.webhooks.failingRun(caller, endpoint.id),
    ]);
    const recovered =
      typeof query.recovered === 'string' && /^\d{1,4}$/.test(query.recovered)
        ? { queued: Number(query.recovered), nextSince: typeof query.nextSince === 'string' && isIso(query.nextSince) ? query.nextSince : null }
        : undefined;
    sendPage(
      response,
      200,
      <EndpointPage
        person={person}
        endpoint={endpoint}
        failing={failing}
        deliveries={page.deliveries}
        nextCursor={page.nextCursor}
        query={log}
        notice={noticeText(NOTICES, query[NOTICE_KEY])}
        recovered={recovered}
      />,
    );
  }

  @Get(':id/edit')
  async editForm(@CurrentPrincipal() person: Person, @EndpointId() id: string, @Res() response: Response): Promise<void> {
    const endpoint = await this.webhooks.get(person, id);
    sendPage(response, 200, <EditEndpointPage person={person} endpoint={endpoint} form={formOf(endpoint)} errors={{}} urlRule={this.urlPolicy.rule()} />);
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/edit')
  async edit(@CurrentPrincipal() person: Person, @EndpointId() id: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    const caller = person;
    const endpoint = await this.webhooks.get(caller, id);
    await formAction(response, {
      read: () => readEndpointForm(body, person),
      run: async (form) => {
        const { endpointId, ...patch } = webhookArguments.update({ endpointId: id, ...endpointArgs(form, person) });
        await this.webhooks.update(caller, endpointId, webhookInput(patch));
        return { redirect: withNotice(`${BASE}/${id}`, 'saved') };
      },
      fields: FIELDS,
      again: (form, refusal) => (
        <EditEndpointPage
          person={person}
          endpoint={endpoint}
          form={form}
          errors={{ [refusal.field ?? 'form']: refusal.message }}
          urlRule={this.urlPolicy.rule()}
        />
      ),
    });
  }

  /** Rotate: the new secret is shown once, on the answer itself. */
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/rotate-secret')
  async rotate(@CurrentPrincipal() person: Person, @EndpointId() id: string, @Res() response: Response): Promise<void> {
    const now = this.clock.now();
    const { endpoint, secret, signingSecret } = await this.webhooks.rotateSecret(person, id, now);
    const previousExpiresAt = new Date(now.getTime() + PREVIOUS_SECRET_VALIDITY_MS).toISOString();
    sendPage(
      response,
      200,
      <SecretPage person={person} endpoint={endpoint} secret={secret} signingSecret={signingSecret} previousExpiresAt={previousExpiresAt} />,
    );
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/disable')
  async disable(@CurrentPrincipal() person: Person, @EndpointId() id: string, @Res() response: Response): Promise<void> {
    await this.webhooks.update(person, id, { status: 'disabled' });
    seeOther(response, withNotice(`${BASE}/${id}`, 'disabled'));
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/enable')
  async enable(@CurrentPrincipal() person: Person, @EndpointId() id: string, @Res() response: Response): Promise<void> {
    await this.webhooks.update(person, id, { status: 'active' });
    seeOther(response, withNotice(`${BASE}/${id}`, 'enabled'));
  }

  @Get(':id/delete')
  async deleteForm(@CurrentPrincipal() person: Person, @EndpointId() id: string, @Res() response: Response): Promise<void> {
    const endpoint = await this.webhooks.get(person, id);
    sendPage(response, 200, <DeleteEndpointPage person={person} endpoint={endpoint} />);
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/delete')
  async delete(@CurrentPrincipal() person: Person, @EndpointId() id: string, @Res() response: Response): Promise<void> {
    await this.webhooks.delete(person, id);
    seeOther(response, withNotice(BASE, 'deleted'));
  }

  /** Recover failed deliveries of a window; the times of the form are UTC. */
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/recover')
  async recover(@CurrentPrincipal() person: Person, @EndpointId() id: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    const caller = person;
    const endpoint = await this.webhooks.get(caller, id);
    await formAction(response, {
      read: () => ({ since: body?.since ?? '', until: body?.until ?? '' }),
      run: async (recoverForm) => {
        const args = deliveryArguments.recover({
          endpointId: id,
          ...(recoverForm.since.trim() ? { since: utcTimestamp(recoverForm.since) } : {}),
          ...(recoverForm.until.trim() ? { until: utcTimestamp(recoverForm.until) } : {}),
        });
        const result = await this.deliveries.recover(caller, args.endpointId, args.since, args.until);
        const next = result.nextSince ? `&nextSince=${encodeURIComponent(result.nextSince)}` : '';
        return { redirect: `${BASE}/${id}?recovered=${result.queued}${next}` };
      },
      fields: FIELDS,
      again: async (recoverForm, refusal) => {
        const page = await this.deliveries.list(caller, id);
        return (
          <EndpointPage
            person={person}
            endpoint={endpoint}
            deliveries={page.deliveries}
            nextCursor={page.nextCursor}
            query={{}}
            recoverForm={recoverForm}
            errors={{ [refusal.field ?? 'form']: refusal.message }}
          />
        );
      },
    });
  }

  @Get(':id/deliveries/:deliveryId')
  async delivery(
    @CurrentPrincipal() person: Person,
    @EndpointId() id: string,
    @DeliveryId() deliveryId: string,
    @Query(NOTICE_KEY) done: unknown,
    @Res() response: Response,
  ): Promise<void> {
    const caller = person;
    const endpoint = await this.webhooks.get(caller, id);
    const detail = await this.deliveries.detail(caller, deliveryId);
    if (detail.delivery.endpointId !== endpoint.id) throw NotFoundError.of('webhook delivery', deliveryId, 'deliveryId');
    sendPage(response, 200, <DeliveryPage person={person} endpoint={endpoint} detail={detail} notice={noticeText(NOTICES, done)} />);
  }

  /** Resend: a new delivery with a new event id; the browser lands on it. */
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/deliveries/:deliveryId/resend')
  async resend(@CurrentPrincipal() person: Person, @EndpointId() id: string, @DeliveryId() deliveryId: string, @Res() response: Response): Promise<void> {
    const caller = person;
    const endpoint = await this.webhooks.get(caller, id);
    const detail = await this.deliveries.detail(caller, deliveryId);
    if (detail.delivery.endpointId !== endpoint.id) throw NotFoundError.of('webhook delivery', deliveryId, 'deliveryId');
    const copy = await this.deliveries.resend(caller, detail.delivery.id);
    seeOther(response, withNotice(`${BASE}/${id}/deliveries/${copy.id}`, 'resent'));
  }
}

/** The add / edit form as typed. Checkboxes have one name each (a form keeps the first value of a repeated name). */
function readEndpointForm(body: Form, person: Person): EndpointForm {
  return {
    url: body?.url ?? '',
    events: EVENT_KINDS.filter((kind) => body?.[`events.${kind}`] !== undefined),
    mode: body?.mode ?? EMPTY_FORM.mode,
    messageHistoryCount: body?.messageHistoryCount ?? '',
    allChannels: body?.scope !== 'lines',
    lineIds: person.lines.filter((line) => body?.[`lines.${line.id}`] !== undefined).map((line) => line.id),
    // Absent (not from the form): left as it is, never a silent switch that would drop a key pair.
    signatureVersion: body?.signatureVersion ?? '',
    legacySignature: body?.legacySignature !== undefined,
  };
}

/** The form as the tools' arguments (register_webhook, update_webhook); their checks (webhookArguments) and the service judge them. */
function endpointArgs(form: EndpointForm, person: Person): Record<string, unknown> {
  const history = form.messageHistoryCount.trim();
  return {
    url: form.url.trim(),
    events: form.events,
    mode: form.mode,
    ...(history === '' ? {} : { messageHistoryCount: /^-?\d+$/.test(history) ? Number(history) : history }),
    ...(form.signatureVersion === '' ? {} : { signatureVersion: form.signatureVersion }),
    legacySignature: form.legacySignature,
    channelScope: form.allChannels
      ? { allChannels: true }
      : {
          allChannels: false,
          channels: person.lines.filter((line) => form.lineIds.includes(line.id)).map((line) => ({ channelType: line.type, channelId: line.id })),
        },
  };
}

function logQuery(query: Record<string, unknown>): LogQuery {
  const log: LogQuery = {};
  if (typeof query.status === 'string' && query.status !== '') log.status = query.status;
  if (typeof query.cursor === 'string' && query.cursor !== '') log.cursor = query.cursor;
  return log;
}

function isIso(text: string): boolean {
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/.test(text);
}

/** A datetime-local value (`2026-01-31T09:00` or with seconds) read as UTC; any other text is passed on for the validator to refuse. */
function utcTimestamp(local: string): string {
  const text = local.trim();
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(text)) return `${text}:00Z`;
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$/.test(text)) return `${text}Z`;
  return text;
}
