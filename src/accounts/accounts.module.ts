import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountsService } from './accounts.service';
import { ListPhoneNumbersTool } from './line.tools';
import { EndpointCapAudit, EndpointCapGrant } from './endpoint-cap.entity';
import { LineMembership } from './line-membership.entity';
import { Line } from './line.entity';
import { Org } from './org.entity';
import { User } from './user.entity';

@Module({
  imports: [TypeOrmModule.forFeature([Org, User, Line, LineMembership, EndpointCapGrant, EndpointCapAudit])],
  providers: [AccountsService, ListPhoneNumbersTool],
  exports: [AccountsService],
})
export class AccountsModule {}
