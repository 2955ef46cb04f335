import { ValidationError } from '../../common/errors';
import { charLength } from '../../common/result-bounds';
import { Channel } from '../conversation-vocabulary';

/** The longest SMS body the service sends (ten segments): send_sms, reply_to_thread, agent replies. */
export const SMS_BODY_MAX = 1600;
/** The longest body of any reply (reply_to_thread, agent replies). */
export const BODY_MAX = 100_000;

/** The one rule for a reply's body on a thread (reply_to_thread, agent turns): not blank, and within its channel's length in characters (code points, as send_sms's bound). */
export function checkReplyBody(channel: Channel, body: string): void {
  const max = channel === 'SMS' ? SMS_BODY_MAX : BODY_MAX;
  if (charLength(body) > max)
    throw new ValidationError(`body must be at most ${max} characters on ${channel === 'SMS' ? 'an SMS' : 'an email'} thread`, 'body');
  if (!/\S/.test(body)) throw new ValidationError('body must not be blank', 'body');
}
