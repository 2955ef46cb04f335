import { migrationTimestamp } from './migrate';
import { MIGRATIONS } from './migrations';

describe('migrationTimestamp', () => {
  it('reads the 13-digit timestamp a migration name ends with', () => {
    expect(migrationTimestamp('DeliveryLogPartitions1763801000000')).toBe(1_763_801_000_000);
    expect(migrationTimestamp('NoTimestamp')).toBeNaN();
  });

  // runMigrations({ before }) keeps the migrations older than a timestamp: one without it would be left out silently.
  it('finds one in every migration, in increasing order', () => {
    const stamps = MIGRATIONS.map((m) => migrationTimestamp(m.name));
    expect(stamps.every(Number.isFinite)).toBe(true);
    expect([...stamps].sort((a, b) => a - b)).toEqual(stamps);
  });
});
