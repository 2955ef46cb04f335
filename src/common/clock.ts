/** The time, as one injectable provider so tests can move it (auto-disable after 24 h, rotation). */
export abstract class Clock {
  abstract now(): Date;
}

export class SystemClock extends Clock {
  now(): Date {
    return new Date();
  }
}
