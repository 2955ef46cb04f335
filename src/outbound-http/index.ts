export * from './url-policy';
export * from './pinned-lookup';
