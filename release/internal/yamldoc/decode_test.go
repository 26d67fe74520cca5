package yamldoc

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// level is a scalar type decoded by a Scalar's Parse.
type level struct{ n int }

// word is a scalar type decoded through encoding.TextUnmarshaler.
type word struct{ s string }

func (w *word) UnmarshalText(b []byte) error {
	if strings.ContainsAny(string(b), " ") {
		return errors.New("test: a word has no spaces")
	}
	w.s = string(b)
	return nil
}

type limits struct {
	Max int `yaml:"max"`
}

type spec struct {
	Name   string   `yaml:"name"`
	Level  level    `yaml:"level"`
	Word   word     `yaml:"word"`
	Tags   []string `yaml:"tags"`
	Limits *limits  `yaml:"limits"`
	On     bool     `yaml:"on"`
}

var testOptions = Options{
	Scalars: []Scalar{{Type: reflect.TypeFor[level](), Word: "a level such as 3", Parse: func(s string, v reflect.Value) error {
		var n int
		if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 0 {
			return fmt.Errorf("test: invalid level %s", Quote(s))
		}
		v.Set(reflect.ValueOf(level{n}))
		return nil
	}}},
	ErrPrefix: "test: ",
	MappingFix: func(t reflect.Type, n *yaml.Node) string {
		if t == reflect.TypeFor[limits]() && IsInt(n) {
			return "write limits: {max: " + n.Value + "}"
		}
		return ""
	},
}

// decodeText decodes the one document of text into a spec.
func decodeText(t *testing.T, text string) (spec, []string, *Decoder) {
	t.Helper()
	var ps Problems
	dec := NewDecoder(&ps, testOptions)
	var got spec
	var docs int
	p := Parser{Decode: func(doc Document) {
		docs++
		dec.Start(doc)
		dec.Decode(doc.Node, &got)
	}}
	p.Parse([]File{{Name: "s.yaml", Data: []byte(text)}})
	require.Equal(t, 1, docs, "documents of %q", text)
	list, _ := ps.Sorted()
	var msgs []string
	for _, pr := range list {
		msgs = append(msgs, fmt.Sprintf("%d: %s: %s; %s", pr.Line, pr.Field, pr.Message, pr.Fix))
	}
	return got, msgs, dec
}

func TestDecoder(t *testing.T) {
	tests := []struct {
		name string
		text string
		want spec
		msgs []string
	}{
		{"all fields", "name: a\nlevel: 3\nword: w\ntags: [x, y]\nlimits: {max: 0x10}\non: true\n",
			spec{Name: "a", Level: level{3}, Word: word{"w"}, Tags: []string{"x", "y"}, Limits: &limits{16}, On: true}, nil},
		{"scalar Parse error, prefix cut", "level: -1\n", spec{},
			[]string{`1: level: invalid level "-1"; `}},
		{"TextUnmarshaler error, prefix cut", "word: a b\n", spec{},
			[]string{"1: word: a word has no spaces; "}},
		{"scalar written as a mapping names its Word", "name: a\nlevel: {n: 3}\n", spec{Name: "a"},
			[]string{"2: level: want a single value (a level such as 3), got a mapping; "}},
		{"TextUnmarshaler written as a list names its Go type", "word: [a]\n", spec{},
			[]string{"1: word: want a single value (yamldoc.word), got a list; "}},
		{"MappingFix", "limits: 3\n", spec{Limits: &limits{}},
			[]string{"1: limits: want a mapping, got \"3\"; write limits: {max: 3}"}},
		{"unknown field and typo", "nme: a\nflavour: b\n", spec{},
			[]string{`1: nme: unknown field; did you mean "name"?`, "2: flavour: unknown field; known fields: level, limits, name, on, tags, word"}},
		{"every problem of the document", "name: [a]\non: maybe\ntags: x\nname: b\n", spec{},
			[]string{"1: name: want a string, got a list; ", `2: on: want true or false, got "maybe"; `,
				"3: tags: want a list, got \"x\"; write it as a YAML list (- item)", "4: name: field given twice; remove one of them"}},
		{"aliases and merge keys", "limits: &l {max: 2}\nname: &n a\ntags: [*n, *n]\n", spec{Name: "a", Tags: []string{"a", "a"}, Limits: &limits{2}}, nil},
		{"problem through an alias, at the alias", "tags: &t [a]\nword: *t\n", spec{Tags: []string{"a"}},
			[]string{"2: word: want a single value (yamldoc.word), got a list (the value of alias *t, anchored at line 1); "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msgs, _ := decodeText(t, tt.text)
			assert.Equal(t, tt.want, got, "decoded %q", tt.text)
			assert.Equal(t, tt.msgs, msgs, "problems of %q", tt.text)
		})
	}
}

// TestDecoderPartial: a document whose unusable values are not what
// identifies it can be used without them; one whose identifying field is
// unusable cannot.
func TestDecoderPartial(t *testing.T) {
	tests := []struct {
		name, text string
		ids        []string
		bad        []string
		ok         bool
	}{
		{"clean", "name: a\n", []string{"name"}, nil, true},
		{"unknown fields only", "name: a\nx: 1\n", []string{"name"}, nil, true},
		{"unusable other field", "name: a\nlevel: x\n", []string{"name"}, []string{"level"}, true},
		{"unusable identifying field", "name: [a]\n", []string{"name"}, nil, false},
		{"unusable value inside an identifying field", "limits: {max: x}\n", []string{"limits"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, dec := decodeText(t, tt.text)
			bad, ok := dec.Partial(0, tt.ids...)
			assert.Equal(t, tt.ok, ok, "Partial(%q) ok", tt.ids)
			assert.Equal(t, tt.bad, bad, "Partial(%q) bad", tt.ids)
		})
	}
}

func TestRelatedField(t *testing.T) {
	tests := []struct {
		paths []string
		field string
		want  bool
	}{
		{[]string{"spec.rules[1]"}, "spec.rules[1].from", true},
		{[]string{"spec.rules[1].from"}, "spec.rules[1]", true},
		{[]string{"spec.rules[1]"}, "spec.rules[10]", false},
		{[]string{"spec.name"}, "spec.names", false},
		{nil, "spec", false},
	}
	for _, tt := range tests {
		if got := RelatedField(tt.paths, tt.field); got != tt.want {
			t.Errorf("RelatedField(%q, %q) = %v, want %v", tt.paths, tt.field, got, tt.want)
		}
	}
}
