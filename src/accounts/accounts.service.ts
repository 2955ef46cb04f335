import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, In, IsNull, Repository } from 'typeorm';
import { ConflictError, isUniqueViolation, NotFoundError, ValidationError } from '../common/errors';
import { Hooks } from '../common/hooks';
import { LineType, normalizeAddress, OrgTier, TIER_ENDPOINT_CAP } from '../identity/account.types';
import { UserRole } from '../identity/roles';
import { EndpointCapAudit, EndpointCapGrant } from './endpoint-cap.entity';
import { LineMembership } from './line-membership.entity';
import { Line } from './line.entity';
import { Org } from './org.entity';
import { User } from './user.entity';

export interface EndpointCapReport {
  orgId: string;
  effectiveMaxEndpointsPerUser: number;
  source: 'tier' | 'grant';
  tier: OrgTier;
  tierMaxEndpointsPerUser: number;
  grant: { maxEndpointsPerUser: number; reason: string; expiresAt: Date | null; grantedAt: Date; expired: boolean } | null;
  history: Array<{ action: string; maxEndpointsPerUser: number | null; reason: string; expiresAt: Date | null; createdAt: Date }>;
}

/** Orgs, users, lines and who may use which line. */
@Injectable()
export class AccountsService {
  /**
   * Run in the transaction that deletes a line: what belongs to the line alone and must not
   * outlive it goes with it (its mailbox passwords, its SMS provider token). The line's row stays
   * (soft delete, history kept), so ON DELETE CASCADE does not apply.
   */
  readonly lineDeleted = new Hooks<[tx: EntityManager, lineId: string]>('line deleted');
  /**
   * Run after people lost a line (removed from it, or the line deleted), once that is stored:
   * requests that hold one of their credentials open (event streams) look again at once.
   */
  readonly linesLost = new Hooks<[userIds: string[]]>('lines lost');

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(Org) private readonly orgs: Repository<Org>,
    @InjectRepository(User) private readonly users: Repository<User>,
    @InjectRepository(Line) private readonly lines: Repository<Line>,
    @InjectRepository(LineMembership) private readonly memberships: Repository<LineMembership>,
    @InjectRepository(EndpointCapGrant) private readonly grants: Repository<EndpointCapGrant>,
  ) {}

  createOrg(input: { name: string; tier: OrgTier }): Promise<Org> {
    return this.orgs.save(this.orgs.create(input));
  }

  async getOrg(orgId: string): Promise<Org> {
    const org = await this.orgs.findOneBy({ id: orgId });
    if (!org) throw NotFoundError.of('org', orgId, 'orgId');
    return org;
  }

  async updateOrg(orgId: string, patch: { name?: string; tier?: OrgTier }): Promise<Org> {
    const org = await this.getOrg(orgId);
    // Only the fields given: a DTO instance carries the absent ones as own `undefined` properties.
    if (patch.name !== undefined) org.name = patch.name;
    if (patch.tier !== undefined) org.tier = patch.tier;
    return this.orgs.save(org);
  }

  async createUser(orgId: string, input: { email: string; displayName: string; role: UserRole }): Promise<User> {
    await this.getOrg(orgId);
    try {
      return await this.users.save(this.users.create({ ...input, email: normalizeAddress(input.email), orgId }));
    } catch (error) {
      if (isUniqueViolation(error, 'users_email_key')) {
        throw new ConflictError(`a user with email ${normalizeAddress(input.email)} already exists`, 'email');
      }
      throw error;
    }
  }

  async getUser(userId: string): Promise<User> {
    const user = await this.users.findOneBy({ id: userId });
    if (!user) throw NotFoundError.of('user', userId, 'userId');
    return user;
  }

  async createLine(orgId: string, input: { type: LineType; address: string }): Promise<Line> {
    await this.getOrg(orgId);
    const address = normalizeAddress(input.address);
    try {
      return await this.lines.save(this.lines.create({ orgId, type: input.type, address }));
    } catch (error) {
      if (isUniqueViolation(error, 'lines_live_address_key')) {
        throw new ConflictError(`a line with address ${address} already exists`, 'address');
      }
      throw error;
    }
  }

  async getLine(lineId: string): Promise<Line> {
    const line = await this.lines.findOneBy({ id: lineId });
    if (!line) throw NotFoundError.of('line', lineId, 'lineId');
    return line;
  }

  /** Line settings: whether a phone number's carrier reports delivery later. */
  async updateLine(lineId: string, patch: { smsDeliveryReports: boolean }): Promise<Line> {
    const line = await this.getLine(lineId);
    if (line.type !== 'PHONE_NUMBER') {
      throw new ValidationError('smsDeliveryReports applies only to PHONE_NUMBER lines', 'smsDeliveryReports');
    }
    line.smsDeliveryReports = patch.smsDeliveryReports;
    return this.lines.save(line);
  }

  /** Deletes a line: nobody can use it any more and scopes naming it stop matching. */
  async deleteLine(lineId: string): Promise<void> {
    const line = await this.getLine(lineId);
    const members = await this.dataSource.transaction(async (tx) => {
      const gone = await tx.find(LineMembership, { where: { lineId: line.id }, select: { userId: true } });
      await tx.delete(LineMembership, { lineId: line.id });
      await tx.softDelete(Line, { id: line.id });
      await this.lineDeleted.run(tx, line.id);
      return gone.map((m) => m.userId);
    });
    await this.linesLost.run(members);
  }

  async addMember(lineId: string, userId: string): Promise<{ lineId: string; userId: string }> {
    const [line, user] = await Promise.all([this.getLine(lineId), this.getUser(userId)]);
    if (line.orgId !== user.orgId) {
      throw new ConflictError(`user ${userId} is not in the org of line ${lineId}`, 'userId');
    }
    await this.memberships.upsert({ lineId, userId }, { conflictPaths: ['lineId', 'userId'], skipUpdateIfNoValuesChanged: true });
    return { lineId, userId };
  }

  async removeMember(lineId: string, userId: string): Promise<void> {
    await Promise.all([this.getLine(lineId), this.getUser(userId)]);
    const result = await this.memberships.delete({ lineId, userId });
    if (!result.affected) throw new NotFoundError(`user ${userId} is not a member of line ${lineId}`, 'userId');
    await this.linesLost.run([userId]);
  }

  async linesOfOrg(orgId: string, ids: string[]): Promise<Line[]> {
    if (ids.length === 0) return [];
    return this.lines.findBy({ orgId, id: In(ids), deletedAt: IsNull() });
  }

  /** Endpoints per user for the org: the admin grant while it is unexpired, else the tier's. */
  async effectiveEndpointCap(orgId: string, now = new Date()): Promise<{ max: number; source: 'tier' | 'grant' }> {
    const [org, grant] = await Promise.all([this.getOrg(orgId), this.grants.findOneBy({ orgId })]);
    if (grant && (!grant.expiresAt || grant.expiresAt > now)) return { max: grant.maxEndpointsPerUser, source: 'grant' };
    return { max: TIER_ENDPOINT_CAP[org.tier], source: 'tier' };
  }

  async endpointCapReport(orgId: string, now = new Date()): Promise<EndpointCapReport> {
    const org = await this.getOrg(orgId);
    const [grant, history, effective] = await Promise.all([
      this.grants.findOneBy({ orgId }),
      this.dataSource.getRepository(EndpointCapAudit).find({ where: { orgId }, order: { createdAt: 'DESC' } }),
      this.effectiveEndpointCap(orgId, now),
    ]);
    return {
      orgId,
      effectiveMaxEndpointsPerUser: effective.max,
      source: effective.source,
      tier: org.tier,
      tierMaxEndpointsPerUser: TIER_ENDPOINT_CAP[org.tier],
      grant: grant && {
        maxEndpointsPerUser: grant.maxEndpointsPerUser,
        reason: grant.reason,
        expiresAt: grant.expiresAt,
        grantedAt: grant.grantedAt,
        expired: !!grant.expiresAt && grant.expiresAt <= now,
      },
      history: history.map(({ action, maxEndpointsPerUser, reason, expiresAt, createdAt }) => ({
        action,
        maxEndpointsPerUser,
        reason,
        expiresAt,
        createdAt,
      })),
    };
  }

  async setEndpointCapGrant(orgId: string, input: { maxEndpointsPerUser: number; reason: string; expiresAt?: Date | null }): Promise<EndpointCapReport> {
    await this.getOrg(orgId);
    const expiresAt = input.expiresAt ?? null;
    await this.dataSource.transaction(async (tx) => {
      await tx.delete(EndpointCapGrant, { orgId });
      await tx.insert(EndpointCapGrant, { orgId, maxEndpointsPerUser: input.maxEndpointsPerUser, reason: input.reason, expiresAt });
      await tx.insert(EndpointCapAudit, {
        orgId,
        action: 'GRANTED',
        maxEndpointsPerUser: input.maxEndpointsPerUser,
        reason: input.reason,
        expiresAt,
      });
    });
    return this.endpointCapReport(orgId);
  }

  async removeEndpointCapGrant(orgId: string, reason: string): Promise<EndpointCapReport> {
    await this.getOrg(orgId);
    await this.dataSource.transaction(async (tx) => {
      const result = await tx.delete(EndpointCapGrant, { orgId });
      if (!result.affected) throw new NotFoundError(`org ${orgId} has no endpoint-cap grant`, 'orgId');
      await tx.insert(EndpointCapAudit, { orgId, action: 'REMOVED', maxEndpointsPerUser: null, reason, expiresAt: null });
    });
    return this.endpointCapReport(orgId);
  }
}
