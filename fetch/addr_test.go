package fetch

import (
	"net/netip"
	"testing"
)

func TestAddressBlockReason(t *testing.T) {
	tests := []struct {
		ip   string
		want string // "" = allowed
	}{
		{"93.184.216.34", ""},
		{"8.8.8.8", ""},
		{"2606:4700::1111", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.32.0.1", ""},
		{"192.168.1.1", "private"},
		{"fd00::1", "private"},
		{"fc00::1", "private"},
		{"169.254.169.254", "link-local"}, // cloud metadata
		{"fe80::1", "link-local"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this-network"},
		{"100.64.0.1", "shared (CGNAT)"},
		{"100.127.255.255", "shared (CGNAT)"},
		{"100.128.0.1", ""},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"192.0.2.1", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"240.0.0.1", "reserved"},
		{"2001:db8::1", "documentation"},
		{"64:ff9b::7f00:1", "nat64 loopback"},
		{"64:ff9b::808:808", ""},
		{"2002:c0a8:0101::1", "6to4 private"},
		{"2002:0808:0808::1", ""},
	}
	for _, tt := range tests {
		if got := addressBlockReason(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("addressBlockReason(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}

func TestDialControl(t *testing.T) {
	tests := []struct {
		addr    string
		blocked bool
	}{
		{"127.0.0.1:80", true},
		{"[::1]:443", true},
		{"93.184.216.34:80", false},
		{"not-an-address", true},
	}
	for _, tt := range tests {
		err := dialControl("tcp", tt.addr, nil)
		if (err != nil) != tt.blocked {
			t.Errorf("dialControl(%s) = %v, want blocked=%v", tt.addr, err, tt.blocked)
		}
	}
}
