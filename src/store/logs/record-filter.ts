import type { DecodedLogBatch } from './decode-log-batch.ts';
import type { LogFilter, StatusClass } from './log-store.ts';

/** Status range [low, high) of each class; `error` is status >= 400. */
export const STATUS_CLASS_RANGE: Readonly<Record<StatusClass, readonly [number, number]>> = {
  '1xx': [100, 200],
  '2xx': [200, 300],
  '3xx': [300, 400],
  '4xx': [400, 500],
  '5xx': [500, 600],
  error: [400, 1000],
};

/**
 * Which records of a decoded batch a filter keeps, as a test by index; undefined when none
 * can match (a group or model the batch's dictionary lacks). String filters compare refs.
 */
export function recordTest(filter: LogFilter, batch: DecodedLogBatch): ((i: number) => boolean) | undefined {
  const { from, to, access_key_id: key, status } = filter;
  const groupRef = filter.group_id === undefined ? undefined : batch.strings.indexOf(filter.group_id) + 1;
  const modelRef = filter.model === undefined ? undefined : batch.strings.indexOf(filter.model) + 1;
  if (groupRef === 0 || modelRef === 0) return undefined;
  const range = filter.status_class === undefined ? undefined : STATUS_CLASS_RANGE[filter.status_class];
  const { createdAt, accessKeyId, groupRef: groups, modelRef: models, status: statuses } = batch;
  return (i) =>
    (from === undefined || createdAt[i]! >= from) &&
    (to === undefined || createdAt[i]! < to) &&
    (key === undefined || accessKeyId[i] === key) &&
    (groupRef === undefined || groups[i] === groupRef) &&
    (modelRef === undefined || models[i] === modelRef) &&
    (status === undefined || statuses[i] === status) &&
    (range === undefined || (statuses[i]! >= range[0] && statuses[i]! < range[1]));
}
