package storage

import (
	"fmt"
	"strings"
	"time"
)

// RevisitProfile is the WARC-Profile of a revisit record whose payload is
// identical to an earlier response's (WARC 1.1, section 6.7.2).
const RevisitProfile = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"

// RevisitNotModified is the WARC-Profile of a revisit record that archives
// a 304 Not Modified answer to a conditional request (WARC 1.1, section
// 6.7.3): its block is the 304 response, and the payload is the earlier
// response's.
const RevisitNotModified = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"

// Revisit names the earlier response whose payload an exchange repeats.
type Revisit struct {
	// TargetURI is the earlier response's WARC-Target-URI, written as
	// WARC-Refers-To-Target-URI. Required.
	TargetURI string
	// Date is the earlier response's WARC-Date, written as
	// WARC-Refers-To-Date. Required.
	Date time.Time
	// RecordID is the earlier response's WARC-Record-ID, written as
	// WARC-Refers-To when set.
	RecordID string
	// Profile is the WARC-Profile; empty means RevisitProfile
	// (identical-payload-digest).
	Profile string
}

func (r *Revisit) validate() error {
	switch {
	case r == nil:
		return nil
	case r.TargetURI == "" || strings.ContainsAny(r.TargetURI, "\r\n \t"):
		return fmt.Errorf("%w: revisit target URI %q", ErrInvalidExchange, r.TargetURI)
	case r.Date.IsZero():
		return fmt.Errorf("%w: revisit of %s without a date", ErrInvalidExchange, r.TargetURI)
	case r.Profile != "" && r.Profile != RevisitProfile && r.Profile != RevisitNotModified:
		return fmt.Errorf("%w: revisit profile %q", ErrInvalidExchange, r.Profile)
	case strings.ContainsAny(r.RecordID, "\r\n \t"):
		return fmt.Errorf("%w: revisit record id %q contains white space", ErrInvalidExchange, r.RecordID)
	}
	return nil
}

// fields appends the revisit record's own fields to common.
func (r *Revisit) fields(common []warcField) []warcField {
	profile := r.Profile
	if profile == "" {
		profile = RevisitProfile
	}
	f := append(common, warcField{"WARC-Profile", profile})
	if r.RecordID != "" {
		f = append(f, warcField{"WARC-Refers-To", r.RecordID})
	}
	return append(f,
		warcField{"WARC-Refers-To-Target-URI", r.TargetURI},
		warcField{"WARC-Refers-To-Date", r.Date.UTC().Format(warcDateFormat)})
}

// WriteRevisit appends ex as a request record and a revisit record
// (profile identical-payload-digest) in place of the response: its block
// is the response head alone, its WARC-Payload-Digest that of ex.Body, and
// it refers to the earlier response of. Heritrix and wayback replay such a
// record from the response it names. ex.Body is not stored; the caller
// must know that of's payload is identical (the same PayloadDigest).
func (w *WARCWriter) WriteRevisit(ex *Exchange, of Revisit) (WARCRef, error) {
	return w.write(ex, &of)
}
