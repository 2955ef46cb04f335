import { LineRef } from '../../identity/account.types';

export function lineName(lines: LineRef[], lineId: string): string {
  return lines.find((l) => l.id === lineId)?.address ?? 'a line';
}

export function channelName(channel: string): string {
  return channel === 'EMAIL' ? 'Email' : 'SMS';
}

export function AwaitingMarker() {
  return <span class="awaiting">Awaiting approval</span>;
}
