export * from './url-policy';
export * from './pinned-lookup';
export * from './caching-host-resolver';
