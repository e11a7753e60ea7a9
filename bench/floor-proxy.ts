import { createServer } from 'node:http';
import { announceListening } from './bench-child.ts';
import { floorHandler } from './floor-handler.ts';
import { UpstreamClient } from '../src/upstream/index.ts';

/**
 * The floor: node:http plus the gateway's upstream client, nothing else (floor-handler.ts).
 * Whatever switchyard adds on top of this (auth, routing, logging, usage) is its own cost.
 */
const upstreamBase = process.argv[2];
if (upstreamBase === undefined) throw new Error('usage: floor-proxy.ts <upstream base URL>');

const server = createServer(floorHandler(new UpstreamClient(), upstreamBase));
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => announceListening(server));
