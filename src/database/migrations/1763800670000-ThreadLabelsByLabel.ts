import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * list_labels shows a label when a thread the key may read carries it (or none does): that asks
 * thread_labels by label, which its primary key (thread_id, label_id) cannot answer without
 * reading the whole table. The index answers it with a probe per label.
 */
export class ThreadLabelsByLabel1763800670000 implements MigrationInterface {
  name = 'ThreadLabelsByLabel1763800670000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX thread_labels_label_idx ON thread_labels (label_id, thread_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX thread_labels_label_idx`);
  }
}
