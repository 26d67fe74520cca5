package release

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Version is a release or component version as users write it: `v26.06`,
// `v26.06-rc.2`, `26.06.01`, `13.01.2`, `v1.34.1`.
//
// Grammar: an optional "v", two or three dot-separated decimal numbers
// (leading zeros allowed), an optional "-" prerelease of dot-separated
// identifiers [0-9A-Za-z-]+, and an optional "+" build suffix that is kept in
// the spelling but ignored by ordering and equality.
//
// Ordering is semantic (SemVer 2.0 precedence) with one deliberate change:
// two identifiers made of the same letters followed by digits compare by the
// number, so rc9 < rc10 (SemVer, and Masterminds/semver, compare them as text
// and put rc10 first); such an identifier sorts before the other identifiers
// that start with its letters and a digit (rc10 < rc1a), which keeps the
// order total. Every other identifier compares as SemVer says: numeric ones
// as numbers, the others as ASCII text (rc-1 < rc1, a10 < a1b, and e01f3a9 is
// not e1f03a9). Dotted forms (rc.9 < rc.10) order numerically either way.
//
//	v26.06-rc.2 < v26.06-rc.3 < v26.06-rc.10 < v26.06 < v26.06.1 < v26.09-rc.1
//
// Versions equal after normalisation (v26.06, 26.6.0, 26.06.00) are the same
// version: [Version.Equal] and [Version.Compare] say so, [Version.Canonical]
// gives the same key. [Version.Original] keeps the spelling for output.
//
// The zero Version is invalid, prints as "", equals only itself and sorts
// before every parsed version; its Canonical is "". Version is a small immutable
// value; copy it freely.
type Version struct {
	orig                string
	major, minor, patch uint64
	pre                 string // prerelease without the leading "-"
}

// ParseVersion parses s. The error says what part of s is wrong.
func ParseVersion(s string) (Version, error) {
	v := Version{orig: s}
	rest := s
	if rest != "" && (rest[0] == 'v' || rest[0] == 'V') {
		rest = rest[1:] // one optional "v": "vv1.2" and "vV1.2" are errors
	}
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		if err := checkIdents(rest[i+1:]); err != nil {
			return Version{}, fmt.Errorf("release: invalid version %s: build metadata: %w", quote(s), err)
		}
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		v.pre = rest[i+1:]
		if err := checkIdents(v.pre); err != nil {
			return Version{}, fmt.Errorf("release: invalid version %s: prerelease: %w", quote(s), err)
		}
		rest = rest[:i]
	}
	// Two or three dot-separated parts, cut without allocating.
	var parts [3]string
	n := 0
	for part, more := rest, true; more; n++ {
		if n == len(parts) {
			n++ // a fourth part
			break
		}
		parts[n], part, more = cutDot(part)
	}
	if n < 2 || n > 3 {
		return Version{}, fmt.Errorf("release: invalid version %s: want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1", quote(s))
	}
	nums := [3]uint64{}
	for i, p := range parts[:n] {
		if p == "" || strings.TrimLeft(p, "0123456789") != "" {
			return Version{}, fmt.Errorf("release: invalid version %s: %s is not a decimal number", quote(s), quote(p))
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return Version{}, fmt.Errorf("release: invalid version %s: %s is too large", quote(s), quote(p))
		}
		nums[i] = n
	}
	v.major, v.minor, v.patch = nums[0], nums[1], nums[2]
	return v, nil
}

// checkIdents validates dot-separated identifiers. Numeric prerelease
// identifiers keep their spelling (01 is accepted and compares as 1).
func checkIdents(s string) error {
	if s == "" {
		return fmt.Errorf("empty")
	}
	for rest, more := s, true; more; {
		var id string
		id, rest, more = cutDot(rest)
		if id == "" {
			return fmt.Errorf("empty identifier in %s", quote(s))
		}
		for _, r := range id {
			if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return fmt.Errorf("identifier %s may hold only [0-9A-Za-z-]", quote(id))
			}
		}
	}
	return nil
}

// cutDot returns s before and after its first ".", and whether there was one.
func cutDot(s string) (before, after string, found bool) {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// MustParseVersion is ParseVersion for constants in tests and examples; it
// panics on a malformed version.
func MustParseVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

// Original is the version exactly as it was written.
func (v Version) Original() string { return v.orig }

// String is the original spelling.
func (v Version) String() string { return v.orig }

// IsZero reports whether v is the zero Version (never parsed).
func (v Version) IsZero() bool { return v.orig == "" }

// Major, Minor and Patch are the numeric parts (Patch is 0 in a two-part version).
func (v Version) Major() uint64 { return v.major }

// Minor is the second numeric part.
func (v Version) Minor() uint64 { return v.minor }

// Patch is the third numeric part, 0 when the version has two parts.
func (v Version) Patch() uint64 { return v.patch }

// Prerelease is the part after "-", without the "-" ("" for a release).
func (v Version) Prerelease() string { return v.pre }

// Canonical is the normalised form, the same for equal versions:
// "26.6.0-rc.2" for v26.06-rc.2. It drops build metadata.
func (v Version) Canonical() string {
	if v.IsZero() {
		return ""
	}
	// Built on the stack, copied once into the string.
	var buf [80]byte
	b := strconv.AppendUint(buf[:0], v.major, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, v.minor, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, v.patch, 10)
	if v.pre != "" {
		b = append(b, '-')
		b = appendCanonicalPre(b, v.pre)
	}
	return string(b)
}

// appendCanonicalPre appends pre to b without the leading zeros that do not
// count in ordering: those of a numeric identifier (rc.01 == rc.1) and
// those of the number of a letters-then-digits identifier (rc01 == rc1).
// Other identifiers are kept as written: e01f3a9 and e1f03a9 are different
// versions.
func appendCanonicalPre(b []byte, pre string) []byte {
	for i, more := 0, true; more; i++ {
		var id string
		id, pre, more = cutDot(pre)
		if i > 0 {
			b = append(b, '.')
		}
		if isDigits(id) {
			b = append(b, trimZeros(id)...)
		} else if letters, digits, ok := splitLD(id); ok {
			b = append(b, letters...)
			b = append(b, trimZeros(digits)...)
		} else {
			b = append(b, id...)
		}
	}
	return b
}

func trimZeros(d string) string {
	if d = strings.TrimLeft(d, "0"); d == "" {
		return "0"
	}
	return d
}

// Compare returns -1, 0 or +1 as v sorts before, equal to, or after w.
func (v Version) Compare(w Version) int {
	if v.IsZero() || w.IsZero() {
		// The zero Version is no version: it equals only itself and sorts
		// before every parsed one (it is not 0.0).
		return cmpBool(!v.IsZero(), !w.IsZero())
	}
	if c := cmpUint(v.major, w.major); c != 0 {
		return c
	}
	if c := cmpUint(v.minor, w.minor); c != 0 {
		return c
	}
	if c := cmpUint(v.patch, w.patch); c != 0 {
		return c
	}
	switch {
	case v.pre == "" && w.pre == "":
		return 0
	case v.pre == "":
		return 1 // a release sorts after its prereleases
	case w.pre == "":
		return -1
	}
	return comparePre(v.pre, w.pre)
}

// Less reports whether v sorts before w.
func (v Version) Less(w Version) bool { return v.Compare(w) < 0 }

// Equal reports whether v and w are the same version after normalisation.
func (v Version) Equal(w Version) bool { return v.Compare(w) == 0 }

// SameCore reports whether v and w share major, minor and patch (v26.06-rc.2
// and v26.06 do).
func (v Version) SameCore(w Version) bool {
	return v.major == w.major && v.minor == w.minor && v.patch == w.patch
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// comparePre compares dot-separated prerelease identifiers without allocating.
func comparePre(a, b string) int {
	for {
		var x, y string
		x, a, _ = strings.Cut(a, ".")
		y, b, _ = strings.Cut(b, ".")
		if c := compareIdent(x, y); c != 0 {
			return c
		}
		switch {
		case a == "" && b == "":
			return 0
		case a == "":
			return -1 // fewer identifiers sort first
		case b == "":
			return 1
		}
	}
}

// compareIdent orders identifiers as SemVer does (numeric ones numerically
// and before the others, the others as ASCII text) with one exception: two
// identifiers made of the same letters followed by digits compare by that
// number, so rc9 < rc10. To keep the order total, such an identifier also
// sorts before every other identifier that starts with its letters and a
// digit (rc10 < rc1a, where SemVer puts rc9 after rc1a).
func compareIdent(x, y string) int {
	xd, yd := isDigits(x), isDigits(y)
	switch {
	case xd && yd:
		return compareDigits(x, y)
	case xd:
		return -1
	case yd:
		return 1
	}
	xl, xn, xok := splitLD(x)
	yl, yn, yok := splitLD(y)
	switch {
	case xok && yok && xl == yl:
		return compareDigits(xn, yn)
	case xok && !yok && digitAfter(y, xl):
		return -1
	case yok && !xok && digitAfter(x, yl):
		return 1
	}
	return strings.Compare(x, y)
}

// splitLD splits an identifier made of one or more ASCII letters followed
// by one or more digits (rc10, beta2) into the two; ok is false for any
// other shape (rc-1, a1b, e01f3a9, 1a).
func splitLD(s string) (letters, digits string, ok bool) {
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
		i++
	}
	if i == 0 || i == len(s) || !isDigits(s[i:]) {
		return "", "", false
	}
	return s[:i], s[i:], true
}

// digitAfter reports whether s starts with prefix followed by a digit.
func digitAfter(s, prefix string) bool {
	return len(s) > len(prefix) && strings.HasPrefix(s, prefix) && s[len(prefix)] >= '0' && s[len(prefix)] <= '9'
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// compareDigits compares decimal strings of any length as numbers.
func compareDigits(x, y string) int {
	x, y = strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
	if c := cmpUint(uint64(len(x)), uint64(len(y))); c != 0 {
		return c
	}
	return strings.Compare(x, y)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// MarshalText writes the original spelling; it serves JSON and YAML.
func (v Version) MarshalText() ([]byte, error) { return []byte(v.orig), nil }

// UnmarshalText parses a version.
func (v *Version) UnmarshalText(b []byte) error {
	p, err := ParseVersion(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// MarshalJSON writes the original spelling as a JSON string ("" for the zero Version).
func (v Version) MarshalJSON() ([]byte, error) { return json.Marshal(v.orig) }

// UnmarshalJSON reads a JSON string; "" leaves the zero Version.
func (v *Version) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("release: version must be a JSON string: %w", err)
	}
	if s == "" {
		*v = Version{}
		return nil
	}
	return v.UnmarshalText([]byte(s))
}

// MarshalYAML writes the original spelling.
func (v Version) MarshalYAML() (any, error) { return v.orig, nil }

// UnmarshalYAML reads the scalar as written, so an unquoted 26.10 stays
// "26.10" rather than becoming the float 26.1.
func (v *Version) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: release: version must be a scalar such as v26.06", n.Line)
	}
	return v.UnmarshalText([]byte(n.Value))
}
