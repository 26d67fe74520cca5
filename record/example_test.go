package record_test

import (
	"fmt"
	"time"

	"github.com/hopdag/hopdag/record"
)

// A run stopped at a gate: an operator approves the step, or gives the
// run up. A store keeps the Status; these operations work on it alone.
func Example() {
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s := &record.Status{
		Phase: record.WaitingForApproval, From: "v26.03", To: "v26.06",
		Waiting: []string{"v26.06/etcd"},
		Hops: []record.HopStatus{{From: "v26.03", To: "v26.06", Phase: record.WaitingForApproval, Components: []record.ComponentStatus{
			{Name: "coredns", Phase: record.Succeeded, Attempts: 1},
			{Name: "etcd", Phase: record.WaitingForApproval, Code: record.CodeWaitingForApproval},
		}}},
	}
	fmt.Println(s.Approve("v26.06/kubelet", "ops", at))
	fmt.Println(s.Approve("v26.06/etcd", "ops", at), s.Approved("v26.06/etcd"))

	_ = s.Abandon("moving to v26.09 instead", at)
	for _, c := range s.Hops[0].Components {
		fmt.Printf("%s: %s %s %q\n", c.Name, c.Phase, c.Code, c.Reason)
	}
	fmt.Println(s.Phase, s.Code, s.Message)
	// Output:
	// record: step is not waiting for approval: v26.06/kubelet (waiting: v26.06/etcd)
	// <nil> true
	// coredns: Succeeded  ""
	// etcd: Cancelled ABANDONED "not started: abandoned (moving to v26.09 instead)"
	// Abandoned ABANDONED moving to v26.09 instead
}
