import { ValidationError } from '../common/errors';
import { ChannelAccessMode, LineType, normalizeAddress } from './account.types';

/**
 * Which lines something reaches, one value for every way it is chosen: an API key's or an OAuth
 * grant's channel access, a webhook's channel scope. ALL: every line its person may use, now and
 * later. LINES: the lines named, each either by id (chosen among the lines the principal may use
 * now: a settings form, the consent page, a webhook scope) or by address (the admin API's key
 * allowlist, which may name a line that does not exist yet, or no longer does: it grants nothing
 * until a line has that address). The two are kept apart by type, never mixed in one selection: an
 * id names a line that exists, so it is checked against the principal's lines; an address is
 * stored as it is, in canonical form, and matched to live lines on every request.
 *
 * Each wire format has one parser here (the admin body, the web form and consent, a webhook
 * channelScope; a tool's arguments are a channelScope), and each stored form or view one writer.
 * The wire formats and their error texts are as they were.
 */
export type LineSelection<L extends LineName = LineName> = { mode: 'ALL' } | { mode: 'LINES'; lines: L[] };

/** A line named by its id, optionally with the type the caller says it is (a webhook scope does). */
export interface LineById {
  id: string;
  type?: LineType;
}

/** A line named by its address (an email address or an E.164 number), which may match no line yet. */
export interface LineByAddress {
  address: string;
}

export type LineName = LineById | LineByAddress;

/** The selection of all lines. */
export const ALL_LINES: { mode: 'ALL' } = { mode: 'ALL' };

// ---- parsers, one per wire format ----

/**
 * The admin API's channel access (`{ mode, lines: [address…] }`, its shape already checked by the
 * body's validation): left out is ALL.
 */
export function linesOfAdminBody(body: { mode: ChannelAccessMode; lines?: string[] } | undefined): LineSelection<LineByAddress> {
  return !body || body.mode === 'ALL' ? ALL_LINES : { mode: 'LINES', lines: (body.lines ?? []).map((address) => ({ address })) };
}

/** At most this many lines in one key's or grant's allowlist (as the admin API). */
export const MAX_SELECTED_LINES = 500;

/** What a person chooses under "Channel access", as a settings form or the consent page sends it: all channels, or some of their own lines by id. */
export type PersonChannelAccess = { mode: 'ALL' } | { mode: 'LINES'; lineIds: string[] };

/**
 * The channel access a person chooses (Settings → API keys and Connected apps, the consent page):
 * `{ mode, lineIds: [id…] }`, checked at run time as it comes from a web form. Errors name the field.
 */
export function linesOfPersonChoice(access: unknown): LineSelection<LineById> {
  if (typeof access !== 'object' || access === null) throw new ValidationError('channelAccess must be an object', 'channelAccess');
  const { mode, lineIds } = access as { mode?: unknown; lineIds?: unknown };
  if (mode !== 'ALL' && mode !== 'LINES') throw new ValidationError('channelAccess.mode must be one of ALL, LINES', 'channelAccess.mode');
  if (mode === 'ALL') {
    if (lineIds !== undefined) throw new ValidationError('channelAccess.lineIds is only allowed with mode LINES', 'channelAccess.lineIds');
    return ALL_LINES;
  }
  if (!Array.isArray(lineIds) || lineIds.length === 0) {
    throw new ValidationError('channelAccess.lineIds must list at least one line with mode LINES', 'channelAccess.lineIds');
  }
  if (lineIds.length > MAX_SELECTED_LINES) {
    throw new ValidationError(`channelAccess.lineIds must list at most ${MAX_SELECTED_LINES} lines`, 'channelAccess.lineIds');
  }
  return {
    mode: 'LINES',
    lines: lineIds.map((id: unknown, i) => {
      if (typeof id !== 'string') throw new ValidationError(`channelAccess.lineIds[${i}] must be a line id`, `channelAccess.lineIds[${i}]`);
      return { id };
    }),
  };
}

/** A webhook's channel scope as tools and the web app send it: left out, or allChannels, is ALL. */
export interface ChannelScopeInput {
  allChannels: boolean;
  channels?: Array<{ channelType: LineType; channelId: string }>;
}

/**
 * A webhook's `channelScope` (register_webhook, update_webhook, the endpoint form), its types
 * already checked by the tool's schema: all channels, or at least one line by id with its type.
 */
export function linesOfChannelScope(scope: ChannelScopeInput | undefined): LineSelection<Required<LineById>> {
  const allChannels = scope?.allChannels ?? true;
  const channels = scope?.channels ?? [];
  if (allChannels) {
    if (channels.length > 0) throw new ValidationError('channelScope.channels must be empty when allChannels is true', 'channelScope.channels');
    return ALL_LINES;
  }
  if (channels.length === 0) throw new ValidationError('channelScope.channels must hold at least 1 entry when allChannels is false', 'channelScope.channels');
  return { mode: 'LINES', lines: channels.map((channel) => ({ id: channel.channelId, type: channel.channelType })) };
}

// ---- writers, one per stored form or view ----

/** A key's or grant's columns for a selection by address: the addresses in canonical form, each once. */
export function accessColumnsOf(selection: LineSelection<LineByAddress>): { channelAccessMode: ChannelAccessMode; allowedAddresses: string[] } {
  return selection.mode === 'ALL'
    ? { channelAccessMode: 'ALL', allowedAddresses: [] }
    : { channelAccessMode: 'LINES', allowedAddresses: [...new Set(selection.lines.map((line) => normalizeAddress(line.address)))] };
}

/** Channel access as every view shows it: all lines, or the lines chosen (an address, or a line with its address). */
export type AccessView<L> = { mode: 'ALL' } | { mode: 'LINES'; lines: L[] };

/** A key's or grant's channel access as every view shows it: all its person's lines, or the lines of its allowlist. */
export function accessView<L>(mode: ChannelAccessMode, lines: L[]): AccessView<L> {
  return mode === 'ALL' ? { mode: 'ALL' } : { mode: 'LINES', lines };
}

/** A webhook endpoint's stored channels for a selection: null for all channels. */
export function scopeChannelsOf(selection: LineSelection<Required<LineById>>): Array<{ channelType: LineType; channelId: string }> | null {
  return selection.mode === 'ALL' ? null : selection.lines.map((line) => ({ channelType: line.type, channelId: line.id }));
}
