import { Logger } from '@nestjs/common';

/**
 * Unit specs build services by hand, without the app's pino logger: Nest's console logger would
 * print their debug lines (DeliveryProcessor's "attempt 1: succeeded" …) into the test output.
 * Silent, as the e2e apps are (LOG_LEVEL=silent), unless TEST_LOG_LEVEL asks for logs.
 */
if (!process.env.TEST_LOG_LEVEL) Logger.overrideLogger(false);
