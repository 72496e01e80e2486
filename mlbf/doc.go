// Package mlbf implements the multi-layer Bloom filter (MLBF) of Cen, Xu and
// Sun, "A Multi-Layer Bloom Filter for Duplicated URL Detection", in a
// paper-faithful mode and an improved default mode, beside the classic Bloom
// filter the paper compares it with. It is a library for any crawler and
// imports nothing beyond the standard library and github.com/zeebo/xxh3.
//
// # Basics
//
// A key is a URL given as its segments: the host (layer 1), then the
// '/'-separated path segments. SplitURL splits a raw URL the paper's way
// (drop "scheme://", split on '/'); a crawler should rather pass a
// normalized URL's segments. An MLBF(L, k, m) holds L Bloom filters, one per
// depth, plus an integrity layer that holds a key derived from all the
// segments, so that a URL whose segments were all seen in other URLs is not
// reported present just for that.
//
//	f, err := mlbf.NewConcurrent(mlbf.Options{ExpectedURLs: 50_000_000, FalsePositiveRate: 0.001}) // 98 MB
//	if seen := f.TestAndAdd(segments); !seen { queue(url) }
//
// TestAndAdd is the one atomic check-and-insert a crawler needs; it returns
// true when the key was (probably) present before the call. Like every Bloom
// filter, an MLBF has no false negatives (a key inserted is always reported
// present) and a tunable rate of false positives; keys cannot be removed.
//
// # The paper's model and formulas
//
// Algorithm 1 (insert) sets, for every layer i and hash j, BF_i[Hash_j(a_i)]
// and accumulates LAddr[j] ^= Hash_j(a_i); it then sets BF_{L+1}[LAddr[j]].
// Algorithm 2 (query) probes the same bits and answers false at the first
// zero. The paper uses the formulas, provided here as pure functions:
//
//	(1) f = (1 - (1 - 1/m)^(kn))^k ≈ (1 - e^(-kn/m))^k   FalsePositiveRate
//	(2) k = ln2 · m/n, giving f = 0.6185^(m/n)          OptimalHashes, EstimateParameters
//	(4) f_MLBF = f^L                                     PaperFalsePositiveRate
//
// Formula (4) assumes the layers answer independently for a new URL. They
// do not: real URLs share hosts and path segments, so a new URL usually
// passes the first layers for sure, and the integrity layer (absent from
// the formula) is what rejects it. Measure rather than trust (4); see
// docs/BENCHMARKS.md.
//
// # Paper mode: where the paper is silent
//
// Paper mode (Options.Mode = Paper) is Algorithms 1 and 2 exactly: L+1
// layers of m bits each, the same k hash functions in every layer. The
// paper leaves these open; the choices made:
//
//   - The hash functions: Hash_j(s) = (h1 + j·h2 mod 2^64) mod m, where
//     (h1, h2) is the 128-bit xxh3 hash of the segment (Kirsch–Mitzenmacher
//     double hashing).
//   - More than L segments: the rest is folded into layer L, which holds
//     segments L, L+1, ... joined with '/' (hashed incrementally, without
//     building the string).
//   - Fewer than L segments: only those layers are used, and LAddr is the
//     XOR over them (a key with no segment sets integrity position 0).
//   - m not a power of two: the XOR of values below m can reach the next
//     power of two minus one; LAddr[j] is reduced mod m, which makes the
//     low integrity positions up to twice as likely as the others.
//
// The paper's design has flaws that paper mode keeps: the XOR is
// order-blind (a/b/c and b/a/c have the same integrity bits, and since
// every layer uses the same hashes, b/a/z supplies layers 1 and 2) and
// self-cancelling (x^x = 0, so p/x/x/q and p/y/y/q have the same integrity
// bits); a 32-bit index limits m to 2^32; the k probes of each layer are k
// cache misses; and all layers are equally sized although the host layer
// holds far fewer distinct entries than the deepest one.
//
// # Improved mode (the default)
//
//   - Salted layers: layer i hashes a segment as x = mix(h ^ salt_i), with
//     h the 64-bit xxh3 hash of the segment (cheaper than the 128-bit one
//     for short segments, and a URL has several), so the same segment lands
//     elsewhere at another depth. The high bits of x pick the block, its
//     low 27 bits the first three probes (more probes re-mix x).
//     Options.Salt is XORed in beside salt_i: filters of different salts
//     take different keys for false positives (a crawl salts its filter
//     at random, so that no URL is unlucky in every crawl). Paper mode is
//     unsalted.
//   - An order-sensitive integrity key: a chain
//     a = (rotl(a, 29) ^ x_i)·c over the full 64-bit salted hashes of all
//     used layers, started from the true segment count and re-mixed at the
//     end, in place of the XOR of positions. It cannot cancel (x at depth 2 and x at depth 3 hash
//     differently) and depends on the order and on the number of segments.
//   - 64-bit indexes: positions are mapped with fastrange (the high word of
//     a 64×64-bit product), so a layer may hold up to 2^40 bits (MaxBits).
//   - Cache-blocked layers: a layer is an array of 512-bit blocks (one
//     64-byte cache line, 64-byte aligned); a segment's k probes all fall in
//     one block, 9-bit slices of its hash. A layer costs one cache miss;
//     a query stops at the first layer with a missing bit, and TestAndAdd
//     computes all block addresses first so the misses of the layers
//     overlap. A blocked filter needs somewhat more bits than a classic one
//     for the same rate (uneven block loads; BlockedFalsePositiveRate).
//   - Sizing from the target: with ExpectedURLs n and
//     FalsePositiveRate p, the integrity layer is sized for n keys at p by
//     the blocked formula (BlockedFalsePositiveRate, exact for uniform
//     probes), with k derived from p when Hashes is 0
//     (BlockedParameters: k=8 and 15.7 bits per URL at 0.1%, 1.09x
//     bits-and-blooms' NewWithEstimates). The integrity layer carries the
//     whole target because for a new URL whose segments were all seen
//     before it is the only layer that can answer no. Without
//     ExpectedSegments each segment layer is one block, full after its
//     first few hundred segments: it then passes every key at the cost of
//     8 loads from one cached line, so the measured rate is the integrity
//     layer's, as predicted (within a few percent from 0.01% to 5%, on the
//     shared datasets and on generated URLs; docs/BENCHMARKS.md). Sizing
//     the segment layers to filter cost more bits than giving those bits
//     to the integrity layer on the shared datasets (TestBitsPerURL), and
//     made the rate depend on how many new URLs bring a new segment (85%
//     in the datasets, all of the generated ones).
//   - Segment layers that filter: with ExpectedSegments, layer i is sized
//     for ExpectedSegments[i] distinct segments at LayerFalsePositiveRate
//     (default 0.5) and rejects early the new URLs with a segment new at
//     its depth, which lowers the rate of those URLs below p.
//     EstimateSegments counts distinct segments per depth in a sample.
//     LayerBits sets every size explicitly instead. Sizes are whole blocks.
//
// Because every key sets the integrity layer, the rate for a new URL whose
// segments were all seen before is the integrity layer's; URLs with a new
// segment are rejected more often when the segment layers filter. Stats
// reports both estimates.
//
// # A filter that grows
//
// A filter sized for ExpectedURLs climbs above its rate beyond them.
// Scalable (Almeida et al., "Scalable Bloom Filters", 2007) adds
// generations instead, each larger and with a tighter rate, so that the
// compound rate stays below the target however many keys arrive, at a
// cost in memory (2.35x a filter sized for the final count, at 10x the
// first capacity and 1%). It is safe for concurrent use (each generation
// is a Concurrent, and takes at most its capacity plus one key per insert
// under way when it fills); it is saved with WriteTo and read with ReadFrom,
// snapshotted with Snapshot (which copies the newest generation only: the
// older ones are frozen), and merged generation by generation with Merge.
// The crawler uses it unless told to keep a fixed filter.
//
// # Concurrency
//
// Filter and Classic are not safe for concurrent use. Concurrent is: its
// bits are read with atomic loads and set with atomic ORs, and a TestAndAdd
// that finds a bit missing holds one of 1024 mutexes chosen by the key's
// hash while it tests and sets, so of several concurrent TestAndAdd calls
// for the same new key exactly one returns false (a key already present is
// answered without a lock). TestAndAddBatch does the same for many keys,
// hashing and touching all their blocks before testing, for memory-level
// parallelism. Test takes no lock. A key whose insert returned is reported
// present by every later call, in any goroutine.
//
// # Persistence and merging
//
// WriteTo/ReadFrom and MarshalBinary/UnmarshalBinary use a versioned
// little-endian format: magic "MLBF", format version, kind, mode, the hash
// identity (HashID), L, k, the salt (version 2; an unsalted filter is
// written in version 1, and version 1 reads as salt 0), every layer's
// size, a CRC-32C over the header and one over each layer. Filter and Concurrent read each other's files;
// Concurrent writes a consistent snapshot. A filter can be read only by a
// version of this package with the same hash identity. ReadFrom reads
// exactly the filter's bytes, returns an error wrapping ErrFormat (with
// io.ErrUnexpectedEOF when truncated) or ErrChecksum for bad data, never
// panics, and allocates memory only as data actually arrives, so a hostile
// header cannot exhaust memory. Merge ORs two filters of identical
// parameters (for workers that exchange filters) and returns an error
// wrapping ErrIncompatible otherwise.
//
// # Errors
//
// Invalid options wrap ErrInvalidOptions. Query and insert methods cannot
// fail and do not allocate.
//
// # Caveats
//
// On Linux a bit array of 4 MiB or more is advised to use transparent huge
// pages (MADV_HUGEPAGE), which spares most TLB misses of random probes; it
// is advice only and changes nothing else.
//
// The zero Filter and Classic are not usable except as ReadFrom targets;
// the zero Concurrent likewise. A false positive makes a crawler skip a new
// URL; size for the rate you can afford (Options.FalsePositiveRate), and
// watch Stats as the filter fills beyond its expected size.
package mlbf
