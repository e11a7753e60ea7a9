export { DATA_FILES, openLowdbConfigStore, type OpenOptions } from './open-config-store.ts';
export { StoreFileError } from './store-file-error.ts';
