// Reads WARC files with the independent warcio.js parser and prints one JSON
// line per record: its WARC header fields, the HTTP status line, and SHA-1
// digests (base32) that this script computes itself over the bytes after the
// HTTP head, over the entity (interim responses skipped, chunked transfer
// coding removed, content coding kept) and over the whole block, so the Go
// test can compare them with the headers and inputs.
//
// usage: node warcio_check.mjs <dir holding node_modules/warcio> <file.warc.gz>...
import { createRequire } from "node:module";
import { createReadStream } from "node:fs";
import { createHash } from "node:crypto";
import path from "node:path";

const require = createRequire(path.join(process.argv[2], "noop.js"));
const { WARCParser, AsyncIterReader, StatusAndHeadersParser } = require("warcio");

// entityDigest computes the payload digest as WARC 1.1 defines it, with
// warcio's own parsers: 1xx interim responses (other than 101) skipped,
// then the chunked transfer coding removed; the content coding is kept.
async function entityDigest(record, payload) {
  let headers = record.httpHeaders.headers;
  let status = Number(record.httpHeaders.statusCode);
  let body = payload;
  let proto = record.httpHeaders.protocol;
  while (status >= 100 && status <= 199 && status !== 101) {
    const reader = new AsyncIterReader([body], null);
    const next = await new StatusAndHeadersParser().parse(reader);
    if (!next) break;
    headers = next.headers;
    status = Number(next.statusCode);
    proto = next.protocol;
    body = await reader.readFully();
  }
  const te = headers.get("Transfer-Encoding") || headers.get("transfer-encoding");
  if (te && te.toLowerCase() === "chunked" && !proto.endsWith("/1.0")) {
    body = await new AsyncIterReader([body], null, true).readFully();
  }
  return { digest: sha1(body), len: body.length, status };
}

function base32(buf) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = 0, value = 0, out = "";
  for (const b of buf) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  while (out.length % 8) out += "=";
  return out;
}
const sha1 = (b) => "sha1:" + base32(createHash("sha1").update(b).digest());

for (const file of process.argv.slice(3)) {
  // Pass 1: parse HTTP, digest the raw (undecoded) payload.
  const parser = new WARCParser(createReadStream(file), { keepHeadersCase: true });
  const records = [];
  for await (const record of parser) {
    const headers = {};
    for (const [k, v] of record.warcHeaders.headers) headers[k] = v;
    const payload = await record.readFully(false);
    const entity = record.httpHeaders && record.warcType === "response"
      ? await entityDigest(record, payload)
      : { digest: sha1(payload), len: payload.length, status: 0 };
    records.push({
      file: path.basename(file),
      offset: parser.offset,
      type: record.warcType,
      headers,
      statusline: record.httpHeaders ? record.httpHeaders.statusline : "",
      http: record.httpHeaders ? Object.fromEntries(record.httpHeaders.headers) : {},
      payload_sha1: sha1(payload),
      payload_len: payload.length,
      entity_sha1: entity.digest,
      entity_len: entity.len,
      final_status: entity.status,
    });
  }
  // Pass 2: no HTTP parsing, digest the whole block.
  const raw = new WARCParser(createReadStream(file), { parseHttp: false });
  let i = 0;
  for await (const record of raw) {
    const block = await record.readFully(false);
    records[i].block_sha1 = sha1(block);
    records[i].block_len = block.length;
    i++;
  }
  if (i !== records.length) throw new Error(`record count differs between passes: ${records.length} vs ${i}`);
  for (const r of records) console.log(JSON.stringify(r));
}
