package codec_test

import (
	"fmt"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state/codec"
)

// A backend stores a snapshot as lines (one key or object each) and
// rebuilds the status by applying them in order.
func ExampleSnapshot() {
	s := &record.Status{Phase: record.Running, From: "v1", To: "v2", Runs: 1,
		Hops: []record.HopStatus{{From: "v1", To: "v2", Phase: record.Running, Components: []record.ComponentStatus{
			{Name: "etcd", Phase: record.Succeeded},
			{Name: "apiserver", Phase: record.Running},
		}}}}
	lines, err := codec.Snapshot(7, 3, s, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	var st codec.State
	for _, line := range lines {
		r, err := codec.Unframe(line)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(r.Kind, r.Seq)
		if err := st.Apply(r); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println(st.Check(), st.Seq, st.Token, st.Status.Hops[0].Components[1].Name, st.Status.Hops[0].Components[1].Phase)
	// Output:
	// snapshot 7
	// shard 7
	// <nil> 7 3 apiserver Running
}

// Unframe refuses a record whose checksum does not match: a torn or
// altered line is an error, never an empty status.
func ExampleUnframe() {
	line, _ := codec.Frame(&codec.Record{Kind: codec.KindCommit, Seq: 1})
	line[len(line)-3] = 'X'
	_, err := codec.Unframe(line)
	fmt.Println(err != nil)
	// Output: true
}
