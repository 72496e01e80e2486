//go:build race

package mlbf

// raceEnabled shrinks the statistical and stress tests under the race
// detector, which makes them an order of magnitude slower.
const raceEnabled = true
