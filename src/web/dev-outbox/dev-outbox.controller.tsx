import { Controller, Get, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { CurrentPrincipal, SessionAuth } from '../../identity/auth.decorators';
import { Person } from '../../identity/principal';
import { DevelopmentOutboxService, OUTBOX_SIZE } from '../../conversations/outbound/development-outbox.service';
import { DevOutboxPage } from './dev-outbox.page';
import { PageErrorFilter } from '../kit/page-error.filter';
import { sendPage } from '../kit/render';

/**
 * The development outbox (docs/web.md): what was sent from the signed-in person's lines, as a page
 * and as JSON. DevelopmentOutboxService holds the rules (whose lines; development only).
 */
@ApiExcludeController()
@SessionAuth()
@Controller('dev')
export class DevOutboxController {
  constructor(private readonly outbox: DevelopmentOutboxService) {}

  @UseFilters(PageErrorFilter)
  @Get('outbox')
  async page(@CurrentPrincipal() person: Person, @Res() response: Response): Promise<void> {
    const { messages } = await this.outbox.list(person);
    sendPage(response, 200, <DevOutboxPage person={person} messages={messages} size={OUTBOX_SIZE} />);
  }

  @Get('outbox.json')
  json(@CurrentPrincipal() person: Person) {
    return this.outbox.list(person);
  }
}
