import { connect, type Socket } from 'node:net';

/**
 * Connects `client` (a socket accepted by a test's relay server) to a Redis on `port`: the two
 * close together, their errors are swallowed (a test ends them abruptly), and both are kept in
 * `sockets` while open, so the relay can destroy them. Returns the upstream socket; the caller
 * decides how bytes flow.
 */
export function openRelay(client: Socket, port: number, sockets: Set<Socket>): Socket {
  const upstream = connect(port, '127.0.0.1');
  for (const socket of [client, upstream]) {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  }
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
  return upstream;
}
