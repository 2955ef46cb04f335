import { Body, Controller, Delete, Get, HttpCode, Param, Put } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBearerAuth, ApiNoContentResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../identity/auth.decorators';
import { UuidParam } from '../common/uuid-param';
import { SendPoliciesService } from '../send-policies/send-policies.service';
import { SendPolicyFields } from '../send-policies/send-policy-rules';
import { SendPolicyDto, SendPolicyOverrideResponse, SendPolicyResponse } from './dto/send-policy.dto';

/** An org's send policy and its credentials' overrides (docs/send-policies.md). */
@ApiTags('admin: send policies')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/orgs/:orgId/send-policy')
export class AdminSendPoliciesController {
  constructor(private readonly policies: SendPoliciesService) {}

  @Get()
  @ApiOperation({ summary: "The org's send policy (every field null when none is set)" })
  @ApiOkResponse({ type: SendPolicyResponse })
  get(@Param('orgId', UuidParam('orgId')) orgId: string) {
    return this.policies.orgPolicy(orgId);
  }

  @Put()
  @ApiOperation({ summary: "Replaces the org's send policy (absent or null: no such rule)" })
  @ApiOkResponse({ type: SendPolicyResponse })
  @ApiBadRequestResponse({ description: 'A field is invalid; the error names it' })
  @ApiNotFoundResponse({ description: 'No such org' })
  set(@Param('orgId', UuidParam('orgId')) orgId: string, @Body() body: SendPolicyDto) {
    return this.policies.setOrgPolicy(orgId, body as SendPolicyFields);
  }

  @Get('credentials/:credentialId')
  @ApiOperation({ summary: "An API key's or OAuth grant's override, and the policy it is held to" })
  @ApiOkResponse({ type: SendPolicyOverrideResponse })
  @ApiNotFoundResponse({ description: 'No API key or OAuth grant of that id in the org' })
  getOverride(@Param('orgId', UuidParam('orgId')) orgId: string, @Param('credentialId', UuidParam('credentialId')) credentialId: string) {
    return this.policies.override(orgId, credentialId);
  }

  @Put('credentials/:credentialId')
  @ApiOperation({ summary: "Replaces the credential's override (absent or null: the org's value)" })
  @ApiOkResponse({ type: SendPolicyOverrideResponse })
  @ApiBadRequestResponse({ description: 'A field is invalid; the error names it' })
  @ApiNotFoundResponse({ description: 'No API key or OAuth grant of that id in the org' })
  setOverride(
    @Param('orgId', UuidParam('orgId')) orgId: string,
    @Param('credentialId', UuidParam('credentialId')) credentialId: string,
    @Body() body: SendPolicyDto,
  ) {
    return this.policies.setOverride(orgId, credentialId, body as SendPolicyFields);
  }

  @Delete('credentials/:credentialId')
  @HttpCode(204)
  @ApiOperation({ summary: "Removes the credential's override: it is held to the org's policy" })
  @ApiNoContentResponse()
  @ApiNotFoundResponse({ description: 'No such credential in the org, or it has no override' })
  async removeOverride(@Param('orgId', UuidParam('orgId')) orgId: string, @Param('credentialId', UuidParam('credentialId')) credentialId: string) {
    await this.policies.removeOverride(orgId, credentialId);
  }
}
