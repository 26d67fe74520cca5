package store

import (
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/state"
)

// owns reports whether name is one the store gives its objects:
// N-G-X-I (a snapshot chunk) or N-G-X-jSEQ-ID (a journal record).
func (s *Store) owns(name string) bool {
	rest, ok := strings.CutPrefix(name, s.name+"-")
	if !ok {
		return false
	}
	parts := strings.SplitN(rest, "-", 3)
	if len(parts) != 3 || !digits(parts[0]) || badHex(parts[1], 8) >= 0 {
		return false
	}
	if ref, ok := strings.CutPrefix(parts[2], "j"); ok {
		seq, id, ok := strings.Cut(ref, "-")
		return ok && digits(seq) && badHex(id, 8) < 0
	}
	return digits(parts[2])
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// checkNum refuses an annotation ann of o that is there and is not a
// number: it would read as 0, and a fence or token of 0 lets a stale
// holder's token be current again.
func checkNum(o metav1.Object, ann, path string) error {
	v, ok := o.GetAnnotations()[ann]
	if !ok {
		return nil
	}
	if _, err := strconv.ParseUint(v, 10, 64); err == nil {
		return nil
	}
	off := 0
	for off < len(v)-1 && '0' <= v[off] && v[off] <= '9' {
		off++
	}
	return &state.CorruptError{Path: path + " annotation " + ann, Offset: int64(off),
		Err: fmt.Errorf("%q is not a whole number (the store writes them there)", v)}
}

// checkHex refuses an annotation ann of o that is not n lower-case hex
// digits, as the store writes it.
func checkHex(o metav1.Object, ann string, n int, path string) error {
	v := o.GetAnnotations()[ann]
	if off := badHex(v, n); off >= 0 {
		return &state.CorruptError{Path: path + " annotation " + ann, Offset: int64(off), Err: fmt.Errorf("%q is not %d hex digits (the store writes them there)", v, n)}
	}
	return nil
}

// badHex returns the offset of the first byte of v that makes it not n
// lower-case hex digits, or -1.
func badHex(v string, n int) int {
	for i := range len(v) {
		if !('0' <= v[i] && v[i] <= '9' || 'a' <= v[i] && v[i] <= 'f') {
			return i
		}
	}
	if len(v) != n {
		return min(len(v), n)
	}
	return -1
}

// checkRef refuses a journal reference that is not "" or SEQ-ID (a
// commit's number, a dash, 8 hex digits), as the store writes it.
func checkRef(ref, path string) error {
	if ref == "" {
		return nil
	}
	seq, id, ok := strings.Cut(ref, "-")
	off := 0
	for off < len(seq) && '0' <= seq[off] && seq[off] <= '9' {
		off++
	}
	switch {
	case off < len(seq) || off == 0 || !ok:
	case badHex(id, 8) >= 0:
		off = len(seq) + 1 + badHex(id, 8)
	default:
		if _, err := strconv.ParseUint(seq, 10, 64); err == nil {
			return nil
		}
		off = 0
	}
	return &state.CorruptError{Path: path, Offset: int64(off), Err: fmt.Errorf("%q is not a journal record's SEQ-ID (the store writes them there)", ref)}
}

// refSeq is the commit number of a journal reference checkRef accepted.
func refSeq(ref string) (uint64, bool) {
	seq, _, _ := strings.Cut(ref, "-")
	n, err := strconv.ParseUint(seq, 10, 64)
	return n, err == nil
}

func num(o metav1.Object, ann string) uint64 {
	n, _ := strconv.ParseUint(o.GetAnnotations()[ann], 10, 64)
	return n
}

// chunkName names chunk i of snapshot generation gen (write id).
func chunkName(name string, gen uint64, id string, i uint64) string {
	return fmt.Sprintf("%s-%d-%s-%d", name, gen, id, i)
}

func recordPrefix(name string, gen uint64, id string) string {
	return fmt.Sprintf("%s-%d-%s-j", name, gen, id)
}

// recordName names the journal record ref (SEQ-ID) after snapshot
// generation gen.
func recordName(name string, gen uint64, id, ref string) string {
	return recordPrefix(name, gen, id) + ref
}
