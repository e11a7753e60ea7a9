export { DATA_FILES, openLowdbConfigStore } from './open-config-store.ts';
export { StoreFileError } from './store-file-error.ts';
