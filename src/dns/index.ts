/** The DNS adapter: UPDATE wire format, TSIG, transport, per-zone sender, plans, mx resolver, probe. */
export { DnsPublisher } from './publisher.js';
export { DnsMxResolver } from './resolver.js';
export { probeZone, type ProbeResult } from './probe.js';
export { DnsSerialProbe, queryServer, soaSerial, txtValues } from './serials.js';
export { DnsZoneTransfer, transferZone, type TransferOptions } from './axfr.js';
export { DnsRecordPlanner } from './published.js';
export { planChange, type HostPlan, MX_PRIMARY_PREFERENCE, MX_BACKUP_PREFERENCE } from './plan.js';
export {
  ZoneSender,
  type ZoneSenderOptions,
  type ZoneSenderStats,
  DEFAULT_MAX_HOSTS_PER_MESSAGE,
  DEFAULT_MAX_MESSAGE_BYTES,
} from './zone-sender.js';
export { TcpTransport, type TransportOptions, type MessageBuilder } from './transport.js';
export { signedExchange, type SigningContext } from './signed-exchange.js';
export {
  signRequest,
  signMessage,
  encodeTsigRecord,
  verifyMessage,
  extractTsig,
  algorithmWireName,
  algorithmFromWireName,
  HMAC_MD5_NAME,
  TSIG_ERRORS,
  type TsigRecord,
  type TsigVerdict,
  type TsigFailureReason,
  type SignOptions,
  type SignedMessage,
  type VerifyOptions,
} from '../core/tsig.js';
export { rcodeName, hintFor, rcodeFailure, responseFailure, RCODE_NAMES } from './rcode.js';
export {
  encodeUpdate,
  encodeName,
  parseMessage,
  parseHeader,
  readName,
  WireFormatError,
  OPCODE_UPDATE,
  OPCODE_QUERY,
  CLASS_IN,
  CLASS_NONE,
  CLASS_ANY,
  TYPE_CODES,
  TYPE_TSIG,
  type RecordType,
  type RecordData,
  type Prerequisite,
  type UpdateOperation,
  type UpdateMessage,
  type MessageHeader,
  type ParsedMessage,
} from '../core/dns-wire.js';
