import { smsKeywordOf } from './sms-keywords';

describe('smsKeywordOf: a keyword is the whole message, trimmed, in any case', () => {
  it.each([
    ['STOP', 'stop'],
    ['  stop\n', 'stop'],
    ['Unsubscribe', 'stop'],
    ['stopall', 'stop'],
    ['cancel', 'stop'],
    ['End', 'stop'],
    ['QUIT', 'stop'],
    ['start', 'start'],
    ['UNSTOP', 'start'],
    ['yes', 'start'],
    ['help', 'help'],
    ['Info ', 'help'],
  ])('%j is %s', (body, action) => {
    expect(smsKeywordOf(body)?.action).toBe(action);
  });

  it.each(['please stop', 'STOP!', 'stop it', 'helpful', 'yes please', '', 'S T O P'])('%j is an ordinary message', (body) => {
    expect(smsKeywordOf(body)).toBeNull();
  });

  it('keeps the keyword as written in capitals', () => {
    expect(smsKeywordOf(' quit ')).toEqual({ action: 'stop', keyword: 'QUIT' });
  });
});
