// Package countmin is a count-min sketch with conservative update: an
// estimate of how often each key was added, in a fixed number of counters
// whatever the number of keys.
//
// # Basics
//
// A [Sketch] has d rows of w counters. [Sketch.Add] maps a key to one
// counter per row and raises only those of them that hold the smallest
// value (conservative update); [Sketch.Count] returns the smallest of the
// key's d counters. Size a sketch for an expected number of distinct keys
// with [Estimate], a pure function, before [New].
//
// This is the "refined extension" of the counting Bloom filter in Yan and
// Cho, "Enhancing collaborative spam detection with Bloom filters"
// (../shared/seeds/002, section IV): the count of x is min(c[h1(x)], ...,
// c[hk(x)]), and on insert only the counters equal to that minimum are
// increased (their heuristic H1), so counters shared with other keys grow
// more slowly than in the plain counting filter. Giving each hash function
// its own row (Cormode and Muthukrishnan's count-min layout) makes their
// heuristic H2, a counter hit twice by one key is increased once, hold by
// construction.
//
// # Guarantees
//
// Count never underestimates: for every key, each of its d counters is at
// least the number of times the key was added (each Add raises the
// minimum, which is at least that number, and leaves no counter below
// it). It never exceeds what a plain count-min sketch of the same shape
// and seed would return, and so keeps the count-min bound: with total
// adds N, Count(x) <= true(x) + e·N/w with probability at least
// 1 - exp(-d). Counters saturate at 2^32-1.
//
// # Persistence
//
// [Sketch.MarshalBinary] writes a versioned format with a CRC-32C;
// [Sketch.UnmarshalBinary] refuses anything else with an error wrapping
// [ErrFormat] (and [ErrVersion] or [ErrChecksum] where they apply).
//
// # Concurrency
//
// All methods of a Sketch are safe for concurrent use; a mutex makes each
// Add atomic, which conservative update needs (two racing adds of one key
// must raise its minimum twice).
package countmin
