package release

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"90s", 90 * time.Second, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"0s", 0, ""},
		{"0", 0, ""},
		{"5", 0, `release: invalid duration "5": write a number with a unit, e.g. 90s, 5m, 1h30m`},
		{"", 0, `release: invalid duration "": write a number with a unit, e.g. 90s, 5m, 1h30m`},
		{"5 minutes", 0, `release: invalid duration "5 minutes": write a number with a unit, e.g. 90s, 5m, 1h30m`},
		{"-1s", 0, `release: invalid duration "-1s": must not be negative`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseDuration(tt.in)
			if tt.err != "" {
				assert.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, D(tt.want), d)
		})
	}
}

func TestDurationEncoding(t *testing.T) {
	type doc struct {
		D Duration `json:"d" yaml:"d"`
	}
	in := doc{D(90 * time.Second)}
	assert.Equal(t, "1m30s", in.D.String())
	text, err := in.D.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "1m30s", string(text))

	js, err := json.Marshal(in)
	require.NoError(t, err)
	assert.Equal(t, `{"d":"1m30s"}`, string(js))
	var out doc
	require.NoError(t, json.Unmarshal(js, &out))
	assert.Equal(t, in, out)

	y, err := yaml.Marshal(in)
	require.NoError(t, err)
	assert.Equal(t, "d: 1m30s\n", string(y))
	out = doc{}
	require.NoError(t, yaml.Unmarshal(y, &out))
	assert.Equal(t, in, out)

	assert.EqualError(t, json.Unmarshal([]byte(`{"d":90}`), &out),
		`release: duration must be a JSON string such as "90s": json: cannot unmarshal number into Go value of type string`)
	assert.EqualError(t, json.Unmarshal([]byte(`{"d":"90"}`), &out),
		`release: invalid duration "90": write a number with a unit, e.g. 90s, 5m, 1h30m`)
	assert.EqualError(t, yaml.Unmarshal([]byte("d: [90s]"), &out), "line 1: release: duration must be a scalar such as 90s")
	assert.EqualError(t, yaml.Unmarshal([]byte("d: 90"), &out), `release: invalid duration "90": write a number with a unit, e.g. 90s, 5m, 1h30m`)
}
