package mlbf_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/layercrawl/layercrawl/mlbf"
)

// A crawler checks and inserts every discovered URL in one call and queues
// only the new ones.
func Example() {
	seen, err := mlbf.NewConcurrent(mlbf.Options{ExpectedURLs: 1_000_000, FalsePositiveRate: 0.001})
	if err != nil {
		log.Fatal(err)
	}
	for _, u := range []string{
		"https://example.com/a/b",
		"https://example.com/b/a",
		"https://example.com/a/b", // a duplicate
		"https://example.org/",
	} {
		if seen.TestAndAdd(mlbf.SplitURL(u)) {
			fmt.Println("skip ", u)
			continue
		}
		fmt.Println("queue", u)
	}
	// Output:
	// queue https://example.com/a/b
	// queue https://example.com/b/a
	// skip  https://example.com/a/b
	// queue https://example.org/
}

// A filter saved with WriteTo or MarshalBinary is read back with ReadFrom or
// UnmarshalBinary, by a Filter or a Concurrent; workers can also Merge the
// filters of others.
func Example_persistence() {
	f, err := mlbf.New(mlbf.Options{ExpectedURLs: 10_000})
	if err != nil {
		log.Fatal(err)
	}
	f.Add(mlbf.SplitURL("http://example.com/index.html"))

	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		log.Fatal(err)
	}
	var restored mlbf.Concurrent
	if _, err := restored.ReadFrom(&buf); err != nil {
		log.Fatal(err)
	}
	fmt.Println(restored.Test(mlbf.SplitURL("http://example.com/index.html")))
	fmt.Println(restored.Test(mlbf.SplitURL("http://example.com/other.html")))

	other, err := mlbf.NewConcurrent(mlbf.Options{ExpectedURLs: 10_000})
	if err != nil {
		log.Fatal(err)
	}
	other.Add(mlbf.SplitURL("http://example.com/other.html"))
	if err := restored.Merge(other); err != nil {
		log.Fatal(err)
	}
	fmt.Println(restored.Test(mlbf.SplitURL("http://example.com/other.html")))
	// Output:
	// true
	// false
	// true
}

// Improved-mode layers are sized from the distinct segments expected at each
// depth, estimated on a sample and scaled by the caller; the integrity layer
// carries the overall false-positive target.
func Example_sizing() {
	sample := [][]string{}
	for i := 0; i < 1000; i++ {
		sample = append(sample, mlbf.SplitURL(fmt.Sprintf("https://site%d.example/news/%d/story-%d.html", i%10, i%100, i)))
	}
	perDepth := mlbf.EstimateSegments(sample, 4)
	fmt.Println("distinct segments per depth in the sample:", perDepth)

	// Size for 100x the sample: hosts and sections saturate, stories scale.
	expected := []uint64{perDepth[0] * 2, perDepth[1] * 2, perDepth[2] * 10, perDepth[3] * 100}
	f, err := mlbf.New(mlbf.Options{
		ExpectedURLs:      100_000,
		FalsePositiveRate: 0.01,
		ExpectedSegments:  expected,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("bits per layer:", f.LayerBits())

	m, k := mlbf.EstimateParameters(100_000, 0.01)
	fmt.Printf("a classic filter would use m=%d, k=%d; formula (1) gives %.4f\n", m, k, mlbf.FalsePositiveRate(k, m, 100_000))
	// Output:
	// distinct segments per depth in the sample: [10 1 100 1000]
	// bits per layer: [512 512 3072 271360 992256]
	// a classic filter would use m=958506, k=7; formula (1) gives 0.0100
}

// A Scalable filter does not need the final count: past its first
// capacity it adds a generation twice as large with half the rate, so the
// false-positive rate stays within the target however many URLs arrive.
// This is the crawler's default seen-set.
func ExampleScalable() {
	seen, err := mlbf.NewScalable(mlbf.ScalableOptions{ExpectedURLs: 1000, FalsePositiveRate: 0.001})
	if err != nil {
		log.Fatal(err)
	}
	added := 0
	for i := 0; i < 10_000; i++ {
		if !seen.TestAndAdd(mlbf.SplitURL(fmt.Sprintf("https://example.com/page/%d", i))) {
			added++
		}
	}
	st := seen.Stats()
	fmt.Println("generations:", len(st.Generations), "capacities:", st.Capacities)
	fmt.Println("estimated rate within target:", st.FalsePositiveRate <= 0.001)
	fmt.Println("all 10,000 present:", seen.Test(mlbf.SplitURL("https://example.com/page/0")) && seen.Test(mlbf.SplitURL("https://example.com/page/9999")))
	fmt.Println("reported new:", added >= 9990)
	// Output:
	// generations: 4 capacities: [1000 2000 4000 8000]
	// estimated rate within target: true
	// all 10,000 present: true
	// reported new: true
}
