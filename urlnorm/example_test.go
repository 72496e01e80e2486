package urlnorm_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/layercrawl/layercrawl/urlnorm"
)

// A crawler resolves each link of a page against the page's URL, then keys
// its duplicate filter on the segments.
func Example() {
	n, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		panic(err)
	}
	base, err := n.ParseBase("https://Example.com/docs/guide/intro.html")
	if err != nil {
		panic(err)
	}
	for _, href := range []string{"../api/%7euser?q=a+b#top", "//EXAMPLE.com:443/docs/", "mailto:team@example.com"} {
		canon, err := base.Resolve(href)
		if errors.Is(err, urlnorm.ErrUnsupportedScheme) {
			fmt.Println("skip:", href)
			continue
		}
		fmt.Printf("%s %q\n", canon, n.Segments(canon))
	}
	// Output:
	// https://example.com/docs/api/~user?q=a+b ["https://example.com" "docs" "api" "~user?q=a+b"]
	// https://example.com/docs/ ["https://example.com" "docs" ""]
	// skip: mailto:team@example.com
}

func ExampleNormalizer_Normalize() {
	n, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, raw := range []string{
		"HTTP://www.Example.COM:80/a/./b/../c?x=%2f#frag",
		"http://0x7f.1/#!/inbox",
		"http://例え.テスト/ü",
		"http://exa mple.com/",
		"http://example.com/search?q=a|b&rate=5%",
		"http://example.com/search?q=a%7cb&rate=5%25",
	} {
		canon, err := n.Normalize(raw)
		fmt.Println(canon, err)
	}
	// Output:
	// http://www.example.com/a/c?x=%2F <nil>
	// http://127.0.0.1/#!/inbox <nil>
	// http://xn--r8jz45g.xn--zckzah/%C3%BC <nil>
	//  urlnorm: parse "http://exa mple.com/": invalid host: host "exa mple.com" contains the forbidden space (0x20)
	// http://example.com/search?q=a%7Cb&rate=5%25 <nil>
	// http://example.com/search?q=a%7Cb&rate=5%25 <nil>
}

func ExampleOptions() {
	n, err := urlnorm.New(urlnorm.Options{
		SortQuery:           true,
		RemoveSessionParams: true,
		FoldWWW:             true,
		IgnoreScheme:        true,
	})
	if err != nil {
		log.Fatal(err)
	}
	canon, err := n.Normalize("https://www.example.co.uk/list?page=2&utm_source=mail&PHPSESSID=9&color=red")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(canon)
	fmt.Printf("%q\n", n.Segments(canon))
	// Output:
	// https://example.co.uk/list?color=red&page=2
	// ["example.co.uk" "list?color=red&page=2"]
}

func ExampleRegistrableDomain() {
	for _, h := range []string{"news.bbc.co.uk", "user.github.io", "127.0.0.1", "co.uk"} {
		d, err := urlnorm.RegistrableDomain(h)
		fmt.Println(d, err)
	}
	// Output:
	// bbc.co.uk <nil>
	// user.github.io <nil>
	// 127.0.0.1 <nil>
	//  urlnorm: registrable domain "co.uk": no registrable domain: cannot derive eTLD+1 for domain "co.uk"
}

// A crawler keys its per-host queues on the host of each canonical URL,
// read without parsing the URL again.
func ExampleSplitCanonical() {
	n, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, raw := range []string{"HTTPS://News.BBC.co.uk:8443/a?b", "http://user@[2001:DB8::1]:80/", "http://a{b}.example/"} {
		canon, err := n.Normalize(raw)
		if err != nil {
			log.Fatal(err)
		}
		scheme, host, name, ok := urlnorm.SplitCanonical(canon)
		fmt.Printf("%s: %q %q %q %v\n", canon, scheme, host, name, ok)
	}
	// Output:
	// https://news.bbc.co.uk:8443/a?b: "https" "news.bbc.co.uk:8443" "news.bbc.co.uk" true
	// http://user@[2001:db8::1]/: "http" "[2001:db8::1]" "2001:db8::1" true
	// http://a{b}.example/: "" "" "" false
}
