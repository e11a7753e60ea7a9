import type { AccessKeyStore, CredentialStore, GroupStore, ModelPriceStore, SettingsStore } from './config-store.ts';

/**
 * The part of the configuration the data plane needs on every request; a ConfigStore is
 * one. Find the AccessKey by the presented value, the Groups exposing a model, the
 * credentials of a Group with their state (and their values to send upstream), mark a
 * credential disabled or cooling down, read prices and settings.
 */
export interface DataPlaneConfig {
  accessKeys: Pick<AccessKeyStore, 'findByValue' | 'get'>;
  groups: Pick<GroupStore, 'list' | 'listExposingModel' | 'get'>;
  credentials: Pick<CredentialStore, 'list' | 'get' | 'setState' | 'reveal'>;
  modelPrices: Pick<ModelPriceStore, 'get' | 'list'>;
  settings: Pick<SettingsStore, 'get'>;
}
