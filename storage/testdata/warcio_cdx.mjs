// Indexes WARC files with warcio.js's own CDXJ indexer and prints its lines,
// so that the Go test can compare them with IndexWARCs's.
//
// usage: node warcio_cdx.mjs <dir holding node_modules/warcio> <file.warc.gz>...
import { createRequire } from "node:module";
import { createReadStream } from "node:fs";
import path from "node:path";

const require = createRequire(path.join(process.argv[2], "noop.js"));
const { CDXIndexer } = require("warcio");

const files = process.argv.slice(3).map((f) => ({ filename: path.basename(f), reader: createReadStream(f) }));
const indexer = new CDXIndexer({ format: "cdxj" });
for await (const entry of indexer.iterIndex(files)) {
  process.stdout.write(indexer.serialize(entry));
}
