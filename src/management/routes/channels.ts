import { notFound } from '../../http/api-error.ts';
import { CHANNEL_IDS, type ChannelId } from '../../generated/index.ts';
import { describeChannel } from '../channel-descriptor.ts';
import { stringParam } from '../params.ts';
import { route, type RouteDef } from '../route-def.ts';

export function channelRoutes(): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/channels',
      async handle() {
        return { data: CHANNEL_IDS.map(describeChannel) };
      },
    }),
    route({
      method: 'GET',
      path: '/channels/:channel_id',
      async handle(ctx) {
        const id = stringParam(ctx, 'channel_id');
        if (!(CHANNEL_IDS as readonly string[]).includes(id)) throw notFound('channel', id);
        return { data: describeChannel(id as ChannelId) };
      },
    }),
  ];
}
