import { notFound } from '../../http/api-error.ts';
import { CHANNEL_IDS, type ChannelId } from '../../generated/index.ts';
import { describeChannel } from '../channel-descriptor.ts';
import { stringParam } from '../params.ts';
import { route, type RouteDef } from '../route-def.ts';

export function channelRoutes(): RouteDef[] {
  // Descriptors depend only on the generated tables, so they are computed once.
  let all: Array<ReturnType<typeof describeChannel>> | undefined;
  const descriptors = () => (all ??= CHANNEL_IDS.map(describeChannel));
  return [
    route({
      method: 'GET',
      path: '/channels',
      async handle() {
        return { data: descriptors() };
      },
    }),
    route({
      method: 'GET',
      path: '/channels/:channel_id',
      async handle(ctx) {
        const id = stringParam(ctx, 'channel_id');
        if (!(CHANNEL_IDS as readonly string[]).includes(id)) throw notFound('channel', id);
        return { data: descriptors()[CHANNEL_IDS.indexOf(id as ChannelId)] };
      },
    }),
  ];
}
