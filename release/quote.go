package release

import "github.com/hopdag/hopdag/release/internal/yamldoc"

// quote quotes a value a user wrote for a message, at most its first 200
// bytes (yamldoc.Quote): every message of release that quotes such a value
// quotes it with quote.
func quote(s string) string { return yamldoc.Quote(s) }
