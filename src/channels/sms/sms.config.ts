import { defineSlice, Refused, text } from '../../config/settings';

/** Where outbound SMS go: an HTTP carrier, or Twilio (or a compatible provider) for lines connected to it. */
export const smsConfig = defineSlice({
  /** Where outbound SMS are handed over (an HTTP carrier API); null when none is configured. */
  smsCarrierUrl: text('SMS_CARRIER_URL', { pattern: /^https?:\/\/\S+$/, message: 'must be an http(s) URL' }).to((url) => url ?? null),
  /** Phone lines connected to Twilio (or a compatible provider, docs/twilio.md): its API, without a trailing slash. */
  twilio: {
    apiBaseUrl: text('TWILIO_API_BASE_URL', {
      pattern: /^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/,
      message: 'must be an http(s) URL without a query, such as https://api.twilio.com',
      default: 'https://api.twilio.com',
    }).to((url, { isDevelopment }) => {
      if (!isDevelopment && /^http:/i.test(url)) throw new Refused('must be https when APP_ENV=production (the auth token is sent with every request)');
      return url.replace(/\/+$/, '');
    }),
  },
});
