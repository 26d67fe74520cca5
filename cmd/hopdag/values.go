package main

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/hopdag/hopdag/runner"
)

// Template values on the command line: --set of run and plan gives
// .Values, and a template that reads a value no --set gave is reported as
// the --set it needs.

// setFlag is --set: KEY=VALUE pairs, comma-separated. Repeated, the flags
// add up, a later KEY replacing an earlier one (as helm's --set). A comma
// inside a value is written \, ; any other backslash is itself.
type setFlag struct {
	// values is nil without --set: the simulator's defaults apply.
	values map[string]any
}

// setUsage is --set's help, after what the values are for.
const setUsage = "; pairs are comma-separated, and the flag may be repeated (a later KEY wins); write a comma inside a value as \\, (--set 'hosts=a\\,b')"

// addSetFlag defines --set, what comes first in its help being what the
// command does with the values.
func (c *cli) addSetFlag(what string) {
	c.fs.Var(&c.set, "set", what+setUsage+"; the audit log (--log-file) leaves out the values of keys matching password, token, secret, credential or apikey")
	c.fs.Var(&c.set, "set-secret", "as --set, and the audit log (--log-file) leaves its values out")
}

func (f *setFlag) String() string {
	if f == nil || f.values == nil {
		return ""
	}
	var kvs []string
	for _, k := range slices.Sorted(maps.Keys(f.values)) {
		kvs = append(kvs, k+"="+strings.ReplaceAll(fmt.Sprint(f.values[k]), ",", `\,`))
	}
	return strings.Join(kvs, ",")
}

// Type is the value's name in --help.
func (f *setFlag) Type() string { return "KEY=VALUE" }

// Set adds one --set's pairs.
func (f *setFlag) Set(s string) error {
	values, err := parseValues(s)
	if err != nil {
		return err
	}
	if f.values == nil {
		f.values = map[string]any{}
	}
	for k, v := range values {
		f.values[k] = v
	}
	return nil
}

// parseValues reads one --set: KEY=VALUE, comma-separated (\, a comma in a
// value); spaces around a pair are dropped, as are empty pairs. nil for
// none.
func parseValues(s string) (map[string]any, error) {
	var values map[string]any
	for _, kv := range splitPairs(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			if kv != s {
				// pflag names the whole argument; this is the pair of it.
				return nil, fmt.Errorf("%s: want KEY=VALUE", kv)
			}
			return nil, errors.New("want KEY=VALUE")
		}
		if values == nil {
			values = map[string]any{}
		}
		values[k] = v
	}
	return values, nil
}

// splitPairs splits s at its commas but those escaped (\,), which become
// commas, and trims each piece.
func splitPairs(s string) []string {
	var (
		out []string
		cur strings.Builder
	)
	flush := func() {
		if p := strings.TrimSpace(cur.String()); p != "" {
			out = append(out, p)
		}
		cur.Reset()
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == ',':
			cur.WriteByte(',')
			i++
		case s[i] == ',':
			flush()
		default:
			cur.WriteByte(s[i])
		}
	}
	flush()
	return out
}

// missingValue matches a problem of Validate that is one template reading
// a top-level value that is not set (text/template's missingkey=error),
// in the component's command or manifests, or in what rolls it back
// (runner.ErrCannotRollBack); its groups are the component ("NAME
// VERSION") and the key.
var missingValue = regexp.MustCompile(`^(?:hop [^\n]*?: component [^\s:]+: )?(?:runner: cannot roll back: )?components: (\S+ \S+): [a-z-]+: bad template: template: [^\n]* at <\.Values\.(\w+)>: map has no entry for key "(\w+)"$`)

// missingValueAnywhere finds the same inside a longer problem (a component
// with several).
var missingValueAnywhere = regexp.MustCompile(`at <\.Values\.(\w+)>: map has no entry for key "(\w+)"`)

// valuesText is the problems of an invalid plan with those that are a
// value no --set gave said once per value: which value, which components
// read it, and the --set that gives it; the other problems follow as they
// are. ok is false when no problem is a missing value.
func valuesText(problems []error) (text string, ok bool) {
	users := map[string][]string{} // key: the components reading it
	var rest []string
	for _, p := range problems {
		msg := p.Error()
		if m := missingValue.FindStringSubmatch(msg); m != nil && m[2] == m[3] {
			users[m[2]] = appendNew(users[m[2]], m[1])
			continue
		}
		rest = append(rest, msg)
		for _, m := range missingValueAnywhere.FindAllStringSubmatch(msg, -1) {
			if m[1] == m[2] {
				if _, seen := users[m[1]]; !seen {
					users[m[1]] = nil
				}
			}
		}
	}
	if len(users) == 0 {
		return "", false
	}
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(users)) {
		in := ""
		if cs := users[k]; len(cs) > 0 {
			in = " in " + andList(cs)
		}
		lines = append(lines, fmt.Sprintf("the template value %s is not set (.Values.%s%s): give it with --set %s=VALUE", k, k, in, k))
	}
	return strings.Join(append(lines, rest...), "\n"), true
}

// invalidPlanText is message's text of an invalid plan (runner's
// ErrInvalidPlan joined with its problems, or the problems joined alone)
// whose problems include missing values (valuesText); ok is false for any
// other error.
func invalidPlanText(err error) (string, bool) {
	var prefix string
	var problems []error
	if errors.Is(err, runner.ErrInvalidPlan) {
		prefix, problems = runner.ErrInvalidPlan.Error()+": ", flatten(err)
	} else if j, ok := err.(interface{ Unwrap() []error }); ok {
		problems = j.Unwrap()
	}
	text, ok := valuesText(problems)
	return prefix + text, ok
}

// appendNew appends s unless list holds it.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// andList is "a", "a and b", "a, b and c".
func andList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
