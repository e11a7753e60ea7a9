export { resolve, type ResolveInput, type Resolution, type RouteAnswer, type Refusal, type DeclaredMode } from './resolve.ts';
export { REFUSAL_REASONS, type RefusalReason } from './refusal-reasons.ts';
export type { RouteFeatures, FeatureName } from './route-features.ts';
export { matchesModelPattern } from './match-model-pattern.ts';
