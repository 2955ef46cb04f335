import { Body, Controller, Delete, Get, Header, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../identity/auth.decorators';
import { ApiKeysService } from '../auth/api-keys.service';
import { UuidParam } from '../common/uuid-param';
import { linesOfAdminBody } from '../identity/line-selection';
import { CreateApiKeyDto, UpdateApiKeyDto } from './dto/admin.dto';

@ApiTags('admin: api keys')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin')
export class AdminApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  /** Creates a key; the answer is the only time `key` is ever shown. */
  @Post('users/:userId/api-keys')
  @Header('Cache-Control', 'no-store') // the answer holds a secret, shown once
  create(@Param('userId', UuidParam('userId')) userId: string, @Body() body: CreateApiKeyDto) {
    return this.apiKeys.create(userId, { name: body.name, channelAccess: linesOfAdminBody(body.channelAccess), permissions: body.permissions });
  }

  @Get('users/:userId/api-keys')
  list(@Param('userId', UuidParam('userId')) userId: string) {
    return this.apiKeys.listForUser(userId);
  }

  @Patch('api-keys/:keyId')
  update(@Param('keyId', UuidParam('keyId')) keyId: string, @Body() body: UpdateApiKeyDto) {
    return this.apiKeys.update(keyId, {
      channelAccess: body.channelAccess === undefined ? undefined : linesOfAdminBody(body.channelAccess),
      permissions: body.permissions,
    });
  }

  @Delete('api-keys/:keyId')
  @HttpCode(204)
  async revoke(@Param('keyId', UuidParam('keyId')) keyId: string): Promise<void> {
    await this.apiKeys.revoke(keyId);
  }
}
