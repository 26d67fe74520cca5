package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --set of run and plan: comma-separated KEY=VALUE pairs; repeated, they
// add up, a later KEY replacing an earlier one; \, is a comma in a value.
func TestSetFlag(t *testing.T) {
	tests := []struct {
		name string
		sets []string // one --set each
		want map[string]any
		err  string
	}{
		{name: "none", want: nil},
		{name: "comma-separated", sets: []string{"out=/tmp/x, registry=r.local:5000,empty="},
			want: map[string]any{"out": "/tmp/x", "registry": "r.local:5000", "empty": ""}},
		{name: "repeated", sets: []string{"out=/tmp/x", "foo=bar"}, want: map[string]any{"out": "/tmp/x", "foo": "bar"}},
		{name: "later wins", sets: []string{"out=/tmp/x,foo=bar", "out=/tmp/y"}, want: map[string]any{"out": "/tmp/y", "foo": "bar"}},
		{name: "escaped comma", sets: []string{`list=a\,b\,c,d=e`}, want: map[string]any{"list": "a,b,c", "d": "e"}},
		{name: "other backslashes stay", sets: []string{`path=C:\dir\n`}, want: map[string]any{"path": `C:\dir\n`}},
		{name: "equals in a value", sets: []string{"q=a=b"}, want: map[string]any{"q": "a=b"}},
		{name: "no equals", sets: []string{"out=x", "novalue"}, err: `invalid argument "novalue" for "--set" flag: want KEY=VALUE`},
		{name: "no key", sets: []string{"=x"}, err: `invalid argument "=x" for "--set" flag: want KEY=VALUE`},
		{name: "one pair of several", sets: []string{"a=b,novalue"}, err: `invalid argument "a=b,novalue" for "--set" flag: novalue: want KEY=VALUE`},
	}
	for _, cmd := range []string{"run", "plan"} {
		for _, tt := range tests {
			t.Run(cmd+"/"+tt.name, func(t *testing.T) {
				var stderr strings.Builder
				c := newCLI(env{stderr: &stderr}, cmd, commands[cmd])
				var args []string
				for _, s := range tt.sets {
					args = append(args, "--set", s)
				}
				err := c.fs.Parse(args)
				if tt.err != "" {
					require.Error(t, err, "hopdag %s %s", cmd, strings.Join(args, " "))
					assert.Contains(t, err.Error(), tt.err)
					return
				}
				require.NoError(t, err, stderr.String())
				assert.Equal(t, tt.want, c.set.values, "hopdag %s %s: the values", cmd, strings.Join(args, " "))
			})
		}
	}
	c := newCLI(env{stderr: io.Discard}, "run", commands["run"])
	assert.Contains(t, c.fs.Lookup("set").Usage, `\,`, "--set's help says how a comma is written in a value")
	assert.Contains(t, c.fs.Lookup("set").Usage, "repeat", "--set's help says it may be repeated")
}

// A run given its values in two --set flags has both.
func TestRunSetRepeated(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := invoke("run", execCatalog, "--from", "v1.0", "--to", "v1.1", "--set", "out="+out, "--set", "catalog="+absPath(t, execCatalog))
	assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
}

// A template value that no --set gives is named once, with the --set
// that gives it, instead of text/template's error once per component.
func TestMissingValueNamesSet(t *testing.T) {
	for _, cmd := range [][]string{
		{"run", execCatalog, "--from", "v1.0", "--to", "v2.0"},
		{"run", execCatalog, "--from", "v1.0", "--to", "v2.0", "--set", "foo=bar"},
	} {
		t.Run(strings.Join(cmd[5:], " "), func(t *testing.T) {
			code, _, stderr := invoke(cmd...)
			assert.Equal(t, 1, code, stderr)
			assert.Contains(t, stderr, "the template value out is not set (.Values.out in app 1.1, cache 1.1, config 1.1, db 1.1, app 2.0 and db 2.0): give it with --set out=VALUE")
			assert.NotContains(t, stderr, "map has no entry", "the template's own error is replaced")
		})
	}
}

func absPath(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	return abs
}

// valuesText says each missing top-level value once; a problem that is
// more than a missing value stays whole.
func TestValuesText(t *testing.T) {
	const missOut = `components: app 1.1: validate: bad template: template: command.args[2]:1:9: executing "command.args[2]" at <.Values.out>: map has no entry for key "out"`
	tests := []struct {
		name     string
		problems []error
		want     string
		ok       bool
	}{
		{"none missing", []error{errors.New("hop 1 a -> b: check x has no function registered")}, "", false},
		{"one per component", []error{
			errors.New("hop 1 v1.0 -> v1.1: component app: " + missOut),
			errors.New("hop 2 v1.1 -> v2.0: component db: " + strings.ReplaceAll(missOut, "app 1.1", "db 2.0")),
			errors.New("hop 2 v1.1 -> v2.0: check x has no function registered"),
		}, "the template value out is not set (.Values.out in app 1.1 and db 2.0): give it with --set out=VALUE\n" +
			"hop 2 v1.1 -> v2.0: check x has no function registered", true},
		{"inside a longer problem", []error{errors.New("hop 1 v1.0 -> v1.1: component app: components: app 1.1: validate: 2 problems:\n" +
			"\tbad template: template: a:1:9: executing \"a\" at <.Values.ns>: map has no entry for key \"ns\"\n" +
			"\tbad template: template: b:1:13: executing \"b\" at <.Component.Nope>: can't evaluate field Nope")},
			"the template value ns is not set (.Values.ns): give it with --set ns=VALUE\n" +
				"hop 1 v1.0 -> v1.1: component app: components: app 1.1: validate: 2 problems:\n" +
				"\tbad template: template: a:1:9: executing \"a\" at <.Values.ns>: map has no entry for key \"ns\"\n" +
				"\tbad template: template: b:1:13: executing \"b\" at <.Component.Nope>: can't evaluate field Nope", true},
		{"a rollback command's", []error{
			errors.New("hop 1 v1.0 -> v1.1: component app: " + missOut),
			errors.New("hop 1 v1.0 -> v1.1: component app: runner: cannot roll back: " + strings.ReplaceAll(missOut, ": validate:", ": validate-rollback:")),
		}, "the template value out is not set (.Values.out in app 1.1): give it with --set out=VALUE", true},
		{"nested: no --set gives it", []error{errors.New(`components: app 1.1: validate: bad template: template: a:1:9: executing "a" at <.Values.db.host>: map has no entry for key "host"`)}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := valuesText(tt.problems)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// The audit log records the command line without secrets: --set-secret
// values, and --set values of keys that look secret.
func TestRedactArgs(t *testing.T) {
	for _, tt := range []struct{ args, want []string }{
		{[]string{"run", "d", "--set", "password=hunter2,out=/x"}, []string{"run", "d", "--set", "password=REDACTED,out=/x"}},
		{[]string{"run", "d", "--set=DB_TOKEN=abc"}, []string{"run", "d", "--set=DB_TOKEN=REDACTED"}},
		{[]string{"run", "d", "--set-secret", "key=v1,other=v2"}, []string{"run", "d", "--set-secret", "key=REDACTED,other=REDACTED"}},
		{[]string{"run", "d", "--set", `hosts=a\,b`, "--state", "s"}, []string{"run", "d", "--set", `hosts=a\,b`, "--state", "s"}},
		{[]string{"run", "d", "--set"}, []string{"run", "d", "--set"}},
	} {
		assert.Equal(t, tt.want, redactArgs(tt.args), "%v", tt.args)
	}
	// --set-secret sets values as --set does.
	c := newCLI(env{stderr: io.Discard}, "run", commands["run"])
	require.NoError(t, c.fs.Parse([]string{"--set", "a=1", "--set-secret", "password=p"}))
	assert.Equal(t, map[string]any{"a": "1", "password": "p"}, c.set.values)
}

// hopdag run's audit log holds the command line redacted.
func TestAuditLogRedactsSecrets(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	code, _, stderr := invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--speed", "20000",
		"--log-file", log, "--set", "password=hunter2,registry=r.local", "--set-secret", "apikey=abc123")
	require.Equal(t, exitOK, code, stderr)
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "hunter2")
	assert.NotContains(t, string(data), "abc123")
	assert.Contains(t, string(data), `"password=REDACTED,registry=r.local"`)
	assert.Contains(t, string(data), `"apikey=REDACTED"`)
}
