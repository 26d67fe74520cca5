package codec

// FullCommits is fullCommits: commits as hopdag wrote them before delta
// commits.
var FullCommits = fullCommits
