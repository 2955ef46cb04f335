import { Body, Controller, Delete, Get, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { AccountsService } from '../accounts/accounts.service';
import { AdminOnly } from '../identity/auth.decorators';
import { UuidParam } from '../common/uuid-param';
import { RemoveEndpointCapDto, SetEndpointCapDto } from './dto/admin.dto';

@ApiTags('admin: endpoint caps')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/orgs/:orgId/endpoint-cap')
export class AdminEndpointCapController {
  constructor(private readonly accounts: AccountsService) {}

  /** The effective cap, where it comes from (tier or grant), and the grant history. */
  @Get()
  get(@Param('orgId', UuidParam('orgId')) orgId: string) {
    return this.accounts.endpointCapReport(orgId);
  }

  @Put()
  set(@Param('orgId', UuidParam('orgId')) orgId: string, @Body() body: SetEndpointCapDto) {
    return this.accounts.setEndpointCapGrant(orgId, body);
  }

  /** Removes the grant; the org is back on its tier's cap. */
  @Delete()
  remove(@Param('orgId', UuidParam('orgId')) orgId: string, @Body() body: RemoveEndpointCapDto = {}) {
    return this.accounts.removeEndpointCapGrant(orgId, body.reason ?? 'grant removed');
  }
}
