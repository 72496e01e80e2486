package fetch

import (
	"net/netip"
	"syscall"
)

// nonGlobal lists special-purpose ranges (IANA IPv4 and IPv6 special-purpose
// address registries) that a crawler of the public web must not connect to,
// beyond those netip classifies itself (loopback, RFC 1918 / fc00::/7
// private, link-local, multicast, unspecified).
var nonGlobal = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "ietf-protocol"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

// Prefixes whose addresses embed an IPv4 address that a gateway will
// connect to: the embedded address must pass the policy too, or a NAT64 or
// 6to4 address would smuggle 127.0.0.1 past it.
var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// addressBlockReason returns why ip must not be connected to under the
// default address policy, or "" when it is a global unicast address.
func addressBlockReason(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	case ip.Is4() && ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	for _, r := range nonGlobal {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	if ip.Is6() {
		b := ip.As16()
		if nat64Prefix.Contains(ip) {
			if reason := addressBlockReason(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})); reason != "" {
				return "nat64 " + reason
			}
		}
		if sixToFour.Contains(ip) {
			if reason := addressBlockReason(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})); reason != "" {
				return "6to4 " + reason
			}
		}
	}
	return ""
}

// dialControl is a net.Dialer.Control function enforcing the address
// policy. It runs after name resolution, on the address actually being
// connected to, so a DNS answer that changes between a check and the
// connect (DNS rebinding) cannot bypass it.
func dialControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &BlockedAddressError{Addr: address, Reason: "unparsable"}
	}
	if reason := addressBlockReason(ap.Addr()); reason != "" {
		return &BlockedAddressError{Addr: address, Reason: reason}
	}
	return nil
}
