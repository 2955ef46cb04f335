import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { AccountsService } from '../accounts/accounts.service';
import { AdminOnly } from '../identity/auth.decorators';
import { UuidParam } from '../common/uuid-param';
import { CreateLineDto, CreateOrgDto, CreateUserDto, UpdateLineDto, UpdateOrgDto } from './dto/admin.dto';

@ApiTags('admin: accounts')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin')
export class AdminAccountsController {
  constructor(private readonly accounts: AccountsService) {}

  @Post('orgs')
  createOrg(@Body() body: CreateOrgDto) {
    return this.accounts.createOrg(body);
  }

  @Get('orgs/:orgId')
  getOrg(@Param('orgId', UuidParam('orgId')) orgId: string) {
    return this.accounts.getOrg(orgId);
  }

  @Patch('orgs/:orgId')
  updateOrg(@Param('orgId', UuidParam('orgId')) orgId: string, @Body() body: UpdateOrgDto) {
    return this.accounts.updateOrg(orgId, body);
  }

  @Post('orgs/:orgId/users')
  createUser(@Param('orgId', UuidParam('orgId')) orgId: string, @Body() body: CreateUserDto) {
    return this.accounts.createUser(orgId, body);
  }

  @Get('users/:userId')
  getUser(@Param('userId', UuidParam('userId')) userId: string) {
    return this.accounts.getUser(userId);
  }

  @Post('orgs/:orgId/lines')
  createLine(@Param('orgId', UuidParam('orgId')) orgId: string, @Body() body: CreateLineDto) {
    return this.accounts.createLine(orgId, body);
  }

  @Patch('lines/:lineId')
  updateLine(@Param('lineId', UuidParam('lineId')) lineId: string, @Body() body: UpdateLineDto) {
    return this.accounts.updateLine(lineId, body);
  }

  @Delete('lines/:lineId')
  @HttpCode(204)
  async deleteLine(@Param('lineId', UuidParam('lineId')) lineId: string): Promise<void> {
    await this.accounts.deleteLine(lineId);
  }

  @Put('lines/:lineId/members/:userId')
  addMember(@Param('lineId', UuidParam('lineId')) lineId: string, @Param('userId', UuidParam('userId')) userId: string) {
    return this.accounts.addMember(lineId, userId);
  }

  @Delete('lines/:lineId/members/:userId')
  @HttpCode(204)
  async removeMember(@Param('lineId', UuidParam('lineId')) lineId: string, @Param('userId', UuidParam('userId')) userId: string): Promise<void> {
    await this.accounts.removeMember(lineId, userId);
  }
}
