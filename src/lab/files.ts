/** Temporary directories and free loopback ports for the real servers. */
import { readFileSync } from 'node:fs';
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

/**
 * Ports handed out below the kernel's ephemeral range (ip_local_port_range, 32768–60999 on
 * Debian). A port found free is closed again before the server that is given it binds it; in
 * that window an outgoing connection of any process (a Redis client, a DNS query over TCP) may
 * take a free ephemeral port as its source, and the server then fails with EADDRINUSE. Below the
 * range no outgoing connection ever lands. Each process walks the range from a random start, so
 * two test processes side by side rarely probe the same port at the same moment. On a host whose
 * ephemeral range starts below 11000 there is no such room: the walk then keeps to 10000–32000.
 */
const LAB_PORTS = labPortRange();
const labPortCount = LAB_PORTS.last - LAB_PORTS.first + 1;
let nextLabPort = LAB_PORTS.first + Math.floor(Math.random() * labPortCount);

function labPortRange(): { first: number; last: number } {
  const first = 10_000;
  let ephemeralFirst = 32_768;
  try {
    ephemeralFirst = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    // not Linux: keep the usual range
  }
  const last = Math.min(32_000, ephemeralFirst - 1);
  return Number.isInteger(last) && last >= first + 1_000 ? { first, last } : { first, last: 32_000 };
}

/** A port free on 127.0.0.1 for both TCP and UDP (nameservers listen on both). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = nextLabPort;
    nextLabPort = port === LAB_PORTS.last ? LAB_PORTS.first : port + 1;
    if ((await tcpPortFree(port)) && (await udpPortFree(port))) return port;
  }
  throw new Error('lab: no port free on 127.0.0.1 for both TCP and UDP in 200 tries');
}

function tcpPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
      server.close(() => resolve(true));
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
