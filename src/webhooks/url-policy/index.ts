export * from './url-policy';
