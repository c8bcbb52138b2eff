/** Temporary directories and free loopback ports for the real servers. */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { createSocket } from 'node:dgram';
import os from 'node:os';
import path from 'node:path';

export function makeTempDir(prefix = 'ddns-bridge-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** A port free on 127.0.0.1 for both TCP and UDP (nameservers listen on both). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await freeTcpPort();
    if (await udpPortFree(port)) return port;
  }
  throw new Error('lab: no port free on 127.0.0.1 for both TCP and UDP after 20 attempts');
}

function freeTcpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0, exclusive: true }, () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function udpPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    socket.once('error', () => {
      socket.close();
      resolve(false);
    });
    socket.bind({ address: '127.0.0.1', port, exclusive: true }, () => {
      socket.close(() => resolve(true));
    });
  });
}

/** Write a file only its owner can read (configs and key files hold secrets). */
export async function writePrivateFile(file: string, content: string): Promise<void> {
  await writeFile(file, content, { mode: 0o600 });
  await chmod(file, 0o600); // mode above only applies when the file is created
}
