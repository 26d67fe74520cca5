// Command apilist writes or checks the exported API of each published
// module of the repository: one line per exported name with its signature,
// sorted, as Go's own api/*.txt files hold it, in api/MODULE.txt at the
// repository root (make api writes them; make api-check, part of make ci,
// fails with the difference when the code's API and the file differ).
//
//	cd tools && go run ./apilist -root ..          # write api/*.txt
//	cd tools && go run ./apilist -root .. -check   # compare
//
// A module's API is every package of it except internal ones and commands
// (package main; so cmd/hopdag has none): constants with their values, variables, functions,
// types, exported struct fields, interface methods and methods. A changed
// line is a changed API: review it, and record it in CHANGELOG.md.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// modules are the directories of the published modules and the name of
// their api file.
var modules = []struct{ dir, file string }{
	{".", "hopdag.txt"},
	{"bundle", "bundle.txt"},
	{"kube", "kube.txt"},
	{"state/etcdstore", "state-etcdstore.txt"},
}

func main() {
	root := flag.String("root", "..", "the repository root")
	check := flag.Bool("check", false, "compare with api/*.txt instead of writing them")
	flag.Parse()
	if err := run(*root, *check); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(root string, check bool) error {
	var failed []string
	for _, m := range modules {
		lines, err := moduleAPI(filepath.Join(root, filepath.FromSlash(m.dir)))
		if err != nil {
			return fmt.Errorf("module %s: %w", m.dir, err)
		}
		got := []byte(strings.Join(lines, "\n") + "\n")
		if len(lines) == 0 {
			got = nil
		}
		name := filepath.Join(root, "api", m.file)
		if !check {
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(name, got, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "api/%s: %d names\n", m.file, len(lines))
			continue
		}
		want, err := os.ReadFile(name)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		if bytes.Equal(want, got) {
			continue
		}
		failed = append(failed, fmt.Sprintf("api/%s: the exported API of module %s differs from the file (- in the file only, + in the code only):\n%s",
			m.file, m.dir, diff(splitLines(want), lines)))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s\nIf the change is meant: run make api, review the diff of api/, and record it in CHANGELOG.md", strings.Join(failed, "\n"))
	}
	return nil
}

func splitLines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// diff lists the lines of want missing from got ("-") and the lines of got
// missing from want ("+"), in sorted order; both are sorted sets.
func diff(want, got []string) string {
	var b strings.Builder
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || i < len(want) && want[i] < got[j]:
			fmt.Fprintf(&b, "-%s\n", want[i])
			i++
		case i == len(want) || got[j] < want[i]:
			fmt.Fprintf(&b, "+%s\n", got[j])
			j++
		default:
			i++
			j++
		}
	}
	return b.String()
}
