import type { CredentialStageRecord } from '../store/records.ts';

export type FlowPoll = { state: 'pending' } | { state: 'authorized'; values: Record<string, string> } | { state: 'failed'; error: string };

/**
 * Interactive authorization of subscription credentials (OAuth, device authorization).
 * The adapters provide it; the management plane only keeps the stages and their states.
 */
export interface CredentialFlowProvider {
  start(input: { channel: string; kind: string; stage_id: number }): Promise<{ authorization: Record<string, string>; expires_in_seconds?: number }>;
  poll(stage: CredentialStageRecord): Promise<FlowPoll>;
}
