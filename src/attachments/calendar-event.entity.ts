import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Attachment } from './attachment.entity';

/** An event of a calendar attachment (.ics), stored by its extraction. */
@Entity({ name: 'calendar_events' })
@Index('calendar_events_attachment_idx', ['attachmentId'])
export class CalendarEvent {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'attachment_id', type: 'uuid' })
  attachmentId: string;

  @ManyToOne(() => Attachment, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'attachment_id', foreignKeyConstraintName: 'calendar_events_attachment_id_fkey' })
  attachment?: Attachment;

  /** The iCalendar UID, METHOD and STATUS, as the file has them. */
  @Column({ type: 'text' })
  uid: string;

  @Column({ type: 'text', nullable: true })
  method: string | null;

  @Column({ type: 'text', nullable: true })
  status: string | null;

  @Column({ type: 'text', nullable: true })
  summary: string | null;

  @Column({ name: 'starts_at', type: 'timestamptz', nullable: true })
  startsAt: Date | null;

  @Column({ name: 'ends_at', type: 'timestamptz', nullable: true })
  endsAt: Date | null;

  @Column({ name: 'organizer_email', type: 'text', nullable: true })
  organizerEmail: string | null;

  @Column({ name: 'attendee_emails', type: 'text', array: true, default: () => "'{}'" })
  attendeeEmails: string[];
}
