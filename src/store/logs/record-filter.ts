import { refString, type DecodedLogBatch } from './decode-log-batch.ts';
import { isErrorRecord } from './error-record.ts';
import type { LogFilter, StatusClass } from './log-store.ts';

/** Status range [low, high) of each class of statuses; `error` is no range (isErrorRecord). */
export const STATUS_CLASS_RANGE: Readonly<Record<Exclude<StatusClass, 'error'>, readonly [number, number]>> = {
  '1xx': [100, 200],
  '2xx': [200, 300],
  '3xx': [300, 400],
  '4xx': [400, 500],
  '5xx': [500, 600],
};

/**
 * Which records of a decoded batch a filter keeps, as a test by index; undefined when none
 * can match (a group, model or error code the batch's dictionary lacks). String filters compare refs.
 */
export function recordTest(filter: LogFilter, batch: DecodedLogBatch): ((i: number) => boolean) | undefined {
  const { from, to, access_key_id: key, status, status_class: statusClass } = filter;
  const groupRef = filter.group_id === undefined ? undefined : batch.strings.indexOf(filter.group_id) + 1;
  const modelRef = filter.model === undefined ? undefined : batch.strings.indexOf(filter.model) + 1;
  const errorCodeRef = filter.error_code === undefined ? undefined : batch.strings.indexOf(filter.error_code) + 1;
  if (groupRef === 0 || modelRef === 0 || errorCodeRef === 0) return undefined;
  const range = statusClass === undefined || statusClass === 'error' ? undefined : STATUS_CLASS_RANGE[statusClass];
  const { createdAt, accessKeyId, groupRef: groups, modelRef: models, status: statuses, errorCodeRef: errorCodes } = batch;
  return (i) =>
    (from === undefined || createdAt[i]! >= from) &&
    (to === undefined || createdAt[i]! < to) &&
    (key === undefined || accessKeyId[i] === key) &&
    (groupRef === undefined || groups[i] === groupRef) &&
    (modelRef === undefined || models[i] === modelRef) &&
    (errorCodeRef === undefined || errorCodes[i] === errorCodeRef) &&
    (status === undefined || statuses[i] === status) &&
    (range === undefined || (statuses[i]! >= range[0] && statuses[i]! < range[1])) &&
    (statusClass !== 'error' || isErrorRecord(statuses[i]!, refString(batch, errorCodes[i]!)));
}
