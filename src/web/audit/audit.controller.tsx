import { Controller, Get, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { auditFilterOf, AuditEvents } from '../../audit/audit-events.service';
import { CurrentPrincipal, SessionAuth } from '../../identity/auth.decorators';
import { Person } from '../../identity/principal';
import { PageErrorFilter } from '../kit/page-error.filter';
import { refusalOf } from '../kit/refusal';
import { sendPage } from '../kit/render';
import { AuditQuery, AuditTrailPage } from './audit.page';

const FILTER_FIELDS = { fields: { credentialId: 'credentialId', since: 'since', until: 'until', cursor: 'cursor' } as const, unlisted: 'whole' as const };

/**
 * Settings → Audit trail (docs/web.md): the org's changes, filtered by credential and dates, in
 * keyset pages. Who may see it is AuditEvents' rule (OWNER and ADMIN); a MEMBER gets the 403 page.
 */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@SessionAuth()
@Controller('settings/audit')
export class AuditController {
  constructor(private readonly audit: AuditEvents) {}

  @Get()
  async list(@CurrentPrincipal() person: Person, @Query() raw: Record<string, unknown>, @Res() response: Response): Promise<void> {
    const text = (name: string) => (typeof raw[name] === 'string' ? raw[name] : '');
    const query: AuditQuery = { credentialId: text('credentialId'), since: text('since'), until: text('until'), cursor: text('cursor') || undefined };
    try {
      const data = await this.audit.pageFor(person, auditFilterOf(raw));
      sendPage(response, 200, <AuditTrailPage person={person} query={query} data={data} />);
    } catch (error) {
      const refusal = refusalOf(error, FILTER_FIELDS);
      const data = await this.audit.pageFor(person, {});
      sendPage(
        response,
        refusal.status,
        <AuditTrailPage
          person={person}
          query={query}
          data={{ ...data, events: [], nextCursor: null }}
          error={{ field: refusal.field, message: refusal.message }}
        />,
      );
    }
  }
}
