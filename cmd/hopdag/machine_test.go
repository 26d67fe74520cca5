package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// machineCase is one command line whose -o json and -o yaml output is a
// document of kind.
type machineCase struct {
	name, kind string
	args       []string
	code       int
}

// machineCases are the commands that print data, each with -o json|yaml.
func machineCases(t *testing.T) []machineCase {
	state := t.TempDir()
	code, _, stderr := invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--speed", "20000", "--state", state,
		"--fail", "kubernetes-worker")
	require.Equal(t, exitInvalid, code, stderr)
	return []machineCase{
		{"validate", kindValidationReport, []string{"validate", catalog}, exitOK},
		{"validate-invalid", kindValidationReport, []string{"validate", "testdata/bad-catalog"}, exitInvalid},
		{"targets", kindTargets, []string{"targets", catalog, "--from", "v26.06"}, exitOK},
		{"targets-routes", kindTargets, []string{"targets", catalog, "--from", "v26.06-rc.2", "--routes"}, exitOK},
		{"targets-two-track", kindTargets, []string{"targets", "../../testdata/two-track", "--from", "platform=13.01.0,kubernetes=v1.33.0"}, exitOK},
		{"plan", kindPlan, []string{"plan", catalog, "--from", "v26.06-rc.2", "--to", "v26.06"}, exitOK},
		{"graph", kindGraph, []string{"graph", catalog, "--from", "v26.06-rc.2", "--to", "v26.09", "--hop", "1"}, exitOK},
		{"run", kindStatus, []string{"run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--speed", "20000", "--fail", "kubernetes-worker"}, exitInvalid},
		{"status", kindStatus, []string{"status", "--state", state}, exitInvalid},
		{"version", kindVersion, []string{"version"}, exitOK},
		{"rollout-plan", kindRolloutPlan, rolloutPlanArgs, exitOK},
	}
}

// volatile are the values that change from run to run: times, measured
// durations, the Go and VCS versions.
var volatile = regexp.MustCompile(`("?(startedAt|finishedAt|time|duration|go|revision|version|order)"?:\s*)"?[^",\n}]*"?`)

// mask replaces what volatile matches in a run's or version's document.
func mask(kind, s string) string {
	if kind != kindStatus && kind != kindVersion {
		return s
	}
	return volatile.ReplaceAllString(s, `${1}"X"`)
}

// Every command that prints data prints JSON and YAML documents with
// apiVersion and kind first, the same fields in both, each valid against
// schema/KIND.json; the documents are golden files (go test -update).
func TestMachineOutput(t *testing.T) {
	c := jsonschema.NewCompiler()
	schemas := map[string]*jsonschema.Schema{}
	for _, kind := range []string{kindPlan, kindStatus, kindTargets, kindValidationReport, kindGraph, kindVersion, kindRolloutPlan} {
		s, err := c.Compile(filepath.Join("schema", strings.ToLower(kind)+".json"))
		require.NoError(t, err, "schema of %s", kind)
		schemas[kind] = s
	}
	for _, tc := range machineCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			code, js, stderr := invoke(append(tc.args, "-o", "json")...)
			require.Equal(t, tc.code, code, stderr)
			code, ys, stderr := invoke(append(tc.args, "-o", "yaml")...)
			require.Equal(t, tc.code, code, stderr)
			assert.True(t, strings.HasPrefix(js, "{\n  \"apiVersion\": \"hopdag.io/v1alpha1\",\n  \"kind\": \""+tc.kind+"\",\n"), js)
			assert.True(t, strings.HasPrefix(ys, "apiVersion: hopdag.io/v1alpha1\nkind: "+tc.kind+"\n"), ys)

			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(js))
			require.NoError(t, err)
			assert.NoError(t, schemas[tc.kind].Validate(doc), "-o json against schema/%s.json:\n%s", strings.ToLower(tc.kind), js)
			// The YAML is the same document.
			var y any
			require.NoError(t, yaml.Unmarshal([]byte(ys), &y))
			yj, err := json.Marshal(y)
			require.NoError(t, err)
			var j any
			require.NoError(t, json.Unmarshal([]byte(js), &j))
			jj, err := json.Marshal(j)
			require.NoError(t, err)
			assert.Equal(t, mask(tc.kind, string(jj)), mask(tc.kind, string(yj)), "-o yaml holds what -o json does")

			golden(t, filepath.Join("golden", tc.name+".json"), mask(tc.kind, js))
			golden(t, filepath.Join("golden", tc.name+".yaml"), mask(tc.kind, ys))
		})
	}
}

// The schemas reject what the issue found wrong: a document without
// apiVersion and kind, a hop counted from 0, deps for dependencies, a
// duration in nanoseconds.
func TestSchemasReject(t *testing.T) {
	c := jsonschema.NewCompiler()
	for _, tt := range []struct{ kind, doc string }{
		{kindPlan, `{"from":"a","to":"b","hops":[]}`},
		{kindStatus, `{"apiVersion":"hopdag.io/v1alpha1","kind":"Status","phase":"Running","from":"a","to":"b","currentHop":0,"hops":[],"progress":{"done":0,"total":1},"runs":1}`},
		{kindGraph, `{"apiVersion":"hopdag.io/v1alpha1","kind":"Graph","nodes":[{"name":"x","deps":[],"dependencies":[],"level":0}]}`},
		{kindPlan, `{"apiVersion":"hopdag.io/v1alpha1","kind":"Plan","from":"a","to":"b","expectedDuration":5376457,"hops":[]}`},
		{kindRolloutPlan, `{"apiVersion":"hopdag.io/v1alpha1","kind":"RolloutPlan","rollout":"ns/r","target":"v2","clusters":1,"waves":[{"name":"canary","clusters":[{"name":"a","current":"v1","hops":[]}]}],"atTarget":[],"blocked":[]}`},
	} {
		s, err := c.Compile(filepath.Join("schema", strings.ToLower(tt.kind)+".json"))
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(tt.doc))
		require.NoError(t, err)
		assert.Error(t, s.Validate(doc), "%s", tt.doc)
	}
}

// Every command's help (on stdout) and a usage error of each (one line and
// the hint, on stderr) are golden files (go test -update).
func TestHelpAndUsageGolden(t *testing.T) {
	t.Setenv("USER", "someone") // the help is the same whoever reads it
	names := append(append([]string(nil), commandNames...), "completion", "bundle", "bundle push", "bundle pull", "bundle export", "bundle copy", "bundle keygen", "rollout", "rollout plan")
	for _, name := range names {
		args := strings.Fields(name)
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			code, out, stderr := invoke(append(args, "--help")...)
			require.Equal(t, exitOK, code)
			assert.Empty(t, stderr)
			golden(t, filepath.Join("golden", strings.ReplaceAll(name, " ", "-")+"-help.txt"), out)

			code, out, stderr = invoke(append(args, "--bogus")...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, out)
			assert.Equal(t, "hopdag "+name+": unknown flag: --bogus\nRun 'hopdag "+name+" --help' for usage.\n", stderr)
			golden(t, filepath.Join("golden", strings.ReplaceAll(name, " ", "-")+"-usage.txt"), stderr)
		})
	}
	code, out, _ := invoke("--help")
	require.Equal(t, exitOK, code)
	golden(t, filepath.Join("golden", "hopdag-help.txt"), out)
	_, help, _ := invoke("help", "plan")
	_, dashH, _ := invoke("plan", "-h")
	assert.Equal(t, dashH, help, "hopdag help plan is plan's help")
}
