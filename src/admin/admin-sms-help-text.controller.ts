import { Body, Controller, Delete, Get, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../identity/auth.decorators';
import { UuidParam } from '../common/uuid-param';
import { OptOutsService } from '../opt-outs/opt-outs.service';
import { SetSmsHelpTextDto } from './dto/admin.dto';

/** The org's answer to an inbound HELP (docs/opt-out.md). */
@ApiTags('admin: SMS opt-out')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/orgs/:orgId/sms-help-text')
export class AdminSmsHelpTextController {
  constructor(private readonly optOuts: OptOutsService) {}

  @Get()
  @ApiOperation({ summary: "The org's HELP answer: its text, whether the org set it (custom) or it is the default naming the org" })
  get(@Param('orgId', UuidParam('orgId')) orgId: string) {
    return this.optOuts.helpText(orgId);
  }

  @Put()
  @ApiOperation({ summary: "Sets the org's HELP answer (at most 320 characters)" })
  set(@Param('orgId', UuidParam('orgId')) orgId: string, @Body() body: SetSmsHelpTextDto) {
    return this.optOuts.setHelpText(orgId, body.helpText);
  }

  @Delete()
  @ApiOperation({ summary: 'Goes back to the default HELP answer, which names the org' })
  remove(@Param('orgId', UuidParam('orgId')) orgId: string) {
    return this.optOuts.setHelpText(orgId, null);
  }
}
