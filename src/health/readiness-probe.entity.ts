import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Written by /ready's write probe in a transaction it rolls back: always empty (src/health/database-probe.ts). */
@Entity({ name: 'readiness_probes' })
export class ReadinessProbe {
  @PrimaryColumn({ name: 'probe_id', type: 'text' })
  probeId: string;

  @Column({ name: 'probed_at', type: 'timestamptz' })
  probedAt: Date;
}
