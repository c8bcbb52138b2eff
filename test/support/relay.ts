/** Pieces of the TCP relays the tests put in front of real servers. */
import type net from 'node:net';

/** Tie a relayed client connection to its upstream one: errors are ignored, either closing closes both. */
export function tieSockets(client: net.Socket, upstream: net.Socket, sockets: Set<net.Socket>): void {
  for (const s of [client, upstream]) {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => {
      sockets.delete(s);
      client.destroy();
      upstream.destroy();
    });
  }
}
