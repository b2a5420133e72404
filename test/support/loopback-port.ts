import { createServer } from 'node:net';

/**
 * A loopback port nothing listens on right now: free to start a server on, or to point a
 * client at for "connection refused".
 */
export function unusedLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
