/**
 * The RFC 2136 gateway's listener (docs/protocol.md, "RFC 2136 gateway"): DNS over UDP and TCP on each configured
 * address. Per message: TSIG first (RFC 8945 §5.2: the key's record, the MAC, the time), then the zone, the names and
 * the key's scope (scope.ts), then the use case (app/gateway.ts); the answer signed with the request's key.
 * Discovery: SOA queries for configured zones are answered, signed when the query is.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { GatewayService } from '../app/gateway.js';
import type { Logger } from '../core/log.js';
import type { Telemetry } from '../core/telemetry.js';
import {
  algorithmFromWireName,
  encodeTsigRecord,
  signMessage,
  TSIG_ERRORS,
  verifyMessage,
  type TsigAlgorithm,
  type TsigKeyConfig,
} from '../core/tsig.js';
import type { TokenLogin } from '../app/ports.js';
import {
  decodeRequest,
  encodeAnswer,
  encodeSoa,
  HEADER_LENGTH,
  peekHeader,
  type AnswerParts,
  type Request,
} from './message.js';
import { rcodeOf } from './rcodes.js';
import { scopeOf, zoneOf } from './scope.js';
import { SourceRate } from './source-rate.js';

/** Seconds of clock difference a request may have (RFC 8945 §10 recommends 300). */
export const GATEWAY_FUDGE = 300;
/** An idle TCP connection is closed after this long. */
const TCP_IDLE_MS = 10_000;
/** Messages of one TCP connection read ahead of their answers at most; more pause the socket. */
const TCP_PIPELINE = 4;
/** UDP messages answered at once, over every source: beyond, they are dropped (counted). */
const MAX_UDP_IN_FLIGHT = 1024;
/** The UDP socket's receive buffer asked for (the kernel may give less). */
const UDP_RECEIVE_BUFFER = 4 * 1024 * 1024;
const OPCODE_QUERY = 0;
const OPCODE_UPDATE = 5;
const TYPE_SOA = 6;
const CLASS_IN = 1;
/** A key id no record has: what a malformed key name is looked up and derived with. */
const NO_KEY_ID = '000000000000';

/** The key names and secrets of gateway keys (src/auth/tsig-keys.ts). */
export interface GatewayKeys {
  /** The id a key name starts with, or undefined. */
  idOf(keyName: string): string | undefined;
  nameOf(id: string, fqdn: string): string;
  secretOf(id: string, algorithm: TsigAlgorithm): Buffer;
}

export interface DnsGatewayOptions {
  listen: readonly { host: string; port: number }[];
  /** Zone apexes (lowercase, no final dot). */
  zones: readonly string[];
  ratePerSource: number;
  maxConnections: number;
  service: Pick<GatewayService, 'lookup' | 'failed' | 'apply'>;
  keys: GatewayKeys;
  telemetry: Telemetry;
  logger: Logger;
  /** Seconds since the epoch (tests move the clock). */
  now?: () => number;
}

/** A request whose TSIG verified: the answer is signed with its key, over its MAC. */
interface Signed {
  login: TokenLogin;
  key: TsigKeyConfig;
  mac: Buffer;
}

/** What one message got: the bytes to send (none: silence) and the labels it is counted under. */
interface Answer {
  bytes?: Buffer;
  opcode: string;
  rcode: string;
}

export class DnsGateway {
  private readonly udp: dgram.Socket[] = [];
  private readonly tcp: net.Server[] = [];
  private readonly sockets = new Set<net.Socket>();
  /** Per source and transport: a forged UDP source must not use up a real client's TCP. */
  private readonly udpRate: SourceRate;
  private readonly tcpRate: SourceRate;
  /** UDP messages being answered now (MAX_UDP_IN_FLIGHT at most: a flood from many forged sources is dropped). */
  private udpInFlight = 0;
  private closed = false;
  private readonly now: () => number;
  private bound: { host: string; port: number }[] = [];

  constructor(private readonly opts: DnsGatewayOptions) {
    this.udpRate = new SourceRate(opts.ratePerSource);
    this.tcpRate = new SourceRate(opts.ratePerSource);
    this.now = opts.now ?? (() => Math.floor(Date.now() / 1000));
  }

  /** The addresses listened on (a port 0 resolved). */
  get addresses(): readonly { host: string; port: number }[] {
    return this.bound;
  }

  /** Bind TCP, then UDP on the same port, on every address. */
  async listen(): Promise<void> {
    for (const { host, port } of this.opts.listen) {
      const server = net.createServer({ allowHalfOpen: true }, (socket) => this.serveTcp(socket));
      server.maxConnections = this.opts.maxConnections;
      server.on('error', (err) => this.opts.logger.error('gateway TCP listener error', { error: err.message }));
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host, port }, () => {
          server.off('error', reject);
          resolve();
        });
      });
      this.tcp.push(server);
      const actual = (server.address() as net.AddressInfo).port;
      const socket = dgram.createSocket({
        type: net.isIPv6(host) ? 'udp6' : 'udp4',
        ipv6Only: net.isIPv6(host),
        // The default (~208 KiB, ~185 small datagrams) overflowed at 256 messages in flight in the bench: the
        // kernel dropped them. It caps this at net.core.rmem_max (BENCHMARKS.md, "RFC 2136 gateway").
        recvBufferSize: UDP_RECEIVE_BUFFER,
      });
      socket.on('message', (msg, rinfo) => this.serveUdp(socket, msg, rinfo));
      socket.on('error', (err) => this.opts.logger.error('gateway UDP listener error', { error: err.message }));
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind({ address: host, port: actual }, () => {
          socket.off('error', reject);
          resolve();
        });
      });
      this.udp.push(socket);
      this.bound.push({ host, port: actual });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const socket of this.udp) socket.close();
    this.udp.length = 0;
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(this.tcp.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    this.tcp.length = 0;
    this.udpRate.stop();
    this.tcpRate.stop();
  }

  private serveUdp(socket: dgram.Socket, msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const source = normalizeIp(rinfo.address);
    if (this.closed || this.udpInFlight >= MAX_UDP_IN_FLIGHT || !this.udpRate.take(source)) {
      this.opts.telemetry.gatewayRequest(opcodeLabel(msg), 'dropped', 0);
      return;
    }
    this.udpInFlight++;
    void this.answer(msg, source, 'udp').then((bytes) => {
      this.udpInFlight--;
      // Closed meanwhile (SIGTERM while the primary was asked): send() would throw.
      if (bytes === undefined || this.closed) return;
      try {
        socket.send(bytes, rinfo.port, rinfo.address, () => undefined);
      } catch {
        // The socket went away: nobody to answer.
      }
    });
  }

  private serveTcp(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    const source = normalizeIp(socket.remoteAddress ?? '');
    let pending = Buffer.alloc(0);
    let queue = Promise.resolve();
    let inFlight = 0;
    let ended = false;
    // A client that half-closes after its request (`nc -N`) still gets its answers, then the connection ends.
    socket.on('end', () => {
      ended = true;
      if (inFlight === 0) socket.end();
    });
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length >= 2) {
        const length = pending.readUInt16BE(0);
        if (length < HEADER_LENGTH) {
          socket.destroy();
          return;
        }
        if (pending.length < 2 + length) break;
        const message = Buffer.from(pending.subarray(2, 2 + length));
        pending = pending.subarray(2 + length);
        if (!this.tcpRate.take(source)) {
          this.opts.telemetry.gatewayRequest(opcodeLabel(message), 'dropped', 0);
          socket.destroy();
          return;
        }
        if (++inFlight >= TCP_PIPELINE) socket.pause();
        // Answers go out in the order the messages came (RFC 7766 allows either; clients here expect order).
        const answered = this.answer(message, source, 'tcp');
        queue = queue.then(async () => {
          const bytes = await answered;
          if (bytes !== undefined && !socket.destroyed) {
            const frame = Buffer.alloc(2 + bytes.length);
            frame.writeUInt16BE(bytes.length, 0);
            bytes.copy(frame, 2);
            socket.write(frame);
          }
          if (--inFlight < TCP_PIPELINE) socket.resume();
          if (ended && inFlight === 0) socket.end();
        });
      }
    });
  }

  /** One message's answer; never throws (a fault answers SERVFAIL and is logged). */
  async answer(message: Buffer, source: string, transport: 'udp' | 'tcp'): Promise<Buffer | undefined> {
    const started = performance.now();
    let result: Answer;
    try {
      result = await this.respond(message, source, transport);
    } catch (err) {
      this.opts.logger.error('gateway message failed', { error: (err as Error).message, source });
      const header = peekHeader(message)!;
      result = {
        bytes: plain({ id: header.id, opcode: header.opcode, rcode: 'SERVFAIL' }),
        opcode: opcodeLabel(message),
        rcode: 'SERVFAIL',
      };
    }
    this.opts.telemetry.gatewayRequest(result.opcode, result.rcode, (performance.now() - started) / 1000);
    this.opts.logger.debug('gateway answer', { source, transport, opcode: result.opcode, rcode: result.rcode });
    const bytes = result.bytes;
    if (bytes === undefined || transport === 'tcp') return bytes;
    return bytes.length <= udpLimit(message) ? bytes : truncated(bytes);
  }

  private async respond(message: Buffer, source: string, transport: 'udp' | 'tcp'): Promise<Answer> {
    const header = peekHeader(message);
    // Not a request (a response, or shorter than a header): silence, so nothing is reflected.
    if (header === undefined || header.qr) return { opcode: 'other', rcode: 'dropped' };
    const opcode = opcodeLabel(message);
    let req: Request;
    try {
      req = decodeRequest(message);
    } catch {
      return { bytes: plain({ id: header.id, opcode: header.opcode, rcode: 'FORMERR' }), opcode, rcode: 'FORMERR' };
    }
    const question = { bytes: message.subarray(HEADER_LENGTH, req.questionEnd), count: req.questions.length };
    const base = { id: req.id, opcode: req.opcode, rd: req.rd, question };
    if (req.opcode !== OPCODE_QUERY && req.opcode !== OPCODE_UPDATE)
      return { bytes: plain({ ...base, rcode: 'NOTIMP' }), opcode, rcode: 'NOTIMP' };

    // RFC 8945 §5.2: the signature before anything else of the message.
    let signed: Signed | undefined;
    if (req.signed) {
      const verified = await this.verify(req, message, source, base, transport);
      if ('bytes' in verified) return { ...verified, opcode };
      signed = verified;
    }
    const reply = (parts: Omit<AnswerParts, 'id' | 'opcode'>): Answer => ({
      bytes: this.sign({ ...base, ...parts }, signed),
      opcode,
      rcode: parts.rcode,
    });
    if (req.opcode === OPCODE_QUERY) return reply(this.discovery(req));
    // An UPDATE needs a key: unsigned ones change nothing.
    if (signed === undefined) return reply({ rcode: 'REFUSED' });

    const zone = zoneOf(req.questions, this.opts.zones);
    if (typeof zone !== 'string') return reply({ rcode: zone.rcode });
    const { login } = signed;
    const scope = scopeOf(zone, req.answers, req.authorities, { fqdn: login.fqdn, acmeOnly: login.acmeOnly === true });
    if ('rcode' in scope) {
      this.opts.logger.debug('gateway refused an update', { key: login.id, rcode: scope.rcode, why: scope.why });
      return reply({ rcode: scope.rcode });
    }
    try {
      const result = await this.opts.service.apply(login, scope.change, source);
      return reply({ rcode: rcodeOf(result) });
    } catch (err) {
      // Signed like every answer after a verified TSIG: the client sees SERVFAIL, not a TSIG error.
      this.opts.logger.error('gateway update failed', { error: (err as Error).message, key: login.id });
      return reply({ rcode: 'SERVFAIL' });
    }
  }

  /**
   * The request's TSIG (RFC 8945 §5.2): the key's record is looked up and the MAC computed for every key name, known
   * or not, so a right and a wrong secret cost the same until both passed. A source in cool-down, junk-blocked or
   * outside the key's `from` gets REFUSED whatever its MAC (unsigned: nothing proves it holds the key).
   */
  private async verify(
    req: Request,
    message: Buffer,
    source: string,
    base: Omit<AnswerParts, 'rcode'>,
    transport: 'udp' | 'tcp',
  ): Promise<Signed | { bytes: Buffer; rcode: string }> {
    // Counted against the source like a wrong password, over TCP only: a UDP source can be forged, and counting it
    // would let anyone put any address in cool-down (docs/security.md, "Gateway keys").
    const failed = (): Promise<void> => (transport === 'tcp' ? this.opts.service.failed(source) : Promise.resolve());
    const keyName = req.keyName!;
    const id = this.opts.keys.idOf(keyName);
    const lookup = await this.opts.service.lookup(id, source);
    const asked = algorithmFromWireName(req.algorithm ?? '');
    const algorithm: TsigAlgorithm =
      typeof lookup === 'object' ? lookup.tsig! : asked !== undefined && asked !== 'hmac-md5' ? asked : 'hmac-sha256';
    const key: TsigKeyConfig = {
      name: keyName,
      algorithm,
      secret: this.opts.keys.secretOf(id ?? NO_KEY_ID, algorithm),
    };
    const now = this.now();
    const verdict = verifyOrFail(message, key, now);
    if (lookup === 'refused') return { bytes: plain({ ...base, rcode: 'REFUSED' }), rcode: 'REFUSED' };
    const tsigError = (error: number, rcode: string): { bytes: Buffer; rcode: string } => {
      const record = encodeTsigRecord({
        keyName,
        algorithm: req.algorithm ?? '',
        timeSigned: now,
        fudge: GATEWAY_FUDGE,
        mac: Buffer.alloc(0),
        originalId: req.id,
        error,
        otherData: Buffer.alloc(0),
      });
      const bytes = Buffer.concat([plain({ ...base, rcode: 'NOTAUTH' }), record]);
      bytes.writeUInt16BE(1, 10);
      return { bytes, rcode };
    };
    if (lookup === 'unknown' || this.opts.keys.nameOf(lookup.id, lookup.fqdn) !== keyName || asked !== lookup.tsig) {
      await failed();
      return tsigError(TSIG_ERRORS.BADKEY, 'BADKEY');
    }
    if (verdict.ok) return { login: lookup, key, mac: verdict.tsig.mac };
    if (verdict.reason === 'bad-time' && verdict.tsig !== undefined) {
      // Signed, with the request's time and ours in Other Data, so the client can tell its clock is off.
      const otherData = Buffer.alloc(6);
      otherData.writeUInt16BE(Math.floor(now / 2 ** 32), 0);
      otherData.writeUInt32BE(now % 2 ** 32, 2);
      const bytes = signMessage(plain({ ...base, rcode: 'NOTAUTH' }), key, {
        timeSigned: verdict.tsig.timeSigned,
        fudge: GATEWAY_FUDGE,
        requestMac: verdict.tsig.mac,
        error: TSIG_ERRORS.BADTIME,
        otherData,
      }).message;
      return { bytes, rcode: 'BADTIME' };
    }
    await failed();
    return tsigError(TSIG_ERRORS.BADSIG, 'BADSIG');
  }

  /**
   * Zone discovery (nsupdate, certbot, lego ask for the SOA of the name they change): a configured apex gets its SOA
   * in the answer; a name inside a configured zone no data, with the SOA in the authority section, so a client
   * walking up the labels finds the zone; anything else REFUSED. The SOA is the gateway's own (serial 0).
   */
  private discovery(req: Request): Omit<AnswerParts, 'id' | 'opcode'> {
    if (req.questions.length !== 1) return { rcode: 'FORMERR' };
    const q = req.questions[0]!;
    const zone = this.opts.zones.find((z) => q.name === z || q.name.endsWith(`.${z}`));
    if (zone === undefined || q.type !== TYPE_SOA || q.klass !== CLASS_IN) return { rcode: 'REFUSED' };
    const soa = encodeSoa({
      zone,
      mname: zone,
      rname: `hostmaster.${zone}`,
      serial: 0,
      refresh: 3600,
      retry: 600,
      expire: 86400,
      minimum: 0,
      ttl: 0,
    });
    return q.name === zone
      ? { rcode: 'NOERROR', aa: true, answers: [soa] }
      : { rcode: 'NOERROR', aa: true, authorities: [soa] };
  }

  private sign(parts: AnswerParts, signed: Signed | undefined): Buffer {
    const bytes = encodeAnswer(parts);
    if (signed === undefined) return bytes;
    return signMessage(bytes, signed.key, { timeSigned: this.now(), fudge: GATEWAY_FUDGE, requestMac: signed.mac })
      .message;
  }
}

function plain(parts: AnswerParts): Buffer {
  return encodeAnswer(parts);
}

function opcodeLabel(message: Buffer): string {
  const header = peekHeader(message);
  if (header === undefined) return 'other';
  return header.opcode === OPCODE_QUERY ? 'QUERY' : header.opcode === OPCODE_UPDATE ? 'UPDATE' : 'other';
}

/** The largest UDP answer a request allows: 512, or its EDNS size (RFC 6891). */
function udpLimit(message: Buffer): number {
  try {
    return Math.min(decodeRequest(message).udpSize, 65_535);
  } catch {
    return 512;
  }
}

/** An answer too large for UDP: its header alone with TC set, so the client asks again over TCP. */
function truncated(bytes: Buffer): Buffer {
  const header = Buffer.from(bytes.subarray(0, HEADER_LENGTH));
  header.writeUInt16BE(header.readUInt16BE(2) | 0x200, 2);
  header.fill(0, 4);
  return header;
}

/** `::ffff:192.0.2.1` → `192.0.2.1`: the same source whatever the socket's family. */
function normalizeIp(address: string): string {
  return address.startsWith('::ffff:') && net.isIPv4(address.slice(7)) ? address.slice(7) : address;
}

/** verifyMessage, with a name it cannot write back (the reader refuses most) as a MAC that does not match. */
function verifyOrFail(message: Buffer, key: TsigKeyConfig, now: number): ReturnType<typeof verifyMessage> {
  try {
    return verifyMessage(message, key, { now, maxFudge: GATEWAY_FUDGE });
  } catch (err) {
    return { ok: false, reason: 'malformed', detail: (err as Error).message };
  }
}
