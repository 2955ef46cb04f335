import { describeRedisError } from './queue-probe';

describe('describeRedisError', () => {
  it.each([
    ['MOVED 12539 127.0.0.1:30002', /^Redis answered MOVED: this node does not own the queue's slot .*redis\+cluster:\/\//],
    ["READONLY You can't write against a read only replica.", /^Redis answered READONLY: REDIS_URL points at a replica/],
    ['CLUSTERDOWN The cluster is down', /^Redis answered CLUSTERDOWN/],
    ["OOM command not allowed when used memory > 'maxmemory'.", /^Redis is out of memory/],
    ['WRONGPASS invalid username-password pair or user is disabled.', /^Redis refused the credentials in REDIS_URL$/],
  ])('%s reads as an operator would say it', (message, expected) => {
    expect(describeRedisError(new Error(message))).toMatch(expected);
  });

  it('MOVED through a cluster client (which follows MOVED itself) blames the slot map, not REDIS_URL', () => {
    expect(describeRedisError(new Error('MOVED 12539 127.0.0.1:30002'), true)).toBe(
      "Redis answered MOVED more times than the client follows: the cluster's slot map is changing (a failover or a resharding)",
    );
  });

  it('a connection that could not be made says Redis cannot be reached', () => {
    expect(describeRedisError(new Error('connect ECONNREFUSED 127.0.0.1:6411'))).toBe('Redis cannot be reached (connect ECONNREFUSED 127.0.0.1:6411)');
  });

  it('never repeats a password a message carries', () => {
    const said = describeRedisError(new Error('ERR something about redis://user:s3cret@10.0.0.1:6379'));
    expect(said).not.toContain('s3cret');
    expect(said).toBe('Redis answered an error: ERR something about redis://***@10.0.0.1:6379');
  });
});
