import { CAPABILITIES, CAPABILITY_IDS, CHANNELS, CHANNEL_IDS, CREDENTIAL_KINDS, type CapabilityId } from '../generated/index.ts';

export interface MatrixTable {
  columns: string[];
  rows: string[][];
}

export interface Matrix {
  core: MatrixTable;
  additional: MatrixTable;
}

const columnsOf = (table: 'core' | 'additional') => CAPABILITY_IDS.filter((id) => CAPABILITIES[id].table === table) as CapabilityId[];

/** The specification's two matrix tables, one row per channel, rebuilt from the generated tables. */
export function buildMatrix(): Matrix {
  const core = columnsOf('core');
  const additional = columnsOf('additional');
  return {
    core: {
      columns: ['Channel', 'Credential', ...core],
      rows: CHANNEL_IDS.map((id) => [id, credentialLabel(id), ...core.map((c) => CHANNELS[id].cells[c].mode)]),
    },
    additional: {
      columns: ['Channel', ...additional, 'DISC', 'PROXY'],
      rows: CHANNEL_IDS.map((id) => [
        id,
        ...additional.map((c) => CHANNELS[id].cells[c].mode),
        CHANNELS[id].discovery ? 'yes' : 'no',
        CHANNELS[id].proxy ? 'yes' : 'no',
      ]),
    },
  };
}

function credentialLabel(id: keyof typeof CHANNELS): string {
  return CHANNELS[id].credential_kinds.map((k) => CREDENTIAL_KINDS[k].label).join(' or ');
}
