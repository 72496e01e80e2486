// Package neardup finds near-duplicate web pages: pages whose visible text
// resembles a page seen before, in the sense of Broder's resemblance (the
// Jaccard similarity of their sets of w-word shingles).
//
// # Basics
//
// NewDoc extracts a page's visible text (VisibleText: no script, style or
// template content, white space collapsed) and its hashed shingles
// (Shingles). An Index holds documents and answers which of them a query
// resembles at least a threshold, with an estimate of the resemblance;
// Resemblance is the exact value, the reference the estimates are tested
// against. Five indexes implement it:
//
//   - PMBF, the pseudo-matrix Bloom filter of Butakov ("Using Bloom
//     filters in data leak protection applications"), as the paper
//     describes it: rows of equal Bloom filters shared by several
//     documents, an index of the documents of each row, removal by
//     rebuilding rows, and a query that scores every row.
//   - Sliced, the improved PMBF: one Bloom-filter column per document,
//     stored bit-sliced as in BitFunnel (Goodwin et al., SIGIR 2017) so a
//     probe ANDs a few words for 64 documents at a time, with candidates
//     verified on a bottom-K sketch that estimates the resemblance. The
//     crawler's default.
//   - SDHash, sdhash-style similarity digests (Roussev, "Scalable data
//     correlation"): statistically improbable 64-byte features in
//     256-byte Bloom filters, compared by filter overlap.
//   - SimHash (Charikar 2002; Manku et al., WWW 2007) and MinHash with LSH
//     banding (Broder 1997), the baselines.
//
// docs/BENCHMARKS.md ("Near-duplicates") compares them at equal memory per page.
//
// # Concurrency
//
// An Index is not safe for concurrent use; Set wraps one with a mutex and
// offers the check-and-insert of a crawl as one call, TestAndAdd.
//
// # Persistence
//
// Every index encodes itself with MarshalBinary in a versioned format with
// a CRC-32C checksum; UnmarshalBinary rejects any other input with an
// error wrapping ErrFormat and leaves the index unchanged. The sketch
// indexes store their sketches and rebuild their tables on decoding.
//
// # Memory
//
// SizeBytes is the memory of the digests, the figure compared per page:
// with the default options Sliced takes 8 + 1 + 4×48 + 512/8 = 265 bytes
// per page, MinHash 8 + 4×64 + 12×16 = 456, SimHash 16, SDHash 8 + 258
// per filter (one filter per 160 features), PMBF about 6.2 bits per
// shingle and 8 bytes per row entry.
package neardup
