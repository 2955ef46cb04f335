import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { dataSourceOptions } from './data-source-options';

/** The TypeORM connection every process opens (the app and the short-lived commands), configured from APP_CONFIG. */
export const DatabaseModule = TypeOrmModule.forRootAsync({
  inject: [APP_CONFIG],
  useFactory: (config: AppConfig) => ({ ...dataSourceOptions(config.databaseUrl), retryAttempts: 3 }),
});
